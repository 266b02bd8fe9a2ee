/**
 * Streaming a database file as batches of whole records (and finding where a record
 * begins, to split a file between readers): `TraceFormat.ts` and `TraceReader.ts` export
 * these. Loads no Effect, so a decoding worker thread starts fast.
 *
 * @since 0.1.0
 * @internal
 */
import { constants } from "node:fs"
import { open } from "node:fs/promises"
import { checkTailUnsafe, recordStartUnsafe, scanFramesUnsafe } from "./framing.ts"
import * as Errors from "../TraceFormatError.ts"

/**
 * Open a database file for reading without ever waiting for a writer: a FIFO (named
 * pipe) or a socket is refused with a sentence, since records are read at byte offsets
 * (in parallel ranges for large files) and a pipe has none; opened without
 * `O_NONBLOCK`, a FIFO with no writer would block a thread-pool thread (and the
 * process's exit, which waits for it) until one came.
 */
const openForReading = async (file: string) => {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK)
  const st = await handle.stat().catch(() => undefined)
  if (st !== undefined && (st.isFIFO() || st.isSocket())) {
    await handle.close()
    const what = st.isFIFO() ? "a FIFO (named pipe)" : "a socket"
    throw Object.assign(new Error(`${what}, not a file: trace databases are read at byte offsets; copy it to a file first`), { code: "ESPIPE" })
  }
  return handle
}

/**
 * A slice of a database file holding only whole records: `bytes[0..end)`, starting at
 * file position `fileOffset`. `bytes` may be reused after the consumer returns, unless
 * the stream was opened with `owned: true`.
 *
 * @since 0.1.0
 * @category models
 */
export interface FrameBatch {
  readonly bytes: Uint8Array
  readonly end: number
  readonly fileOffset: number
}

/**
 * What streaming a file found: its size, and the dropped bytes of a truncated tail.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamSummary {
  readonly file: string
  readonly bytes: number
  readonly droppedBytes: number
}

/**
 * Stream a database file as batches of whole records (read-only; never creates the
 * file). Judges the tail at end of file. Throws (rejects with) `TraceFormatError`.
 * Without `owned`, the next chunk is read while the consumer works on a batch (two
 * buffers, each reused two batches later). `owned: true` gives every batch a buffer of
 * its own, which the consumer may keep or transfer to another thread (the partial record at its end is copied to the next
 * buffer, not the whole batch); with `owned`, `reuse` may give back a buffer of
 * `chunkBytes` that a consumer is done with (it is taken instead of a new one, the first
 * buffer included: no fresh pages to fault in and zero, batch after batch, range after
 * range), and `giveBack` takes the buffer a stream ends with unused (a range that ends
 * where a record ends leaves its last read empty: without it each range cost a buffer).
 *
 * `start` and `end` stream a byte range of the file (a parallel loader's share): `start`
 * must be where a record begins (`recordStartNear` finds one). With `end`, reading stops
 * there and the bytes after the last whole record before it are not judged as a tail:
 * they are the summary's `droppedBytes`, so a range that should end where a record
 * begins can check that it did (0).
 *
 * @since 0.1.0
 * @category encoding
 */
export async function* streamFrames(
  file: string,
  options?: {
    readonly chunkBytes?: number
    readonly owned?: boolean
    readonly reuse?: () => Uint8Array<ArrayBuffer> | undefined
    /** with `owned`: takes the buffer the stream ends holding, never handed over (for `reuse`) */
    readonly giveBack?: (buffer: Uint8Array<ArrayBuffer>) => void
    readonly start?: number
    readonly end?: number
  }
): AsyncGenerator<FrameBatch, StreamSummary, undefined> {
  const owned = options?.owned === true
  const chunkBytes = Math.max(1024, options?.chunkBytes ?? 4 * 1024 * 1024)
  const rangeEnd = options?.end ?? Infinity
  let handle
  try {
    handle = await openForReading(file)
  } catch (e) {
    throw (e as NodeJS.ErrnoException).code === "ENOENT"
      ? Errors.fileNotFound(file)
      : Errors.notReadable(file, 0, e)
  }
  // Without `owned`, the next read is started before a batch is yielded, into a second
  // buffer (the partial record at the batch's end copied there first): the file is read
  // while the consumer decodes, and each buffer is reused two batches later.
  let pending: Promise<{ bytesRead: number }> | undefined
  let readPos = options?.start ?? 0 // file position of the next read
  const h = handle
  // reads at explicit positions, never past the range's end (one in flight at a time)
  const readInto = (into: Uint8Array, at: number): Promise<{ bytesRead: number }> => {
    const n = Math.min(into.length - at, rangeEnd - readPos)
    if (n <= 0) return Promise.resolve({ bytesRead: 0 })
    return h.read(into, at, n, readPos).then((r) => ((readPos += r.bytesRead), r))
  }
  try {
    // the first buffer too: a parallel loader streams many ranges, one after another
    const first = owned ? options?.reuse?.() : undefined
    let buf = first !== undefined && first.length === chunkBytes ? first : new Uint8Array(chunkBytes)
    let spare: Uint8Array | undefined
    let filled = 0 // bytes valid in buf
    let bufFileOffset = options?.start ?? 0 // file position of buf[0]
    for (;;) {
      if (filled === buf.length) {
        const bigger = new Uint8Array(buf.length * 2)
        bigger.set(buf)
        buf = bigger
      }
      let read: number
      try {
        const reading = pending ?? readInto(buf, filled)
        pending = undefined
        read = (await reading).bytesRead
      } catch (e) {
        throw Errors.notReadable(file, bufFileOffset + filled, e)
      }
      filled += read
      const view = buf.subarray(0, filled)
      let whole = 0
      let stop: number
      try {
        stop = scanFramesUnsafe(view, file, bufFileOffset, (_, e) => (whole = e))
      } catch (e) {
        // a framing error mid-buffer: the whole records before it come first, so that
        // every reader reports the first error in file order, whatever the chunk size
        if (whole > 0) yield { bytes: view, end: whole, fileOffset: bufFileOffset }
        throw e
      }
      if (read === 0) {
        // the tail judged from a copy: once yielded (or given back), the buffer is the consumer's
        const tail = options?.end === undefined ? view.slice(stop) : undefined
        if (stop > 0) yield { bytes: view, end: stop, fileOffset: bufFileOffset }
        else if (owned) options?.giveBack?.(buf as Uint8Array<ArrayBuffer>)
        if (tail !== undefined) checkTailUnsafe(tail, file, bufFileOffset + stop)
        return { file, bytes: bufFileOffset + filled, droppedBytes: filled - stop }
      }
      if (stop > 0) {
        let next: Uint8Array<ArrayBuffer>
        if (owned) {
          // the partial record goes to the next buffer before this one is handed over
          const given = options?.reuse?.()
          next = given !== undefined && given.length === buf.length ? given : new Uint8Array(buf.length)
          next.set(buf.subarray(stop, filled))
        } else {
          next = spare !== undefined && spare.length === buf.length ? spare as Uint8Array<ArrayBuffer> : new Uint8Array(buf.length)
          next.set(buf.subarray(stop, filled))
          // stop > 0, so the partial record leaves room to read into
          pending = readInto(next, filled - stop)
          pending.catch(() => undefined) // awaited above, or below when the consumer stops early
          spare = buf
        }
        yield { bytes: view, end: stop, fileOffset: bufFileOffset }
        buf = next
        filled -= stop
        bufFileOffset += stop
      }
    }
  } finally {
    if (pending !== undefined) await pending.catch(() => undefined)
    await handle.close()
  }
}

/**
 * Where a record plausibly begins at or after byte `near` of a database file: the start
 * of the first chain of 16 plausible records (fewer where the file ends) within the
 * `window` bytes read there (default 1 MiB); undefined when there is none (no file, or
 * records larger than the window). A guess, for splitting a file between readers: the
 * reader of the part before it must end exactly there (`streamFrames` with `end`,
 * `droppedBytes` 0) for the split to hold.
 *
 * @since 0.1.0
 * @category encoding
 */
export const recordStartNear = async (file: string, near: number, window = 1 << 20): Promise<number | undefined> => {
  let handle
  try {
    handle = await openForReading(file)
  } catch {
    return undefined
  }
  try {
    const buf = new Uint8Array(window)
    let filled = 0
    for (;;) {
      const { bytesRead } = await handle.read(buf, filled, window - filled, near + filled)
      if (bytesRead === 0) break
      filled += bytesRead
      if (filled === window) break
    }
    const at = recordStartUnsafe(buf.subarray(0, filled), 16, filled < window)
    return at < 0 ? undefined : near + at
  } catch {
    return undefined
  } finally {
    await handle.close()
  }
}


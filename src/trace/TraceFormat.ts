/**
 * DASF's on-disk trace database format: a sequence of records, each an 8-byte
 * big-endian unsigned length followed by exactly that many bytes holding one msgpack
 * map (a `TraceEvent`). Encoding, whole-buffer decoding, and streaming from a file.
 *
 * ## Truncated tail versus "not a trace database"
 *
 * A writer killed mid-batch leaves a partial last record. Readers recover every whole
 * record before it and report the dropped bytes. The rule, applied at the first
 * incomplete record at the end of the file (its "tail"):
 *
 * - a tail shorter than the 8-byte header is truncated (recoverable) when the bytes it
 *   has could start a plausible length (length <= `maxRecordBytes` when the missing
 *   low-order bytes are zero); otherwise it is an error;
 * - a header whose length exceeds `maxRecordBytes` (64 MiB; DASF records are ~250 B)
 *   is an error (`ImplausibleLength`) wherever it appears, truncated or not: that is a
 *   file that is not a trace database (or is corrupt), not a cut-off one;
 * - a length of 0 is an error (`EmptyRecord`): no msgpack map is empty of bytes;
 * - a header with a plausible length but fewer body bytes than it says is truncated
 *   when the body is empty or its first byte is a msgpack map header (fixmap 0x80-0x8f,
 *   map16 0xde, map32 0xdf); any other first byte is an error (`NotAMap`).
 *
 * A whole record (all its bytes present) must decode as exactly one msgpack value
 * (`NotMsgpack` otherwise, including trailing bytes), that value must be a map
 * (`NotAMap`) with a string `name`, a number `timestamp` and a phase letter `phase`
 * (`NotAnEvent`). Errors carry the file and the byte offset of the record's header.
 *
 * Opening a file for reading uses flag "r": it never creates or modifies a file
 * (DASF-NOTES 18).
 *
 * The framing and the generic record decoder live in `internal/framing.ts`
 * (re-exported here; free of the Effect runtime so worker threads start fast), the
 * typed error in `TraceFormatError.ts`, the msgpack writer in `internal/msgpackWriter.ts`
 * (shared with `TraceWriter`).
 *
 * Leaves out: the specialised writer (`TraceWriter`) and readers (`TraceReader`: event
 * objects and columns), batching / appending to files (src/profiler).
 *
 * @since 0.1.0
 */
import { open } from "node:fs/promises"
import * as Effect from "effect/Effect"
import {
  checkTailUnsafe,
  type DecodedTrace,
  decodeEventUnsafe,
  decodeRecordsUnsafe,
  headerBytes,
  recordStartUnsafe,
  scanFramesUnsafe
} from "./internal/framing.ts"
import { MsgpackWriter } from "./internal/msgpackWriter.ts"
import type { TraceEvent } from "./TraceEvent.ts"
import * as Errors from "./TraceFormatError.ts"

export {
  checkTailUnsafe,
  type DecodedTrace,
  decodeEventUnsafe,
  decodeRecordsUnsafe,
  headerBytes,
  maxRecordBytes,
  readLength,
  recordStartUnsafe,
  scanFramesUnsafe
} from "./internal/framing.ts"
export {
  isTraceFormatError,
  TraceFormatError,
  type TraceFormatReason,
  type TraceFormatReasonTag
} from "./TraceFormatError.ts"

// ---------------------------------------------------------------------------
// Encoding

const writer = new MsgpackWriter()

/**
 * Encode events as framed records (length header + msgpack map each), ready to append
 * to a database file. Keys are written in DASF's order for the event's phase;
 * `timestamp` and `duration` as float64 (as DASF writes them).
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeRecords = (events: Iterable<TraceEvent>): Uint8Array => {
  const w = writer
  w.pos = 0
  for (const e of events) w.event(e)
  const out = w.buf.slice(0, w.pos)
  w.shrink(1 << 24) // don't keep a huge scratch buffer alive after one big batch
  w.pos = 0
  return out
}

// ---------------------------------------------------------------------------
// Whole buffers

/**
 * Decode a whole database held in memory.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeRecords = (
  bytes: Uint8Array,
  file = "<buffer>"
): Effect.Effect<DecodedTrace, Errors.TraceFormatError> =>
  Effect.try({
    try: () => decodeRecordsUnsafe(bytes, file),
    catch: (e) => Errors.fromUnknown(e, file)
  })

// ---------------------------------------------------------------------------
// Streaming from a file

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
 * `chunkBytes` that a consumer is done with (it is taken instead of a new one: no fresh
 * pages to fault in and zero, batch after batch).
 *
 * `start` and `end` stream a byte range of the file (a parallel loader's share): `start`
 * must be where a record begins (`recordStartNear` finds one). With `end`, reading stops
 * there and the bytes after the last whole record before it are not judged as a tail:
 * they are the summary's `droppedBytes`, so a range that should end where a record
 * begins can check that it did (0).
 *
 * @since 0.1.0
 * @category decoding
 */
export async function* streamFrames(
  file: string,
  options?: {
    readonly chunkBytes?: number
    readonly owned?: boolean
    readonly reuse?: () => Uint8Array<ArrayBuffer> | undefined
    readonly start?: number
    readonly end?: number
  }
): AsyncGenerator<FrameBatch, StreamSummary, undefined> {
  const owned = options?.owned === true
  const chunkBytes = Math.max(1024, options?.chunkBytes ?? 4 * 1024 * 1024)
  const rangeEnd = options?.end ?? Infinity
  let handle
  try {
    handle = await open(file, "r")
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
    let buf = new Uint8Array(chunkBytes)
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
        if (stop > 0) yield { bytes: view, end: stop, fileOffset: bufFileOffset }
        if (options?.end === undefined) checkTailUnsafe(view.subarray(stop), file, bufFileOffset + stop)
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
 * @category decoding
 */
export const recordStartNear = async (file: string, near: number, window = 1 << 20): Promise<number | undefined> => {
  let handle
  try {
    handle = await open(file, "r")
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

/**
 * Stream a database file's events in batches, decoded with the generic msgpack
 * decoder; returns the stream summary when done.
 *
 * @since 0.1.0
 * @category decoding
 */
export async function* streamEvents(
  file: string,
  options?: { readonly chunkBytes?: number }
): AsyncGenerator<Array<TraceEvent>, StreamSummary, undefined> {
  const frames = streamFrames(file, options)
  for (;;) {
    const next = await frames.next()
    if (next.done === true) return next.value
    const { bytes, end, fileOffset } = next.value
    const events: Array<TraceEvent> = []
    scanFramesUnsafe(bytes.subarray(0, end), file, fileOffset, (s, e) => {
      events.push(decodeEventUnsafe(bytes, s, e, file, fileOffset + s - headerBytes))
    })
    yield events
  }
}

/**
 * Read a whole database file (read-only) into events.
 *
 * @since 0.1.0
 * @category decoding
 */
export const readFilePromise = async (file: string): Promise<DecodedTrace> => {
  const events: Array<TraceEvent> = []
  const it = streamEvents(file)
  for (;;) {
    const next = await it.next()
    if (next.done === true) return { file, events, bytes: next.value.bytes, droppedBytes: next.value.droppedBytes }
    for (const e of next.value) events.push(e)
  }
}

/**
 * Read a whole database file (read-only) into events.
 *
 * @since 0.1.0
 * @category decoding
 */
export const readFile = (file: string): Effect.Effect<DecodedTrace, Errors.TraceFormatError> =>
  Effect.tryPromise({
    try: () => readFilePromise(file),
    catch: (e) => Errors.fromUnknown(e, file)
  })

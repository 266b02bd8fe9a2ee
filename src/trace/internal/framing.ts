/**
 * The framing of DASF's trace databases and the generic record decoder, without the
 * Effect runtime: record lengths, scanning of whole records, judging a truncated tail,
 * decoding one record with the generic msgpack decoder. Errors are
 * `TraceFormatError`s (`TraceFormatError.ts`). Re-exported by `TraceFormat`; used by
 * the specialised readers (`TraceReader`), which the analysis loader's worker threads
 * load (they must start fast). The rules are documented in `TraceFormat.ts`.
 *
 * @since 0.1.0
 */
import { Decoder } from "@msgpack/msgpack"
import { isPhase, isScope, type TraceEvent } from "../TraceEvent.ts"
import * as Errors from "../TraceFormatError.ts"

/**
 * Largest record a reader accepts: 64 MiB. A header that claims more is not a trace.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxRecordBytes = 64 * 1024 * 1024

/**
 * Size of a record's length header in bytes.
 *
 * @since 0.1.0
 * @category constants
 */
export const headerBytes = 8

const isMapHeader = (b: number): boolean => (b >= 0x80 && b <= 0x8f) || b === 0xde || b === 0xdf

/**
 * Read the record length at `off` (8 bytes must be present). Hot path: two 32-bit
 * reads instead of a BigInt.
 *
 * @since 0.1.0
 * @category decoding
 */
export const readLength = (bytes: Uint8Array, off: number): number =>
  (bytes[off] * 0x1000000 + (bytes[off + 1] << 16 | bytes[off + 2] << 8 | bytes[off + 3])) * 0x100000000 +
  (bytes[off + 4] * 0x1000000 + (bytes[off + 5] << 16 | bytes[off + 6] << 8 | bytes[off + 7]))

/**
 * Walk the whole records of `bytes`, calling `visit(bodyStart, bodyEnd)` for each, and
 * return the offset (into `bytes`) of the first incomplete record, `bytes.length` when
 * none. `fileOffset` is the file position of `bytes[0]`, for error messages. Throws
 * `TraceFormatError` for an implausible or zero length; does not judge the tail (see
 * `checkTailUnsafe`).
 *
 * @since 0.1.0
 * @category decoding
 */
export const scanFramesUnsafe = (
  bytes: Uint8Array,
  file: string,
  fileOffset: number,
  visit: (bodyStart: number, bodyEnd: number) => void
): number => {
  const n = bytes.length
  let off = 0
  while (off + headerBytes <= n) {
    const len = readLength(bytes, off)
    if (len > maxRecordBytes) {
      throw Errors.recordTooLong(file, fileOffset + off, len, maxRecordBytes)
    }
    if (len === 0) {
      throw Errors.emptyRecord(file, fileOffset + off)
    }
    const end = off + headerBytes + len
    if (end > n) return off
    visit(off + headerBytes, end)
    off = end
  }
  return off
}

/**
 * Judge the incomplete tail left at the end of a file (see the module comment): return
 * normally when it is a truncated record (its bytes are dropped), throw
 * `TraceFormatError` when it shows the file is not a trace database.
 *
 * @since 0.1.0
 * @category decoding
 */
export const checkTailUnsafe = (tail: Uint8Array, file: string, fileOffset: number): void => {
  if (tail.length === 0) return
  if (tail.length < headerBytes) {
    let min = 0
    for (let i = 0; i < headerBytes; i++) min = min * 256 + (i < tail.length ? tail[i] : 0)
    if (min > maxRecordBytes) {
      throw Errors.implausibleTail(file, fileOffset, tail.length, min)
    }
    return
  }
  const len = readLength(tail, 0)
  if (len > maxRecordBytes || len === 0) {
    scanFramesUnsafe(tail, file, fileOffset, () => undefined)
  }
  if (tail.length > headerBytes && !isMapHeader(tail[headerBytes])) {
    throw Errors.truncatedNotAMap(file, fileOffset, tail[headerBytes])
  }
}

// ---------------------------------------------------------------------------
// Generic decoding

const decoder = new Decoder()

/**
 * Decode one record body (`bytes[start..end)`) into a `TraceEvent` with the generic
 * msgpack decoder, validating its shape. `fileOffset` is the file position of the
 * record's header.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEventUnsafe = (
  bytes: Uint8Array,
  start: number,
  end: number,
  file: string,
  fileOffset: number
): TraceEvent => {
  let value: unknown
  try {
    value = decoder.decode(bytes.subarray(start, end))
  } catch (cause) {
    throw Errors.notMsgpack(file, fileOffset, cause)
  }
  if (typeof value !== "object" || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    const found = value === null ? "nil" : Array.isArray(value) ? "array" : value instanceof Uint8Array ? "bin" : typeof value
    throw Errors.notAMap(file, fileOffset, found)
  }
  const r = value as Record<string, unknown>
  const bad = (problem: string) => Errors.notAnEvent(file, fileOffset, problem)
  if (typeof r.name !== "string") throw bad("has no string `name`")
  if (typeof r.timestamp !== "number") throw bad(`\`${r.name}\` has no number \`timestamp\``)
  if (!isPhase(r.phase)) throw bad(`\`${r.name}\` has no phase letter (X I B E C M) in \`phase\``)
  if (r.duration !== undefined && typeof r.duration !== "number") throw bad(`\`${r.name}\` has a non-number \`duration\``)
  if (r.args === undefined || r.args === null) r.args = {}
  else if (typeof r.args !== "object" || Array.isArray(r.args)) throw bad(`\`${r.name}\` has non-map \`args\``)
  if (r.process_id === undefined) r.process_id = null
  if (r.thread_id === undefined) r.thread_id = null
  if (r.scope !== undefined && !isScope(r.scope)) delete r.scope
  return r as unknown as TraceEvent
}

/**
 * The events of one database, plus what was dropped.
 *
 * @since 0.1.0
 * @category models
 */
export interface DecodedTrace {
  readonly file: string
  readonly events: Array<TraceEvent>
  /** bytes of the file (or buffer) read */
  readonly bytes: number
  /** bytes of a truncated last record that were dropped (0 for an intact file) */
  readonly droppedBytes: number
}

/**
 * Decode a whole database held in memory. Throws `TraceFormatError`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeRecordsUnsafe = (bytes: Uint8Array, file = "<buffer>"): DecodedTrace => {
  const events: Array<TraceEvent> = []
  let headerAt = 0
  const stop = scanFramesUnsafe(bytes, file, 0, (s, e) => {
    headerAt = s - headerBytes
    events.push(decodeEventUnsafe(bytes, s, e, file, headerAt))
  })
  checkTailUnsafe(bytes.subarray(stop), file, stop)
  return { file, events, bytes: bytes.length, droppedBytes: bytes.length - stop }
}

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
 * @category encoding
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
 * @category encoding
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
 * The first offset in `bytes` where `chain` records in a row plausibly begin: each an
 * 8-byte length within the limit followed by a msgpack map header, each starting where
 * the last ends (a chain that ends exactly at `bytes.length` counts when `atEnd`: the
 * file ends there). -1 when there is none (records larger than the window, or not a
 * trace). A guess to split a file at, never trusted alone: a parallel reader checks it
 * against the records read up to it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const recordStartUnsafe = (bytes: Uint8Array, chain: number, atEnd: boolean): number => {
  const n = bytes.length
  for (let p = 0; p + headerBytes < n; p++) {
    let q = p
    let links = 0
    for (;;) {
      if (links >= chain || (atEnd && q === n && links > 0)) return p
      if (q + headerBytes >= n) break
      const len = readLength(bytes, q)
      if (len === 0 || len > maxRecordBytes || !isMapHeader(bytes[q + headerBytes])) break
      q += headerBytes + len
      links++
    }
  }
  return -1
}

/**
 * Judge the incomplete tail left at the end of a file (see the module comment): return
 * normally when it is a truncated record (its bytes are dropped), throw
 * `TraceFormatError` when it shows the file is not a trace database.
 *
 * @since 0.1.0
 * @category encoding
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

/**
 * Deepest nesting of maps and arrays a record may have, the record's own map being
 * level 1 (its `args` map level 2). Deeper records are not events (`NotAnEvent`): every
 * reader rejects them at the record's offset, before anything recursive (JSON, the
 * report, exports) can overflow its stack on them.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxNesting = 64

const replacingDecoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true })

/**
 * The generic decoder, except that a string with any non-ASCII byte is decoded by
 * `TextDecoder` (invalid UTF-8 becomes U+FFFD, a BOM stays a character), as the
 * specialised readers and `StringPool` decode it: every reader returns the same
 * string for the same bytes. (msgpack's own short-string decoder turns invalid UTF-8
 * into other characters.)
 */
const decoder = (() => {
  const d = new Decoder()
  type Strings = {
    bytes: Uint8Array
    pos: number
    decodeUtf8String(this: Strings, byteLength: number, headerOffset: number): string
  }
  const own = d as unknown as Strings
  const generic = own.decodeUtf8String
  own.decodeUtf8String = function(byteLength, headerOffset) {
    const start = this.pos + headerOffset
    const end = start + byteLength
    if (end <= this.bytes.byteLength) {
      const b = this.bytes
      for (let i = start; i < end; i++) {
        if (b[i]! > 0x7f) {
          this.pos = end
          return replacingDecoder.decode(b.subarray(start, end))
        }
      }
    }
    return generic.call(this, byteLength, headerOffset)
  }
  return d
})()

/** Is a map or array of `v` nested deeper than `maxNesting` (`v` at level `level`). */
const tooDeep = (v: unknown, level: number): boolean => {
  if (typeof v !== "object" || v === null) return false
  if (Array.isArray(v)) {
    if (level > maxNesting) return true
    for (const x of v) if (typeof x === "object" && x !== null && tooDeep(x, level + 1)) return true
    return false
  }
  const proto = Object.getPrototypeOf(v)
  if (proto !== Object.prototype && proto !== null) return false // bin, ext, timestamp: leaves
  if (level > maxNesting) return true
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k]
    if (typeof x === "object" && x !== null && tooDeep(x, level + 1)) return true
  }
  return false
}

/**
 * Is `t` a usable time: a finite number (`timestamp`), and for a duration also >= 0.
 * The one rule on anomalous times, applied by every reader (the specialised ones hand
 * such records here): a record whose `timestamp` is NaN or infinite, or whose
 * `duration` is negative, NaN or infinite, is not an event (`NotAnEvent` at its
 * offset). See docs/analysis.md ("Anomalies").
 *
 * @since 0.1.0
 * @category guards
 */
export const isTime = (t: number): boolean => t - t === 0

/** @since 0.1.0 @category guards */
export const isDuration = (t: number): boolean => t >= 0 && t - t === 0

/**
 * Decode one record body (`bytes[start..end)`) into a `TraceEvent` with the generic
 * msgpack decoder, validating its shape. `fileOffset` is the file position of the
 * record's header.
 *
 * @since 0.1.0
 * @category encoding
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
  if (!isTime(r.timestamp)) throw bad(`\`${r.name}\` has a non-finite \`timestamp\` (${r.timestamp})`)
  if (!isPhase(r.phase)) throw bad(`\`${r.name}\` has no phase letter (X I B E C M) in \`phase\``)
  if (r.duration !== undefined) {
    if (typeof r.duration !== "number") throw bad(`\`${r.name}\` has a non-number \`duration\``)
    if (!isDuration(r.duration)) throw bad(`\`${r.name}\` has a negative or non-finite \`duration\` (${r.duration})`)
  }
  if (r.args === undefined || r.args === null) r.args = {}
  else if (typeof r.args !== "object" || Array.isArray(r.args)) throw bad(`\`${r.name}\` has non-map \`args\``)
  if (tooDeep(r, 1)) throw bad(`\`${r.name}\` has args nested deeper than ${maxNesting} levels`)
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
 * @category encoding
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

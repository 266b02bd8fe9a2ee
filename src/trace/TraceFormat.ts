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
 * Leaves out: batching / appending writers (src/profiler), the specialised
 * column decoder for analysis (src/analysis/decode).
 *
 * @since 0.1.0
 */
import { open } from "node:fs/promises"
import { Decoder } from "@msgpack/msgpack"
import { Data, Effect } from "effect"
import { isPhase, isScope, type TraceEvent } from "./TraceEvent.ts"

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

/**
 * What is wrong with a file that is not a (readable) trace database.
 *
 * @since 0.1.0
 * @category errors
 */
export type TraceFormatReason =
  | "FileNotFound"
  | "NotReadable"
  | "ImplausibleLength"
  | "EmptyRecord"
  | "NotMsgpack"
  | "NotAMap"
  | "NotAnEvent"

/**
 * A trace database could not be read: `file`, byte `offset` of the offending record's
 * header (0 for open errors), a `reason` and a human `detail`.
 *
 * @since 0.1.0
 * @category errors
 */
export class TraceFormatError extends Data.TaggedError("TraceFormatError")<{
  readonly file: string
  readonly offset: number
  readonly reason: TraceFormatReason
  readonly detail: string
}> {
  override get message(): string {
    return `${this.file}: not a readable trace database: ${this.detail} (${this.reason} at byte offset ${this.offset})`
  }
}

/**
 * Guard for `TraceFormatError`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTraceFormatError = (u: unknown): u is TraceFormatError =>
  u instanceof TraceFormatError

// ---------------------------------------------------------------------------
// Encoding

/**
 * Hand-written msgpack writer for trace records. Hot path (the profiler encodes every
 * event): plain imperative code over one growing buffer, no per-record allocation
 * beyond the output. `timestamp` and `duration` are always float64, as DASF (Python)
 * writes them; other numbers are integers when they are safe integers, else float64.
 */
class Writer {
  buf = new Uint8Array(1 << 16)
  view = new DataView(this.buf.buffer)
  pos = 0
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
    this.view = new DataView(next.buffer)
  }
  byte(b: number): void {
    this.ensure(1)
    this.buf[this.pos++] = b
  }
  float64(x: number): void {
    this.ensure(9)
    this.buf[this.pos] = 0xcb
    this.view.setFloat64(this.pos + 1, x)
    this.pos += 9
  }
  number(x: number): void {
    if (!Number.isSafeInteger(x) || Object.is(x, -0)) return this.float64(x)
    this.ensure(9)
    const b = this.buf
    const v = this.view
    let p = this.pos
    if (x >= 0) {
      if (x < 128) b[p++] = x
      else if (x < 0x100) (b[p++] = 0xcc, b[p++] = x)
      else if (x < 0x10000) (b[p] = 0xcd, v.setUint16(p + 1, x), p += 3)
      else if (x < 0x100000000) (b[p] = 0xce, v.setUint32(p + 1, x), p += 5)
      else (b[p] = 0xcf, v.setBigUint64(p + 1, BigInt(x)), p += 9)
    } else {
      if (x >= -32) b[p++] = x & 0xff
      else if (x >= -128) (b[p] = 0xd0, v.setInt8(p + 1, x), p += 2)
      else if (x >= -32768) (b[p] = 0xd1, v.setInt16(p + 1, x), p += 3)
      else if (x >= -2147483648) (b[p] = 0xd2, v.setInt32(p + 1, x), p += 5)
      else (b[p] = 0xd3, v.setBigInt64(p + 1, BigInt(x)), p += 9)
    }
    this.pos = p
  }
  string(s: string): void {
    const max = s.length * 3
    this.ensure(5 + max)
    // header size depends on the byte length; reserve by the upper bound, then shift
    const hdr = max < 32 ? 1 : max < 0x100 ? 2 : max < 0x10000 ? 3 : 5
    const start = this.pos + hdr
    const { written } = textEncoder.encodeInto(s, this.buf.subarray(start))
    const b = this.buf
    let p = this.pos
    const realHdr = written < 32 ? 1 : written < 0x100 ? 2 : written < 0x10000 ? 3 : 5
    if (realHdr !== hdr) b.copyWithin(p + realHdr, start, start + written)
    if (realHdr === 1) b[p++] = 0xa0 | written
    else if (realHdr === 2) (b[p++] = 0xd9, b[p++] = written)
    else if (realHdr === 3) (b[p] = 0xda, this.view.setUint16(p + 1, written), p += 3)
    else (b[p] = 0xdb, this.view.setUint32(p + 1, written), p += 5)
    this.pos = p + written
  }
  header(n: number, fix: number, b16: number): void {
    this.ensure(5)
    if (n < 16) this.buf[this.pos++] = fix | n
    else if (n < 0x10000) (this.buf[this.pos] = b16, this.view.setUint16(this.pos + 1, n), this.pos += 3)
    else (this.buf[this.pos] = b16 + 1, this.view.setUint32(this.pos + 1, n), this.pos += 5)
  }
  value(u: unknown): void {
    switch (typeof u) {
      case "string":
        return this.string(u)
      case "number":
        return this.number(u)
      case "boolean":
        return this.byte(u ? 0xc3 : 0xc2)
      case "bigint":
        this.ensure(9)
        this.buf[this.pos] = u < 0n ? 0xd3 : 0xcf
        if (u < 0n) this.view.setBigInt64(this.pos + 1, u)
        else this.view.setBigUint64(this.pos + 1, u)
        this.pos += 9
        return
      case "object": {
        if (u === null) return this.byte(0xc0)
        if (Array.isArray(u)) {
          this.header(u.length, 0x90, 0xdc)
          for (const x of u) this.value(x)
          return
        }
        if (ArrayBuffer.isView(u)) {
          const bytes = new Uint8Array(u.buffer, u.byteOffset, u.byteLength)
          this.ensure(5 + bytes.length)
          const n = bytes.length
          if (n < 0x100) (this.buf[this.pos] = 0xc4, this.buf[this.pos + 1] = n, this.pos += 2)
          else if (n < 0x10000) (this.buf[this.pos] = 0xc5, this.view.setUint16(this.pos + 1, n), this.pos += 3)
          else (this.buf[this.pos] = 0xc6, this.view.setUint32(this.pos + 1, n), this.pos += 5)
          this.buf.set(bytes, this.pos)
          this.pos += n
          return
        }
        const entries = Object.entries(u as Record<string, unknown>).filter(([, v]) => v !== undefined)
        this.header(entries.length, 0x80, 0xde)
        for (const [k, v] of entries) {
          this.string(k)
          this.value(v)
        }
        return
      }
      default:
        return this.byte(0xc0)
    }
  }
  event(e: TraceEvent): void {
    // DASF's dataclass field order: complete events put duration after timestamp;
    // instant events carry scope after phase.
    const isX = e.phase === "X"
    const hasDuration = e.duration !== undefined || isX
    const hasScope = !isX && e.scope !== undefined
    this.header(6 + (hasDuration ? 1 : 0) + (hasScope ? 1 : 0), 0x80, 0xde)
    this.string("name")
    this.string(e.name)
    this.string("timestamp")
    this.float64(e.timestamp)
    if (isX) {
      this.string("duration")
      this.float64(e.duration ?? 0)
    }
    this.string("phase")
    this.string(e.phase)
    if (hasScope) {
      this.string("scope")
      this.string(e.scope!)
    }
    this.string("process_id")
    this.value(e.process_id)
    this.string("thread_id")
    this.value(e.thread_id)
    this.string("args")
    this.value(e.args)
    if (!isX && e.duration !== undefined) {
      this.string("duration")
      this.float64(e.duration)
    }
  }
}

const textEncoder = new TextEncoder()
const writer = new Writer()

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
  for (const e of events) {
    const at = w.pos
    w.ensure(headerBytes)
    w.pos += headerBytes
    w.event(e)
    const len = w.pos - at - headerBytes
    w.view.setUint32(at, Math.floor(len / 0x100000000))
    w.view.setUint32(at + 4, len >>> 0)
  }
  const out = w.buf.slice(0, w.pos)
  if (w.buf.length > 1 << 24) {
    // don't keep a huge scratch buffer alive after one big batch
    w.buf = new Uint8Array(1 << 16)
    w.view = new DataView(w.buf.buffer)
  }
  w.pos = 0
  return out
}

// ---------------------------------------------------------------------------
// Framing

const isMapHeader = (b: number): boolean => (b >= 0x80 && b <= 0x8f) || b === 0xde || b === 0xdf

/**
 * Read the record length at `off` (8 bytes must be present). Hot path: two 32-bit
 * reads instead of a BigInt.
 */
const readLength = (bytes: Uint8Array, off: number): number =>
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
      throw new TraceFormatError({
        file,
        offset: fileOffset + off,
        reason: "ImplausibleLength",
        detail: `record length ${len} exceeds the ${maxRecordBytes}-byte limit`
      })
    }
    if (len === 0) {
      throw new TraceFormatError({ file, offset: fileOffset + off, reason: "EmptyRecord", detail: "record length 0" })
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
      throw new TraceFormatError({
        file,
        offset: fileOffset,
        reason: "ImplausibleLength",
        detail: `${tail.length} trailing byte(s) cannot start a record header (length would be >= ${min})`
      })
    }
    return
  }
  const len = readLength(tail, 0)
  if (len > maxRecordBytes || len === 0) {
    scanFramesUnsafe(tail, file, fileOffset, () => undefined)
  }
  if (tail.length > headerBytes && !isMapHeader(tail[headerBytes])) {
    throw new TraceFormatError({
      file,
      offset: fileOffset,
      reason: "NotAMap",
      detail: `truncated record does not start with a msgpack map (first byte 0x${
        tail[headerBytes].toString(16).padStart(2, "0")
      })`
    })
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
    throw new TraceFormatError({
      file,
      offset: fileOffset,
      reason: "NotMsgpack",
      detail: `record body is not one msgpack value (${cause instanceof Error ? cause.message : String(cause)})`
    })
  }
  if (typeof value !== "object" || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    throw new TraceFormatError({
      file,
      offset: fileOffset,
      reason: "NotAMap",
      detail: `record is a msgpack ${value === null ? "nil" : Array.isArray(value) ? "array" : typeof value}, not a map`
    })
  }
  const r = value as Record<string, unknown>
  const bad = (what: string) =>
    new TraceFormatError({ file, offset: fileOffset, reason: "NotAnEvent", detail: `record map ${what}` })
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

/**
 * Decode a whole database held in memory.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeRecords = (bytes: Uint8Array, file = "<buffer>"): Effect.Effect<DecodedTrace, TraceFormatError> =>
  Effect.try({
    try: () => decodeRecordsUnsafe(bytes, file),
    catch: (e) => asTraceFormatError(e, file)
  })

const asTraceFormatError = (e: unknown, file: string): TraceFormatError =>
  e instanceof TraceFormatError ? e : new TraceFormatError({
    file,
    offset: 0,
    reason: "NotReadable",
    detail: e instanceof Error ? e.message : String(e)
  })

// ---------------------------------------------------------------------------
// Streaming from a file

/**
 * A slice of a database file holding only whole records: `bytes[0..end)`, starting at
 * file position `fileOffset`. `bytes` may be reused after the consumer returns.
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
 *
 * @since 0.1.0
 * @category decoding
 */
export async function* streamFrames(
  file: string,
  options?: { readonly chunkBytes?: number }
): AsyncGenerator<FrameBatch, StreamSummary, undefined> {
  const chunkBytes = Math.max(1024, options?.chunkBytes ?? 4 * 1024 * 1024)
  let handle
  try {
    handle = await open(file, "r")
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    throw new TraceFormatError({
      file,
      offset: 0,
      reason: code === "ENOENT" ? "FileNotFound" : "NotReadable",
      detail: code === "ENOENT" ? "no such file" : (e instanceof Error ? e.message : String(e))
    })
  }
  try {
    let buf = new Uint8Array(chunkBytes)
    let filled = 0 // bytes valid in buf
    let bufFileOffset = 0 // file position of buf[0]
    for (;;) {
      if (filled === buf.length) {
        const bigger = new Uint8Array(buf.length * 2)
        bigger.set(buf)
        buf = bigger
      }
      let read: number
      try {
        read = (await handle.read(buf, filled, buf.length - filled, null)).bytesRead
      } catch (e) {
        throw new TraceFormatError({
          file,
          offset: bufFileOffset + filled,
          reason: "NotReadable",
          detail: e instanceof Error ? e.message : String(e)
        })
      }
      filled += read
      const view = buf.subarray(0, filled)
      const stop = scanFramesUnsafe(view, file, bufFileOffset, () => undefined)
      if (read === 0) {
        if (stop > 0) yield { bytes: view, end: stop, fileOffset: bufFileOffset }
        checkTailUnsafe(view.subarray(stop), file, bufFileOffset + stop)
        return { file, bytes: bufFileOffset + filled, droppedBytes: filled - stop }
      }
      if (stop > 0) {
        yield { bytes: view, end: stop, fileOffset: bufFileOffset }
        buf.copyWithin(0, stop, filled)
        filled -= stop
        bufFileOffset += stop
      }
    }
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
export const readFile = (file: string): Effect.Effect<DecodedTrace, TraceFormatError> =>
  Effect.tryPromise({
    try: () => readFilePromise(file),
    catch: (e) => asTraceFormatError(e, file)
  })

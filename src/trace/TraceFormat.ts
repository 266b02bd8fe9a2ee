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
import * as Effect from "effect/Effect"
import {
  type DecodedTrace,
  decodeEventUnsafe,
  decodeRecordsUnsafe,
  headerBytes,
  scanFramesUnsafe
} from "./internal/framing.ts"
import { MsgpackWriter } from "./internal/msgpackWriter.ts"
import { type StreamSummary, streamFrames } from "./internal/streaming.ts"
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
 * @category encoding
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

export {
  type FrameBatch,
  recordStartNear,
  type StreamSummary,
  streamFrames
} from "./internal/streaming.ts"

/**
 * Stream a database file's events in batches, decoded with the generic msgpack
 * decoder; returns the stream summary when done.
 *
 * @since 0.1.0
 * @category encoding
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
 * @category encoding
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
 * @category encoding
 */
export const readFile = (file: string): Effect.Effect<DecodedTrace, Errors.TraceFormatError> =>
  Effect.tryPromise({
    try: () => readFilePromise(file),
    catch: (e) => Errors.fromUnknown(e, file)
  })

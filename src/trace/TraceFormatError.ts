/**
 * The one typed error of the trace layer. `TraceFormatError` says which file could not
 * be read as a trace database and where (`offset`: the byte offset of the offending
 * record's header, 0 for open errors); its `reason` says why, as one of the tagged
 * reasons below. Every message is written here, by the constructors at the end, so
 * framing, decoders, streaming and loaders all report the same way.
 *
 * Only `effect/Data` is imported: the analysis loader's worker threads load this module
 * and must start fast. A reason's fields are plain values (a nested `cause` is kept as
 * the value that was thrown), so a worker can send them to the main thread, which
 * rebuilds the error with `fromReasonFields`.
 *
 * The rules that decide between a truncated tail and "not a trace database" are
 * documented in `TraceFormat.ts`.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"

/**
 * The file does not exist (opening for reading never creates it).
 *
 * @since 0.1.0
 * @category errors
 */
export class FileNotFound extends Data.TaggedError("FileNotFound")<{
  readonly message: string
}> {}

/**
 * The file could not be opened or read, or reading failed in some other way; `cause`
 * is what was thrown.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotReadable extends Data.TaggedError("NotReadable")<{
  readonly cause: unknown
  readonly message: string
}> {}

/**
 * A record header claims more than `maxRecordBytes`, or trailing bytes cannot start a
 * plausible header. `length` is the (least) length the header would give.
 *
 * @since 0.1.0
 * @category errors
 */
export class ImplausibleLength extends Data.TaggedError("ImplausibleLength")<{
  readonly length: number
  readonly message: string
}> {}

/**
 * A record header says 0 bytes: no msgpack map is empty of bytes.
 *
 * @since 0.1.0
 * @category errors
 */
export class EmptyRecord extends Data.TaggedError("EmptyRecord")<{
  readonly message: string
}> {}

/**
 * A whole record's body is not exactly one msgpack value; `cause` is the msgpack
 * decoder's error.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotMsgpack extends Data.TaggedError("NotMsgpack")<{
  readonly cause: unknown
  readonly message: string
}> {}

/**
 * A record holds a msgpack value that is not a map (`found` names what it is), or a
 * truncated record does not start with a map header.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotAMap extends Data.TaggedError("NotAMap")<{
  readonly found: string
  readonly message: string
}> {}

/**
 * A record's map is not a trace event: `problem` says which field is missing or of the
 * wrong type.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotAnEvent extends Data.TaggedError("NotAnEvent")<{
  readonly problem: string
  readonly message: string
}> {}

/**
 * Reading the file failed for a reason that is not about its bytes (memory ran out, a
 * decode thread died, a bug): `cause` is what was thrown, kept as it was; the error's
 * `file` is the file being read, its `offset` how far reading had got (the message
 * names no byte: none is at fault).
 *
 * @since 0.1.0
 * @category errors
 */
export class Unexpected extends Data.TaggedError("Unexpected")<{
  readonly cause: unknown
  readonly message: string
}> {}

/**
 * Why a file is not a readable trace database.
 *
 * @since 0.1.0
 * @category errors
 */
export type TraceFormatReason =
  | FileNotFound
  | NotReadable
  | ImplausibleLength
  | EmptyRecord
  | NotMsgpack
  | NotAMap
  | NotAnEvent
  | Unexpected

/**
 * The tag of a `TraceFormatReason`.
 *
 * @since 0.1.0
 * @category errors
 */
export type TraceFormatReasonTag = TraceFormatReason["_tag"]

/**
 * A trace database could not be read: `file`, byte `offset` of the offending record's
 * header (0 for open errors) and the `reason`.
 *
 * @since 0.1.0
 * @category errors
 */
export class TraceFormatError extends Data.TaggedError("TraceFormatError")<{
  readonly file: string
  readonly offset: number
  readonly reason: TraceFormatReason
  readonly message: string
}> {}

/**
 * Guard for `TraceFormatError`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTraceFormatError = (u: unknown): u is TraceFormatError => u instanceof TraceFormatError

// ---------------------------------------------------------------------------
// Constructors: the messages

const textOf = (u: unknown): string => (u instanceof Error ? u.message : String(u))

const make = (file: string, offset: number, reason: TraceFormatReason): TraceFormatError =>
  new TraceFormatError({
    file,
    offset,
    reason,
    // a file that cannot be opened has no byte at fault: say so without an offset
    message: reason._tag === "Unexpected" ? `${file}: reading failed: ${reason.message} (Unexpected)` : `${file}: not a readable trace database: ${reason.message} (${
      reason._tag === "FileNotFound" || (reason._tag === "NotReadable" && offset === 0) ? reason._tag : `${reason._tag} at byte offset ${offset}`
    })`
  })

/** @since 0.1.0 @category constructors */
export const fileNotFound = (file: string): TraceFormatError =>
  make(file, 0, new FileNotFound({ message: "no such file" }))

/** @since 0.1.0 @category constructors */
export const notReadable = (file: string, offset: number, cause: unknown): TraceFormatError =>
  make(file, offset, new NotReadable({ cause, message: textOf(cause) }))

/**
 * Reading `file` failed for a reason not about its bytes; `offset`: how far reading
 * had got.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unexpected = (file: string, offset: number, cause: unknown): TraceFormatError =>
  make(file, offset, new Unexpected({ cause, message: cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause) }))

/** @since 0.1.0 @category constructors */
export const recordTooLong = (file: string, offset: number, length: number, limit: number): TraceFormatError =>
  make(
    file,
    offset,
    new ImplausibleLength({ length, message: `record length ${length} exceeds the ${limit}-byte limit` })
  )

/** @since 0.1.0 @category constructors */
export const implausibleTail = (file: string, offset: number, trailing: number, length: number): TraceFormatError =>
  make(
    file,
    offset,
    new ImplausibleLength({
      length,
      message: `${trailing} trailing byte(s) cannot start a record header (length would be >= ${length})`
    })
  )

/** @since 0.1.0 @category constructors */
export const emptyRecord = (file: string, offset: number): TraceFormatError =>
  make(file, offset, new EmptyRecord({ message: "record length 0" }))

/** @since 0.1.0 @category constructors */
export const notMsgpack = (file: string, offset: number, cause: unknown): TraceFormatError =>
  make(
    file,
    offset,
    new NotMsgpack({ cause, message: `record body is not one msgpack value (${textOf(cause)})` })
  )

/** `found`: what the record holds instead ("array", "nil", ...). @since 0.1.0 @category constructors */
export const notAMap = (file: string, offset: number, found: string): TraceFormatError =>
  make(file, offset, new NotAMap({ found, message: `record is a msgpack ${found}, not a map` }))

/** A truncated record whose first body byte is not a map header. @since 0.1.0 @category constructors */
export const truncatedNotAMap = (file: string, offset: number, firstByte: number): TraceFormatError => {
  const found = `0x${firstByte.toString(16).padStart(2, "0")}`
  return make(
    file,
    offset,
    new NotAMap({ found, message: `truncated record does not start with a msgpack map (first byte ${found})` })
  )
}

/** `problem`: what the map lacks, e.g. "has no string `name`". @since 0.1.0 @category constructors */
export const notAnEvent = (file: string, offset: number, problem: string): TraceFormatError =>
  make(file, offset, new NotAnEvent({ problem, message: `record map ${problem}` }))

/**
 * A `TraceFormatError` as plain fields (structured-cloneable), for sending from a
 * worker thread; `fromReasonFields` rebuilds it.
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceFormatErrorFields {
  readonly file: string
  readonly offset: number
  readonly reason: { readonly _tag: TraceFormatReasonTag; readonly [field: string]: unknown }
}

/** @since 0.1.0 @category constructors */
export const toReasonFields = (e: TraceFormatError): TraceFormatErrorFields => {
  const r = e.reason as TraceFormatReason & { readonly cause?: unknown }
  // an Error survives structured cloning; anything else might not
  const cause = r.cause instanceof Error || r.cause === undefined ? r.cause : String(r.cause)
  return { file: e.file, offset: e.offset, reason: { ...r, _tag: r._tag, message: r.message, cause } }
}

/** @since 0.1.0 @category constructors */
export const fromReasonFields = (f: TraceFormatErrorFields): TraceFormatError => {
  const r = f.reason as Record<string, unknown>
  const message = String(r.message)
  const reason: TraceFormatReason = (() => {
    switch (f.reason._tag) {
      case "FileNotFound":
        return new FileNotFound({ message })
      case "NotReadable":
        return new NotReadable({ cause: r.cause, message })
      case "ImplausibleLength":
        return new ImplausibleLength({ length: Number(r.length), message })
      case "EmptyRecord":
        return new EmptyRecord({ message })
      case "NotMsgpack":
        return new NotMsgpack({ cause: r.cause, message })
      case "NotAMap":
        return new NotAMap({ found: String(r.found), message })
      case "NotAnEvent":
        return new NotAnEvent({ problem: String(r.problem), message })
      case "Unexpected":
        return new Unexpected({ cause: r.cause, message })
    }
  })()
  return make(f.file, f.offset, reason)
}

/**
 * `e` itself when it is a `TraceFormatError`, else a `NotReadable` one for `file` that
 * keeps `e` as its cause.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromUnknown = (e: unknown, file: string, offset = 0): TraceFormatError =>
  isTraceFormatError(e) ? e : notReadable(file, offset, e)

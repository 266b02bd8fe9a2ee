/**
 * Adapter that reads trace databases into `TraceEvent`s for the report, the exports
 * and the figures, with `src/trace`'s decoder (truncated tails are dropped and counted),
 * turning its `TraceFormatError` into this layer's `ReportInputError`. It is the one
 * place those modules touch files.
 *
 * @since 0.1.0
 */
import { basename } from "node:path"
import { Data } from "effect"
import { decodeRecordsUnsafe, isTraceFormatError, readFilePromise } from "../trace/TraceFormat.ts"
import type { DecodedTrace } from "../trace/TraceFormat.ts"
import type { TraceEvent } from "../trace/TraceEvent.ts"
import type { TraceFormatError } from "../trace/TraceFormatError.ts"

/**
 * A trace database could not be read or decoded; `error` is the trace layer's own error
 * (file, byte offset, reason), kept as a value.
 *
 * @since 0.1.0
 * @category errors
 */
export class TraceUnreadable extends Data.TaggedError("TraceUnreadable")<{
  readonly error: TraceFormatError
  readonly message: string
}> {}

/**
 * A command-line argument of the report commands names something that does not exist.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidArgument extends Data.TaggedError("InvalidArgument")<{
  readonly argument: string
  readonly detail: string
  readonly message: string
}> {}

/**
 * Anything else a report module rejected with (an I/O error writing the output, ...),
 * as the CLI met it; `cause` is the original error.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unexpected extends Data.TaggedError("Unexpected")<{
  readonly cause: unknown
  readonly message: string
}> {}

/**
 * Why the report's input was rejected.
 *
 * @since 0.1.0
 * @category errors
 */
export type ReportInputErrorReason = TraceUnreadable | InvalidArgument | Unexpected

/**
 * The report layer's error: which input (`file`, or the argument) and where (`offset`,
 * 0 when it is not about a byte), with a tagged `reason`. The constructors below write
 * the messages.
 *
 * @since 0.1.0
 * @category errors
 */
export class ReportInputError extends Data.TaggedError("ReportInputError")<{
  readonly file: string
  readonly offset: number
  readonly reason: ReportInputErrorReason
  readonly message: string
}> {
  /** A trace database could not be read or decoded. */
  static traceUnreadable(error: TraceFormatError): ReportInputError {
    // the trace layer's message (file, byte offset, why), not a re-formatting of its fields
    const message = error.message
    return new ReportInputError({ file: error.file, offset: error.offset, reason: new TraceUnreadable({ error, message }), message })
  }
  /** An argument names something that does not exist. */
  static invalidArgument(argument: string, detail: string): ReportInputError {
    const message = `${argument}: ${detail}`
    return new ReportInputError({ file: argument, offset: 0, reason: new InvalidArgument({ argument, detail, message }), message })
  }
  /** Any other rejection of a report module (see `Unexpected`). */
  static unexpected(cause: unknown, file = ""): ReportInputError {
    const detail = cause instanceof Error ? cause.message : String(cause)
    const message = file === "" ? detail : `${file}: ${detail}`
    return new ReportInputError({ file, offset: 0, reason: new Unexpected({ cause, message }), message })
  }
}

/**
 * Whether `u` is a ReportInputError.
 *
 * @since 0.1.0
 * @category guards
 */
export const isReportInputError = (u: unknown): u is ReportInputError => u instanceof ReportInputError

/**
 * Events of several databases, plus how many bytes of truncated tails were dropped.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadedEvents {
  readonly events: Array<TraceEvent>
  readonly files: ReadonlyArray<string>
  readonly droppedBytes: number
}

/** The trace layer's errors become ReportInputErrors; anything else is a bug, thrown as is. */
const fromTraceError = (e: unknown): unknown => (isTraceFormatError(e) ? ReportInputError.traceUnreadable(e) : e)

/**
 * Decode one database's bytes with `src/trace`'s decoder. Throws `ReportInputError`
 * (file and byte offset) for a record that is not a trace event.
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodeEventsUnsafe = (
  bytes: Uint8Array,
  file: string
): { readonly events: Array<TraceEvent>; readonly droppedBytes: number } => {
  try {
    const r = decodeRecordsUnsafe(bytes, file)
    return { events: r.events, droppedBytes: r.droppedBytes }
  } catch (e) {
    throw fromTraceError(e)
  }
}

/**
 * Read and decode trace databases (read-only), in order.
 *
 * @since 0.1.0
 * @category encoding
 */
export const loadEvents = async (files: ReadonlyArray<string>): Promise<LoadedEvents> => {
  const events: Array<TraceEvent> = []
  let dropped = 0
  for (const f of files) {
    let r: DecodedTrace
    try {
      r = await readFilePromise(f)
    } catch (e) {
      throw fromTraceError(e)
    }
    for (const e of r.events) events.push(e)
    dropped += r.droppedBytes
  }
  return { events, files, droppedBytes: dropped }
}

/**
 * A run name from database file names: `{name}-TracePlugin-{host}.msgpack` -> `name`.
 *
 * @since 0.1.0
 * @category getters
 */
export const runName = (files: ReadonlyArray<string>): string => {
  const first = files[0]
  if (first === undefined) return "Tessera run"
  const b = basename(first).replace(/\.msgpack$/, "")
  return b.replace(/-(TracePlugin|ResourceMonitor).*$/, "") || b
}

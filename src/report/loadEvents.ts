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

/**
 * A trace database could not be read or decoded.
 *
 * @since 0.1.0
 * @category errors
 */
export class ReportInputError extends Data.TaggedError("ReportInputError")<{
  readonly file: string
  readonly offset: number
  readonly reason: string
}> {
  override get message(): string {
    return `${this.file}: ${this.reason} (byte offset ${this.offset})`
  }
}

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

const fromTraceError = (e: unknown, file: string): ReportInputError =>
  isTraceFormatError(e)
    ? new ReportInputError({ file: e.file, offset: e.offset, reason: `${e.reason._tag}: ${e.reason.message}` })
    : new ReportInputError({ file, offset: 0, reason: String(e) })

/**
 * Decode one database's bytes with `src/trace`'s decoder. Throws `ReportInputError`
 * (file and byte offset) for a record that is not a trace event.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEventsUnsafe = (
  bytes: Uint8Array,
  file: string
): { readonly events: Array<TraceEvent>; readonly droppedBytes: number } => {
  try {
    const r = decodeRecordsUnsafe(bytes, file)
    return { events: r.events, droppedBytes: r.droppedBytes }
  } catch (e) {
    throw fromTraceError(e, file)
  }
}

/**
 * Read and decode trace databases (read-only), in order.
 *
 * @since 0.1.0
 * @category decoding
 */
export const loadEvents = async (files: ReadonlyArray<string>): Promise<LoadedEvents> => {
  const events: Array<TraceEvent> = []
  let dropped = 0
  for (const f of files) {
    let r: DecodedTrace
    try {
      r = await readFilePromise(f)
    } catch (e) {
      throw fromTraceError(e, f)
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

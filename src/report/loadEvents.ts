/**
 * Adapter that reads trace databases into `ReportEvent`s for the report, the exports
 * and the figures. It is the one place those modules touch files, so swapping it for
 * `src/trace`'s decoder (once that lands) changes nothing else.
 *
 * Until then it frames records itself (8-byte big-endian length + one msgpack map, the
 * DASF format) with @msgpack/msgpack; a truncated tail is dropped and counted.
 *
 * @since 0.1.0
 */
import { readFile } from "node:fs/promises"
import { basename } from "node:path"
import { decode } from "@msgpack/msgpack"
import { Data } from "effect"
import type { ReportEvent } from "./ReportData.ts"

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
  readonly events: Array<ReportEvent>
  readonly files: ReadonlyArray<string>
  readonly droppedBytes: number
}

/**
 * Decode one database's bytes. Throws `ReportInputError` for a record that is not a
 * msgpack map with a `name`, `timestamp` and `phase`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEventsUnsafe = (
  bytes: Uint8Array,
  file: string
): { readonly events: Array<ReportEvent>; readonly droppedBytes: number } => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const events: Array<ReportEvent> = []
  let off = 0
  while (off + 8 <= bytes.length) {
    const len = Number(view.getBigUint64(off))
    if (off + 8 + len > bytes.length) break
    let rec: unknown
    try {
      rec = decode(bytes.subarray(off + 8, off + 8 + len))
    } catch (e) {
      throw new ReportInputError({ file, offset: off, reason: `record is not valid msgpack: ${String(e)}` })
    }
    const r = rec as Record<string, unknown> | null
    if (r === null || typeof r !== "object" || typeof r["name"] !== "string" || typeof r["timestamp"] !== "number" || typeof r["phase"] !== "string") {
      throw new ReportInputError({ file, offset: off, reason: "record is not a trace event (needs name, timestamp, phase)" })
    }
    events.push(r as unknown as ReportEvent)
    off += 8 + len
  }
  return { events, droppedBytes: bytes.length - off }
}

/**
 * Read and decode trace databases, in order.
 *
 * @since 0.1.0
 * @category decoding
 */
export const loadEvents = async (files: ReadonlyArray<string>): Promise<LoadedEvents> => {
  const events: Array<ReportEvent> = []
  let dropped = 0
  for (const f of files) {
    let bytes: Uint8Array
    try {
      bytes = await readFile(f)
    } catch (e) {
      throw new ReportInputError({ file: f, offset: 0, reason: `cannot read: ${(e as Error).message}` })
    }
    const r = decodeEventsUnsafe(bytes, f)
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

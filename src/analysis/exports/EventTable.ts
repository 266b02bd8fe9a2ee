/**
 * CSV and Arrow IPC export of trace events as one flat table: the event fields
 * (`name, phase, timestamp, start, duration, process_id, thread_id, scope`) followed by
 * one `args.<key>` column per argument key seen in the trace. `start` is the event's
 * start in seconds (`timestamp - duration` for complete events, whose timestamp is the
 * END). Numeric argument columns are Float64; all other values are strings (arrays
 * and maps as JSON), dictionary-encoded in Arrow.
 *
 * Leaves out: analyses (those are tables from `src/analysis`, which can be written the
 * same way with `tableToCsv`).
 *
 * @since 0.1.0
 */
import { Dictionary, Float64, Int32, Table, Utf8, makeVector, tableToIPC, vectorFromArray } from "apache-arrow"
import type { Vector } from "apache-arrow"
import type { TraceEvent } from "../../trace/TraceEvent.ts"

const asRecord = (u: unknown): Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : {}

const str = (u: unknown): string | null =>
  u === null || u === undefined ? null : typeof u === "string" ? u : typeof u === "object" ? JSON.stringify(u) : String(u)

/**
 * Build the flat event table. Plain loops: one pass to find argument keys and their
 * types, one to fill columns.
 *
 * @since 0.1.0
 * @category constructors
 */
export const eventTable = (events: ReadonlyArray<TraceEvent>): Table => {
  const n = events.length
  const argKind = new Map<string, "number" | "string">()
  for (const e of events) {
    for (const [k, v] of Object.entries(asRecord(e.args))) {
      if (v === null || v === undefined) continue
      const kind = typeof v === "number" || typeof v === "bigint" ? "number" : "string"
      const prev = argKind.get(k)
      if (prev === undefined) argKind.set(k, kind)
      else if (prev !== kind) argKind.set(k, "string")
    }
  }
  const name = new Array<string>(n)
  const phase = new Array<string>(n)
  const timestamp = new Float64Array(n)
  const start = new Float64Array(n)
  const duration = new Array<number | null>(n)
  const pid = new Array<string | null>(n)
  const tid = new Array<string | null>(n)
  const scope = new Array<string | null>(n)
  const argCols = new Map<string, Array<number | string | null>>()
  for (const k of argKind.keys()) argCols.set(k, new Array(n).fill(null))
  for (let i = 0; i < n; i++) {
    const e = events[i]!
    name[i] = e.name
    phase[i] = e.phase
    timestamp[i] = e.timestamp
    const d = e.phase === "X" && typeof e.duration === "number" ? e.duration : null
    duration[i] = d
    start[i] = e.timestamp - (d ?? 0)
    pid[i] = str(e.process_id)
    tid[i] = str(e.thread_id)
    scope[i] = str(e.scope)
    for (const [k, v] of Object.entries(asRecord(e.args))) {
      if (v === null || v === undefined) continue
      argCols.get(k)![i] = argKind.get(k) === "number" ? Number(v) : str(v)
    }
  }
  const dict = () => new Dictionary(new Utf8(), new Int32())
  const columns: Record<string, Vector> = {
    name: vectorFromArray(name, dict()),
    phase: vectorFromArray(phase, dict()),
    timestamp: makeVector(timestamp),
    start: makeVector(start),
    duration: vectorFromArray(duration, new Float64()),
    process_id: vectorFromArray(pid, dict()),
    thread_id: vectorFromArray(tid, dict()),
    scope: vectorFromArray(scope, dict())
  }
  for (const [k, col] of argCols) {
    columns[`args.${k}`] = argKind.get(k) === "number"
      ? vectorFromArray(col as Array<number | null>, new Float64())
      : vectorFromArray(col as Array<string | null>, new Utf8())
  }
  return new Table(columns)
}

const csvCell = (v: unknown): string => {
  if (v === null || v === undefined) return ""
  const s = typeof v === "number" ? (Number.isFinite(v) ? String(v) : "") : String(v)
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

/**
 * Any Arrow table as CSV text (RFC 4180 quoting, header row, empty cell for null).
 *
 * @since 0.1.0
 * @category encoding
 */
export const tableToCsv = (table: Table): string => {
  const names = table.schema.fields.map((f) => f.name)
  const cols = names.map((c) => table.getChild(c)!)
  const lines = [names.map(csvCell).join(",")]
  for (let i = 0; i < table.numRows; i++) {
    lines.push(cols.map((c) => csvCell(c.get(i))).join(","))
  }
  return lines.join("\n") + "\n"
}

/**
 * Any Arrow table as an Arrow IPC file (the random-access "file" format).
 *
 * @since 0.1.0
 * @category encoding
 */
export const tableToArrowFile = (table: Table): Uint8Array => tableToIPC(table, "file")

/**
 * The driver's segments (`Driver` X events, written by Tessera's Trace layer; see
 * docs/engine.md "Driver segments") as a table: what the main thread did between and
 * around the tasks (pool start, setup, graph build, between computes, submit, wait) and
 * each worker's start-up on its own row.
 *
 * Loading: `Driver` events are few (about five per compute), so the column decoder keeps
 * them whole (generic decoder, in the same pass as everything else: a file is read
 * once) and this module turns them into segments. DASF traces have none.
 *
 * @since 0.1.0
 */
import { vectorFromArray } from "apache-arrow/factories"
import { Field } from "apache-arrow/schema"
import { Table } from "apache-arrow/table"
import { List, Utf8 } from "apache-arrow/type"
import type { TraceEvent } from "../trace/TraceEvent.ts"
import { buildTable } from "./internal/access.ts"

/**
 * Event name of the driver's segments.
 *
 * @since 0.1.0
 * @category constants
 */
export const driverEventName = "Driver"

/**
 * One driver segment, as loaded.
 *
 * @since 0.1.0
 * @category models
 */
export interface DriverSegment {
  readonly host: string
  /** `driver`, or a worker's thread id (`worker start`) */
  readonly worker: string
  readonly key: string
  readonly activity: string
  readonly start: number
  readonly end: number
  readonly compute: number
  readonly tasks: number
  readonly dependencies: ReadonlyArray<string>
}

/**
 * The segment of a `Driver` X event (`undefined` for any other event).
 *
 * @since 0.1.0
 * @category encoding
 */
export const driverSegmentOf = (e: TraceEvent): DriverSegment | undefined => {
  if (e.name !== driverEventName || e.phase !== "X") return undefined
  const a = (e.args ?? {}) as Record<string, unknown>
  const duration = typeof e.duration === "number" ? e.duration : 0
  const deps = Array.isArray(a.dependencies) ? a.dependencies.filter((d): d is string => typeof d === "string") : []
  return {
    host: String(e.process_id ?? ""),
    worker: String(e.thread_id ?? ""),
    key: typeof a.key === "string" ? a.key : "",
    activity: typeof a.activity === "string" ? a.activity : "",
    start: e.timestamp - duration,
    end: e.timestamp,
    compute: typeof a.compute === "number" ? a.compute : NaN,
    tasks: typeof a.tasks === "number" ? a.tasks : 0,
    dependencies: deps
  }
}

/**
 * The segments as a table sorted by start: host, worker, key, activity (dictionary
 * Utf8), start, end, duration, compute, tasks (Float64), dependencies (List of Utf8).
 *
 * @since 0.1.0
 * @category constructors
 */
export const driverTable = (segments: ReadonlyArray<DriverSegment>): Table => {
  const s = [...segments].sort((a, b) => a.start - b.start || a.end - b.end)
  const base = buildTable({
    host: { kind: "string", values: s.map((x) => x.host) },
    worker: { kind: "string", values: s.map((x) => x.worker) },
    key: { kind: "string", values: s.map((x) => x.key) },
    activity: { kind: "string", values: s.map((x) => x.activity) },
    start: { kind: "float", values: s.map((x) => x.start) },
    end: { kind: "float", values: s.map((x) => x.end) },
    duration: { kind: "float", values: s.map((x) => x.end - x.start) },
    compute: { kind: "float", values: s.map((x) => x.compute) },
    tasks: { kind: "float", values: s.map((x) => x.tasks) }
  })
  const deps = vectorFromArray(s.map((x) => [...x.dependencies]), new List(new Field("item", new Utf8(), true)))
  const cols: Record<string, ReturnType<Table["getChildAt"]>> = {}
  for (const f of base.schema.fields) cols[f.name] = base.getChild(f.name)
  return new Table({ ...cols, dependencies: deps } as never)
}

/**
 * The segments of a driver table (as loaded), back as plain objects, sorted by start.
 *
 * @since 0.1.0
 * @category getters
 */
export const driverSegments = (table: Table | undefined): Array<DriverSegment> => {
  if (table === undefined || table.numRows === 0) return []
  const out: Array<DriverSegment> = []
  for (const r of table) {
    const row = r as unknown as Record<string, unknown>
    const deps = row.dependencies as { toArray(): Array<string | null> } | null
    out.push({
      host: String(row.host ?? ""),
      worker: String(row.worker ?? ""),
      key: String(row.key ?? ""),
      activity: String(row.activity ?? ""),
      start: Number(row.start),
      end: Number(row.end),
      compute: row.compute === null ? NaN : Number(row.compute),
      tasks: row.tasks === null ? 0 : Number(row.tasks),
      dependencies: deps === null ? [] : deps.toArray().filter((d): d is string => d !== null)
    })
  }
  return out
}

/** An empty driver table (a trace without `Driver` events). @since 0.1.0 @category constructors */
export const emptyDriverTable = (): Table => driverTable([])

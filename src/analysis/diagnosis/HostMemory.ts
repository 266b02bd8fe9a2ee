/**
 * The host memory samples `memory-pressure` reads: per host, over time, the memory in use
 * (`host_memory.total` − `host_memory.available`, the args Tessera's ResourceMonitor adds
 * to DASF's in every `Resource Usage` sample) and the traced processes' own (`memory`:
 * the resident set of the process and its cluster workers on the host).
 *
 * Where they come from: the loaded `resources` table, when it has the two columns; else
 * the `Resource Usage` events themselves (`hostMemoryOfEvents`), read again from the
 * resource monitor's files (`readHostMemory`: files named `…ResourceMonitor…`, as Tessera
 * and DASF name them; a few hundred small records a minute of run), because the loader's
 * resource columns are DASF's fixed list. DASF's own traces have neither arg: no samples,
 * and the rule stays silent.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { basename } from "node:path"
import type { TraceEvent } from "../../trace/TraceEvent.ts"
import { readFilePromise } from "../../trace/TraceFormat.ts"
import { codesOf, floatsOf } from "../internal/access.ts"

/**
 * One host's memory samples, in time order: `time` (epoch seconds, the trace's clock),
 * `used` (bytes in use: total − available), `own` (bytes the traced processes held,
 * NaN where unknown) and the host's `total` (bytes; the largest sample's).
 *
 * @since 0.1.0
 * @category models
 */
export interface HostMemory {
  readonly host: string
  readonly time: Float64Array
  readonly used: Float64Array
  readonly own: Float64Array
  readonly total: number
}

/** the two args' names (ResourceMonitor's `HostMemoryArgs`) @since 0.1.0 */
export const totalArg = "host_memory.total"
/** @since 0.1.0 */
export const availableArg = "host_memory.available"

type Row = { host: string; time: number; total: number; available: number; own: number }

const byHost = (rows: ReadonlyArray<Row>): Array<HostMemory> => {
  const hosts = new Map<string, Array<Row>>()
  for (const r of rows) {
    if (!(r.total > 0) || !(r.available >= 0) || !Number.isFinite(r.time)) continue
    let a = hosts.get(r.host)
    if (a === undefined) hosts.set(r.host, a = [])
    a.push(r)
  }
  return [...hosts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([host, a]) => {
    a.sort((x, y) => x.time - y.time)
    return {
      host,
      time: Float64Array.from(a, (r) => r.time),
      used: Float64Array.from(a, (r) => Math.max(0, r.total - r.available)),
      own: Float64Array.from(a, (r) => r.own),
      total: a.reduce((m, r) => Math.max(m, r.total), 0)
    }
  })
}

const num = (u: unknown): number => (typeof u === "number" ? u : typeof u === "bigint" ? Number(u) : NaN)

const rowsOf = (events: Iterable<TraceEvent>, shift: number, rows: Array<Row>): void => {
  for (const e of events) {
    if (e.name !== "Resource Usage") continue
    const a = e.args as Record<string, unknown>
    if (!(totalArg in a)) continue
    rows.push({ host: String(e.process_id ?? ""), time: e.timestamp + shift, total: num(a[totalArg]), available: num(a[availableArg]), own: num(a.memory) })
  }
}

/**
 * The samples of `Resource Usage` events that carry the host's memory (`shift`: seconds
 * added to every time, a file's clock shift).
 *
 * @since 0.1.0
 * @category constructors
 */
export const hostMemoryOfEvents = (events: Iterable<TraceEvent>, shift = 0): Array<HostMemory> => {
  const rows: Array<Row> = []
  rowsOf(events, shift, rows)
  return byHost(rows)
}

/**
 * The samples of a loaded `resources` table, when it has the two columns (undefined
 * where it has not: the loader keeps DASF's columns).
 *
 * @since 0.1.0
 * @category constructors
 */
export const hostMemoryOfTable = (resources: Table | undefined): Array<HostMemory> | undefined => {
  const t = resources?.getChild(totalArg) ?? null
  const a = resources?.getChild(availableArg) ?? null
  if (resources === undefined || t === null || a === null) return undefined
  const n = resources.numRows
  const total = floatsOf(t, n)
  const available = floatsOf(a, n)
  const time = floatsOf(resources.getChild("timestamp"), n)
  const own = floatsOf(resources.getChild("memory"), n)
  const host = codesOf(resources.getChild("host"), n)
  const rows = Array.from({ length: n }, (_, i) => ({
    host: host.codes[i]! >= 0 ? host.at(host.codes[i]!) : "",
    time: time[i]!,
    total: total[i]!,
    available: available[i]!,
    own: own[i]!
  }))
  return byHost(rows)
}

/**
 * Read the samples from the resource monitor's files among `files` (named
 * `…ResourceMonitor…`), each shifted by its clock's shift (`shifts`, by file).
 *
 * @since 0.1.0
 * @category constructors
 */
export const readHostMemory = async (files: ReadonlyArray<string>, shifts: ReadonlyMap<string, number> = new Map()): Promise<Array<HostMemory>> => {
  const rows: Array<Row> = []
  for (const file of files) {
    if (!basename(file).includes("ResourceMonitor")) continue
    rowsOf((await readFilePromise(file)).events, shifts.get(file) ?? 0, rows)
  }
  return byHost(rows)
}

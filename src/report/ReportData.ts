/**
 * The report's input model: trace events (DASF field names) folded into compact
 * columnar arrays — one typed array per field, strings interned into small tables —
 * so that a 1,000,000-event trace becomes a few flat arrays that serialise into the
 * HTML page without per-row objects and repeated keys.
 *
 * Leaves out: reading files (see `src/report/LoadEvents.ts`) and every analysis that
 * needs joins (bottlenecks, critical path) — those come from `src/analysis`.
 *
 * Conventions: `Compute` X events carry the task's END in `timestamp` (DASF takes the
 * timestamp when the task reaches memory), so start = timestamp - duration. All times
 * in this model are seconds relative to `t0`, the earliest instant in the trace.
 *
 * @since 0.1.0
 */
import { keySplit } from "../trace/KeySplit.ts"
import type { TraceEvent } from "../trace/TraceEvent.ts"

/**
 * Tasks (one per `Compute` event), columnar. `cpuTime` is NaN where the trace has none.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskColumns {
  readonly start: Float64Array
  readonly end: Float64Array
  readonly worker: Int32Array
  readonly fn: Int32Array
  readonly size: Float64Array
  readonly cpuTime: Float64Array
  readonly key: Array<string>
}

/**
 * `Managed Memory` samples per worker, columnar.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryColumns {
  readonly time: Float64Array
  readonly worker: Int32Array
  readonly bytes: Float64Array
  readonly chunks: Float64Array
}

/**
 * Names of the `Resource Usage` metrics the report plots, with units.
 *
 * @since 0.1.0
 * @category models
 */
export const resourceMetrics = [
  { field: "cpu", title: "CPU", unit: "%" },
  { field: "memory", title: "Memory", unit: "bytes" },
  { field: "gpu_utilization", title: "GPU utilisation", unit: "%" },
  { field: "gpu_memory_used", title: "GPU memory", unit: "bytes" },
  { field: "host_net_io.read_bps", title: "Network read", unit: "bytes/s" },
  { field: "host_net_io.write_bps", title: "Network write", unit: "bytes/s" },
  { field: "host_disk_io.read_bps", title: "Disk read", unit: "bytes/s" },
  { field: "host_disk_io.write_bps", title: "Disk write", unit: "bytes/s" }
] as const

/**
 * `Resource Usage` samples, columnar; one value column per metric of
 * `resourceMetrics` present in the trace (NaN where a sample lacks it).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResourceColumns {
  readonly time: Float64Array
  readonly host: Int32Array
  readonly values: Record<string, Float64Array>
}

/**
 * Everything the report shows, derived from events in one pass.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReportData {
  readonly title: string
  readonly sources: ReadonlyArray<string>
  readonly t0: number
  readonly wall: number
  readonly hosts: ReadonlyArray<string>
  readonly workers: ReadonlyArray<string>
  readonly functions: ReadonlyArray<string>
  readonly eventCounts: Readonly<Record<string, number>>
  readonly tasks: TaskColumns
  readonly memory: MemoryColumns
  readonly resources: ResourceColumns
  readonly dot: string | undefined
}

const asRecord = (u: unknown): Record<string, unknown> =>
  typeof u === "object" && u !== null ? (u as Record<string, unknown>) : {}

const num = (u: unknown): number => (typeof u === "number" ? u : typeof u === "bigint" ? Number(u) : NaN)

const interner = () => {
  const index = new Map<string, number>()
  const names: Array<string> = []
  return {
    names,
    id: (s: string): number => {
      let i = index.get(s)
      if (i === undefined) {
        i = names.length
        names.push(s)
        index.set(s, i)
      }
      return i
    }
  }
}

/**
 * Fold trace events into the report model.
 *
 * The loop is plain imperative code on purpose: it runs once per event (1M+ for the
 * benchmark), and a functional pipeline would allocate per event.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEvents = (
  events: ReadonlyArray<TraceEvent>,
  options: { readonly title?: string; readonly sources?: ReadonlyArray<string> } = {}
): ReportData => {
  const hosts = interner()
  const workers = interner()
  const fns = interner()
  const counts: Record<string, number> = {}
  let nTask = 0
  let nMem = 0
  let nRes = 0
  let t0 = Infinity
  let t1 = -Infinity
  let dot: string | undefined
  for (const e of events) {
    counts[e.name] = (counts[e.name] ?? 0) + 1
    if (e.name === "Compute" && e.phase === "X") nTask++
    else if (e.name === "Managed Memory") nMem++
    else if (e.name === "Resource Usage") nRes++
    const dur = e.phase === "X" ? num(e.duration) : 0
    const start = e.timestamp - (Number.isFinite(dur) ? dur : 0)
    if (start < t0) t0 = start
    if (e.timestamp > t1) t1 = e.timestamp
    if (dot === undefined) {
      const d = asRecord(e.args)["dot"]
      if (typeof d === "string") dot = d
    }
  }
  if (!Number.isFinite(t0)) {
    t0 = 0
    t1 = 0
  }
  const tasks: TaskColumns = {
    start: new Float64Array(nTask),
    end: new Float64Array(nTask),
    worker: new Int32Array(nTask),
    fn: new Int32Array(nTask),
    size: new Float64Array(nTask),
    cpuTime: new Float64Array(nTask),
    key: new Array<string>(nTask)
  }
  const memory: MemoryColumns = {
    time: new Float64Array(nMem),
    worker: new Int32Array(nMem),
    bytes: new Float64Array(nMem),
    chunks: new Float64Array(nMem)
  }
  const values: Record<string, Float64Array> = {}
  const resources: ResourceColumns = { time: new Float64Array(nRes), host: new Int32Array(nRes), values }
  let it = 0
  let im = 0
  let ir = 0
  for (const e of events) {
    const host = String(e.process_id ?? "")
    if (e.name === "Compute" && e.phase === "X") {
      const a = asRecord(e.args)
      const dur = num(e.duration)
      const d = Number.isFinite(dur) ? dur : 0
      hosts.id(host)
      tasks.start[it] = e.timestamp - d - t0
      tasks.end[it] = e.timestamp - t0
      tasks.worker[it] = workers.id(String(e.thread_id ?? host))
      const key = String(a["key"] ?? "")
      tasks.fn[it] = fns.id(typeof a["name"] === "string" ? a["name"] : functionOfKey(key))
      tasks.size[it] = num(a["size"])
      tasks.cpuTime[it] = num(a["cpu_time"])
      tasks.key[it] = key
      it++
    } else if (e.name === "Managed Memory") {
      const a = asRecord(e.args)
      hosts.id(host)
      memory.time[im] = e.timestamp - t0
      memory.worker[im] = workers.id(String(e.thread_id ?? host))
      memory.bytes[im] = num(a["size"])
      memory.chunks[im] = num(a["tasks"])
      im++
    } else if (e.name === "Resource Usage") {
      const a = asRecord(e.args)
      resources.time[ir] = e.timestamp - t0
      resources.host[ir] = hosts.id(host)
      for (const m of resourceMetrics) {
        const v = a[m.field]
        if (v === undefined || v === null) continue
        let col = values[m.field]
        if (col === undefined) {
          col = new Float64Array(nRes).fill(NaN)
          values[m.field] = col
        }
        col[ir] = num(v)
      }
      ir++
    }
  }
  return {
    title: options.title ?? "Tessera run",
    sources: options.sources ?? [],
    t0,
    wall: t1 - t0,
    hosts: hosts.names,
    workers: workers.names,
    functions: fns.names,
    eventCounts: counts,
    tasks,
    memory,
    resources,
    dot
  }
}

/**
 * Function name of a task key, for traces whose `Compute` events carry no `name`: the
 * trace layer's `keySplit` (dask's `key_split`), the rule the profiler writes with and
 * the analysis reads with: `"('mean_chunk-ab12…', 0, 1)"` -> `"mean_chunk"`.
 *
 * @since 0.1.0
 * @category getters
 */
export const functionOfKey: (key: string) => string = keySplit

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
import { stagesOfDot } from "../analysis/StageSummary.ts"
import { directionOf, type TransferRow } from "../analysis/Transfers.ts"
import { keySplit } from "../trace/KeySplit.ts"
import type { TraceEvent } from "../trace/TraceEvent.ts"

/**
 * Tasks (one per `Compute` event), columnar. `cpuTime` is NaN where the trace has none.
 * `stage` indexes `ReportData.stages` (-1: the task has no stage); `gather` and
 * `transfer` are the seconds of the task's gather (inputs) and transfer (result out)
 * phases from `args.startstops` (NaN without them); `bytesIn` is the sum of its
 * dependencies' output sizes (0 without dependencies); `peakMemory` and `ioBytes`
 * are `args.peak_memory` and `args.io_bytes` (bytes, NaN where absent).
 *
 * @since 0.1.0
 * @category models
 */
export interface ReportTaskColumns {
  readonly start: Float64Array
  readonly end: Float64Array
  readonly worker: Int32Array
  readonly fn: Int32Array
  readonly size: Float64Array
  readonly cpuTime: Float64Array
  readonly key: Array<string>
  readonly stage: Int32Array
  readonly gather: Float64Array
  readonly transfer: Float64Array
  readonly bytesIn: Float64Array
  readonly peakMemory: Float64Array
  readonly ioBytes: Float64Array
  /** 1 where the task erred (`state` "erred": its kernel threw), else 0 */
  readonly erred: Uint8Array
}

/**
 * A task that erred (`Compute` event with `state` "erred"): the task failed the run.
 * `task` indexes the task columns; `error` is its message (`args.error`, else
 * `args.exception`; "" where the trace has none), `traceback` the stack on the thread
 * that ran it (`args.traceback`; "" where absent). Times are relative to `t0`.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskFailure {
  readonly task: number
  readonly key: string
  readonly function: string
  readonly stage: string | undefined
  readonly worker: string
  readonly start: number
  readonly end: number
  readonly error: string
  readonly traceback: string
}

/**
 * The driver's segments (`Driver` X events; src/analysis/Driver.ts), columnar, in start
 * order: `thread` indexes `ReportData.driverThreads` (`driver`, or a worker's thread
 * for its `worker start`), `activity` indexes `ReportData.activities`, `compute` is the
 * compute number the segment belongs to (NaN where absent), `tasks` the tasks a `wait`
 * ran. Times are relative to `t0` like the tasks'.
 *
 * @since 0.1.0
 * @category models
 */
export interface DriverColumns {
  readonly start: Float64Array
  readonly end: Float64Array
  readonly thread: Int32Array
  readonly activity: Int32Array
  readonly compute: Float64Array
  readonly tasks: Float64Array
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
  /** bytes a GPU worker holds on its device (Tessera's `device` arg; NaN for other workers) */
  readonly device: Float64Array
}

/**
 * `Transfer` events (cluster peer fetches, GPU host↔device copies), columnar, times
 * relative to `t0`: `worker` indexes `ReportData.workers` (the receiving row, a GPU
 * worker's for its copies both ways); `peer` is the sending worker's row ("" for a
 * device copy); `direction` is `peer`, `host-to-device` or `device-to-host`; `keys` the
 * moved keys joined by ", ".
 *
 * @since 0.1.0
 * @category models
 */
export interface TransferColumns {
  readonly start: Float64Array
  readonly end: Float64Array
  readonly worker: Int32Array
  readonly bytes: Float64Array
  readonly nKeys: Int32Array
  readonly peer: Array<string>
  readonly direction: Array<string>
  readonly keys: Array<string>
}

/**
 * A cluster worker's clock offset to the scheduler (`Clock Offset` events), summarised
 * per worker: samples, the last offset and its uncertainty, the range of offsets seen.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClockSummary {
  readonly worker: string
  readonly name: string
  readonly samples: number
  /** seconds: the last sample's offset (worker clock − scheduler clock) and uncertainty */
  readonly offset: number
  readonly uncertainty: number
  readonly minOffset: number
  readonly maxOffset: number
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
  readonly tasks: ReportTaskColumns
  readonly memory: MemoryColumns
  readonly resources: ResourceColumns
  readonly dot: string | undefined
  /** stage names (`args.stage`), in order of first appearance */
  readonly stages: ReadonlyArray<string>
  /** the pipeline graph's stages (`dot`'s nodes, in the order the pipeline runs them); empty without a graph */
  readonly pipelineStages: ReadonlyArray<string>
  /** the tasks that erred, in task order (empty for a run that did not fail) */
  readonly failures: ReadonlyArray<TaskFailure>
  readonly driver: DriverColumns
  /** thread names of the driver's segments */
  readonly driverThreads: ReadonlyArray<string>
  /** driver activities (`pool start`, `setup`, `wait`, ...) */
  readonly activities: ReadonlyArray<string>
  readonly transfers: TransferColumns
  /** per cluster worker, in worker order; empty outside cluster runs */
  readonly clocks: ReadonlyArray<ClockSummary>
  /** the workers with device memory or device copies (GPU workers), in worker order */
  readonly gpuWorkers: ReadonlyArray<string>
  /**
   * `Compute` events left out because their times are unusable ({@link usableTaskTimes}):
   * the page says how many. Absent or 0: none.
   */
  readonly leftOutTasks?: number
}

/**
 * Longest task the report believes, in seconds (about 31 years): a longer one (a
 * duration of 1e303 s) is a broken record, not a task.
 *
 * @since 0.1.0
 * @category models
 */
export const maxTaskSeconds = 1e9

/**
 * Whether a task's absolute start and end (seconds) can be drawn: its end finite, its
 * start finite or missing (NaN: a point at its end, as an erred task without a duration)
 * and its span under {@link maxTaskSeconds}. A task that fails this is left out of the
 * report and counted (`ReportData.leftOutTasks`): one `Infinity` would stretch the
 * run's time axis past every other task and cannot be written as JSON.
 *
 * @since 0.1.0
 * @category models
 */
export const usableTaskTimes = (start: number, end: number): boolean =>
  Number.isFinite(end) && start !== Infinity && start !== -Infinity && !(Math.abs(end - start) >= maxTaskSeconds)

/**
 * One transfer as the builders take it (times absolute): the analyses' row.
 *
 * @since 0.1.0
 * @category models
 */
export type TransferInput = TransferRow

/**
 * Transfer columns from transfers (any order; sorted by start here), worker rows
 * interned with `worker`, times made relative to `t0`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const transferColumns = (xs: ReadonlyArray<TransferInput>, worker: (w: string) => number, t0: number): TransferColumns => {
  const s = [...xs].sort((a, b) => a.start - b.start || a.stop - b.stop)
  const n = s.length
  const out: TransferColumns = {
    start: new Float64Array(n),
    end: new Float64Array(n),
    worker: new Int32Array(n),
    bytes: new Float64Array(n),
    nKeys: new Int32Array(n),
    peer: new Array<string>(n),
    direction: new Array<string>(n),
    keys: new Array<string>(n)
  }
  for (let i = 0; i < n; i++) {
    const x = s[i]!
    out.start[i] = x.start - t0
    out.end[i] = x.stop - t0
    out.worker[i] = worker(x.worker)
    out.bytes[i] = x.bytes
    out.nKeys[i] = x.keys.length
    out.peer[i] = x.peer ?? ""
    out.direction[i] = directionOf(x.peer, x.direction)
    out.keys[i] = x.keys.join(", ")
  }
  return out
}

/**
 * Per-worker clock summaries from `Clock Offset` samples (see {@link ClockSummary}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const clockSummaries = (
  xs: ReadonlyArray<{ readonly worker: string; readonly name: string; readonly time: number; readonly offset: number; readonly uncertainty: number }>
): Array<ClockSummary> => {
  const by = new Map<string, Array<(typeof xs)[number]>>()
  for (const x of xs) {
    if (!Number.isFinite(x.offset)) continue
    let l = by.get(x.worker)
    if (l === undefined) by.set(x.worker, l = [])
    l.push(x)
  }
  return [...by.entries()]
    .sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }))
    .map(([worker, l]) => {
      const last = l.reduce((a, b) => (b.time >= a.time ? b : a))
      const offsets = l.map((x) => x.offset)
      return {
        worker,
        name: last.name,
        samples: l.length,
        offset: last.offset,
        uncertainty: last.uncertainty,
        minOffset: Math.min(...offsets),
        maxOffset: Math.max(...offsets)
      }
    })
}

/**
 * The GPU workers: rows with `Managed Memory` device bytes or device copies.
 *
 * @since 0.1.0
 * @category getters
 */
export const gpuWorkersOf = (workers: ReadonlyArray<string>, memory: MemoryColumns, transfers: TransferColumns): Array<string> => {
  const gpu = new Set<number>()
  for (let i = 0; i < memory.time.length; i++) if (Number.isFinite(memory.device[i]!)) gpu.add(memory.worker[i]!)
  for (let i = 0; i < transfers.start.length; i++) if (transfers.direction[i] !== "peer") gpu.add(transfers.worker[i]!)
  return workers.filter((_, i) => gpu.has(i))
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
 * The seconds of phase `action` (`gather`, `compute`, `transfer`) in a Compute event's
 * `startstops` (NaN without one).
 *
 * @since 0.1.0
 * @category getters
 */
export const phaseSeconds = (startstops: unknown, action: string): number => {
  if (!Array.isArray(startstops)) return NaN
  for (const p of startstops) {
    const r = asRecord(p)
    if (r["action"] === action) {
      const d = num(r["stop"]) - num(r["start"])
      return Number.isFinite(d) && d >= 0 ? d : NaN
    }
  }
  return NaN
}

/**
 * Bytes in per task: the sum, over its dependencies, of the output size of the
 * dependency's latest execution (a key can repeat in a trace); dependencies that are
 * not tasks of the trace count 0 — the analyses' rule for "Bytes In"
 * (src/analysis, `bytes_in` in docs/queries.md).
 *
 * @since 0.1.0
 * @category constructors
 */
export const bytesInOf = (
  key: ArrayLike<string>,
  end: Float64Array,
  size: Float64Array,
  dependencies: (i: number) => ReadonlyArray<string>
): Float64Array => {
  const n = end.length
  const latest = new Map<string, number>()
  for (let i = 0; i < n; i++) {
    const j = latest.get(key[i]!)
    if (j === undefined || end[i]! >= end[j]!) latest.set(key[i]!, i)
  }
  const out = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    let sum = 0
    for (const d of dependencies(i)) {
      const j = latest.get(d)
      if (j !== undefined && Number.isFinite(size[j]!)) sum += size[j]!
    }
    out[i] = sum
  }
  return out
}

/**
 * Empty driver columns (a trace without `Driver` events).
 *
 * @since 0.1.0
 * @category constructors
 */
export const emptyDriver = (): DriverColumns => ({
  start: new Float64Array(0),
  end: new Float64Array(0),
  thread: new Int32Array(0),
  activity: new Int32Array(0),
  compute: new Float64Array(0),
  tasks: new Float64Array(0),
  key: []
})

/**
 * Driver columns from segments (any order; sorted by start here), times made relative
 * to `t0`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const driverColumns = (
  segments: ReadonlyArray<{
    readonly worker: string
    readonly activity: string
    readonly start: number
    readonly end: number
    readonly compute: number
    readonly tasks: number
    readonly key: string
  }>,
  t0: number
): { readonly driver: DriverColumns; readonly threads: Array<string>; readonly activities: Array<string> } => {
  const threads = interner()
  const activities = interner()
  const s = [...segments].sort((a, b) => a.start - b.start || a.end - b.end)
  const n = s.length
  const driver: DriverColumns = {
    start: new Float64Array(n),
    end: new Float64Array(n),
    thread: new Int32Array(n),
    activity: new Int32Array(n),
    compute: new Float64Array(n),
    tasks: new Float64Array(n),
    key: new Array<string>(n)
  }
  for (let i = 0; i < n; i++) {
    const x = s[i]!
    driver.start[i] = x.start - t0
    driver.end[i] = x.end - t0
    driver.thread[i] = threads.id(x.worker)
    driver.activity[i] = activities.id(x.activity)
    driver.compute[i] = x.compute
    driver.tasks[i] = x.tasks
    driver.key[i] = x.key
  }
  return { driver, threads: threads.names, activities: activities.names }
}

/**
 * An erred task's error and traceback from its `Compute` event's args: `error` (else
 * `exception`) and `traceback`, as strings ("" where absent).
 *
 * @since 0.1.0
 * @category getters
 */
export const failureText = (args: unknown): { readonly error: string; readonly traceback: string } => {
  const a = asRecord(args)
  const text = (u: unknown): string => {
    if (typeof u === "string") return u
    if (u === undefined || u === null) return ""
    try {
      return JSON.stringify(u) ?? String(u)
    } catch {
      return String(u)
    }
  }
  return { error: text(a["error"] ?? a["exception"]), traceback: text(a["traceback"]) }
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
  const stages = interner()
  const counts: Record<string, number> = {}
  let nTask = 0
  let nMem = 0
  let nRes = 0
  let t0 = Infinity
  let t1 = -Infinity
  let leftOut = 0
  let dot: string | undefined
  // a Compute event whose times cannot be drawn: left out (and counted), here and below
  const unusable = (e: TraceEvent) => e.name === "Compute" && e.phase === "X" && !usableTaskTimes(e.timestamp - num(e.duration), e.timestamp)
  for (const e of events) {
    counts[e.name] = (counts[e.name] ?? 0) + 1
    if (unusable(e)) {
      leftOut++
      continue
    }
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
  const nan = () => new Float64Array(nTask).fill(NaN)
  const tasks: ReportTaskColumns = {
    start: new Float64Array(nTask),
    end: new Float64Array(nTask),
    worker: new Int32Array(nTask),
    fn: new Int32Array(nTask),
    size: new Float64Array(nTask),
    cpuTime: new Float64Array(nTask),
    key: new Array<string>(nTask),
    stage: new Int32Array(nTask).fill(-1),
    gather: nan(),
    transfer: nan(),
    bytesIn: new Float64Array(nTask),
    peakMemory: nan(),
    ioBytes: nan(),
    erred: new Uint8Array(nTask)
  }
  const failures: Array<TaskFailure> = []
  const deps = new Array<ReadonlyArray<string>>(nTask)
  const segments: Array<Parameters<typeof driverColumns>[0][number]> = []
  const memory: MemoryColumns = {
    time: new Float64Array(nMem),
    worker: new Int32Array(nMem),
    bytes: new Float64Array(nMem),
    chunks: new Float64Array(nMem),
    device: new Float64Array(nMem)
  }
  const transfers: Array<TransferInput> = []
  const clocks: Array<Parameters<typeof clockSummaries>[0][number]> = []
  const values: Record<string, Float64Array> = {}
  const resources: ResourceColumns = { time: new Float64Array(nRes), host: new Int32Array(nRes), values }
  let it = 0
  let im = 0
  let ir = 0
  for (const e of events) {
    const host = String(e.process_id ?? "")
    if (unusable(e)) continue
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
      const stage = a["stage"]
      if (typeof stage === "string") tasks.stage[it] = stages.id(stage)
      tasks.gather[it] = phaseSeconds(a["startstops"], "gather")
      tasks.transfer[it] = phaseSeconds(a["startstops"], "transfer")
      tasks.peakMemory[it] = num(a["peak_memory"])
      tasks.ioBytes[it] = num(a["io_bytes"])
      if (a["state"] === "erred") {
        tasks.erred[it] = 1
        failures.push({
          task: it,
          key,
          function: fns.names[tasks.fn[it]!]!,
          stage: typeof stage === "string" ? stage : undefined,
          worker: workers.names[tasks.worker[it]!]!,
          start: tasks.start[it]!,
          end: tasks.end[it]!,
          ...failureText(a)
        })
      }
      const ds = a["dependencies"]
      deps[it] = Array.isArray(ds) ? ds.filter((x): x is string => typeof x === "string") : []
      it++
    } else if (e.name === "Driver" && e.phase === "X") {
      const a = asRecord(e.args)
      const dur = num(e.duration)
      const d = Number.isFinite(dur) ? dur : 0
      segments.push({
        worker: String(e.thread_id ?? ""),
        activity: typeof a["activity"] === "string" ? a["activity"] : "",
        start: e.timestamp - d,
        end: e.timestamp,
        compute: num(a["compute"]),
        tasks: Number.isFinite(num(a["tasks"])) ? num(a["tasks"]) : 0,
        key: typeof a["key"] === "string" ? a["key"] : ""
      })
    } else if (e.name === "Managed Memory") {
      const a = asRecord(e.args)
      hosts.id(host)
      memory.time[im] = e.timestamp - t0
      memory.worker[im] = workers.id(String(e.thread_id ?? host))
      memory.bytes[im] = num(a["size"])
      memory.chunks[im] = num(a["tasks"])
      memory.device[im] = num(a["device"])
      im++
    } else if (e.name === "Transfer" && e.phase === "X") {
      const a = asRecord(e.args)
      const stop = Number.isFinite(num(a["stop"])) ? num(a["stop"]) : e.timestamp
      const start = Number.isFinite(num(a["start"])) ? num(a["start"]) : stop - (Number.isFinite(num(e.duration)) ? num(e.duration) : 0)
      const str = (u: unknown) => (typeof u === "string" ? u : null)
      transfers.push({
        worker: str(a["worker"]) ?? String(e.thread_id ?? host),
        peer: str(a["peer"]),
        direction: str(a["direction"]),
        keys: Array.isArray(a["keys"]) ? a["keys"].map(String) : [],
        bytes: num(a["bytes"]),
        start,
        stop
      })
    } else if (e.name === "Clock Offset") {
      const a = asRecord(e.args)
      clocks.push({ worker: String(e.thread_id ?? host), name: String(a["worker"] ?? ""), time: e.timestamp, offset: num(a["offset"]), uncertainty: num(a["uncertainty"]) })
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
  tasks.bytesIn.set(bytesInOf(tasks.key, tasks.end, tasks.size, (i) => deps[i]!))
  const drv = driverColumns(segments, t0)
  const tr = transferColumns(transfers, workers.id, t0)
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
    dot,
    stages: stages.names,
    pipelineStages: dot === undefined ? [] : stagesOfDot(dot),
    failures,
    driver: drv.driver,
    driverThreads: drv.threads,
    activities: drv.activities,
    transfers: tr,
    clocks: clockSummaries(clocks),
    gpuWorkers: gpuWorkersOf(workers.names, memory, tr),
    leftOutTasks: leftOut
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

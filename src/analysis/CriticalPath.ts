/**
 * The critical path: the chain of dependent steps whose summed durations is longest,
 * i.e. the chain that bounded the run however many workers there were. The graph is
 * rebuilt from each task's `dependencies` (DASF writes `dependents` empty:
 * DASF-NOTES 13). A key computed more than once counts with its latest execution
 * (Tessera's traces give every execution its own key: `k#2`, ...). Dependencies on keys
 * that are not in the trace are ignored; keys on a cycle (only in corrupt traces) are
 * left out.
 *
 * With the driver's segments (Tessera's `Driver` events, Driver.ts) the driver is part
 * of the graph: its segments other than `wait` (setup, pool start, graph build, between
 * computes, submit) are steps too, each depending on the one before it and on the tasks
 * the driver waited for (the previous compute's requested tasks); and every task
 * depends on the driver segment that last ended before it started on its host (the
 * compute's `submit`: the driver handed it over). So a pipeline of many computes has one
 * path through all of them, in time order, and the driver's time between computes is on
 * it. Without driver events (DASF's traces) the path is over tasks only, as before.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { type DriverSegment, driverSegments } from "./Driver.ts"
import { buildTable } from "./internal/access.ts"
import { cmpStr, gpuLabel, str, type Tables, taskView } from "./internal/taskView.ts"

/**
 * The path as task rows (indices into the task table), first task first, and its
 * length in seconds (driver steps included, when the trace has driver events).
 *
 * @since 0.1.0
 * @category models
 */
export interface CriticalPathResult {
  readonly rows: ReadonlyArray<number>
  readonly length: number
}

/**
 * One step of the critical path: a task (its row in the task table) or a driver segment.
 *
 * @since 0.1.0
 * @category models
 */
export type CriticalStep =
  | { readonly _tag: "Task"; readonly row: number }
  | { readonly _tag: "Driver"; readonly segment: DriverSegment }

/**
 * The critical path as steps, first first, and its length (sum of the steps' durations).
 *
 * @since 0.1.0
 * @category models
 */
export interface CriticalPathSteps {
  readonly steps: ReadonlyArray<CriticalStep>
  readonly length: number
}

// slack for clocks of different threads when matching a task to the driver segment before it
const EPS = 1e-4

/**
 * Compute the critical path as steps (tasks and driver segments). Ties are broken by the
 * smaller key, so the result is deterministic.
 *
 * @since 0.1.0
 * @category analysis
 */
export const criticalPathSteps = (tables: Tables): CriticalPathSteps => {
  const v = taskView(tables.tasks)
  const K = v.key.size
  const all = driverSegments(tables.driver)
  const waits = new Map<string, ReadonlyArray<string>>()
  for (const s of all) if (s.activity === "wait") waits.set(s.key, s.dependencies)
  // driver-row segments and worker start-ups; `wait` spans a whole compute: not a step
  const drv = all.filter((s) => s.activity !== "wait")
  const D = drv.length
  const N = K + D
  // latest execution per key
  const rowOf = new Int32Array(K).fill(-1)
  for (let i = 0; i < v.n; i++) {
    const k = v.key.codes[i]
    if (k >= 0 && (rowOf[k] < 0 || v.end[i] >= v.end[rowOf[k]])) rowOf[k] = i
  }
  const present = (x: number) => (x < K ? rowOf[x] >= 0 : true)
  const keyAt = (x: number): string => (x < K ? v.key.at(x) : drv[x - K]!.key)
  const dur = (x: number) => (x < K ? Math.max(0, v.duration[rowOf[x]] || 0) : Math.max(0, drv[x - K]!.end - drv[x - K]!.start))
  const indeg = new Int32Array(N)
  const succ: Array<Array<number>> = Array.from({ length: N }, () => [])
  const preds: Array<Array<number>> = Array.from({ length: N }, () => [])
  const edge = (from: number, to: number, seen: Set<number>) => {
    if (from === to || seen.has(from) || !present(from)) return
    seen.add(from)
    succ[from].push(to)
    preds[to].push(from)
    indeg[to]++
  }
  // driver segments by key, and task keys by string (driver dependencies name task keys)
  const drvIndex = new Map<string, number>()
  drv.forEach((s, j) => drvIndex.set(s.key, K + j))
  let taskIndex: Map<string, number> | undefined
  const taskCode = (key: string): number => {
    if (taskIndex === undefined) {
      taskIndex = new Map()
      for (let k = 0; k < K; k++) taskIndex.set(v.key.at(k), k)
    }
    return taskIndex.get(key) ?? -1
  }
  // segments by row (host + "\t" + thread: the driver's, each worker's start-ups), by end
  const rows = new Map<string, Array<number>>()
  drv.forEach((s, j) => {
    const id = `${s.host}\t${s.worker}`
    let g = rows.get(id)
    if (g === undefined) rows.set(id, g = [])
    g.push(j)
  })
  for (const g of rows.values()) g.sort((a, b) => drv[a]!.end - drv[b]!.end)
  // the segment of that row that last ended before time t
  const gate = (host: string, worker: string, t: number): number => {
    const g = rows.get(`${host}\t${worker}`)
    if (g === undefined) return -1
    let lo = 0
    let hi = g.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (drv[g[mid]!]!.end <= t + EPS) lo = mid + 1
      else hi = mid
    }
    return lo > 0 ? K + g[lo - 1]! : -1
  }
  for (let k = 0; k < K; k++) {
    const r = rowOf[k]
    if (r < 0) continue
    const seen = new Set<number>()
    for (let j = v.depOffsets[r]; j < v.depOffsets[r + 1]; j++) {
      const d = v.deps[j]
      if (d >= 0) edge(d, k, seen)
    }
    // what the task waited for besides its inputs: the driver handing it over, and its
    // worker booting
    const host = str(v.host, v.host.codes[r]) ?? ""
    const byDriver = gate(host, "driver", v.start[r])
    if (byDriver >= 0) edge(byDriver, k, seen)
    const byWorker = gate(host, str(v.worker, v.worker.codes[r]) ?? "", v.start[r])
    if (byWorker >= 0) edge(byWorker, k, seen)
  }
  drv.forEach((s, j) => {
    const seen = new Set<number>()
    if (s.worker !== "driver") {
      const g = gate(s.host, "driver", s.start) // a worker start-up follows the driver's segment before it
      if (g >= 0) edge(g, K + j, seen)
    }
    const add = (key: string, depth: number): void => {
      const x = drvIndex.get(key)
      if (x !== undefined) return edge(x, K + j, seen)
      const through = waits.get(key) // a `wait` passes on to what it depends on
      if (through !== undefined && depth < 4) return through.forEach((d) => add(d, depth + 1))
      const t = taskCode(key)
      if (t >= 0) edge(t, K + j, seen)
    }
    for (const d of s.dependencies) add(d, 0)
  })
  const dist = new Float64Array(N).fill(-Infinity)
  const from = new Int32Array(N).fill(-1)
  const queue: Array<number> = []
  for (let x = 0; x < N; x++) if (present(x) && indeg[x] === 0) queue.push(x)
  for (let q = 0; q < queue.length; q++) {
    const x = queue[q]
    let best = 0
    let bestFrom = -1
    for (const d of preds[x]) {
      if (bestFrom < 0 || dist[d] > best || (dist[d] === best && cmpStr(keyAt(d), keyAt(bestFrom)) < 0)) {
        best = dist[d]
        bestFrom = d
      }
    }
    dist[x] = best + dur(x)
    from[x] = bestFrom
    for (const s of succ[x]) if (--indeg[s] === 0) queue.push(s)
  }
  let last = -1
  for (const x of queue) {
    if (last < 0 || dist[x] > dist[last] || (dist[x] === dist[last] && cmpStr(keyAt(x), keyAt(last)) < 0)) last = x
  }
  if (last < 0) return { steps: [], length: 0 }
  const chain: Array<CriticalStep> = []
  for (let x = last; x >= 0; x = from[x]) {
    chain.push(x < K ? { _tag: "Task", row: rowOf[x] } : { _tag: "Driver", segment: drv[x - K]! })
  }
  chain.reverse()
  return { steps: chain, length: dist[last] }
}

/**
 * Compute the critical path (longest duration-weighted dependency chain) as task rows;
 * see {@link criticalPathSteps} for the driver steps too.
 *
 * @since 0.1.0
 * @category analysis
 */
export const criticalPathRows = (tables: Tables): CriticalPathResult => {
  const { length, steps } = criticalPathSteps(tables)
  return { rows: steps.flatMap((s) => (s._tag === "Task" ? [s.row] : [])), length }
}

/**
 * The critical path as a table, one row per step in chain order: Step, Host, GPU,
 * Task Key, Function, Start (s from begin), Duration (s), Share of path (%),
 * Cumulative (s). "Start" is relative to the earliest task start (or driver segment
 * start). A driver step has GPU `driver` and Function `Driver (<activity>)`.
 *
 * @since 0.1.0
 * @category analysis
 */
export const criticalPath = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  const { length, steps } = criticalPathSteps(tables)
  let t0 = Infinity
  for (let i = 0; i < v.n; i++) if (v.start[i] < t0) t0 = v.start[i]
  for (const s of driverSegments(tables.driver)) if (s.start < t0) t0 = s.start
  const durOf = (s: CriticalStep) => (s._tag === "Task" ? v.duration[s.row] : s.segment.end - s.segment.start)
  let cum = 0
  const cumulative = steps.map((s) => (cum += Math.max(0, durOf(s) || 0)))
  const pick = <A>(s: CriticalStep, task: (r: number) => A, driver: (d: DriverSegment) => A): A =>
    s._tag === "Task" ? task(s.row) : driver(s.segment)
  return buildTable({
    "Step": { kind: "int", values: steps.map((_, i) => i + 1) },
    "Host": { kind: "string", values: steps.map((s) => pick(s, (r) => str(v.host, v.host.codes[r]), (d) => d.host)) },
    "GPU": { kind: "string", values: steps.map((s) => pick(s, (r) => gpuLabel(str(v.worker, v.worker.codes[r]) ?? undefined), (d) => d.worker)) },
    "Task Key": { kind: "string", values: steps.map((s) => pick(s, (r) => str(v.key, v.key.codes[r]), (d) => d.key)) },
    "Function": { kind: "string", values: steps.map((s) => pick(s, (r) => str(v.fn, v.fn.codes[r]), (d) => `Driver (${d.activity})`)) },
    "Start (s from begin)": { kind: "float", values: steps.map((s) => pick(s, (r) => v.start[r], (d) => d.start) - t0) },
    "Duration (s)": { kind: "float", values: steps.map(durOf) },
    "Share of path (%)": {
      kind: "float",
      values: steps.map((s) => (length > 0 ? (Math.max(0, durOf(s) || 0) / length) * 100 : NaN))
    },
    "Cumulative (s)": { kind: "float", values: cumulative }
  })
}

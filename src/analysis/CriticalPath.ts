/**
 * The critical path: the chain of dependent steps whose summed durations is longest,
 * i.e. the chain that bounded the run however many workers there were. The graph is
 * rebuilt from each task's `dependencies` (DASF writes `dependents` empty:
 * DASF-NOTES 13). A key computed more than once counts with its latest execution
 * (Tessera's traces give every execution its own key: `k#2`, ...). Dependencies on keys
 * that are not in the trace are ignored; keys on a cycle (only in corrupt traces), and
 * those that depend on one, are left out, and the result names one cycle's keys
 * (`DependencyCycle`; the table's summary line is a warning that says so).
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
 * The chain is chosen by its steps' durations; then the time between two consecutive
 * steps (the driver handing a task to a worker and the task starting, a task ending and
 * the driver seeing its result, a task's input ending and the task starting) becomes a
 * step of its own, a `Latency` step (scheduling latency: messages between threads and
 * waiting for a free worker), so the path accounts for its whole span, from its first
 * step's start to its last step's end, and says how much of it is tasks, driver and
 * latency (`CriticalPathSteps`, the table's summary line).
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { type DriverSegment, driverSegments } from "./Driver.ts"
import { setSummary } from "./Format.ts"
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
  | { readonly _tag: "Latency"; readonly start: number; readonly end: number; readonly kind: LatencyKind }

/**
 * What a latency step is between: `dispatch` (a driver segment, then a task: the task
 * handed over, queued, started), `result` (a task, then a driver segment: the result
 * sent back and seen), `input` (a task, then a task that reads its result), `driver`
 * (two driver-side segments, e.g. a worker's start-up and the driver's next segment),
 * `worker` (on the gating path only: two tasks one after the other on one worker, the
 * second's inputs ready before the first ended: the worker's hand-over between tasks).
 *
 * @since 0.1.0
 * @category models
 */
export type LatencyKind = "dispatch" | "result" | "input" | "driver" | "worker"

/**
 * The critical path as steps, first first (latency steps between the others, where
 * there is time between them), and its length: the sum of every step's duration, which
 * is its span from the first step's start to the last step's end (less any overlap of
 * consecutive steps from clocks of different threads). `tasks`, `driver`, `latency`:
 * the part of `length` in each kind of step.
 *
 * @since 0.1.0
 * @category models
 */
export interface CriticalPathSteps {
  readonly steps: ReadonlyArray<CriticalStep>
  readonly length: number
  readonly tasks: number
  readonly driver: number
  readonly latency: number
  /** the trace's dependencies hold a cycle (a corrupt trace): its keys, and what was left out */
  readonly cycle?: DependencyCycle
}

/**
 * A dependency cycle found while computing the critical path (only a corrupt trace has
 * one): `keys`, one cycle's keys in dependency order (each depends on the one before it,
 * the first on the last, the smallest key first); `tasks` and `driverSegments`, the
 * steps left out of the path because they are on a cycle or depend on one.
 *
 * @since 0.1.0
 * @category models
 */
export interface DependencyCycle {
  readonly _tag: "DependencyCycle"
  readonly keys: ReadonlyArray<string>
  readonly tasks: number
  readonly driverSegments: number
}

/**
 * The warning line of a dependency cycle: "warning: dependency cycle: a -> b -> a; N tasks
 * on or after a cycle were left out of the critical path" (at most 8 keys named, each
 * cut at 80 characters; driver segments counted where some were left out too).
 *
 * @since 0.1.0
 * @category formatting
 */
export const dependencyCycleLine = (c: DependencyCycle): string => {
  const cut = (k: string) => (k.length > 80 ? `${k.slice(0, 79)}…` : k)
  const shown = c.keys.slice(0, 8).map(cut)
  const ring = c.keys.length > 8 ? `${shown.join(" -> ")} -> … (${c.keys.length} keys)` : [...shown, shown[0]!].join(" -> ")
  const n = c.tasks + c.driverSegments
  const what = `${c.tasks} task${c.tasks === 1 ? "" : "s"}${c.driverSegments > 0 ? ` and ${c.driverSegments} driver segment${c.driverSegments === 1 ? "" : "s"}` : ""}`
  return `warning: dependency cycle: ${ring}; ${what} on or after a cycle ${n === 1 ? "was" : "were"} left out of the critical path`
}

// slack for clocks of different threads when matching a task to the driver segment before it
const EPS = 1e-4

/**
 * How the chain is chosen: `duration` (the default), the chain whose steps' durations
 * sum highest; `end`, the gating path: from the step that ended last, back through the
 * predecessor that ended last before it started (its inputs, the driver segment that
 * handed it over, and the task its worker ran before it: a task queued behind another
 * waited for it), so that every gap on it is time nothing it waited for was running:
 * hand-over, not queueing. The gating path is what the diagnosis's what-ifs re-time.
 *
 * @since 0.1.0
 * @category models
 */
export interface CriticalPathOptions {
  readonly by?: "duration" | "end"
}

/**
 * Compute the critical path as steps (tasks and driver segments). Ties are broken by the
 * smaller key, so the result is deterministic. `options.by: "end"`: the gating path
 * instead ({@link CriticalPathOptions}; no cycle search: a cycle ends the walk).
 *
 * @since 0.1.0
 * @category analysis
 */
export const criticalPathSteps = (tables: Tables, options?: CriticalPathOptions): CriticalPathSteps => {
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
  // edges as (from, to) pairs, each target's added together: `lastTo[from] === to`
  // drops a repeat; then as compressed rows (preds and succs) with no array per step
  let ef = new Int32Array(Math.max(16, 2 * N))
  let et = new Int32Array(ef.length)
  let m = 0
  const lastTo = new Int32Array(N).fill(-1)
  const edge = (from: number, to: number) => {
    if (from === to || lastTo[from] === to || !present(from)) return
    lastTo[from] = to
    if (m === ef.length) {
      const f2 = new Int32Array(2 * m)
      const t2 = new Int32Array(2 * m)
      f2.set(ef)
      t2.set(et)
      ef = f2
      et = t2
    }
    ef[m] = from
    et[m++] = to
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
  // host and worker strings by code, made once (not per task)
  const hostOf: Array<string | undefined> = []
  const workerOf: Array<string | undefined> = []
  const hostAt = (c: number) => (c < 0 ? "" : hostOf[c] ??= v.host.at(c))
  const workerAt = (c: number) => (c < 0 ? "" : workerOf[c] ??= v.worker.at(c))
  for (let k = 0; k < K; k++) {
    const r = rowOf[k]
    if (r < 0) continue
    for (let j = v.depOffsets[r]; j < v.depOffsets[r + 1]; j++) {
      const d = v.deps[j]
      if (d >= 0) edge(d, k)
    }
    // what the task waited for besides its inputs: the driver handing it over, and its
    // worker booting
    if (D === 0) continue
    const host = hostAt(v.host.codes[r])
    const byDriver = gate(host, "driver", v.start[r])
    if (byDriver >= 0) edge(byDriver, k)
    const byWorker = gate(host, workerAt(v.worker.codes[r]), v.start[r])
    if (byWorker >= 0) edge(byWorker, k)
  }
  drv.forEach((s, j) => {
    if (s.worker !== "driver") {
      const g = gate(s.host, "driver", s.start) // a worker start-up follows the driver's segment before it
      if (g >= 0) edge(g, K + j)
    }
    const add = (key: string, depth: number): void => {
      const x = drvIndex.get(key)
      if (x !== undefined) return edge(x, K + j)
      const through = waits.get(key) // a `wait` passes on to what it depends on
      if (through !== undefined && depth < 4) return through.forEach((d) => add(d, depth + 1))
      const t = taskCode(key)
      if (t >= 0) edge(t, K + j)
    }
    for (const d of s.dependencies) add(d, 0)
  })
  const indeg = new Int32Array(N)
  const predOff = new Int32Array(N + 1)
  const succOff = new Int32Array(N + 1)
  for (let e = 0; e < m; e++) (predOff[et[e] + 1]++, succOff[ef[e] + 1]++)
  for (let x = 0; x < N; x++) (predOff[x + 1] += predOff[x], succOff[x + 1] += succOff[x])
  const predAt = new Int32Array(m)
  const succAt = new Int32Array(m)
  {
    const pf = predOff.slice(0, N)
    const sf = succOff.slice(0, N)
    for (let e = 0; e < m; e++) (predAt[pf[et[e]]++] = ef[e], succAt[sf[ef[e]]++] = et[e])
  }
  for (let x = 0; x < N; x++) indeg[x] = predOff[x + 1] - predOff[x]
  const preds = { off: predOff, at: predAt }
  const startOf = (x: number) => (x < K ? v.start[rowOf[x]] : drv[x - K]!.start)
  const endOf = (x: number) => (x < K ? v.end[rowOf[x]] : drv[x - K]!.end)
  if (options?.by === "end") {
    const g = gatingChain(v, K, N, rowOf, present, keyAt, startOf, endOf, predOff, predAt)
    return stepsOf(g.chain, K, rowOf, drv, dur, startOf, endOf, g.viaWorker)
  }
  const dist = new Float64Array(N).fill(-Infinity)
  const from = new Int32Array(N).fill(-1)
  const queue: Array<number> = []
  for (let x = 0; x < N; x++) if (present(x) && indeg[x] === 0) queue.push(x)
  for (let q = 0; q < queue.length; q++) {
    const x = queue[q]
    let best = 0
    let bestFrom = -1
    for (let e = predOff[x]; e < predOff[x + 1]; e++) {
      const d = predAt[e]
      if (bestFrom < 0 || dist[d] > best || (dist[d] === best && cmpStr(keyAt(d), keyAt(bestFrom)) < 0)) {
        best = dist[d]
        bestFrom = d
      }
    }
    dist[x] = best + dur(x)
    from[x] = bestFrom
    for (let e = succOff[x]; e < succOff[x + 1]; e++) if (--indeg[succAt[e]] === 0) queue.push(succAt[e])
  }
  const cycle = findCycle(N, K, (x) => present(x) && indeg[x]! > 0, preds, keyAt)
  let last = -1
  for (const x of queue) {
    if (last < 0 || dist[x] > dist[last] || (dist[x] === dist[last] && cmpStr(keyAt(x), keyAt(last)) < 0)) last = x
  }
  if (last < 0) return { steps: [], length: 0, tasks: 0, driver: 0, latency: 0, ...(cycle === undefined ? {} : { cycle }) }
  const chain: Array<number> = []
  for (let x = last; x >= 0; x = from[x]) chain.push(x)
  chain.reverse()
  return { ...stepsOf(chain, K, rowOf, drv, dur, startOf, endOf), ...(cycle === undefined ? {} : { cycle }) }
}

// The chain's steps, with a latency step for each gap between two of them.
const stepsOf = (
  chain: ReadonlyArray<number>,
  K: number,
  rowOf: Int32Array,
  drv: ReadonlyArray<DriverSegment>,
  dur: (x: number) => number,
  startOf: (x: number) => number,
  endOf: (x: number) => number,
  worker?: ReadonlySet<number>
): CriticalPathSteps => {
  const steps: Array<CriticalStep> = []
  let tasks = 0
  let driver = 0
  let latency = 0
  chain.forEach((x, i) => {
    if (i > 0) {
      const p = chain[i - 1]!
      const gap = startOf(x) - endOf(p)
      if (gap > 0) {
        const kind: LatencyKind = worker?.has(x) === true ? "worker" : p < K ? (x < K ? "input" : "result") : x < K ? "dispatch" : "driver"
        steps.push({ _tag: "Latency", start: endOf(p), end: startOf(x), kind })
        latency += gap
      }
    }
    if (x < K) (steps.push({ _tag: "Task", row: rowOf[x] }), tasks += dur(x))
    else (steps.push({ _tag: "Driver", segment: drv[x - K]! }), driver += dur(x))
  })
  return { steps, length: tasks + driver + latency, tasks, driver, latency }
}

// The gating chain (`by: "end"`): back from the step that ended last, each time to the
// predecessor that ended last no later than the step started (slack EPS; one that
// started later is none); a task's predecessors include the task its worker ran before
// it. Ends at a step with none (a step already on the chain is none: a cycle, in corrupt
// traces only).
const gatingChain = (
  v: ReturnType<typeof taskView>,
  K: number,
  N: number,
  rowOf: Int32Array,
  present: (x: number) => boolean,
  keyAt: (x: number) => string,
  startOf: (x: number) => number,
  endOf: (x: number) => number,
  predOff: Int32Array,
  predAt: Int32Array
): { readonly chain: Array<number>; readonly viaWorker: Set<number> } => {
  let last = -1
  for (let x = 0; x < N; x++) {
    if (!present(x)) continue
    if (last < 0 || endOf(x) > endOf(last) || (endOf(x) === endOf(last) && cmpStr(keyAt(x), keyAt(last)) < 0)) last = x
  }
  const viaWorker = new Set<number>()
  if (last < 0) return { chain: [], viaWorker }
  // each worker's tasks (key codes of their latest executions) by end
  const byWorker = new Map<number, Array<number>>()
  const nw = v.worker.size + 1
  const workerOf = (k: number) => (v.host.codes[rowOf[k]] + 1) * nw + v.worker.codes[rowOf[k]] + 1
  for (let k = 0; k < K; k++) {
    if (rowOf[k] < 0) continue
    const id = workerOf(k)
    let a = byWorker.get(id)
    if (a === undefined) byWorker.set(id, a = [])
    a.push(k)
  }
  for (const a of byWorker.values()) {
    let sorted = true
    for (let i = 1; i < a.length && sorted; i++) if (endOf(a[i]!) < endOf(a[i - 1]!)) sorted = false
    if (!sorted) a.sort((x, y) => endOf(x) - endOf(y))
  }
  const chain: Array<number> = [last]
  const seen = new Set<number>([last])
  const previousOnWorker = (k: number): number => {
    const a = byWorker.get(workerOf(k))!
    const t = startOf(k) + EPS
    let lo = 0
    let hi = a.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (endOf(a[mid]!) <= t) lo = mid + 1
      else hi = mid
    }
    // the latest to end that started no later than k and is not on the chain yet: tasks
    // of no duration end at the instant the next one starts, so the last to end by then
    // may be one that started after k (a few are skipped, never a whole worker's list)
    for (let i = lo - 1, tries = 0; i >= 0 && tries < 64; i--, tries++) {
      const d = a[i]!
      if (d !== k && startOf(d) <= startOf(k) && !seen.has(d)) return d
    }
    return -1
  }
  for (let x = last;;) {
    const t = startOf(x) + EPS
    let best = -1
    const consider = (d: number) => {
      if (d < 0 || !present(d) || endOf(d) > t || startOf(d) > startOf(x) || seen.has(d)) return
      if (best < 0 || endOf(d) > endOf(best) || (endOf(d) === endOf(best) && cmpStr(keyAt(d), keyAt(best)) < 0)) best = d
    }
    for (let e = predOff[x]; e < predOff[x + 1]; e++) consider(predAt[e])
    const byDeps = best
    if (x < K) consider(previousOnWorker(x))
    if (best < 0) break
    if (best !== byDeps) viaWorker.add(x)
    seen.add(best)
    chain.push(best)
    x = best
  }
  return { chain: chain.reverse(), viaWorker }
}

// After Kahn's walk, the steps it never reached (`stuck`: present, a predecessor left)
// are on a cycle or after one. Walking back from one through stuck predecessors must
// repeat a step: the steps from its first visit on are a cycle.
const findCycle = (
  n: number,
  k: number,
  stuck: (x: number) => boolean,
  preds: { readonly off: Int32Array; readonly at: Int32Array },
  keyAt: (x: number) => string
): DependencyCycle | undefined => {
  let tasks = 0
  let driverSegments = 0
  let first = -1
  for (let x = 0; x < n; x++) {
    if (!stuck(x)) continue
    if (x < k) tasks++
    else driverSegments++
    if (first < 0) first = x
  }
  if (first < 0) return undefined
  const visitedAt = new Map<number, number>()
  const walk: Array<number> = []
  let x = first
  while (!visitedAt.has(x)) {
    visitedAt.set(x, walk.length)
    walk.push(x)
    let p: number | undefined
    for (let e = preds.off[x]!; e < preds.off[x + 1]! && p === undefined; e++) if (stuck(preds.at[e]!)) p = preds.at[e]!
    if (p === undefined) return { _tag: "DependencyCycle", keys: [], tasks, driverSegments }
    x = p
  }
  // walk goes backwards (each step's predecessor next): reversed, dependency order
  const ring = walk.slice(visitedAt.get(x)!).reverse().map(keyAt)
  // from its smallest key: the same cycle reads the same whatever step the walk began at
  let s = 0
  for (let i = 1; i < ring.length; i++) if (cmpStr(ring[i]!, ring[s]!) < 0) s = i
  return { _tag: "DependencyCycle", keys: [...ring.slice(s), ...ring.slice(0, s)], tasks, driverSegments }
}

/**
 * Compute the critical path (longest duration-weighted dependency chain) as task rows
 * and its length without latency (the sum of its task and driver steps' durations); see
 * {@link criticalPathSteps} for the driver and latency steps too.
 *
 * @since 0.1.0
 * @category analysis
 */
export const criticalPathRows = (tables: Tables): CriticalPathResult => {
  const { driver, steps, tasks } = criticalPathSteps(tables)
  return { rows: steps.flatMap((s) => (s._tag === "Task" ? [s.row] : [])), length: tasks + driver }
}

/**
 * The critical path as a table, one row per step in chain order: Step, Kind (task,
 * driver, latency), Host, GPU, Task Key, Function, Start (s from begin), Duration (s),
 * Share of path (%), Cumulative (s). "Start" is relative to the earliest task start (or
 * driver segment start). A driver step has GPU `driver` and Function
 * `Driver (<activity>)`; a latency step has Function `Latency (<kind>)` and no host,
 * GPU or key. The table's summary line (`Format.summaryOf`) gives the path's length,
 * its share of the run's wall time and its split into tasks, driver and latency.
 *
 * @since 0.1.0
 * @category analysis
 */
export const criticalPath = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  const path = criticalPathSteps(tables)
  const { length, steps } = path
  let t0 = Infinity
  let t1 = -Infinity
  for (let i = 0; i < v.n; i++) (t0 = Math.min(t0, v.start[i]), t1 = Math.max(t1, v.end[i]))
  for (const s of driverSegments(tables.driver)) (t0 = Math.min(t0, s.start), t1 = Math.max(t1, s.end))
  const durOf = (s: CriticalStep) => (s._tag === "Task" ? v.duration[s.row] : s._tag === "Driver" ? s.segment.end - s.segment.start : s.end - s.start)
  let cum = 0
  const cumulative = steps.map((s) => (cum += Math.max(0, durOf(s) || 0)))
  const pick = <A>(s: CriticalStep, task: (r: number) => A, driver: (d: DriverSegment) => A, latency: (l: Extract<CriticalStep, { _tag: "Latency" }>) => A): A =>
    s._tag === "Task" ? task(s.row) : s._tag === "Driver" ? driver(s.segment) : latency(s)
  const table = buildTable({
    "Step": { kind: "int", values: steps.map((_, i) => i + 1) },
    "Kind": { kind: "string", values: steps.map((s) => s._tag.toLowerCase()) },
    "Host": { kind: "string", values: steps.map((s) => pick(s, (r) => str(v.host, v.host.codes[r]), (d) => d.host, () => null)) },
    "GPU": { kind: "string", values: steps.map((s) => pick(s, (r) => gpuLabel(str(v.worker, v.worker.codes[r]) ?? undefined), (d) => d.worker, () => null)) },
    "Task Key": { kind: "string", values: steps.map((s) => pick(s, (r) => str(v.key, v.key.codes[r]), (d) => d.key, () => null)) },
    "Function": { kind: "string", values: steps.map((s) => pick(s, (r) => str(v.fn, v.fn.codes[r]), (d) => `Driver (${d.activity})`, (l) => `Latency (${l.kind})`)) },
    "Start (s from begin)": { kind: "float", values: steps.map((s) => pick(s, (r) => v.start[r], (d) => d.start, (l) => l.start) - t0) },
    "Duration (s)": { kind: "float", values: steps.map(durOf) },
    "Share of path (%)": {
      kind: "float",
      values: steps.map((s) => (length > 0 ? (Math.max(0, durOf(s) || 0) / length) * 100 : NaN))
    },
    "Cumulative (s)": { kind: "float", values: cumulative }
  })
  const summary = [
    ...(steps.length > 0 ? [criticalPathSummary(path, t1 - t0)] : []),
    ...(path.cycle !== undefined ? [dependencyCycleLine(path.cycle)] : [])
  ]
  if (summary.length > 0) setSummary(table, summary.join("; "))
  return table
}

/**
 * One line on a critical path: its length, its share of the run's wall time `wall`, and
 * how much of it is tasks, driver and latency.
 *
 * @since 0.1.0
 * @category formatting
 */
export const criticalPathSummary = (path: CriticalPathSteps, wall: number): string => {
  const part = (x: number) => `${x.toFixed(3)} s (${path.length > 0 ? ((100 * x) / path.length).toFixed(0) : "0"}%)`
  return `critical path ${path.length.toFixed(3)} s` +
    (wall > 0 ? `, ${((100 * path.length) / wall).toFixed(0)}% of the run's ${wall.toFixed(3)} s wall time` : "") +
    `: tasks ${part(path.tasks)}, driver ${part(path.driver)}, scheduling latency ${part(path.latency)}`
}

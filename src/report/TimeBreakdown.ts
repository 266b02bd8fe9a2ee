/**
 * Where the time went, from the report model: the run's worker time (wall time ×
 * workers) split into compute, transfer, driver and idle, per stage, per function, per
 * worker and for the run — the numbers of the report's first chart and its summary line.
 *
 * Per worker (the same rules as `analysis/TimeSummary.ts`, which the tests check):
 * `tasks` is the time the worker ran a task (the union of its tasks), `driver` the time
 * it ran none while the driver worked (its segments other than `wait`) or it was
 * starting up (`worker start`), `idle` the rest; the three add up to the wall time.
 * A task's time is split into compute and transfer by its phases (transfer = gather +
 * transfer phases; all compute where the trace has no phases).
 *
 * Per stage: the run is cut into windows, one per compute (from the compute's first
 * driver segment to the next compute's), each window belonging to the stage whose tasks
 * ran longest in that compute's `wait`; without driver segments, a stage's window runs
 * from its first task's start to the next stage's first start. Each window's worker time
 * (length × workers) is split as above, so a stage's four parts add up to its windows'
 * length × workers, and the stages' to the run's. Tasks without a stage fall in
 * `(no stage)`; a trace without stages has one row, `(whole run)`. Stages are listed in
 * the order they first ran.
 *
 * Per function: only compute and transfer (driver and idle time belong to no function).
 *
 * Plain loops over typed arrays: tasks can number in the millions.
 *
 * @since 0.1.0
 */
import type { ReportData } from "./ReportData.ts"

/**
 * Worker-seconds in each of the four parts.
 *
 * @since 0.1.0
 * @category models
 */
export interface TimeSplit {
  readonly compute: number
  readonly transfer: number
  readonly driver: number
  readonly idle: number
}

/**
 * One stage's share of the run.
 *
 * @since 0.1.0
 * @category models
 */
export interface StageTime {
  readonly name: string
  readonly tasks: number
  /** seconds of wall time in the stage's windows */
  readonly wall: number
  /** worker-seconds */
  readonly split: TimeSplit
  /** seconds the driver worked in the stage's windows (its segments other than `wait`) */
  readonly driverOwn: number
  readonly bytesIn: number
  readonly bytesOut: number
}

/**
 * One function's task time (worker-seconds).
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionTime {
  readonly name: string
  readonly tasks: number
  readonly compute: number
  readonly transfer: number
}

/**
 * One worker's wall time split (seconds; tasks + driver + idle = wall).
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerTime {
  readonly name: string
  readonly tasks: number
  readonly driver: number
  readonly idle: number
}

/**
 * The whole breakdown. `run` is the sum over workers (worker-seconds); `runLine` is
 * the run's wall time split like `analysis/TimeSummary.ts`'s `(run)` row: tasks = time
 * at least one task ran, driver = time none ran while the driver worked or a worker
 * started, idle = neither.
 *
 * @since 0.1.0
 * @category models
 */
export interface TimeBreakdown {
  readonly wall: number
  readonly workers: number
  readonly run: TimeSplit
  readonly runLine: { readonly tasks: number; readonly driver: number; readonly idle: number }
  readonly driverOwn: number
  readonly hasDriver: boolean
  readonly hasStages: boolean
  readonly hasPhases: boolean
  readonly stages: ReadonlyArray<StageTime>
  readonly functions: ReadonlyArray<FunctionTime>
  readonly perWorker: ReadonlyArray<WorkerTime>
}

type Spans = Array<number> // flat [a0, b0, a1, b1, ...]

/**
 * Sorted, disjoint union of flat spans (touching spans merge). Starts and ends are sorted
 * apart (native numeric sorts of typed arrays, no comparator) and swept: the union is
 * where at least one span is open.
 */
const union = (spans: Spans): Spans => {
  const n = spans.length / 2
  let m = 0
  for (let i = 0; i < n; i++) if (spans[2 * i + 1]! > spans[2 * i]!) m++
  const starts = new Float64Array(m)
  const ends = new Float64Array(m)
  for (let i = 0, k = 0; i < n; i++) {
    if (spans[2 * i + 1]! > spans[2 * i]!) (starts[k] = spans[2 * i]!, ends[k] = spans[2 * i + 1]!, k++)
  }
  starts.sort()
  ends.sort()
  const out: Spans = []
  let open = 0
  let i = 0
  let j = 0
  while (i < m) {
    if (starts[i]! <= ends[j]!) {
      if (open === 0) out.push(starts[i]!)
      open++
      i++
    } else {
      open--
      if (open === 0) out.push(ends[j]!)
      j++
    }
  }
  if (m > 0) out.push(ends[m - 1]!)
  return out
}

const length = (u: Spans): number => {
  let s = 0
  for (let i = 0; i < u.length; i += 2) s += u[i + 1]! - u[i]!
  return s
}

/** Per window (sorted, disjoint `[lo[k], hi[k])`), the length of `u` (disjoint) inside it. */
const perWindow = (u: Spans, lo: Float64Array, hi: Float64Array): Float64Array => {
  const out = new Float64Array(lo.length)
  let k = 0
  for (let i = 0; i < u.length; i += 2) {
    const a = u[i]!
    const b = u[i + 1]!
    while (k > 0 && lo[k]! > a) k--
    while (k < lo.length && hi[k]! <= a) k++
    for (let j = k; j < lo.length && lo[j]! < b; j++) {
      const ov = Math.min(b, hi[j]!) - Math.max(a, lo[j]!)
      if (ov > 0) out[j]! += ov
    }
  }
  return out
}

// windows of the run and the stage (index into `names`) each belongs to
const windows = (data: ReportData, stageName: (s: number) => number): { lo: Float64Array; hi: Float64Array; label: Int32Array } => {
  const t = data.tasks
  const d = data.driver
  const n = t.start.length
  const wall = data.wall
  const bounds: Array<{ at: number; label: number }> = []
  // computes: first segment start and the wait span
  const computes = new Map<number, { first: number; waitA: number; waitB: number }>()
  for (let i = 0; i < d.start.length; i++) {
    const c = d.compute[i]!
    if (!Number.isFinite(c)) continue
    let x = computes.get(c)
    if (x === undefined) computes.set(c, x = { first: d.start[i]!, waitA: NaN, waitB: NaN })
    if (d.start[i]! < x.first) x.first = d.start[i]!
    if (data.activities[d.activity[i]!] === "wait") (x.waitA = d.start[i]!, x.waitB = d.end[i]!)
  }
  if (computes.size > 0) {
    const list = [...computes.values()].sort((a, b) => a.first - b.first)
    const waits = list.map((c) => [c.waitA, c.waitB] as const)
    // task time per (compute, stage label): tasks whose start lies in the compute's wait
    const order = Array.from({ length: list.length }, (_, i) => i).filter((i) => Number.isFinite(waits[i]![0]))
      .sort((a, b) => waits[a]![0] - waits[b]![0])
    const starts = order.map((i) => waits[i]![0])
    const best = list.map(() => new Map<number, number>())
    for (let i = 0; i < n; i++) {
      // last wait starting at or before the task's start
      let lo = 0
      let hi = starts.length
      while (lo < hi) {
        const m = (lo + hi) >> 1
        if (starts[m]! <= t.start[i]! + 1e-9) lo = m + 1
        else hi = m
      }
      const o = lo - 1
      if (o < 0) continue
      const c = order[o]!
      if (t.start[i]! > waits[c]![1] + 1e-9) continue
      const label = stageName(t.stage[i]!)
      const m = best[c]!
      m.set(label, (m.get(label) ?? 0) + (t.end[i]! - t.start[i]!))
    }
    let prevLabel = -2
    list.forEach((c, i) => {
      let label = -2
      let top = -1
      for (const [l, v] of best[i]!) if (v > top) (top = v, label = l)
      // a compute that ran no task (none recorded) continues the stage before it
      if (label === -2) label = prevLabel === -2 ? stageName(-1) : prevLabel
      bounds.push({ at: i === 0 ? 0 : c.first, label })
      prevLabel = label
    })
  } else {
    const first = new Map<number, number>()
    for (let i = 0; i < n; i++) {
      const l = stageName(t.stage[i]!)
      const f = first.get(l)
      if (f === undefined || t.start[i]! < f) first.set(l, t.start[i]!)
    }
    const list = [...first.entries()].sort((a, b) => a[1] - b[1])
    list.forEach(([l, at], i) => bounds.push({ at: i === 0 ? 0 : at, label: l }))
    if (bounds.length === 0) bounds.push({ at: 0, label: stageName(-1) })
  }
  const k = bounds.length
  const lo = new Float64Array(k)
  const hi = new Float64Array(k)
  const label = new Int32Array(k)
  for (let i = 0; i < k; i++) {
    lo[i] = Math.min(wall, Math.max(0, bounds[i]!.at))
    hi[i] = i + 1 < k ? Math.min(wall, Math.max(lo[i]!, bounds[i + 1]!.at)) : wall
    label[i] = bounds[i]!.label
  }
  return { lo, hi, label }
}

/**
 * The breakdown of a report model (see the module header).
 *
 * @since 0.1.0
 * @category constructors
 */
export const timeBreakdown = (data: ReportData): TimeBreakdown => {
  const t = data.tasks
  const d = data.driver
  const n = t.start.length
  const wall = data.wall
  const hasStages = data.stages.length > 0
  // stage rows: the trace's stages, then "(no stage)" (or "(whole run)" without stages)
  const names = [...data.stages, hasStages ? "(no stage)" : "(whole run)"]
  const stageName = (s: number): number => (s >= 0 ? s : names.length - 1)
  const win = windows(data, stageName)
  const nWin = win.lo.length
  // the driver's own work, and each worker's start-up, as spans
  const driverWork: Spans = []
  const startup = new Map<string, Spans>()
  for (let i = 0; i < d.start.length; i++) {
    const thread = data.driverThreads[d.thread[i]!]!
    const act = data.activities[d.activity[i]!]
    if (act === "worker start") {
      const s = startup.get(thread) ?? []
      s.push(d.start[i]!, d.end[i]!)
      startup.set(thread, s)
    } else if (act !== "wait") driverWork.push(d.start[i]!, d.end[i]!)
  }
  const driverU = union(driverWork)
  const driverPerWin = perWindow(driverU, win.lo, win.hi)
  // tasks per worker; compute / transfer worker-seconds per window
  const nw = data.workers.length
  const byWorker: Array<Spans> = Array.from({ length: nw }, () => [])
  const wCompute = Array.from({ length: nw }, () => new Float64Array(nWin))
  const wTransfer = Array.from({ length: nw }, () => new Float64Array(nWin))
  const nf = data.functions.length
  const fTasks = new Float64Array(nf)
  const fCompute = new Float64Array(nf)
  const fTransfer = new Float64Array(nf)
  const sTasks = new Float64Array(names.length)
  const sIn = new Float64Array(names.length)
  const sOut = new Float64Array(names.length)
  let hasPhases = false
  for (let i = 0; i < n; i++) {
    const a = t.start[i]!
    const b = t.end[i]!
    const w = t.worker[i]!
    byWorker[w]!.push(a, b)
    const dur = b - a
    const g = t.gather[i]!
    const tr = t.transfer[i]!
    const moved = (Number.isFinite(g) ? g : 0) + (Number.isFinite(tr) ? tr : 0)
    if (Number.isFinite(g) || Number.isFinite(tr)) hasPhases = true
    const share = dur > 0 ? Math.min(1, moved / dur) : 0
    const f = t.fn[i]!
    fTasks[f]!++
    fCompute[f]! += dur * (1 - share)
    fTransfer[f]! += dur * share
    const s = stageName(t.stage[i]!)
    sTasks[s]!++
    sIn[s]! += t.bytesIn[i]!
    if (Number.isFinite(t.size[i]!)) sOut[s]! += t.size[i]!
    // windows the task overlaps (usually one)
    let lo = 0
    let hi = nWin
    while (lo < hi) {
      const m = (lo + hi) >> 1
      if (win.hi[m]! <= a) lo = m + 1
      else hi = m
    }
    for (let k = lo; k < nWin && win.lo[k]! < b; k++) {
      const ov = Math.min(b, win.hi[k]!) - Math.max(a, win.lo[k]!)
      if (ov > 0) (wCompute[w]![k]! += ov * (1 - share), wTransfer[w]![k]! += ov * share)
    }
  }
  const split = names.map(() => ({ compute: 0, transfer: 0, driver: 0, idle: 0 }))
  const perWorker: Array<WorkerTime> = []
  const allTasks: Spans = []
  const allStartup: Spans = []
  for (let w = 0; w < nw; w++) {
    const busyU = union(byWorker[w]!)
    const own = startup.get(data.workers[w]!) ?? []
    const coverU = union([...busyU, ...own, ...driverU])
    const busyK = perWindow(busyU, win.lo, win.hi)
    const coverK = perWindow(coverU, win.lo, win.hi)
    for (let k = 0; k < nWin; k++) {
      const sp = split[win.label[k]!]!
      const sum = wCompute[w]![k]! + wTransfer[w]![k]!
      // the union's time, shared out by the tasks' compute / transfer shares
      const c = sum > 0 ? busyK[k]! * (wCompute[w]![k]! / sum) : 0
      sp.compute += c
      sp.transfer += busyK[k]! - c
      sp.driver += Math.max(0, coverK[k]! - busyK[k]!)
      sp.idle += Math.max(0, win.hi[k]! - win.lo[k]! - coverK[k]!)
    }
    const busy = length(busyU)
    const cover = length(coverU)
    perWorker.push({ name: data.workers[w]!, tasks: busy, driver: Math.max(0, cover - busy), idle: Math.max(0, wall - cover) })
    for (const x of byWorker[w]!) allTasks.push(x)
    for (const x of own) allStartup.push(x)
  }
  const allU = union(allTasks)
  const anyTask = length(allU)
  const covered = length(union([...allU, ...allStartup, ...driverU]))
  const sWall = new Float64Array(names.length)
  const sDriver = new Float64Array(names.length)
  const sFirst = new Float64Array(names.length).fill(Infinity)
  for (let k = 0; k < nWin; k++) {
    if (win.lo[k]! < sFirst[win.label[k]!]!) sFirst[win.label[k]!] = win.lo[k]!
    sWall[win.label[k]!]! += win.hi[k]! - win.lo[k]!
    sDriver[win.label[k]!]! += driverPerWin[k]!
  }
  const stages: Array<StageTime> = []
  names.forEach((name, s) => {
    if (sTasks[s] === 0 && sWall[s] === 0) return
    stages.push({ name, tasks: sTasks[s]!, wall: sWall[s]!, split: split[s]!, driverOwn: sDriver[s]!, bytesIn: sIn[s]!, bytesOut: sOut[s]! })
  })
  // in the order the stages first ran
  const firstOf = new Map(names.map((name, s) => [name, sFirst[s]!]))
  stages.sort((a, b) => firstOf.get(a.name)! - firstOf.get(b.name)!)
  const run = split.reduce(
    (a, x) => ({ compute: a.compute + x.compute, transfer: a.transfer + x.transfer, driver: a.driver + x.driver, idle: a.idle + x.idle }),
    { compute: 0, transfer: 0, driver: 0, idle: 0 }
  )
  return {
    wall,
    workers: nw,
    run,
    runLine: { tasks: anyTask, driver: Math.max(0, covered - anyTask), idle: Math.max(0, wall - covered) },
    driverOwn: length(driverU),
    hasDriver: d.start.length > 0,
    hasStages,
    hasPhases,
    stages,
    functions: data.functions
      .map((name, f) => ({ name, tasks: fTasks[f]!, compute: fCompute[f]!, transfer: fTransfer[f]! }))
      .sort((a, b) => b.compute + b.transfer - (a.compute + a.transfer)),
    perWorker
  }
}

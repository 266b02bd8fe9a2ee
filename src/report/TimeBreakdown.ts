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
 * Per stage: the rows and windows of `analysis/StageSummary.ts` (`stageTimes`, the one
 * definition of a stage's time that `stage_summary` uses too): `(start-up)` from the
 * run's start to its first task, then one window per compute, each belonging to the
 * stage whose tasks ran longest in that compute's `wait`; tasks without a stage fall
 * in `(no stage)`. Each window's worker time (length × workers) is split as above, so a
 * stage's four parts add up to its windows' length × workers, and the rows' to the
 * run's.
 *
 * Per function: only compute and transfer (driver and idle time belong to no function).
 *
 * Plain loops over typed arrays: tasks can number in the millions.
 *
 * @since 0.1.0
 */
import { overlapPerWindow, spanUnion, type StageInput, type StageRow, type StageSegment, stageTimes } from "../analysis/StageSummary.ts"
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
  /** the stage's row of `analysis/StageSummary.ts` (`stage_summary`'s numbers) */
  readonly row: StageRow
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

const length = (u: Spans): number => {
  let s = 0
  for (let i = 0; i < u.length; i += 2) s += u[i + 1]! - u[i]!
  return s
}

/**
 * `analysis/StageSummary.ts`' input from a report model (times relative to `t0`; the
 * run spans `[0, wall]`), so the report's stages are `stage_summary`'s.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stageInputOfReport = (data: ReportData): StageInput => {
  const d = data.driver
  const segments: Array<StageSegment> = []
  for (let i = 0; i < d.start.length; i++) {
    segments.push({ start: d.start[i]!, end: d.end[i]!, compute: d.compute[i]!, activity: data.activities[d.activity[i]!] ?? "" })
  }
  const t = data.tasks
  return {
    start: t.start,
    end: t.end,
    stage: t.stage,
    names: data.stages,
    gather: t.gather,
    transfer: t.transfer,
    size: t.size,
    bytesIn: t.bytesIn,
    erred: t.erred,
    graph: data.pipelineStages,
    segments,
    runStart: 0,
    runEnd: data.wall
  }
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
  const hasStages = data.stages.length > 0 || data.pipelineStages.length > 0
  // the rows and windows of analysis/StageSummary.ts (one definition of a stage's time)
  const st = stageTimes(stageInputOfReport(data))
  const win = { lo: st.lo, hi: st.hi, label: st.row }
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
  const driverU = spanUnion(driverWork)
  // tasks per worker; compute / transfer worker-seconds per window
  const nw = data.workers.length
  const byWorker: Array<Spans> = Array.from({ length: nw }, () => [])
  const wCompute = Array.from({ length: nw }, () => new Float64Array(nWin))
  const wTransfer = Array.from({ length: nw }, () => new Float64Array(nWin))
  const nf = data.functions.length
  const fTasks = new Float64Array(nf)
  const fCompute = new Float64Array(nf)
  const fTransfer = new Float64Array(nf)
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
  const split = st.rows.map(() => ({ compute: 0, transfer: 0, driver: 0, idle: 0 }))
  const perWorker: Array<WorkerTime> = []
  const allTasks: Spans = []
  const allStartup: Spans = []
  for (let w = 0; w < nw; w++) {
    const busyU = spanUnion(byWorker[w]!)
    const own = startup.get(data.workers[w]!) ?? []
    const coverU = spanUnion([...busyU, ...own, ...driverU])
    const busyK = overlapPerWindow(busyU, win.lo, win.hi)
    const coverK = overlapPerWindow(coverU, win.lo, win.hi)
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
  const allU = spanUnion(allTasks)
  const anyTask = length(allU)
  const covered = length(spanUnion([...allU, ...allStartup, ...driverU]))
  const stages: Array<StageTime> = st.rows.map((r, i) => ({
    name: r.stage,
    tasks: r.tasks,
    wall: r.wall,
    split: split[i]!,
    driverOwn: r.driver,
    bytesIn: r.bytesIn,
    bytesOut: r.bytesOut,
    row: r
  }))
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

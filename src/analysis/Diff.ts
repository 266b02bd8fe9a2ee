/**
 * The comparison of runs behind `tessera diff` and the report's baseline section
 * (issue 36): what got slower from OLD (the baseline) to NEW, per pipeline, stage and
 * function, with the statistics to trust it (Stats.ts).
 *
 * A side is one or more runs of one pipeline. A run is measured once
 * ({@link measureRun}): its wall time; per stage and per function its task time (the
 * sum of its tasks' durations), its task count, the seconds its tasks spent on the
 * critical path, its bytes out and its peak task memory; its critical path cut into
 * parts that add up to the wall time (tasks' compute, their transfers, the driver,
 * scheduling latency, and the rest of the wall time off the path), and the same stage by
 * stage along the path (each stage's tasks, transfers and hand-overs); its transfers and
 * its peak host memory. A saved `tessera bench` result is a list of such measures.
 *
 * Each group (the pipeline, a stage, a function of a stage) is compared
 * ({@link compare}) in one of two modes:
 * - `runs`: both sides hold at least {@link minRunsPerSide} runs: the values are one
 *   per run (the wall time for the pipeline, the task time for a stage or function);
 * - `tasks`: fewer runs: the values are the group's task durations, all runs of a side
 *   pooled (the pipeline's wall time is then not tested: one value a side).
 * The ratio of medians NEW/OLD with a 95% bootstrap interval; a two-sided Mann-Whitney
 * U test; Benjamini–Hochberg q-values over every group tested; and a group is called
 * `slower` (or `faster`) only when its q-value is at most `alpha`, the interval excludes
 * 1 and the ratio is beyond the minimum effect (`minEffect`, calibrated from runs of the
 * same code: BENCHMARKS.md, docs/bench.md).
 *
 * Refused, with a sentence ({@link DiffRefused}): a side with no run, runs of different
 * pipelines, sides with no stage or function in common, a file group that holds several
 * runs.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import type { Table } from "apache-arrow"
import { criticalPathSteps } from "./CriticalPath.ts"
import { codesOf, floatsOf } from "./internal/access.ts"
import type { LoadColumns, TraceTables } from "./Load.ts"
import { runsOf } from "./Runs.ts"
import { noStage, stageInputOf, stageTimes } from "./StageSummary.ts"
import { benjaminiHochberg, mannWhitney, mean, median, ratioInterval } from "./Stats.ts"

/**
 * The comparison cannot be made: `message` says why, in a sentence.
 *
 * @since 0.1.0
 * @category errors
 */
export class DiffRefused extends Data.TaggedError("DiffRefused")<{ readonly message: string }> {}

/**
 * Both sides need at least this many runs for a test over runs; fewer, and the test is
 * over task durations.
 *
 * @since 0.1.0
 * @category constants
 */
export const minRunsPerSide = 3

/**
 * The default minimum effect: a ratio of medians within 1 ± this is never called a
 * change, however small its p-value (calibrated on this project's test machine:
 * BENCHMARKS.md, "issue 36").
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMinEffect = 0.05

/**
 * With fewer runs than {@link minRunsPerSide}, groups are tested over their task
 * durations, and a change is called only beyond this ratio (or `minEffect`, if larger),
 * only for groups of at least {@link minTasksPerSide} tasks a side whose median task
 * takes at least {@link minTaskSeconds}: tasks of one run are not independent (a busy
 * moment of the machine slows a whole burst of them), so one run against one cannot tell
 * the machine's noise from the code's change below that (calibrated: BENCHMARKS.md).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTasksMinEffect = 0.25

/**
 * The fewest tasks a side for a group to be tested over task durations.
 *
 * @since 0.1.0
 * @category constants
 */
export const minTasksPerSide = 10

/**
 * The shortest median task (seconds) for a group to be tested over task durations.
 *
 * @since 0.1.0
 * @category constants
 */
export const minTaskSeconds = 0.001

/**
 * One group's numbers in one run.
 *
 * @since 0.1.0
 * @category models
 */
export interface GroupRun {
  /** seconds: the sum of the group's task durations */
  readonly taskTime: number
  /** seconds: the sum of the group's tasks' thread CPU time (NaN where not recorded) */
  readonly cpuTime: number
  readonly tasks: number
  /** seconds of the group's tasks on the run's critical path */
  readonly onPath: number
  /** bytes of the group's task results */
  readonly bytes: number
  /** bytes: the largest peak memory of one of the group's tasks (NaN where not recorded) */
  readonly peakMemory: number
  /** the stage's wall time, its share of the run's windows (stages only; NaN for functions) */
  readonly wall: number
  /** rows of the group's task results (the first dimension of their shapes; NaN where unknown) */
  readonly items: number
}

/**
 * Where a run's wall time went, in parts that add up to `wall`: the critical path's
 * tasks (less their transfer phases), those transfers, the driver's segments and the
 * scheduling latency between steps; `other`, the wall time off the path (start-up
 * before the first step, shutdown after the last).
 *
 * @since 0.1.0
 * @category models
 */
export interface WallParts {
  readonly tasks: number
  readonly transfers: number
  readonly driver: number
  readonly latency: number
  readonly other: number
}

/**
 * One stage on a run's critical path: the seconds of its tasks on the path (`tasks`, less
 * their transfer phases; `transfers`, those phases), and its hand-overs (`handOver`): the
 * scheduling latency into its tasks on the path (from the driver's dispatch, or from the
 * task whose result it reads) and out of a task to the driver when the path goes on in
 * the driver. `at`: seconds along the path before its first step of this stage.
 *
 * @since 0.1.0
 * @category models
 */
export interface PathStage {
  readonly stage: string
  readonly at: number
  readonly tasks: number
  readonly transfers: number
  readonly handOver: number
}

/**
 * A run's critical path stage by stage, in path order, and the hand-overs between two
 * driver segments (`driverHandOver`). The stages' `tasks` and `transfers` add up to the
 * run's `WallParts.tasks` and `transfers`; their `handOver` and `driverHandOver` to its
 * `latency`.
 *
 * @since 0.1.0
 * @category models
 */
export interface PathByStage {
  readonly stages: ReadonlyArray<PathStage>
  readonly driverHandOver: number
}

/**
 * One run, measured (see the module header). `groups` is keyed by {@link groupKey};
 * `durations` (task durations per group, for the `tasks` mode) is absent in saved
 * bench results.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunMeasures {
  readonly label: string
  readonly pipeline: string | undefined
  readonly wall: number
  readonly parts: WallParts | undefined
  /** the critical path stage by stage (absent where `parts` is, and in bench results saved before it) */
  readonly path?: PathByStage
  readonly groups: Readonly<Record<string, GroupRun>>
  readonly durations?: Readonly<Record<string, Float64Array>>
  /** the same for the tasks' thread CPU time */
  readonly cpuDurations?: Readonly<Record<string, Float64Array>>
  /** bytes: the host's largest sampled memory (NaN without resource samples) */
  readonly peakMemory: number
  /** bytes: the largest sampled GPU memory in use (NaN without GPU samples) */
  readonly peakDeviceMemory?: number
  readonly transfers: number
  readonly transferBytes: number
  readonly transferSeconds: number
  /** the statistical profiler's files of the run (for the differential flame graph) */
  readonly sampleFiles?: ReadonlyArray<string>
}

/**
 * A group's key: `stage\u0000S` or `function\u0000S\u0000F`.
 *
 * @since 0.1.0
 * @category models
 */
export const groupKey = (kind: "stage" | "function", stage: string, fn = ""): string =>
  kind === "stage" ? `stage\u0000${stage}` : `function\u0000${stage}\u0000${fn}`

/**
 * A group key's parts.
 *
 * @since 0.1.0
 * @category models
 */
export const parseGroupKey = (key: string): { readonly kind: "stage" | "function"; readonly stage: string; readonly fn: string } => {
  const [kind, stage, fn] = key.split("\u0000")
  return { kind: kind === "stage" ? "stage" : "function", stage: stage ?? "", fn: fn ?? "" }
}

/**
 * Measures one run's tables (one run: {@link DiffRefused} when they hold several).
 *
 * @since 0.1.0
 * @category analysis
 */
export const measureRun = (tables: TraceTables, label: string, sampleFiles: ReadonlyArray<string> = []): RunMeasures => {
  const runs = runsOf(tables)
  if (runs.length > 1) {
    throw new DiffRefused({
      message: `${label} holds ${runs.length} runs (one name profiled more than once without --overwrite?): give each run its own files`
    })
  }
  const t = tables.tasks
  const n = t.numRows
  const fn = codesOf(t.getChild("function"), n)
  const st = codesOf(t.getChild("stage"), n)
  const dur = floatsOf(t.getChild("duration"), n)
  const cpu = floatsOf(t.getChild("cpu_time"), n)
  const size = floatsOf(t.getChild("size"), n)
  const peak = floatsOf(t.getChild("peak_memory"), n)
  const shape = codesOf(t.getChild("shape"), n)
  const rowsOfShape = new Map<number, number>()
  const rowsOf = (c: number): number => {
    let r = rowsOfShape.get(c)
    if (r === undefined) {
      const first = c < 0 ? "" : shape.at(c).split("x")[0]!
      r = /^\d+$/.test(first) ? Number(first) : NaN
      rowsOfShape.set(c, r)
    }
    return r
  }
  const gs = floatsOf(t.getChild("gather_start"), n)
  const ge = floatsOf(t.getChild("gather_end"), n)
  const ts = floatsOf(t.getChild("transfer_start"), n)
  const te = floatsOf(t.getChild("transfer_end"), n)
  // per task: its stage's and its function's group index
  const keys: Array<string> = []
  const index = new Map<string, number>()
  const groupOf = (k: string) => {
    let g = index.get(k)
    if (g === undefined) (g = keys.length, keys.push(k), index.set(k, g))
    return g
  }
  const stageCache = new Map<number, number>()
  const fnCache = new Map<number, number>()
  const sg = new Int32Array(n)
  const fg = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    const sc = st.codes[i]!
    let s = stageCache.get(sc)
    const stageName = sc < 0 ? noStage : st.at(sc)
    if (s === undefined) (s = groupOf(groupKey("stage", stageName)), stageCache.set(sc, s))
    sg[i] = s
    // a function is one per (stage, function) pair: the code pair as one number
    const pair = sc * 1_000_003 + fn.codes[i]!
    let f = fnCache.get(pair)
    if (f === undefined) (f = groupOf(groupKey("function", stageName, fn.codes[i]! < 0 ? "" : fn.at(fn.codes[i]!))), fnCache.set(pair, f))
    fg[i] = f
  }
  const G = keys.length
  const taskTime = new Float64Array(G)
  const cpuTime = new Float64Array(G)
  const cpuSeen = new Uint8Array(G)
  const count = new Float64Array(G)
  const bytes = new Float64Array(G)
  const peakOf = new Float64Array(G).fill(NaN)
  const onPath = new Float64Array(G)
  const items = new Float64Array(G)
  const counts = new Int32Array(G)
  for (let i = 0; i < n; i++) {
    const d = Number.isFinite(dur[i]!) ? dur[i]! : 0
    for (const g of [sg[i]!, fg[i]!]) {
      taskTime[g]! += d
      if (Number.isFinite(cpu[i]!)) (cpuTime[g]! += cpu[i]!, cpuSeen[g] = 1)
      count[g]!++
      counts[g]!++
      if (Number.isFinite(size[i]!)) bytes[g]! += size[i]!
      items[g]! += rowsOf(shape.codes[i]!)
      if (Number.isFinite(peak[i]!) && !(peak[i]! <= peakOf[g]!)) peakOf[g] = peak[i]!
    }
  }
  const perTask = (values: Float64Array): Record<string, Float64Array> => {
    const out: Record<string, Float64Array> = {}
    const fill = new Int32Array(G)
    const arrays = keys.map((_, g) => new Float64Array(counts[g]!))
    for (let i = 0; i < n; i++) {
      const d = values[i]!
      for (const g of [sg[i]!, fg[i]!]) arrays[g]![fill[g]!++] = d
    }
    keys.forEach((k, g) => (out[k] = arrays[g]!))
    return out
  }
  const durations = perTask(dur)
  const cpuDurations = perTask(cpu)
  // the run's wall time and stage windows
  const input = stageInputOf(tables)
  const times = stageTimes(input)
  const wall = times.runEnd - times.runStart
  const stageWall = new Map<string, number>()
  for (const r of times.rows) stageWall.set(r.stage, r.wall)
  // the critical path and its parts
  let parts: WallParts | undefined
  let byStage: PathByStage | undefined
  if (n > 0) {
    const path = criticalPathSteps(tables)
    let transfers = 0
    let taskSeconds = 0
    // per stage on the path, in path order: [at, task seconds, transfer seconds, hand-over seconds]
    const stageSums = new Map<string, [number, number, number, number]>()
    let along = 0
    let driverHandOver = 0
    const stageOf = (row: number) => {
      const name = st.codes[row]! < 0 ? noStage : st.at(st.codes[row]!)
      let e = stageSums.get(name)
      if (e === undefined) stageSums.set(name, e = [along, 0, 0, 0])
      return e
    }
    path.steps.forEach((s, i) => {
      if (s._tag === "Latency") {
        // a hand-over belongs to the task it hands to, else to the task whose result it hands back
        const next = path.steps[i + 1]
        const prev = path.steps[i - 1]
        const task = next?._tag === "Task" ? next : prev?._tag === "Task" ? prev : undefined
        if (task === undefined) driverHandOver += s.end - s.start
        else stageOf(task.row)[3] += s.end - s.start
        along += s.end - s.start
        return
      }
      if (s._tag === "Driver") return void (along += Math.max(0, s.segment.end - s.segment.start))
      const d = Number.isFinite(dur[s.row]!) ? dur[s.row]! : 0
      const moved = Math.min(d, Math.max(0, (ge[s.row]! - gs[s.row]!) || 0) + Math.max(0, (te[s.row]! - ts[s.row]!) || 0))
      const e = stageOf(s.row)
      e[1] += d - moved
      e[2] += moved
      along += Math.max(0, d)
      transfers += moved
      taskSeconds += d
      onPath[sg[s.row]!]! += d
      onPath[fg[s.row]!]! += d
    })
    // the path's task steps are its `tasks` part (their durations; the path may trim overlaps)
    const pathTasks = path.tasks
    const scale = taskSeconds > 0 ? pathTasks / taskSeconds : 0
    parts = {
      tasks: pathTasks - transfers * scale,
      transfers: transfers * scale,
      driver: path.driver,
      latency: path.latency,
      other: wall - path.length
    }
    byStage = {
      stages: [...stageSums].map(([stage, [at, t, moved, handOver]]) => ({ stage, at, tasks: t * scale, transfers: moved * scale, handOver })),
      driverHandOver
    }
  }
  const groups: Record<string, GroupRun> = {}
  keys.forEach((k, g) => {
    const p = parseGroupKey(k)
    groups[k] = {
      taskTime: taskTime[g]!,
      cpuTime: cpuSeen[g] === 1 ? cpuTime[g]! : NaN,
      tasks: count[g]!,
      onPath: onPath[g]!,
      bytes: bytes[g]!,
      peakMemory: peakOf[g]!,
      items: items[g]!,
      wall: p.kind === "stage" ? (stageWall.get(p.stage) ?? NaN) : NaN
    }
  })
  // host memory, transfers
  const mem = floatsOf((tables.resources as Table).getChild("memory"), tables.resources.numRows)
  const highest = (xs: Float64Array) => {
    let top = NaN
    for (let i = 0; i < xs.length; i++) if (Number.isFinite(xs[i]!) && !(xs[i]! <= top)) top = xs[i]!
    return top
  }
  const peakMemory = highest(mem)
  const peakDeviceMemory = highest(floatsOf((tables.resources as Table).getChild("gpu_memory_used"), tables.resources.numRows))
  const tr = tables.transfers as Table
  const trBytes = floatsOf(tr.getChild("bytes"), tr.numRows)
  const trDur = floatsOf(tr.getChild("duration"), tr.numRows)
  let transferBytes = 0
  let transferSeconds = 0
  for (let i = 0; i < tr.numRows; i++) {
    if (Number.isFinite(trBytes[i]!)) transferBytes += trBytes[i]!
    if (Number.isFinite(trDur[i]!)) transferSeconds += trDur[i]!
  }
  return {
    label,
    pipeline: runs[0]?.pipeline,
    wall,
    parts,
    ...(byStage !== undefined ? { path: byStage } : {}),
    groups,
    durations,
    cpuDurations,
    peakMemory,
    peakDeviceMemory,
    transfers: tr.numRows,
    transferBytes,
    transferSeconds,
    sampleFiles
  }
}

/**
 * `m` with its wall time measured otherwise (a benchmark's clock around the run): the
 * part of the wall time off the critical path takes up the difference, so the parts
 * still add up.
 *
 * @since 0.1.0
 * @category analysis
 */
export const withWall = (m: RunMeasures, wall: number): RunMeasures => ({
  ...m,
  wall,
  parts: m.parts === undefined ? undefined : { ...m.parts, other: m.parts.other + (wall - m.wall) }
})

/**
 * Options of {@link compare}.
 *
 * @since 0.1.0
 * @category models
 */
export interface CompareOptions {
  /** the false-discovery rate (default 0.05) */
  readonly alpha?: number
  /** ratios within 1 ± this are never a change (default {@link defaultMinEffect}) */
  readonly minEffect?: number
  /** bootstrap resamples (default 2000) */
  readonly resamples?: number
  /**
   * what stages and functions are compared on: `time`, their tasks' durations (default),
   * or `cpu`, their tasks' thread CPU time, which other processes taking the cores (a
   * loaded CI machine) do not inflate: for CPU-bound kernels, it finds smaller changes
   */
  readonly measure?: "time" | "cpu"
  /** with fewer runs than {@link minRunsPerSide}: the minimum effect (default {@link defaultTasksMinEffect}) */
  readonly tasksMinEffect?: number
}

/**
 * A group's verdict. `slower?` and `faster?` (one run a side, tested over task
 * durations): indicative only, never a change `--fail-on regression` fails on: same-code
 * pairs of single runs flag such groups too often to trust (BENCHMARKS.md, "issue 36").
 *
 * @since 0.1.0
 * @category models
 */
export type Verdict = "slower" | "faster" | "slower?" | "faster?" | "same" | "untested" | "only old" | "only new"

/**
 * One group compared.
 *
 * @since 0.1.0
 * @category models
 */
export interface GroupDiff {
  readonly kind: "pipeline" | "stage" | "function"
  readonly stage: string
  readonly fn: string
  readonly mode: "runs" | "tasks"
  /** what the values are: wall time (s), task time (s), task duration (s) */
  readonly measure: "wall time" | "task time" | "task duration" | "CPU time" | "task CPU time"
  readonly oldN: number
  readonly newN: number
  readonly oldMedian: number
  readonly newMedian: number
  /** NEW/OLD medians, and its 95% bootstrap interval */
  readonly ratio: number
  readonly lo: number
  readonly hi: number
  /** Mann-Whitney p-value (NaN: not tested) and Benjamini–Hochberg q-value */
  readonly p: number
  readonly q: number
  /** seconds: the change in the mean time the group spent on the critical path (its effect on the wall time) */
  readonly wallEffect: number
  /** seconds: the change in the group's mean task time per run */
  readonly taskTimeChange: number
  readonly verdict: Verdict
}

/**
 * One part of the wall time, on each side (means over runs) and the change.
 *
 * @since 0.1.0
 * @category models
 */
export interface PartDiff {
  readonly part: keyof WallParts | "wall"
  readonly old: number
  readonly new: number
  readonly change: number
}

/**
 * One row of the critical path stage by stage, on each side (means over runs; a stage
 * not on a run's path counts 0 in it) and the change: a stage's `tasks`, `transfers` or
 * `hand-over` (see {@link PathStage}); the driver's `segments` and the `hand-over`
 * between two of them; `other`, the wall time off the path; last the `wall` time, whose
 * change the other rows' changes add up to.
 *
 * @since 0.1.0
 * @category models
 */
export interface PathRowDiff {
  readonly step: "stage" | "driver" | "off path" | "wall"
  /** the stage (`step` "stage"; else "") */
  readonly stage: string
  readonly part: "tasks" | "transfers" | "hand-over" | "segments" | "other" | "wall"
  readonly old: number
  readonly new: number
  readonly change: number
}

/**
 * A memory or transfer measure on each side (means over runs).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResourceDiff {
  readonly what: string
  readonly old: number
  readonly new: number
  readonly ratio: number
}

/**
 * The comparison.
 *
 * @since 0.1.0
 * @category models
 */
export interface DiffResult {
  readonly pipeline: string | undefined
  readonly oldRuns: number
  readonly newRuns: number
  readonly mode: "runs" | "tasks"
  readonly alpha: number
  readonly minEffect: number
  /** the minimum effect in `tasks` mode */
  readonly tasksMinEffect: number
  /** what stages and functions were compared on */
  readonly measure: "time" | "cpu"
  /** sorted by the size of their effect on the wall time, then of their task-time change */
  readonly groups: ReadonlyArray<GroupDiff>
  /** wall, then its parts; the parts' changes add up to the wall's (absent without critical paths) */
  readonly parts: ReadonlyArray<PartDiff>
  /**
   * the critical path stage by stage, every stage on either side's path in path order
   * (by its mean position along the paths), then the driver, the rest and the wall time:
   * the rows' changes add up to the wall's (empty where a run has no path by stage)
   */
  readonly path: ReadonlyArray<PathRowDiff>
  readonly resources: ReadonlyArray<ResourceDiff>
  readonly warnings: ReadonlyArray<string>
}

const pipelineOf = (runs: ReadonlyArray<RunMeasures>, side: string): string | undefined => {
  const named = new Set(runs.map((r) => r.pipeline).filter((p): p is string => p !== undefined && p !== ""))
  if (named.size > 1) {
    throw new DiffRefused({ message: `${side} holds runs of different pipelines (${[...named].sort().join(", ")}): compare runs of one pipeline` })
  }
  return [...named][0]
}

/**
 * Compares NEW against OLD (see the module header). Throws {@link DiffRefused}.
 *
 * @since 0.1.0
 * @category analysis
 */
export const compare = (old: ReadonlyArray<RunMeasures>, neu: ReadonlyArray<RunMeasures>, options: CompareOptions = {}): DiffResult => {
  if (old.length === 0) throw new DiffRefused({ message: "the baseline (OLD) holds no run" })
  if (neu.length === 0) throw new DiffRefused({ message: "NEW holds no run" })
  const po = pipelineOf(old, "the baseline (OLD)")
  const pn = pipelineOf(neu, "NEW")
  if (po !== undefined && pn !== undefined && po !== pn) {
    throw new DiffRefused({ message: `NEW runs pipeline "${pn}" but the baseline runs "${po}": compare runs of the same pipeline` })
  }
  const alpha = options.alpha ?? 0.05
  const minEffect = options.minEffect ?? defaultMinEffect
  const tasksMinEffect = options.tasksMinEffect ?? defaultTasksMinEffect
  const resamples = options.resamples ?? 2000
  const keysOf = (rs: ReadonlyArray<RunMeasures>) => new Set(rs.flatMap((r) => Object.keys(r.groups)))
  const ko = keysOf(old)
  const kn = keysOf(neu)
  const common = [...ko].filter((k) => kn.has(k))
  if (![...ko].some((k) => kn.has(k))) {
    throw new DiffRefused({ message: "NEW and the baseline have no stage or function in common: they are not runs of one pipeline" })
  }
  const warnings: Array<string> = []
  const runsMode = old.length >= minRunsPerSide && neu.length >= minRunsPerSide
  const mode: "runs" | "tasks" = runsMode ? "runs" : "tasks"
  const cpuMeasure = options.measure === "cpu"
  const hasDurations = (rs: ReadonlyArray<RunMeasures>) => rs.every((r) => (cpuMeasure ? r.cpuDurations : r.durations) !== undefined)
  if (runsMode) {
    // the exact test's smallest two-sided p-value for these sizes: 2 / C(n+m, n)
    let c = 1
    for (let k = 1; k <= old.length; k++) c = (c * (neu.length + k)) / k
    const pMin = 2 / c
    if (pMin > alpha / 2) {
      warnings.push(
        `${old.length} runs against ${neu.length}: the smallest p-value these sizes allow is ${pMin.toFixed(3)}, so after the false-discovery control ` +
          `little or nothing can be called a change; 5+ runs a side (10 recommended)`
      )
    }
  } else {
    warnings.push(
      `${old.length} run(s) against ${neu.length}: groups are tested over their task durations (runs of one side pooled); ` +
        `only groups of ${minTasksPerSide}+ tasks a side taking ${minTaskSeconds * 1000}+ ms each are tested, and a change is called only beyond ${(Math.max(minEffect, tasksMinEffect) * 100).toFixed(0)}% ` +
        `(one run cannot tell the machine's noise from the code's); the pipeline's wall time is not tested; ${minRunsPerSide}+ runs a side (10 recommended) test runs against runs`
    )
    if (!hasDurations(old) || !hasDurations(neu)) {
      warnings.push("saved bench results hold no task durations: with fewer runs than that, nothing is tested")
    }
  }
  const meanOf = (rs: ReadonlyArray<RunMeasures>, f: (r: RunMeasures) => number) => mean(rs.map(f))
  const rows: Array<Omit<GroupDiff, "q" | "verdict"> & { readonly tested: boolean }> = []
  /** One group's row: the values of each side tested (when `tested`), ratio and interval. */
  const row = (
    g: Pick<GroupDiff, "kind" | "stage" | "fn" | "measure" | "wallEffect" | "taskTimeChange">,
    a: ArrayLike<number>,
    b: ArrayLike<number>,
    seed: number,
    tested: boolean
  ) => {
    const ci = ratioInterval(a, b, { resamples, seed })
    const p = tested && a.length >= 2 && b.length >= 2 ? mannWhitney(a, b).p : NaN
    const lo = tested ? ci.lo : NaN
    const hi = tested ? ci.hi : NaN
    const n = { oldN: a.length, newN: b.length, oldMedian: median(a), newMedian: median(b) }
    rows.push({ ...g, mode, ...n, ratio: ci.estimate, lo, hi, p, tested })
  }
  // the pipeline: wall time, tested over runs only
  const walls = (rs: ReadonlyArray<RunMeasures>) => rs.map((r) => r.wall)
  const wallChange = mean(walls(neu)) - mean(walls(old))
  row({ kind: "pipeline", stage: "", fn: "", measure: "wall time", wallEffect: wallChange, taskTimeChange: NaN }, walls(old), walls(neu), 1, runsMode)
  common.sort().forEach((k, i) => {
    const g = parseGroupKey(k)
    const value = (r: RunMeasures) => (cpuMeasure ? r.groups[k]?.cpuTime : r.groups[k]?.taskTime) ?? 0
    const pooled = !runsMode && hasDurations(old) && hasDurations(neu)
    const pool = (rs: ReadonlyArray<RunMeasures>) => {
      const parts = rs.map((r) => (cpuMeasure ? r.cpuDurations : r.durations)![k] ?? new Float64Array(0))
      const out = new Float64Array(parts.reduce((s, x) => s + x.length, 0))
      let o = 0
      for (const x of parts) (out.set(x, o), o += x.length)
      return out
    }
    const onPath = (r: RunMeasures) => r.groups[k]?.onPath ?? 0
    const a = pooled ? pool(old) : old.map(value)
    const b = pooled ? pool(neu) : neu.map(value)
    // one run against one: only groups of enough tasks, long enough to time
    const testable = runsMode || (pooled && Math.min(a.length, b.length) >= minTasksPerSide && Math.min(median(a), median(b)) >= minTaskSeconds)
    row(
      {
        kind: g.kind,
        stage: g.stage,
        fn: g.fn,
        measure: cpuMeasure ? (pooled ? "task CPU time" : "CPU time") : pooled ? "task duration" : "task time",
        wallEffect: meanOf(neu, onPath) - meanOf(old, onPath),
        taskTimeChange: meanOf(neu, value) - meanOf(old, value)
      },
      a,
      b,
      2 + i,
      testable
    )
  })
  const q = benjaminiHochberg(rows.map((r) => (r.tested ? r.p : NaN)))
  const groups: Array<GroupDiff> = rows.map(({ tested, ...r }, i) => {
    const qi = q[i]!
    const bar = runsMode ? minEffect : Math.max(minEffect, tasksMinEffect)
    const significant = tested && qi <= alpha && (r.lo > 1 || r.hi < 1) && Math.abs(r.ratio - 1) >= bar
    const called = runsMode ? (r.ratio > 1 ? "slower" : "faster") : r.ratio > 1 ? "slower?" : "faster?"
    const verdict: Verdict = !tested || !Number.isFinite(qi) ? "untested" : significant ? called : "same"
    return { ...r, q: qi, verdict }
  })
  // groups on one side only
  for (const [keys, other, verdict] of [[ko, kn, "only old"], [kn, ko, "only new"]] as const) {
    for (const k of [...keys].filter((k) => !other.has(k)).sort()) {
      const g = parseGroupKey(k)
      const rs = verdict === "only old" ? old : neu
      const v = median(rs.map((r) => r.groups[k]?.taskTime ?? 0))
      groups.push({
        kind: g.kind,
        stage: g.stage,
        fn: g.fn,
        mode,
        measure: "task time",
        oldN: verdict === "only old" ? rs.length : 0,
        newN: verdict === "only new" ? rs.length : 0,
        oldMedian: verdict === "only old" ? v : NaN,
        newMedian: verdict === "only new" ? v : NaN,
        ratio: NaN,
        lo: NaN,
        hi: NaN,
        p: NaN,
        q: NaN,
        wallEffect: NaN,
        taskTimeChange: NaN,
        verdict
      })
    }
  }
  const mag = (x: number) => (Number.isFinite(x) ? Math.abs(x) : -1)
  groups.sort((x, y) =>
    (x.kind === "pipeline" ? -1 : 0) - (y.kind === "pipeline" ? -1 : 0) ||
    mag(y.wallEffect) - mag(x.wallEffect) || mag(y.taskTimeChange) - mag(x.taskTimeChange) ||
    (x.stage < y.stage ? -1 : x.stage > y.stage ? 1 : 0) || (x.fn < y.fn ? -1 : x.fn > y.fn ? 1 : 0)
  )
  // the wall time's parts (means over runs: means add up where medians would not)
  const parts: Array<PartDiff> = []
  if (old.every((r) => r.parts !== undefined) && neu.every((r) => r.parts !== undefined)) {
    const wo = meanOf(old, (r) => r.wall)
    const wn = meanOf(neu, (r) => r.wall)
    parts.push({ part: "wall", old: wo, new: wn, change: wn - wo })
    for (const part of ["tasks", "transfers", "driver", "latency", "other"] as const) {
      const a = meanOf(old, (r) => r.parts![part])
      const b = meanOf(neu, (r) => r.parts![part])
      parts.push({ part, old: a, new: b, change: b - a })
    }
  }
  const path = pathRows(old, neu)
  const res = (what: string, f: (r: RunMeasures) => number): ResourceDiff => {
    const a = meanOf(old, f)
    const b = meanOf(neu, f)
    return { what, old: a, new: b, ratio: b / a }
  }
  const resources: Array<ResourceDiff> = [
    res("peak host memory (bytes)", (r) => r.peakMemory),
    res("transfers", (r) => r.transfers),
    res("transfer bytes", (r) => r.transferBytes),
    res("transfer seconds", (r) => r.transferSeconds)
  ]
  for (const k of common.filter((k) => parseGroupKey(k).kind === "stage").sort()) {
    resources.push(res(`peak task memory of stage ${parseGroupKey(k).stage} (bytes)`, (r) => r.groups[k]?.peakMemory ?? NaN))
  }
  return {
    pipeline: pn ?? po,
    oldRuns: old.length,
    newRuns: neu.length,
    mode,
    alpha,
    minEffect,
    tasksMinEffect,
    measure: cpuMeasure ? "cpu" : "time",
    groups,
    parts,
    path,
    resources: resources.filter((r) => Number.isFinite(r.old) || Number.isFinite(r.new)),
    warnings
  }
}

/**
 * The critical path stage by stage ({@link DiffResult}'s `path`); empty unless every run
 * has its path by stage and its wall time's parts.
 */
const pathRows = (old: ReadonlyArray<RunMeasures>, neu: ReadonlyArray<RunMeasures>): Array<PathRowDiff> => {
  const all = [...old, ...neu]
  if (!all.every((r) => r.parts !== undefined && r.path !== undefined)) return []
  // path order: each stage by its mean position along the paths it is on
  const at = new Map<string, { sum: number; n: number }>()
  for (const r of all) {
    for (const s of r.path!.stages) {
      const e = at.get(s.stage) ?? { sum: 0, n: 0 }
      at.set(s.stage, { sum: e.sum + s.at, n: e.n + 1 })
    }
  }
  const order = [...at].map(([stage, e]) => ({ stage, at: e.sum / e.n }))
    .sort((x, y) => x.at - y.at || (x.stage < y.stage ? -1 : x.stage > y.stage ? 1 : 0))
  const rows: Array<PathRowDiff> = []
  const add = (step: PathRowDiff["step"], stage: string, part: PathRowDiff["part"], f: (r: RunMeasures) => number, always: boolean) => {
    const a = mean(old.map(f))
    const b = mean(neu.map(f))
    if (always || a !== 0 || b !== 0) rows.push({ step, stage, part, old: a, new: b, change: b - a })
  }
  const ofStage = (r: RunMeasures, stage: string) => r.path!.stages.find((s) => s.stage === stage)
  for (const { stage } of order) {
    add("stage", stage, "tasks", (r) => ofStage(r, stage)?.tasks ?? 0, true)
    add("stage", stage, "transfers", (r) => ofStage(r, stage)?.transfers ?? 0, false)
    add("stage", stage, "hand-over", (r) => ofStage(r, stage)?.handOver ?? 0, false)
  }
  add("driver", "", "segments", (r) => r.parts!.driver, true)
  add("driver", "", "hand-over", (r) => r.path!.driverHandOver, false)
  add("off path", "", "other", (r) => r.parts!.other, true)
  add("wall", "", "wall", (r) => r.wall, true)
  return rows
}

/**
 * Whether anything significant got slower (`--fail-on regression`).
 *
 * @since 0.1.0
 * @category analysis
 */
export const hasRegression = (d: DiffResult): boolean => d.groups.some((g) => g.verdict === "slower")

/**
 * A group's name for tables: `(pipeline)`, `stage S`, `F (stage S)`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const groupName = (g: Pick<GroupDiff, "kind" | "stage" | "fn">): string =>
  g.kind === "pipeline" ? "(pipeline)" : g.kind === "stage" ? `stage ${g.stage}` : `${g.fn} (stage ${g.stage})`

/**
 * A saved `tessera bench` result (`--save NAME`: NAME.json): what was run, where, and
 * each series' rounds as run measures.
 *
 * @since 0.1.0
 * @category models
 */
export interface BenchResult {
  readonly format: "tessera-bench"
  readonly version: 1
  readonly created: string
  readonly machine: Readonly<Record<string, unknown>>
  readonly settings: Readonly<Record<string, unknown>>
  readonly series: ReadonlyArray<{ readonly name: string; readonly file: string; readonly runs: ReadonlyArray<RunMeasures> }>
}

/**
 * One run's files: the trace databases (TracePlugin, ResourceMonitor: loaded together)
 * and the statistical profiler's samples.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunFiles {
  readonly label: string
  readonly traces: ReadonlyArray<string>
  readonly samples: ReadonlyArray<string>
}

const profilerFile = /^(.*)-(TracePlugin|ResourceMonitor|StatisticalProfiler)(?:-[^/\\]*)?\.msgpack$/

/**
 * Groups trace database paths into runs: the files one `--profile NAME` wrote
 * (`NAME-TracePlugin-{host}.msgpack`, `NAME-ResourceMonitor-…`,
 * `NAME-StatisticalProfiler-…`, every host's; DASF's `NAME-TracePlugin.msgpack` without a
 * host too) are one run; any other file is a run of its
 * own. In the order the runs' first files were given.
 *
 * @since 0.1.0
 * @category analysis
 */
export const runFileGroups = (files: ReadonlyArray<string>): Array<RunFiles> => {
  const out = new Map<string, { label: string; traces: Array<string>; samples: Array<string> }>()
  for (const f of files) {
    const m = profilerFile.exec(f)
    const key = m === null ? `file\u0000${f}` : `name\u0000${m[1]}`
    let g = out.get(key)
    if (g === undefined) out.set(key, g = { label: m === null ? f : `${m[1]}-*`, traces: [], samples: [] })
    if (m !== null && m[2] === "StatisticalProfiler") g.samples.push(f)
    else g.traces.push(f)
  }
  return [...out.values()]
}

/**
 * Whether `bytes` start a saved bench result (a JSON object) rather than a trace database.
 *
 * @since 0.1.0
 * @category analysis
 */
export const isBenchJson = (head: Uint8Array): boolean => {
  for (const b of head) {
    if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue
    return b === 0x7b // "{"
  }
  return false
}

/**
 * A saved bench result's runs; {@link DiffRefused} when it is not one, or holds several
 * series (`tessera bench A B --save` compares A and B itself; save one setting per file
 * to diff it later).
 *
 * @since 0.1.0
 * @category analysis
 */
export const benchRuns = (file: string, text: string): Array<RunMeasures> => {
  let j: unknown
  try {
    j = JSON.parse(text)
  } catch (e) {
    throw new DiffRefused({ message: `${file}: not a trace database, nor a saved bench result (JSON: ${(e as Error).message})` })
  }
  const r = j as Partial<BenchResult>
  if (r === null || typeof r !== "object" || r.format !== "tessera-bench" || !Array.isArray(r.series)) {
    throw new DiffRefused({ message: `${file}: a JSON file, but not a saved tessera bench result (no "format": "tessera-bench")` })
  }
  if (r.series.length !== 1) {
    throw new DiffRefused({
      message: `${file}: holds ${r.series.length} series (${r.series.map((s) => s.name).join(", ")}): save one pipeline setting per file to compare it`
    })
  }
  return r.series[0]!.runs.map((run: RunMeasures, i: number) => {
    const path = run.path as unknown
    if (path !== undefined && path !== null && !isPathByStage(path)) {
      throw new DiffRefused({ message: `${file}: run ${i + 1}'s "path" is not a critical path by stage ({ stages: [{ stage, at, tasks, transfers, handOver }], driverHandOver })` })
    }
    const { path: _p, ...rest } = run
    return { ...rest, parts: run.parts ?? undefined, ...(isPathByStage(path) ? { path } : {}), peakMemory: run.peakMemory ?? NaN }
  })
}

/** Whether `u` has a {@link PathByStage}'s shape (a saved bench result's, read back). */
const isPathByStage = (u: unknown): u is PathByStage => {
  if (typeof u !== "object" || u === null) return false
  const p = u as { readonly stages?: unknown; readonly driverHandOver?: unknown }
  const num = (x: unknown) => typeof x === "number" && Number.isFinite(x)
  return num(p.driverHandOver) && Array.isArray(p.stages) && p.stages.every((s: unknown) =>
    typeof s === "object" && s !== null && typeof (s as PathStage).stage === "string" &&
    num((s as PathStage).at) && num((s as PathStage).tasks) && num((s as PathStage).transfers) && num((s as PathStage).handOver)
  )
}

/**
 * The task columns a run's measures read (the load's projection: the rest stay null).
 *
 * @since 0.1.0
 * @category constants
 */
export const diffColumns = {
  tasks: ["stage", "size", "shape", "cpu_time", "peak_memory", "dependencies", "gather_start", "gather_end", "transfer_start", "transfer_end", "state"],
  memory: []
} as const satisfies LoadColumns

/**
 * Loads and measures one side: its trace databases grouped into runs
 * ({@link runFileGroups}), each run loaded on its own, and saved bench results
 * (`.json`). Rejects with {@link DiffRefused} or the load's `TraceFormatError`.
 *
 * @since 0.1.0
 * @category analysis
 */
export const loadSidePromise = async (
  files: ReadonlyArray<string>,
  options: { readonly onRun?: (label: string, events: number) => void } = {}
): Promise<Array<RunMeasures>> => {
  const { readFileSync, openSync, readSync, closeSync } = await import("node:fs")
  const { loadPromise } = await import("./Load.ts")
  const runs: Array<RunMeasures> = []
  const traces: Array<string> = []
  for (const f of files) {
    let head = new Uint8Array(16)
    try {
      const fd = openSync(f, "r")
      const k = readSync(fd, head, 0, 16, 0)
      closeSync(fd)
      head = head.subarray(0, k)
    } catch (e) {
      throw new DiffRefused({ message: `${f}: cannot read: ${(e as Error).message}` })
    }
    if (isBenchJson(head)) runs.push(...benchRuns(f, readFileSync(f, "utf8")))
    else traces.push(f)
  }
  for (const g of runFileGroups(traces)) {
    if (g.traces.length === 0) throw new DiffRefused({ message: `${g.label}: only stack samples, no trace database (TracePlugin) of the run` })
    const tables = await loadPromise(g.traces, { columns: diffColumns })
    if (tables.tasks.numRows === 0) throw new DiffRefused({ message: `${g.label}: no task in the run's databases (${g.traces.join(", ")})` })
    runs.push(measureRun(tables, g.label, g.samples))
    options.onRun?.(g.label, tables.events)
  }
  return runs
}

/**
 * Rows of text cells as aligned lines: the first column left, the rest right.
 *
 * @since 0.1.0
 * @category formatting
 */
export const alignColumns = (rows: ReadonlyArray<ReadonlyArray<string>>): Array<string> => {
  const w = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
  return rows.map((r) => r.map((x, c) => (c === 0 ? x.padEnd(w[c]!) : x.padStart(w[c]!))).join("  ").trimEnd())
}

const sec = (x: number): string => (Number.isFinite(x) ? (Math.abs(x) >= 100 ? x.toFixed(1) : Math.abs(x) >= 1 ? x.toFixed(3) : x.toFixed(4)) : "-")
const signed = (x: number): string => (Number.isFinite(x) ? (x >= 0 ? "+" : "") + sec(x) : "-")
const ratioText = (x: number): string => (Number.isFinite(x) ? x.toFixed(3) : "-")
const pText = (p: number): string => (!Number.isFinite(p) ? "-" : p < 1e-4 ? p.toExponential(1) : p.toFixed(4))

/**
 * The comparison as text: a heading, the groups' table, the wall time's parts, memory and
 * transfers, warnings and a one-line verdict.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatDiff = (d: DiffResult): string => {
  const out: Array<string> = []
  out.push(
    `pipeline ${d.pipeline ?? "(unnamed)"}: NEW (${d.newRuns} run${d.newRuns === 1 ? "" : "s"}) against the baseline OLD (${d.oldRuns} run${d.oldRuns === 1 ? "" : "s"}); ` +
      `tested over ${d.mode === "runs" ? "runs" : "task durations"}; false-discovery rate ${(d.alpha * 100).toFixed(0)}%, minimum effect ${((d.mode === "runs" ? d.minEffect : Math.max(d.minEffect, d.tasksMinEffect)) * 100).toFixed(1)}%` +
      (d.measure === "cpu" ? "; stages and functions on their tasks' thread CPU time" : "")
  )
  out.push("")
  out.push(...alignColumns([
    ["Group", "Measure", "OLD median (s)", "NEW median (s)", "NEW/OLD", "95% interval", "p", "q (BH)", "Wall effect (s)", "Verdict"],
    ...d.groups.map((g) => [
      groupName(g),
      g.measure,
      sec(g.oldMedian),
      sec(g.newMedian),
      ratioText(g.ratio),
      Number.isFinite(g.lo) && Number.isFinite(g.hi) ? `${ratioText(g.lo)}..${ratioText(g.hi)}` : "-",
      pText(g.p),
      pText(g.q),
      signed(g.wallEffect),
      g.verdict
    ])
  ]))
  if (d.parts.length > 0) {
    out.push("", "Wall time of the critical path, explained (means over runs; the parts' changes add up to the wall's):")
    out.push(...alignColumns([["Part", "OLD (s)", "NEW (s)", "Change (s)"], ...d.parts.map((p) => [p.part, sec(p.old), sec(p.new), signed(p.change)])]))
  }
  if (d.path.length > 0) {
    out.push("", "The critical path stage by stage, in path order (means over runs; the rows' changes add up to the wall's):")
    const step = (r: PathRowDiff) => (r.step === "stage" ? `stage ${r.stage}: ${r.part}` : r.step === "wall" ? "wall time" : `${r.step}: ${r.part}`)
    out.push(...alignColumns([["Step: part", "OLD (s)", "NEW (s)", "Change (s)"], ...d.path.map((r) => [step(r), sec(r.old), sec(r.new), signed(r.change)])]))
  }
  if (d.resources.length > 0) {
    out.push("", "Memory and transfers (means over runs):")
    const num = (x: number) => (Number.isFinite(x) ? (Math.abs(x) >= 1e6 ? `${(x / 2 ** 20).toFixed(1)} Mi` : x.toFixed(x % 1 === 0 ? 0 : 3)) : "-")
    out.push(...alignColumns([["Measure", "OLD", "NEW", "NEW/OLD"], ...d.resources.map((r) => [r.what, num(r.old), num(r.new), ratioText(r.ratio)])]))
  }
  for (const w of d.warnings) out.push("", `note: ${w}`)
  out.push("", verdictLine(d))
  return out.join("\n")
}

/**
 * The comparison's one-line verdict: the groups significantly slower and faster, and the
 * indicative ones of a one-run-a-side comparison.
 *
 * @since 0.1.0
 * @category formatting
 */
export const verdictLine = (d: DiffResult): string => {
  const list = (v: Verdict) => d.groups.filter((g) => g.verdict === v).map(groupName)
  const part = (names: ReadonlyArray<string>, what: string) => `${names.length} ${what}${names.length > 0 ? ` (${names.join("; ")})` : ""}`
  const slower = list("slower")
  const faster = list("faster")
  const hints = [...list("slower?"), ...list("faster?")]
  const main = slower.length + faster.length === 0 ? "no significant change" : `${part(slower, "significantly slower")}, ${part(faster, "significantly faster")}`
  return hints.length === 0
    ? main
    : `${main}; indicative only (one run a side, not a change --fail-on fails on): ${part(list("slower?"), "slower?")}, ${part(list("faster?"), "faster?")}`
}

/**
 * The comparison as JSON-ready data (NaN as null).
 *
 * @since 0.1.0
 * @category formatting
 */
export const diffJson = (d: DiffResult): unknown =>
  JSON.parse(JSON.stringify({ ...d, regression: hasRegression(d) }, (_, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v)))

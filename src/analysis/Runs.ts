/**
 * The runs a set of loaded trace databases holds. Databases of several runs passed
 * together (two `--profile` names, or one name appended to without `--overwrite`)
 * load as one timeline, mostly idle between the runs; every analysis over it would
 * mix them. A run is found by:
 *
 * - its `Pipeline Graph` event (one per profiled pipeline run, written as its first
 *   compute starts): each such event after the first starts a new run;
 * - a gap between tasks (DASF's traces have no graph event): no task running for at least
 *   {@link minGapSeconds} and for longer than all the tasks' busy time together (the
 *   union of their intervals), so that a long run's idle minute does not count.
 *
 * Each run has its start (its first task's start, or its graph event), its tasks and the
 * pipeline named by its graph event. {@link filesOfRuns} says which files hold which run.
 *
 * @since 0.1.0
 */
import { isPipelineGraphEvent } from "../trace/TraceEvent.ts"
import type { Table } from "apache-arrow"
import type { TraceTables } from "./Load.ts"

/**
 * Gaps shorter than this never split runs (seconds).
 *
 * @since 0.1.0
 * @category constants
 */
export const minGapSeconds = 30

/**
 * One run of a trace.
 *
 * @since 0.1.0
 * @category models
 */
export interface Run {
  /** epoch seconds: the graph event or the first task's start, whichever is first */
  readonly start: number
  /** epoch seconds: the last task's end (the start when there is no task) */
  readonly stop: number
  readonly tasks: number
  /** the pipeline named by the run's graph event, if any */
  readonly pipeline: string | undefined
}

/** The task intervals, sorted by start. */
const intervals = (tables: TraceTables): Array<readonly [number, number]> => {
  const t = tables.tasks
  const start = t.getChild("start")
  const end = t.getChild("end")
  const out: Array<readonly [number, number]> = []
  if (start === null || end === null) return out
  for (let i = 0; i < t.numRows; i++) {
    const a = start.get(i) as number | null
    const b = end.get(i) as number | null
    if (a === null || b === null || !Number.isFinite(a) || !Number.isFinite(b)) continue
    out.push([a, Math.max(a, b)])
  }
  return out.sort((x, y) => x[0] - y[0])
}

/**
 * The runs of `tables` (at least one when there is any task or graph event; none for
 * an empty trace), in time order.
 *
 * @since 0.1.0
 * @category analysis
 */
export const runsOf = (tables: TraceTables): Array<Run> => {
  const graphs = tables.metadata
    .filter(isPipelineGraphEvent)
    .map((e) => ({ time: e.timestamp, pipeline: String((e.args as { pipeline?: unknown }).pipeline ?? "") }))
    .sort((a, b) => a.time - b.time)
    // the same run's event read twice (the same file given twice) is one run
    .filter((g, i, all) => i === 0 || g.time - all[i - 1]!.time > 1e-6)
  const tasks = intervals(tables)
  // the busy stretches: the union of the task intervals
  const busy: Array<[number, number]> = []
  for (const [a, b] of tasks) {
    const last = busy.at(-1)
    if (last !== undefined && a <= last[1]) last[1] = Math.max(last[1], b)
    else busy.push([a, b])
  }
  const busyTotal = busy.reduce((s, [a, b]) => s + (b - a), 0)
  const starts = new Set<number>()
  for (const g of graphs.slice(1)) starts.add(g.time)
  for (let i = 1; i < busy.length; i++) {
    const from = busy[i - 1]![1]
    const to = busy[i]![0]
    const gap = to - from
    // a graph event in the gap already starts the next run there
    const graphed = graphs.some((g) => g.time > from && g.time <= to)
    if (gap >= minGapSeconds && gap > busyTotal && !graphed) starts.add(to)
  }
  const cuts = [...starts].sort((a, b) => a - b)
  // run r holds what starts in [cuts[r-1], cuts[r])
  const runOf = (time: number) => {
    let r = 0
    while (r < cuts.length && time >= cuts[r]! - 1e-9) r++
    return r
  }
  const runs = Array.from({ length: cuts.length + 1 }, () => ({ start: Infinity, stop: -Infinity, tasks: 0, pipeline: undefined as string | undefined }))
  for (const g of graphs) {
    const run = runs[runOf(g.time)]!
    run.pipeline ??= g.pipeline
    run.start = Math.min(run.start, g.time)
    run.stop = Math.max(run.stop, g.time)
  }
  for (const [a, b] of tasks) {
    const run = runs[runOf(a)]!
    run.tasks++
    run.start = Math.min(run.start, a)
    run.stop = Math.max(run.stop, b)
  }
  return runs.filter((r) => Number.isFinite(r.start))
}

/**
 * Which of `files` hold which run: the runs each file's own timed rows (tasks, resource
 * samples, memory events) fall in, found by loading each file alone with `loadOne`.
 * Files with no timed rows are left out.
 *
 * @since 0.1.0
 * @category analysis
 */
export const filesOfRuns = async (
  runs: ReadonlyArray<Run>,
  files: ReadonlyArray<string>,
  loadOne: (file: string) => Promise<TraceTables>
): Promise<Array<Array<string>>> => {
  const out = runs.map(() => [] as Array<string>)
  for (const file of files) {
    let tables: TraceTables
    try {
      tables = await loadOne(file)
    } catch {
      continue
    }
    const times: Array<number> = []
    for (const [a] of intervals(tables)) times.push(a)
    for (const t of [tables.resources as Table, tables.memory as Table]) {
      const c = t.getChild("timestamp")
      if (c === null) continue
      for (let i = 0; i < t.numRows; i++) {
        const v = c.get(i) as number | null
        if (v !== null && Number.isFinite(v)) times.push(v)
      }
    }
    runs.forEach((r, k) => {
      // a run's window reaches to the next run's start (resource samples outlive the tasks)
      const until = runs[k + 1]?.start ?? Infinity
      if (times.some((t) => t >= r.start - 1 && t < until)) out[k]!.push(file)
    })
  }
  return out
}

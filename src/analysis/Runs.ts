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

/** The valid task intervals (both ends finite; an end before its start taken as the start), in file order. */
const intervals = (tables: TraceTables): { readonly start: Float64Array; readonly end: Float64Array } => {
  const t = tables.tasks
  const startCol = t.getChild("start")
  const endCol = t.getChild("end")
  if (startCol === null || endCol === null) return { start: new Float64Array(0), end: new Float64Array(0) }
  // the columns' own typed arrays where they have no nulls (no per-row getter)
  const a0 = startCol.nullCount === 0 ? startCol.toArray() as unknown : undefined
  const b0 = endCol.nullCount === 0 ? endCol.toArray() as unknown : undefined
  const fast = a0 instanceof Float64Array && b0 instanceof Float64Array
  const start = new Float64Array(t.numRows)
  const end = new Float64Array(t.numRows)
  let n = 0
  for (let i = 0; i < t.numRows; i++) {
    const x = fast ? a0[i]! : startCol.get(i) as number | null
    const y = fast ? b0[i]! : endCol.get(i) as number | null
    if (x === null || y === null || !Number.isFinite(x) || !Number.isFinite(y)) continue
    start[n] = x
    end[n] = y > x ? y : x
    n++
  }
  return { start: start.subarray(0, n), end: end.subarray(0, n) }
}

/**
 * The busy stretches, the union of the intervals, in time order: a sweep over the starts
 * and the ends each sorted on its own (a count of open intervals; no pair sort needed).
 */
const busyStretches = (start: Float64Array, end: Float64Array): Array<[number, number]> => {
  const s = Float64Array.from(start).sort()
  const e = Float64Array.from(end).sort()
  const busy: Array<[number, number]> = []
  let open = 0
  let i = 0
  let j = 0
  while (i < s.length) {
    // starts before ends at equal times: touching intervals make one stretch
    if (s[i]! <= e[j]!) {
      if (open === 0) busy.push([s[i]!, s[i]!])
      open++
      i++
    } else {
      open--
      if (open === 0) busy.at(-1)![1] = e[j]!
      j++
    }
  }
  // the ends left close the last stretch at the latest end
  if (open > 0) busy.at(-1)![1] = e[e.length - 1]!
  return busy
}

/**
 * The valid task intervals' count, earliest start and latest end, read from the columns'
 * typed arrays (no per-row getter, no sort); `undefined` where the columns are not plain
 * float64 without nulls, and the caller takes the general path.
 */
const span = (tables: TraceTables): { readonly n: number; readonly lo: number; readonly hi: number } | undefined => {
  const start = tables.tasks.getChild("start")
  const end = tables.tasks.getChild("end")
  if (start === null || end === null || start.nullCount > 0 || end.nullCount > 0) return undefined
  const a = start.toArray() as unknown
  const b = end.toArray() as unknown
  if (!(a instanceof Float64Array) || !(b instanceof Float64Array)) return undefined
  let n = 0
  let lo = Infinity
  let hi = -Infinity
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue
    n++
    if (x < lo) lo = x
    const z = y > x ? y : x
    if (z > hi) hi = z
  }
  return { n, lo, hi }
}

/**
 * Whether no idle gap of {@link minGapSeconds} or more can lie between `lo` and `hi`: the
 * span cut into bins of half that width, each interval marking the bins it touches (a
 * difference array, so a long interval costs two writes), and every bin touched — a gap
 * that long would hold a whole bin no interval touches. False where it cannot tell
 * cheaply (more than a million bins, or columns the caller could not read as typed arrays).
 */
const noLongGap = (tables: TraceTables, lo: number, hi: number): boolean => {
  const width = minGapSeconds / 2
  const bins = Math.floor((hi - lo) / width) + 1
  if (!(bins <= 1_000_000)) return false
  const a = tables.tasks.getChild("start")?.toArray() as unknown
  const b = tables.tasks.getChild("end")?.toArray() as unknown
  if (!(a instanceof Float64Array) || !(b instanceof Float64Array)) return false
  const marks = new Int32Array(bins + 1)
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    if (!Number.isFinite(x) || !Number.isFinite(y)) continue
    marks[Math.floor((x - lo) / width)]!++
    marks[Math.floor(((y > x ? y : x) - lo) / width) + 1]!--
  }
  let open = 0
  for (let k = 0; k < bins; k++) {
    open += marks[k]!
    if (open === 0) return false
  }
  return true
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
  // one graph event at most and every task within minGapSeconds: one run, whatever the
  // gaps (the usual case, found without building and sorting an interval per task)
  const quick = graphs.length <= 1 ? span(tables) : undefined
  if (quick !== undefined && (quick.n === 0 || quick.hi - quick.lo < minGapSeconds || noLongGap(tables, quick.lo, quick.hi))) {
    const g = graphs[0]
    const start = Math.min(quick.lo, g?.time ?? Infinity)
    const stop = Math.max(quick.hi, g?.time ?? -Infinity)
    return Number.isFinite(start) ? [{ start, stop, tasks: quick.n, pipeline: g?.pipeline }] : []
  }
  const tasks = intervals(tables)
  const busy = busyStretches(tasks.start, tasks.end)
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
  for (let i = 0; i < tasks.start.length; i++) {
    const a = tasks.start[i]!
    const run = runs[runOf(a)]!
    run.tasks++
    run.start = Math.min(run.start, a)
    run.stop = Math.max(run.stop, tasks.end[i]!)
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
    for (const a of intervals(tables).start) times.push(a)
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

/**
 * What the diagnosis rules read, computed once per trace from the built-in analyses:
 * the task columns (`taskView`, `stageInputOf`), the gating critical path with its split
 * into tasks / driver / scheduling latency (`criticalPathSteps` by end: every gap on it is
 * hand-over, not a task queued behind another), per-group duration and size
 * statistics (a group: one function within one stage), per-worker busy time, the memory
 * each worker held, the hosts' memory (HostMemory.ts), transfers and clock offsets. Rules (Rules.ts) never read the tables
 * themselves, so every rule costs time proportional to the groups it looks at, not to
 * the trace.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { criticalPathSteps, type CriticalPathSteps } from "../CriticalPath.ts"
import { codesOf, floatsOf } from "../internal/access.ts"
import { str, type Tables, type TaskView, taskView } from "../internal/taskView.ts"
import { stageInputOf, type StageInput } from "../StageSummary.ts"
import type { TraceEvent } from "../../trace/TraceEvent.ts"
import { type HostMemory, hostMemoryOfTable } from "./HostMemory.ts"

/**
 * The tables a diagnosis reads: a loaded trace's (`Load.TraceTables` is one), all but
 * `tasks` optional.
 *
 * @since 0.1.0
 * @category models
 */
export interface DiagnosisTables extends Tables {
  readonly clockOffsets?: Table
  readonly metadata?: ReadonlyArray<TraceEvent>
  /** keys computed more than once (Load.ts `recomputed`) */
  readonly recomputed?: number
  /** `Resource Usage` samples: the hosts' memory is read from them when they carry it */
  readonly resources?: Table
  /**
   * the hosts' memory samples, where the caller read them (`HostMemory.readHostMemory`);
   * else they are read from `resources`
   */
  readonly hostMemory?: ReadonlyArray<HostMemory>
}

/**
 * Seconds of stack samples in the run, and of those in V8's `(garbage collector)` frame,
 * per task function (Profile.ts data summarised; absent without a profile).
 *
 * @since 0.1.0
 * @category models
 */
export interface GcSeconds {
  /** worker threads the samples were taken on (idle ones too: the pool's size) */
  readonly workers: number
  readonly sampled: number
  readonly gc: number
  readonly byFunction: ReadonlyMap<string, { readonly sampled: number; readonly gc: number }>
  /** samples taken on each task (by key), and the sampling interval (seconds) */
  readonly samplesByKey: ReadonlyMap<string, number>
  readonly interval: number
}

/**
 * One group of tasks: a function within a stage (the stage "" where tasks have none).
 *
 * @since 0.1.0
 * @category models
 */
export interface Group {
  readonly stage: string
  readonly fn: string
  /** task rows, in row order */
  readonly rows: Int32Array
  readonly medianDuration: number
  readonly medianBytes: number
  readonly taskTime: number
  readonly cpuTime: number
  readonly ioBytes: number
  /** first start, last end (epoch seconds) */
  readonly start: number
  readonly end: number
}

/**
 * A worker's row: its busy time (tasks' durations summed) and task count.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerBusy {
  readonly host: string
  readonly worker: string
  readonly busy: number
  readonly tasks: number
  readonly longest: number
  readonly longestRow: number
}

/**
 * Everything a rule reads.
 *
 * @since 0.1.0
 * @category models
 */
export interface Facts {
  readonly v: TaskView
  readonly input: StageInput
  readonly cpu: Float64Array
  readonly io: Float64Array
  readonly peak: Float64Array
  /**
   * per task: the bytes of its result, else (no size recorded) of its inputs: the
   * chunk's own data (a consumer of a large chunk reads it, but is not skewed by it)
   */
  readonly bytes: Float64Array
  readonly path: CriticalPathSteps
  /** per task row: the compute it ran in (the driver's `wait` segment around its start), -1 where none */
  readonly computeOf: Int32Array
  /** per task row: 1 where the row is a task step of the critical path */
  readonly onPath: Uint8Array
  readonly runStart: number
  readonly runEnd: number
  readonly wall: number
  readonly groups: ReadonlyArray<Group>
  readonly workers: ReadonlyArray<WorkerBusy>
  /** per host, its memory over time (none where the samples do not carry it) */
  readonly hostMemory: ReadonlyArray<HostMemory>
  readonly gc?: GcSeconds
  /** the pool's size as the caller knows it (a pool started before the profiler leaves no start-ups in the trace) */
  readonly poolSize?: number
  readonly tables: DiagnosisTables
}

/**
 * The median of `xs` over `rows` (NaN values skipped; NaN when none is left).
 *
 * @since 0.1.0
 * @category getters
 */
export const median = (xs: ArrayLike<number>, rows: ArrayLike<number>): number => {
  const all = new Float64Array(rows.length)
  let k = 0
  for (let i = 0; i < rows.length; i++) {
    const x = xs[rows[i]!]!
    if (x === x) all[k++] = x
  }
  const a = all.subarray(0, k).sort()
  const m = a.length >> 1
  return a.length === 0 ? NaN : a.length % 2 === 1 ? a[m]! : (a[m - 1]! + a[m]!) / 2
}

/**
 * Compute the facts of a trace (`gc`: a profile's GC seconds, when one was loaded;
 * `poolSize`: worker threads the run had, when the caller knows).
 *
 * @since 0.1.0
 * @category constructors
 */
export const factsOf = (tables: DiagnosisTables, gc?: GcSeconds, poolSize?: number): Facts => {
  const v = taskView(tables.tasks)
  const n = v.n
  const input = stageInputOf(tables)
  const cpu = floatsOf(tables.tasks.getChild("cpu_time"), n)
  const io = floatsOf(tables.tasks.getChild("io_bytes"), n)
  const peak = floatsOf(tables.tasks.getChild("peak_memory"), n)
  const bytes = new Float64Array(n)
  for (let i = 0; i < n; i++) bytes[i] = v.size[i]! > 0 ? v.size[i]! : input.bytesIn[i]! || 0
  const path = criticalPathSteps(tables, { by: "end" })
  const waits = input.segments.filter((s) => s.activity === "wait").slice().sort((a, b) => a.start - b.start)
  const computeOf = new Int32Array(n).fill(-1)
  if (waits.length > 0) {
    for (let i = 0; i < n; i++) {
      const t = v.start[i]!
      let lo = 0
      let hi = waits.length
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (waits[mid]!.start <= t) lo = mid + 1
        else hi = mid
      }
      if (lo > 0 && t <= waits[lo - 1]!.end + 1e-3) computeOf[i] = lo - 1
    }
  }
  const onPath = new Uint8Array(n)
  for (const s of path.steps) if (s._tag === "Task") onPath[s.row] = 1
  // groups: (stage, function), as compressed rows
  const fnCodes = v.fn.codes
  const nStages = input.names.length + 1
  const idOf = new Map<number, number>()
  const ids: Array<number> = []
  const gOf = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    const id = (fnCodes[i]! + 1) * nStages + (input.stage[i]! + 1)
    let g = idOf.get(id)
    if (g === undefined) (g = ids.length, idOf.set(id, g), ids.push(id))
    gOf[i] = g
  }
  const off = new Int32Array(ids.length + 1)
  for (let i = 0; i < n; i++) off[gOf[i]! + 1]!++
  for (let g = 0; g < ids.length; g++) off[g + 1]! += off[g]!
  const fill = off.slice(0, ids.length)
  const all = new Int32Array(n)
  for (let i = 0; i < n; i++) all[fill[gOf[i]!]!++] = i
  const groups: Array<Group> = []
  ids.forEach((id, gi) => {
    const rows = all.subarray(off[gi]!, off[gi + 1]!)
    const s = (id % nStages) - 1
    const f = Math.floor(id / nStages) - 1
    let taskTime = 0
    let cpuTime = 0
    let ioBytes = 0
    let start = Infinity
    let end = -Infinity
    for (let j = 0; j < rows.length; j++) {
      const r = rows[j]!
      taskTime += Math.max(0, v.duration[r]! || 0)
      cpuTime += cpu[r]! || 0
      ioBytes += io[r]! || 0
      if (v.start[r]! < start) start = v.start[r]!
      if (v.end[r]! > end) end = v.end[r]!
    }
    groups.push({
      stage: s < 0 ? "" : input.names[s]!,
      fn: (f < 0 ? null : str(v.fn, f)) ?? "",
      rows,
      medianDuration: median(v.duration, rows),
      medianBytes: median(bytes, rows),
      taskTime,
      cpuTime,
      ioBytes,
      start,
      end
    })
  })
  groups.sort((a, b) => a.start - b.start || (a.stage < b.stage ? -1 : a.stage > b.stage ? 1 : 0) || (a.fn < b.fn ? -1 : 1))
  // workers
  const hostCodes = v.host.codes
  const wCodes = v.worker.codes
  const byWorker = new Map<number, { host: number; worker: number; busy: number; tasks: number; longest: number; longestRow: number }>()
  const nw = v.worker.size + 1
  for (let i = 0; i < n; i++) {
    const id = (hostCodes[i]! + 1) * nw + wCodes[i]! + 1
    let w = byWorker.get(id)
    if (w === undefined) byWorker.set(id, w = { host: hostCodes[i]!, worker: wCodes[i]!, busy: 0, tasks: 0, longest: 0, longestRow: -1 })
    const d = Math.max(0, v.duration[i]! || 0)
    w.busy += d
    w.tasks++
    if (d > w.longest) (w.longest = d, w.longestRow = i)
  }
  const workers = [...byWorker.values()].map((w) => ({
    host: str(v.host, w.host) ?? "",
    worker: str(v.worker, w.worker) ?? "",
    busy: w.busy,
    tasks: w.tasks,
    longest: w.longest,
    longestRow: w.longestRow
  })).sort((a, b) => (a.host + "\t" + a.worker < b.host + "\t" + b.worker ? -1 : 1))
  const runStart = input.runStart
  const runEnd = input.runEnd
  return {
    v,
    input,
    cpu,
    io,
    peak,
    bytes,
    path,
    computeOf,
    onPath,
    runStart,
    runEnd,
    wall: Math.max(0, runEnd - runStart),
    groups,
    workers,
    hostMemory: tables.hostMemory ?? hostMemoryOfTable(tables.resources) ?? [],
    ...(gc !== undefined ? { gc } : {}),
    ...(poolSize !== undefined ? { poolSize } : {}),
    tables
  }
}

/**
 * The string codes of a table's column (empty codes for a missing table or column).
 *
 * @since 0.1.0
 * @category getters
 */
export const columnCodes = (t: Table | undefined, name: string) => codesOf(t?.getChild(name) ?? null, t?.numRows ?? 0)

/**
 * The floats of a table's column (empty for a missing table; NaN for a missing column).
 *
 * @since 0.1.0
 * @category getters
 */
export const columnFloats = (t: Table | undefined, name: string): Float64Array => floatsOf(t?.getChild(name) ?? null, t?.numRows ?? 0)

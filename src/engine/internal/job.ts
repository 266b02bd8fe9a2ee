/**
 * One compute as an executor sees it: the graph, the scheduler state, the hooks split by
 * kind (so the hot loop skips absent ones with one length check) and the bookkeeping
 * for engine events (per-worker held bytes, TaskRecords). Executors call `pre`/`post`
 * around each task and `record` when a worker reports timings.
 *
 * @since 0.1.0
 * @internal
 */
import type { MemoryRecord, TaskRecord } from "../EngineEvents.ts"
import { threadId } from "../EngineEvents.ts"
import * as EngineClock from "../EngineClock.ts"
import type { Callbacks } from "../Hooks.ts"
import * as Lineage from "../Lineage.ts"
import type { SchedulerState } from "../State.ts"
import { dependencyKeysAt, dependentKeysAt } from "../TaskGraph.ts"
import type { TaskGraph } from "../TaskGraph.ts"
import { describeResult } from "./kernels.ts"
import type { ResultInfo } from "./kernels.ts"

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

const threadIds = new Map<string, Array<string>>()
const threadIdCached = (host: string, w: number): string => {
  let ids = threadIds.get(host)
  if (ids === undefined) threadIds.set(host, ids = [])
  return ids[w] ??= threadId(host, w)
}

/**
 * A compute handed to an executor.
 *
 * @since 0.1.0
 * @internal
 */
export interface Job {
  readonly graph: TaskGraph
  readonly state: SchedulerState
  readonly pre: ReadonlyArray<Callbacks>
  readonly post: ReadonlyArray<Callbacks>
  readonly taskCbs: ReadonlyArray<Callbacks>
  readonly memoryCbs: ReadonlyArray<Callbacks>
  readonly transferCbs: ReadonlyArray<Callbacks>
  readonly clockCbs: ReadonlyArray<Callbacks>
  /** true when any callback wants task or memory records */
  readonly profile: boolean
  /**
   * While true, task and memory records are queued in `outbox` instead of delivered:
   * the pool holds them back while it handles a finished batch, and delivers them (in
   * order) after it has sent the workers their next tasks, so that profiling callbacks
   * never stand between a worker and its next batch.
   */
  deferring: boolean
  /** queued records; a task's is kept as a `PendingTask` and built when delivered */
  readonly outbox: Array<PendingTask | MemoryRecord>
  /** the callbacks asking for samples (`sampling` and `samples`), if any */
  readonly sampler: Callbacks | undefined
  /** tasks run on the main thread (the in-process executor, when sampled): records say so */
  mainThread: boolean
  /** the run the records belong to (see Lineage), when a callback carries one */
  readonly run: Lineage.Run | undefined
  /** execution key of each task that ran (filled as records are made), when `run` is set */
  readonly exec: Array<string> | null
}

/**
 * Builds a job from the started callbacks.
 *
 * @since 0.1.0
 * @internal
 */
export const makeJob = (
  graph: TaskGraph,
  state: SchedulerState,
  callbacks: ReadonlyArray<Callbacks>,
  run?: Lineage.Run
): Job => {
  const taskCbs = callbacks.filter((c) => typeof c.task === "function")
  const memoryCbs = callbacks.filter((c) => typeof c.memory === "function")
  const profile = taskCbs.length > 0 || memoryCbs.length > 0
  return {
    graph,
    state,
    pre: callbacks.filter((c) => typeof c.pretask === "function"),
    post: callbacks.filter((c) => typeof c.posttask === "function"),
    taskCbs,
    memoryCbs,
    transferCbs: callbacks.filter((c) => typeof c.transfer === "function"),
    clockCbs: callbacks.filter((c) => typeof c.clock === "function"),
    profile,
    deferring: false,
    outbox: [],
    sampler: callbacks.find((c) => c.sampling !== undefined && typeof c.samples === "function"),
    mainThread: false,
    run: profile ? run : undefined,
    exec: profile && run !== undefined ? new Array<string>(graph.size) : null
  }
}

/**
 * Ends deferral and delivers the queued records in the order they were made. The
 * queue is emptied even when a callback throws: the rest are lost, never repeated.
 *
 * @since 0.1.0
 * @internal
 */
export const deliverRecords = (job: Job): void => {
  job.deferring = false
  const out = job.outbox
  if (out.length === 0) return
  try {
    for (let k = 0; k < out.length; k++) {
      const x = out[k]!
      if (x instanceof PendingTask) {
        const r = taskRecord(job, x)
        for (const cb of job.taskCbs) cb.task!(r)
      } else for (const cb of job.memoryCbs) cb.memory!(x)
    }
  } finally {
    out.length = 0
  }
}

/** @since 0.1.0 @internal */
export const pre = (job: Job, i: number): void => {
  const key = job.graph.keys[i]!
  for (const cb of job.pre) cb.pretask!(key, job.graph, job.state)
}

/** @since 0.1.0 @internal */
export const post = (job: Job, i: number, result: unknown, workerId: number): void => {
  const key = job.graph.keys[i]!
  for (const cb of job.post) cb.posttask!(key, result, job.graph, job.state, workerId)
}

/**
 * Per-worker held bytes and chunks; emits a MemoryRecord after each change. Installed
 * as `state.onRelease` so releases are accounted to the worker that produced the data.
 *
 * @since 0.1.0
 * @internal
 */
export class MemoryBook {
  readonly bytes: Float64Array
  readonly chunks: Int32Array
  readonly owner: Int32Array
  readonly size: Float64Array
  readonly count: Int32Array
  /** device bytes held by each GPU worker (NaN: a CPU worker), as its last batch reported */
  readonly device: Float64Array
  readonly job: Job
  readonly host: string
  constructor(job: Job, workers: number, host: string) {
    const n = job.graph.size
    this.job = job
    this.host = host
    this.bytes = new Float64Array(workers)
    this.chunks = new Int32Array(workers)
    this.owner = new Int32Array(n).fill(-1)
    this.size = new Float64Array(n)
    this.count = new Int32Array(n)
    this.device = new Float64Array(workers).fill(NaN)
    job.state.onRelease = (i) => this.release(i)
  }
  hold(i: number, workerId: number, nbytes: number, c: number): void {
    this.owner[i] = workerId
    this.size[i] = nbytes
    this.count[i] = c
    this.bytes[workerId]! += nbytes
    this.chunks[workerId]! += c
    this.emit(i, workerId, "memory")
  }
  release(i: number): void {
    const w = this.owner[i]!
    if (w < 0) return
    this.bytes[w]! -= this.size[i]!
    this.chunks[w]! -= this.count[i]!
    this.owner[i] = -1
    this.emit(i, w, "released")
  }
  emit(i: number, w: number, state: MemoryRecord["state"]): void {
    if (this.job.memoryCbs.length === 0) return
    const rec: Mutable<MemoryRecord> = {
      timestamp: EngineClock.nowSeconds(),
      host: this.host,
      workerId: w,
      threadId: threadIdCached(this.host, w),
      key: execKeyAt(this.job, i),
      state,
      bytes: this.bytes[w]!,
      chunks: this.chunks[w]!
    }
    // added after the literal, as TaskRecord's stage (a spread there is V8's slow path)
    if (!Number.isNaN(this.device[w]!)) rec.device = this.device[w]!
    if (this.job.deferring) this.job.outbox.push(rec)
    else for (const cb of this.job.memoryCbs) cb.memory!(rec)
  }
}

/** The execution key of task `i` (its graph key when the job has no run). */
const execKeyAt = (job: Job, i: number): string => job.exec?.[i] ?? job.graph.keys[i]!

/**
 * Dependencies of task `i` as execution keys: its graph dependencies (which ran earlier
 * in this compute), then the tasks of earlier computes that made the values it takes as
 * arguments (Lineage origins).
 */
const execDependencies = (job: Job, run: Lineage.Run, i: number): Array<string> => {
  const g = job.graph
  const out = new Array<string>(g.depStart[i + 1]! - g.depStart[i]!)
  for (let j = g.depStart[i]!, q = 0; j < g.depStart[i + 1]!; j++, q++) out[q] = execKeyAt(job, g.depList[j]!)
  const args = g.specs[i]!.args
  for (let a = 0; a < args.length; a++) {
    const from = Lineage.originOf(run, args[a])
    if (from === undefined) continue
    for (const k of from) if (!out.includes(k)) out.push(k)
  }
  return out
}

/**
 * Dependents of task `i` as the execution keys they will get when they run (or got: a
 * record built after its dependents ran, see `PendingTask`, names the keys they were given).
 */
const execDependents = (job: Job, run: Lineage.Run, i: number): Array<string> => {
  const g = job.graph
  const exec = job.exec!
  const out = new Array<string>(g.dependentStart[i + 1]! - g.dependentStart[i]!)
  for (let j = g.dependentStart[i]!, q = 0; j < g.dependentStart[i + 1]!; j++, q++) {
    const d = g.dependentList[j]!
    out[q] = exec[d] ?? Lineage.nextKey(run, g.keys[d]!)
  }
  return out
}

/**
 * Task `i`'s execution key, dependencies and dependents as its TaskRecord will have them,
 * for an executor that records the task in another process (the cluster's workers);
 * assigns the execution key now, and `record` keeps it.
 *
 * @since 0.1.0
 * @internal
 */
export const taskLineage = (job: Job, i: number): [key: string, dependencies: Array<string>, dependents: Array<string>] => {
  const run = job.run
  if (run === undefined) return [job.graph.keys[i]!, dependencyKeysAt(job.graph, i), dependentKeysAt(job.graph, i)]
  const key = job.exec![i] ??= Lineage.executeKey(run, job.graph.keys[i]!)
  return [key, execDependencies(job, run, i), execDependents(job, run, i)]
}

/**
 * The execution key task `i` got (its graph key when it has none).
 *
 * @since 0.1.0
 * @internal
 */
export const execKeyOf = (job: Job, i: number): string => execKeyAt(job, i)

/**
 * A task's record while it waits in the outbox (the pool defers records until it has
 * sent the workers their next batches): what `taskRecord` builds it from, so that the
 * record's lists of keys are built after the dispatch, off the path between a worker's
 * reply and its next batch. `rec` must stay unchanged until delivery (the pool's is the
 * batch's own array).
 *
 * @since 0.1.0
 * @internal
 */
export class PendingTask {
  readonly i: number
  readonly info: ResultInfo
  readonly workerId: number
  readonly host: string
  readonly rec: ArrayLike<number>
  readonly o: number
  readonly state: "memory" | "erred"
  readonly gpuTime: number | undefined
  constructor(
    i: number,
    info: ResultInfo,
    workerId: number,
    host: string,
    rec: ArrayLike<number>,
    o: number,
    state: "memory" | "erred",
    gpuTime: number | undefined
  ) {
    this.i = i
    this.info = info
    this.workerId = workerId
    this.host = host
    this.rec = rec
    this.o = o
    this.state = state
    this.gpuTime = gpuTime
  }
}

/** The TaskRecord of a finished task (its execution key already assigned when the job has a run). */
const taskRecord = (job: Job, p: PendingTask): TaskRecord => {
  const { i, info, host, workerId, rec, o, gpuTime } = p
  const run = job.run
  const spec = job.graph.specs[i]!
  // one object literal, `stage` added after: a spread inside the literal made V8 build
  // every record on its slow path (~1.7 µs a task on the demo, 7x the rest of this)
  const r: Mutable<TaskRecord> = {
    key: execKeyAt(job, i),
    name: job.graph.names[i]!,
    host,
    workerId,
    threadId: threadIdCached(host, workerId),
    phases: { gather: [rec[o]!, rec[o + 1]!], compute: [rec[o + 2]!, rec[o + 3]!], transfer: [rec[o + 4]!, rec[o + 5]!] },
    cpuTime: rec[o + 6]!,
    peakMemory: rec[o + 7]!,
    ioBytes: rec[o + 8]!,
    nbytes: info.nbytes,
    shape: info.shape,
    dtype: info.dtype,
    type: info.type,
    dependencies: run === undefined ? dependencyKeysAt(job.graph, i) : execDependencies(job, run, i),
    dependents: run === undefined ? dependentKeysAt(job.graph, i) : execDependents(job, run, i),
    state: p.state
  }
  if (spec.stage !== undefined) r.stage = spec.stage
  if (job.mainThread) r.mainThread = true
  if (gpuTime !== undefined) r.gpuTime = gpuTime
  return r
}

/**
 * Emits the TaskRecord of task `i` (queued as a `PendingTask` while the job defers), and
 * accounts its bytes. With a run, the task gets its execution key first (see Lineage);
 * the compute's requested results remember theirs when it ends (`markOutputs`). `info`
 * describes the result where it is not at hand (the cluster executor's stay on workers).
 *
 * @since 0.1.0
 * @internal
 */
export const record = (
  job: Job,
  book: MemoryBook,
  i: number,
  result: unknown,
  workerId: number,
  host: string,
  rec: ArrayLike<number>,
  o: number,
  state: "memory" | "erred",
  info: ResultInfo = describeResult(result),
  gpuTime?: number
): void => {
  const run = job.run
  // a key assigned when the task was sent to another process (taskLineage) stays
  if (run !== undefined) job.exec![i] ??= Lineage.executeKey(run, job.graph.keys[i]!)
  if (job.taskCbs.length > 0) {
    const p = new PendingTask(i, info, workerId, host, rec, o, state, gpuTime)
    if (job.deferring) job.outbox.push(p)
    else {
      const r = taskRecord(job, p)
      for (const cb of job.taskCbs) cb.task!(r)
    }
  }
  // a result left on a GPU worker's device holds no host bytes (its device bytes are the worker's `device`)
  if (state === "memory") book.hold(i, workerId, info.device === true ? 0 : info.nbytes, info.chunks)
}

/**
 * At the end of a compute: each requested result that is an object remembers the
 * execution key of the task that made it (`Lineage.markUnsafe`), so that tasks of later
 * computes taking it as an argument depend on that task. Only requested results reach
 * the driver, so only they are marked (once per compute, not once per task).
 *
 * @since 0.1.0
 * @internal
 */
export const markOutputs = (job: Job): void => {
  const run = job.run
  const exec = job.exec
  if (run === undefined || exec === null) return
  const s = job.state
  for (let q = 0; q < s.requested.length; q++) {
    const i = s.requested[q]!
    const key = exec[i]
    if (key !== undefined && s.finished[i]) Lineage.markUnsafe(run, s.cache[i], [key])
  }
}

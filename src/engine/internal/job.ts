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
import type { TaskGraph } from "../TaskGraph.ts"
import { describeResult } from "./kernels.ts"
import type { ResultInfo } from "./kernels.ts"
import { blankTaskRecord, buildTaskRecord, erredInfo, type Mutable, RecordSource, type TaskFailure } from "./taskRecord.ts"

export { blankTaskRecord, erredInfo, type Mutable, type TaskFailure }

/**
 * A MemoryRecord to refill for each change (transient records), `device` present and undefined.
 *
 * @since 0.1.0
 * @internal
 */
export const blankMemoryRecord = (): Mutable<MemoryRecord> =>
  ({
    timestamp: 0,
    host: "",
    workerId: 0,
    threadId: "",
    key: "",
    state: "memory",
    bytes: 0,
    chunks: 0,
    device: undefined
  }) as unknown as Mutable<MemoryRecord>

const threadIds = new Map<string, Array<string>>()
/** The trace row of thread `w` on `host` in `job`'s records (see `Job.rowName`). */
const rowOf = (job: Job, host: string, w: number): string => job.rowName !== undefined ? job.rowName(host, w) : threadIdCached(host, w)

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
  /**
   * queued records, in order: a task's as a `PendingTask` (its record is built when
   * delivered), a memory record as its row in `memq` (a number: no object per record)
   */
  readonly outbox: Array<PendingTask | number>
  /** the queued memory records' fields (see `MemoryQueue`) */
  readonly memq: MemoryQueue
  /**
   * true when every task and memory callback reads records only during the call
   * (`Callbacks.transientRecords`): the records are then one TaskRecord and one
   * MemoryRecord per job, refilled for each task (no objects per task)
   */
  readonly transient: boolean
  /** the refilled records when `transient` (made on first use) */
  scratchTask: Mutable<TaskRecord> | null
  scratchMemory: Mutable<MemoryRecord> | null
  /** what the task being recorded's TaskRecord is built from (refilled) */
  readonly source: RecordSource
  /** the task being recorded: its dependencies and dependents */
  readonly deps: KeyList
  readonly dents: KeyList
  /** PendingTasks delivered, for reuse (they never leave this module) */
  readonly spare: Array<PendingTask>
  /** the callbacks asking for samples (`sampling` and `samples`), if any */
  readonly sampler: Callbacks | undefined
  /** tasks run on the main thread (the in-process executor, when sampled): records say so */
  mainThread: boolean
  /** the run the records belong to (see Lineage), when a callback carries one */
  readonly run: Lineage.Run | undefined
  /** execution key of each task that ran (filled as records are made), when `run` is set */
  readonly exec: Array<string> | null
  /**
   * the trace row (`threadId`) of thread `w` on `host`, when not `worker-{host}-{w}`: the
   * cluster scheduler names its workers' rows as their worker plugins do
   * (`worker-{host}-{HOST:PORT}-pid{pid}-{row}`), so a trace reads the same either way
   */
  readonly rowName?: (host: string, w: number) => string
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
  const transient = profile && taskCbs.every((c) => c.transientRecords === true) &&
    memoryCbs.every((c) => c.transientRecords === true)
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
    memq: new MemoryQueue(),
    transient,
    scratchTask: null,
    scratchMemory: null,
    source: new RecordSource(),
    deps: new KeyList(),
    dents: new KeyList(),
    spare: [],
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
      if (typeof x === "number") {
        const m = job.memq.record(job, x)
        for (const cb of job.memoryCbs) cb.memory!(m)
      } else {
        const r = taskRecord(job, x)
        spare(job, x)
        for (const cb of job.taskCbs) cb.task!(r)
      }
    }
  } finally {
    out.length = 0
    job.memq.clear()
  }
}

const memoryStates: ReadonlyArray<MemoryRecord["state"]> = ["memory", "released", "erred"]

/**
 * Memory records waiting in a job's outbox, one row each in plain arrays (columns), so
 * that queueing one allocates nothing: the pool queues two a task while it handles a
 * finished batch. The arrays keep their capacity between batches.
 *
 * @since 0.1.0
 * @internal
 */
export class MemoryQueue {
  readonly timestamp: Array<number> = []
  readonly task: Array<number> = []
  readonly worker: Array<number> = []
  /** index into `memoryStates` */
  readonly state: Array<number> = []
  readonly bytes: Array<number> = []
  readonly chunks: Array<number> = []
  /** NaN: no device bytes (a CPU worker) */
  readonly device: Array<number> = []
  length = 0
  /** the host of the job's MemoryBook (set by it) */
  host = ""
  push(timestamp: number, i: number, w: number, state: MemoryRecord["state"], bytes: number, chunks: number, device: number): number {
    const q = this.length++
    this.timestamp[q] = timestamp
    this.task[q] = i
    this.worker[q] = w
    this.state[q] = memoryStates.indexOf(state)
    this.bytes[q] = bytes
    this.chunks[q] = chunks
    this.device[q] = device
    return q
  }
  /** Row `q` as a MemoryRecord (the job's refilled one when its records are transient). */
  record(job: Job, q: number): MemoryRecord {
    return memoryRecord(job, this.host, this.timestamp[q]!, this.task[q]!, this.worker[q]!, memoryStates[this.state[q]!]!, this.bytes[q]!, this.chunks[q]!, this.device[q]!)
  }
  clear(): void {
    this.length = 0
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
 * The per-worker arrays start at `workers` entries and grow (doubling) when a task is
 * held by a worker beyond them: the cluster's worker ids are sparse (`index × 16 +
 * thread`) and workers join mid-compute, and sizing for every id it could see made
 * garbage on every compute (docs/engine.md, "Measured costs behind the code").
 *
 * @since 0.1.0
 * @internal
 */
export class MemoryBook {
  bytes: Float64Array
  chunks: Int32Array
  readonly owner: Int32Array
  readonly size: Float64Array
  readonly count: Int32Array
  /** device bytes held by each GPU worker (NaN: a CPU worker), as its last batch reported */
  device: Float64Array
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
    job.memq.host = host
    job.state.onRelease = (i) => this.release(i)
  }
  hold(i: number, workerId: number, nbytes: number, c: number): void {
    if (workerId >= this.bytes.length) this.grow(workerId)
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
  /** Room for worker `w` (new workers hold nothing, and no device bytes). */
  private grow(w: number): void {
    let n = Math.max(1, this.bytes.length)
    while (n <= w) n *= 2
    const bytes = new Float64Array(n)
    bytes.set(this.bytes)
    const chunks = new Int32Array(n)
    chunks.set(this.chunks)
    const device = new Float64Array(n).fill(NaN)
    device.set(this.device)
    this.bytes = bytes
    this.chunks = chunks
    this.device = device
  }
  emit(i: number, w: number, state: MemoryRecord["state"]): void {
    const job = this.job
    if (job.memoryCbs.length === 0) return
    const t = EngineClock.nowSeconds()
    if (job.deferring) job.outbox.push(job.memq.push(t, i, w, state, this.bytes[w]!, this.chunks[w]!, this.device[w]!))
    else {
      const rec = memoryRecord(job, this.host, t, i, w, state, this.bytes[w]!, this.chunks[w]!, this.device[w]!)
      for (const cb of job.memoryCbs) cb.memory!(rec)
    }
  }
}

/**
 * A memory record: a new object, or the job's refilled one when its records are
 * transient. `device` NaN: none (a CPU worker).
 */
const memoryRecord = (
  job: Job,
  host: string,
  timestamp: number,
  i: number,
  w: number,
  state: MemoryRecord["state"],
  bytes: number,
  chunks: number,
  device: number
): MemoryRecord => {
  if (job.transient) {
    const m = job.scratchMemory ??= blankMemoryRecord()
    m.timestamp = timestamp
    m.host = host
    m.workerId = w
    m.threadId = rowOf(job, host, w)
    m.key = execKeyAt(job, i)
    m.state = state
    m.bytes = bytes
    m.chunks = chunks
    // the property stays (one hidden class); absent and undefined read the same
    ;(m as { device: number | undefined }).device = Number.isNaN(device) ? undefined : device
    return m
  }
  const rec: Mutable<MemoryRecord> = {
    timestamp,
    host,
    workerId: w,
    threadId: rowOf(job, host, w),
    key: execKeyAt(job, i),
    state,
    bytes,
    chunks
  }
  // added after the literal, as TaskRecord's stage (a spread there is V8's slow path)
  if (!Number.isNaN(device)) rec.device = device
  return rec
}

/** The execution key of task `i` (its graph key when the job has no run). */
const execKeyAt = (job: Job, i: number): string => job.exec?.[i] ?? job.graph.keys[i]!

/**
 * A list of keys being made: a buffer that only grows (cutting an array's length to 0
 * makes V8 drop its storage, and the next push allocate it again), and, for refilled
 * records, one reusable array of each length the lists have had.
 *
 * @since 0.1.0
 * @internal
 */
export class KeyList {
  private readonly keys: Array<string> = []
  private readonly byLength: Array<Array<string>> = []
  n = 0
  add(k: string): void {
    this.keys[this.n++] = k
  }
  has(k: string): boolean {
    for (let q = 0; q < this.n; q++) if (this.keys[q] === k) return true
    return false
  }
  /** The list as a new array. */
  copy(): Array<string> {
    return this.keys.slice(0, this.n)
  }
  /** The list in this KeyList's own array of that length (valid until the next `reuse` of the same length). */
  reuse(): Array<string> {
    const out = this.byLength[this.n] ??= new Array<string>(this.n)
    for (let q = 0; q < this.n; q++) out[q] = this.keys[q]!
    return out
  }
}

/**
 * Dependencies of task `i` as execution keys, into `out`: its graph dependencies (which
 * ran earlier in this compute), then the tasks of earlier computes that made the values
 * it takes as arguments (Lineage origins).
 */
const execDependencies = (job: Job, run: Lineage.Run, i: number, out: KeyList): KeyList => {
  const g = job.graph
  out.n = 0
  for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) out.add(execKeyAt(job, g.depList[j]!))
  const args = g.specs[i]!.args
  const plan = g.argPlan[i]
  for (let a = 0; a < args.length; a++) {
    // a ref's value is a task of this compute (listed above), never a marked result
    if (plan != null && plan[a] !== -1) continue
    const from = Lineage.originOf(run, args[a])
    if (from === undefined) continue
    for (const k of from) if (!out.has(k)) out.add(k)
  }
  return out
}

/**
 * Dependents of task `i` as the execution keys they will get when they run (or got: a
 * record built after its dependents ran, see `PendingTask`, names the keys they were
 * given), into `out`.
 */
const execDependents = (job: Job, run: Lineage.Run, i: number, out: KeyList): KeyList => {
  const g = job.graph
  const exec = job.exec!
  out.n = 0
  for (let j = g.dependentStart[i]!; j < g.dependentStart[i + 1]!; j++) {
    const d = g.dependentList[j]!
    out.add(exec[d] ?? Lineage.nextKey(run, g.keys[d]!))
  }
  return out
}

/** Graph keys of task `i`'s dependencies (`first` true) or dependents, into `out` (a job without a run). */
const graphKeys = (g: TaskGraph, i: number, first: boolean, out: KeyList): KeyList => {
  const start = first ? g.depStart : g.dependentStart
  const list = first ? g.depList : g.dependentList
  out.n = 0
  for (let j = start[i]!; j < start[i + 1]!; j++) out.add(g.keys[list[j]!]!)
  return out
}

/** Task `i`'s dependencies and dependents into the job's two key lists (execution keys with a run). */
const fillLists = (job: Job, i: number): void => {
  const run = job.run
  if (run === undefined) {
    graphKeys(job.graph, i, true, job.deps)
    graphKeys(job.graph, i, false, job.dents)
  } else {
    execDependencies(job, run, i, job.deps)
    execDependents(job, run, i, job.dents)
  }
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
  const key = run === undefined ? job.graph.keys[i]! : (job.exec![i] ??= Lineage.executeKey(run, job.graph.keys[i]!))
  fillLists(job, i)
  return [key, job.deps.copy(), job.dents.copy()]
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
  // mutable: a delivered PendingTask is refilled for a later task (`pendingTask`)
  i = 0
  info: ResultInfo = noInfo
  workerId = 0
  host = ""
  rec: ArrayLike<number> = noRec
  o = 0
  state: "memory" | "erred" = "memory"
  failure: TaskFailure | undefined = undefined
}

const noInfo: ResultInfo = erredInfo
const noRec: ArrayLike<number> = []

/** A PendingTask for task `i`: a delivered one refilled, else a new one. */
const pendingTask = (
  job: Job,
  i: number,
  info: ResultInfo,
  workerId: number,
  host: string,
  rec: ArrayLike<number>,
  o: number,
  state: "memory" | "erred",
  failure: TaskFailure | undefined
): PendingTask => {
  const p = job.spare.pop() ?? new PendingTask()
  p.i = i
  p.info = info
  p.workerId = workerId
  p.host = host
  p.rec = rec
  p.o = o
  p.state = state
  p.failure = failure
  return p
}

/** Gives a delivered PendingTask back for reuse, dropping what it referenced. */
const spare = (job: Job, p: PendingTask): void => {
  p.info = noInfo
  p.rec = noRec
  p.failure = undefined
  job.spare.push(p)
}

/**
 * The TaskRecord of a finished task (its execution key already assigned when the job has
 * a run): a new object, or the job's refilled one when its records are transient.
 */
const taskRecord = (job: Job, p: PendingTask): TaskRecord => {
  const { i, host, workerId } = p
  const s = job.source
  s.key = execKeyAt(job, i)
  s.name = job.graph.names[i]!
  s.host = host
  s.workerId = workerId
  s.threadId = rowOf(job, host, workerId)
  s.rows = p.rec
  s.o = p.o
  s.info = p.info
  fillLists(job, i)
  s.dependencies = job.transient ? job.deps.reuse() : job.deps.copy()
  s.dependents = job.transient ? job.dents.reuse() : job.dents.copy()
  s.state = p.state
  s.stage = job.graph.specs[i]!.stage
  s.mainThread = job.mainThread
  s.failure = p.failure
  const r = buildTaskRecord(s, job.transient ? job.scratchTask ??= blankTaskRecord() : null)
  s.clear()
  return r
}

/**
 * Emits the TaskRecord of task `i` (queued as a `PendingTask` while the job defers), and
 * accounts its bytes. With a run, the task gets its execution key first (see Lineage);
 * the compute's requested results remember theirs when it ends (`markOutputs`). `info`
 * describes the result where it is not at hand (the cluster executor's stay on workers).
 * An erred task (`state` "erred") is recorded with `failure` (its error and worker-side
 * stack) and holds no memory. `rec[o ...]` is the task's timing row (taskTiming.ts), on
 * the driver's clock.
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
  failure?: TaskFailure
): void => {
  const run = job.run
  // a key assigned when the task was sent to another process (taskLineage) stays
  if (run !== undefined) job.exec![i] ??= Lineage.executeKey(run, job.graph.keys[i]!)
  if (job.taskCbs.length > 0) {
    const p = pendingTask(job, i, info, workerId, host, rec, o, state, failure)
    if (job.deferring) job.outbox.push(p)
    else {
      const r = taskRecord(job, p)
      spare(job, p)
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

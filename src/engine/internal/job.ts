/**
 * One compute as an executor sees it: the graph, the scheduler state, the hooks split by
 * kind (so the hot loop skips absent ones with one length check) and the bookkeeping
 * for engine events. Executors call `pre`/`post` around each task and `record` when a
 * worker reports timings; the records' names come from recordKeys.ts, the held-memory
 * book from memoryBook.ts, their delivery (at once or deferred) from recordDelivery.ts.
 *
 * @since 0.1.0
 * @internal
 */
import * as Lineage from "../Lineage.ts"
import type { Callbacks } from "../Hooks.ts"
import type { SchedulerState } from "../State.ts"
import type { TaskGraph } from "../TaskGraph.ts"
import { MemoryQueue } from "./memoryBook.ts"
import { KeyList } from "./recordKeys.ts"
import type { PendingTask } from "./recordDelivery.ts"
import { RecordSource } from "./taskRecord.ts"

export { MemoryBook, MemoryQueue } from "./memoryBook.ts"
export { execKeyOf, KeyList, taskLineage } from "./recordKeys.ts"
export { deliverRecords, PendingTask, record } from "./recordDelivery.ts"
export { erredInfo, type Mutable, type TaskFailure } from "./taskRecord.ts"

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
  /** what the task being recorded's TaskRecord is built from (refilled) */
  readonly source: RecordSource
  /** the task being recorded: its dependencies and dependents */
  readonly deps: KeyList
  readonly dents: KeyList
  /** PendingTasks delivered, for reuse (they never leave recordDelivery.ts) */
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

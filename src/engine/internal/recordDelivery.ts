/**
 * How a job's task and memory records reach the hooks: at once, or, while the job defers
 * them (the pool handling a finished batch), queued in its outbox and delivered in order
 * once the workers have their next batches. Every record delivered is a new object that
 * a hook may keep (docs/engine.md, "Records a hook may keep").
 *
 * @since 0.1.0
 * @internal
 */
import type { TaskRecord } from "../EngineEvents.ts"
import * as Lineage from "../Lineage.ts"
import type { Job } from "./job.ts"
import { describeResult } from "./kernels.ts"
import type { ResultInfo } from "./kernels.ts"
import type { MemoryBook } from "./memoryBook.ts"
import { execKeyOf, fillLists, rowOf } from "./recordKeys.ts"
import { buildTaskRecord, erredInfo, type TaskFailure } from "./taskRecord.ts"

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

/** The TaskRecord of a finished task (its execution key already assigned when the job has a run): a new object. */
const taskRecord = (job: Job, p: PendingTask): TaskRecord => {
  const { i, host, workerId } = p
  const s = job.source
  s.key = execKeyOf(job, i)
  s.name = job.graph.names[i]!
  s.host = host
  s.workerId = workerId
  s.threadId = rowOf(job, host, workerId)
  s.rows = p.rec
  s.o = p.o
  s.info = p.info
  fillLists(job, i)
  s.dependencies = job.deps.copy()
  s.dependents = job.dents.copy()
  s.state = p.state
  s.stage = job.graph.specs[i]!.stage
  s.mainThread = job.mainThread
  s.failure = p.failure
  const r = buildTaskRecord(s)
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


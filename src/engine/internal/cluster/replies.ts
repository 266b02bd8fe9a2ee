/**
 * What a batch's reply tells the driver beyond its results: the peer transfers its worker
 * made (to `onTransfer` listeners and the hooks, on the scheduler's clock), each task's
 * record (its timings moved onto the scheduler's clock), and the costs batch sizing and
 * fusion learn from (seconds per task, per kernel, and a batch's trip beyond its work).
 *
 * @since 0.1.0
 * @internal
 */
import type { TransferInfo } from "../../Cluster.ts"
import * as EngineError from "../../EngineError.ts"
import { threadId, type TransferRecord } from "../../EngineEvents.ts"
import type { Callbacks } from "../../Hooks.ts"
import type { KernelRef } from "../../Kernel.ts"
import type { TaskGraph } from "../../TaskGraph.ts"
import type { Job, MemoryBook } from "../job.ts"
import { erredInfo, record } from "../job.ts"
import { CLOCK_FIELDS, copyRow, hasRow, TIMING_FLOATS } from "../taskTiming.ts"
import type { WorkerView } from "./members.ts"
import { ROW_STRIDE, type RunReply, workerRow } from "./protocol.ts"

/**
 * The trace row of a worker's first thread (`workerRow`), whether its worker plugin or
 * the driver's process records it.
 *
 * @since 0.1.0
 * @internal
 */
export const rowOf = (w: WorkerView): string => workerRow(w.host, w.address, w.pid, w.index * ROW_STRIDE)

/**
 * The trace row of thread `wid` as the driver's records name it: as the worker plugins
 * do (`workerRow`), by the worker whose slot it is (`ROW_STRIDE` threads a worker);
 * `worker-{host}-{wid}` for none. Remembered per thread.
 *
 * @since 0.1.0
 * @internal
 */
export const rowNamer = (workers: ReadonlyMap<string, WorkerView>) => {
  const rowNames = new Map<number, string>()
  return (h: string, wid: number): string => {
    let r = rowNames.get(wid)
    if (r === undefined) {
      const v = [...workers.values()].find((x) => x.index === Math.floor(wid / ROW_STRIDE))
      rowNames.set(wid, r = v !== undefined ? workerRow(v.host, v.address, v.pid, wid) : threadId(h, wid))
    }
    return r
  }
}

/**
 * The transfers of `w`'s reply: to the `listeners` (`Cluster.onTransfer`) and, as records
 * with the sender as a row (so transfers join the tasks), to the `hooks`.
 *
 * @since 0.1.0
 * @internal
 */
export const reportTransfers = (
  reply: RunReply,
  w: WorkerView,
  workers: ReadonlyMap<string, WorkerView>,
  listeners: ReadonlyArray<(t: TransferInfo) => void>,
  hooks: ReadonlyArray<Callbacks>
): void => {
  for (const t of reply.transfers) {
    const rec: TransferInfo = { ...t, start: t.start - w.offset, stop: t.stop - w.offset, worker: w.name }
    for (const cb of listeners) cb(rec)
    if (hooks.length === 0) continue
    const sender = workers.get(t.peer)
    const tr: TransferRecord = {
      keys: t.keys,
      bytes: t.bytes,
      host: w.host,
      threadId: rowOf(w),
      peer: sender !== undefined ? rowOf(sender) : t.peer,
      start: rec.start,
      stop: rec.stop,
      serialize: t.serialize,
      deserialize: t.deserialize
    }
    for (const cb of hooks) cb.transfer!(tr)
  }
}

/**
 * The record of the `j`-th completed task of `w`'s reply, task `i` (`rec`: a timing row
 * to fill). A task the worker did not record: no timings (phases at 0, amounts absent).
 *
 * @since 0.1.0
 * @internal
 */
export const recordDone = (view: Job, book: MemoryBook, reply: RunReply, j: number, i: number, w: WorkerView, rec: Float64Array): void => {
  const done = reply.done[j]!
  const recs = reply.recs
  const p = j * TIMING_FLOATS
  if (recs !== undefined && hasRow(recs, p)) copyRow(recs, p, rec, 0, -w.offset)
  else rec.fill(NaN).fill(0, 0, CLOCK_FIELDS)
  record(view, book, i, undefined, w.index * ROW_STRIDE + done.thread, w.host, rec, 0, "memory", {
    nbytes: done.nbytes,
    chunks: done.chunks,
    shape: done.shape,
    dtype: done.dtype,
    type: done.type
  })
}

/**
 * The record of the task whose failure `w`'s reply says, as the pool writes it: state
 * erred, its error and traceback.
 *
 * @since 0.1.0
 * @internal
 */
export const recordErred = (
  view: Job,
  book: MemoryBook,
  erred: { readonly rec: Float64Array; readonly thread: number; readonly traceback: string },
  i: number,
  w: WorkerView,
  error: string,
  rec: Float64Array
): void => {
  copyRow(erred.rec, 0, rec, 0, -w.offset)
  record(view, book, i, undefined, w.index * ROW_STRIDE + erred.thread, w.host, rec, 0, "erred", erredInfo, {
    error,
    traceback: erred.traceback
  })
}

/**
 * What batches cost, learnt from their replies and kept across computes: seconds per
 * task (batch sizing: by what tasks cost on the worker, not by the round trip, which a
 * loaded machine's latency would shrink batches by), per kernel (what fusing wider would
 * cost), and a batch's trip beyond its work.
 *
 * @since 0.1.0
 * @internal
 */
export class BatchCosts {
  /** seconds per task, smoothed over the batches of every compute */
  perTask: number
  /**
   * seconds a batch's trip costs beyond its work (its wall time less the seconds it ran
   * on the worker's pool), smoothed; -1 until a batch has come back
   */
  tripCost = -1
  /** seconds per task by kernel (`module#name`), smoothed */
  private readonly kernelCost = new Map<string, number>()
  /** a task's seconds while its kernel's are unknown */
  readonly unknown: number
  constructor(unknown: number) {
    this.unknown = unknown
    this.perTask = unknown
  }

  /** A task's seconds by its kernel's measured so far. */
  taskCost(k: KernelRef): number {
    return this.kernelCost.get(`${k.module}#${k.name}`) ?? this.unknown
  }

  /** A `run` batch's reply that completed tasks, `wall` seconds after it was sent. */
  learn(g: TaskGraph, reply: RunReply, wall: number): void {
    const each = reply.seconds / reply.done.length
    this.perTask = 0.7 * this.perTask + 0.3 * each
    // the batch's seconds shared evenly by its kernels' tasks (exact for one kernel)
    const seen = new Set<string>()
    for (const d of reply.done) {
      const k = g.specs[g.index.get(d.key)!]!.kernel
      const kn = `${k.module}#${k.name}`
      if (seen.has(kn)) continue
      seen.add(kn)
      const c = this.kernelCost.get(kn)
      this.kernelCost.set(kn, c === undefined ? each : 0.7 * c + 0.3 * each)
    }
    const trip = Math.max(0, wall - reply.seconds)
    this.tripCost = this.tripCost < 0 ? trip : 0.7 * this.tripCost + 0.3 * trip
  }

  /**
   * The seconds of work fusing may add to a batch beyond continuing its lines, while
   * `idle` workers get nothing this round: fusing tasks of w seconds in all saves a round
   * trip but runs them on one worker, where spread they would finish about w·idle/(idle+1)
   * sooner; so fuse while that is under the trip's cost. No idle worker: no limit. Before
   * any batch came back, the trip is the fastest ping of the `alive` workers.
   */
  widthFor(idle: number, alive: () => ReadonlyArray<WorkerView>): number {
    if (idle === 0) return Infinity
    if (this.tripCost < 0) {
      let ping = Infinity
      for (const w of alive()) ping = Math.min(ping, 2 * w.uncertainty)
      this.tripCost = Number.isFinite(ping) ? ping : 0
    }
    return this.tripCost * (idle + 1) / idle
  }
}

/** `LiteralsMissing` answers a compute takes before it fails (each resends the values) */
const LITERAL_RETRIES = 64

/**
 * The failure of a compute whose worker `w` answered `LiteralsMissing` for the
 * `answers`-th time: each answer makes the next batch carry the values, so a worker that
 * still lacks them after that many sends is not going to get them. Undefined before.
 *
 * @since 0.1.0
 * @internal
 */
export const literalsNotTaken = (
  w: string,
  err: { readonly key: string; readonly lost: ReadonlyArray<string> },
  answers: number
): EngineError.ComputeError | undefined => {
  if (answers <= LITERAL_RETRIES) return undefined
  const reason = new EngineError.WorkerCrashed({
    key: err.key,
    attempts: answers,
    message: `${w} still lacks literal arguments it was sent (${err.lost.join(", ")}) after ${LITERAL_RETRIES} sends`
  })
  return new EngineError.ComputeError({ reason, message: reason.message })
}

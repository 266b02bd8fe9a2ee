/**
 * The executors' held-memory book: which worker holds each result and how many bytes and
 * chunks every worker holds, with a MemoryRecord for each change (delivered at once, or
 * queued as a row of `MemoryQueue` while the job defers its records).
 *
 * @since 0.1.0
 * @internal
 */
import * as EngineClock from "../EngineClock.ts"
import type { MemoryRecord } from "../EngineEvents.ts"
import type { Job } from "./job.ts"
import { execKeyOf, rowOf } from "./recordKeys.ts"
import type { Mutable } from "./taskRecord.ts"

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
  /** Row `q` as a new MemoryRecord. */
  record(job: Job, q: number): MemoryRecord {
    return memoryRecord(job, this.host, this.timestamp[q]!, this.task[q]!, this.worker[q]!, memoryStates[this.state[q]!]!, this.bytes[q]!, this.chunks[q]!, this.device[q]!)
  }
  clear(): void {
    this.length = 0
  }
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
 * A new memory record (a hook may keep it). `device` NaN: none (a CPU worker).
 *
 * @since 0.1.0
 * @internal
 */
export const memoryRecord = (
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
  const rec: Mutable<MemoryRecord> = {
    timestamp,
    host,
    workerId: w,
    threadId: rowOf(job, host, w),
    key: execKeyOf(job, i),
    state,
    bytes,
    chunks
  }
  // added after the literal, as TaskRecord's stage (a spread there is V8's slow path)
  if (!Number.isNaN(device)) rec.device = device
  return rec
}

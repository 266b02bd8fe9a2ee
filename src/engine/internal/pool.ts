/**
 * The worker-thread pool: a shell around the dispatcher (dispatch/dispatcher.ts), which
 * decides what runs where; the pool carries its instructions out (batches posted to
 * worker threads) and reports what happens (results, deaths). One compute runs at a time
 * on a pool (the Executor serialises them); its ready tasks travel in batches so a
 * postMessage round trip is shared by many tasks (its cost: docs/engine.md, "Dispatch").
 *
 * The dispatcher's settings here: about `TARGET_BATCH_MS` of work per batch (between 1
 * and `MAX_BATCH` tasks), split across workers when few tasks are ready, at most
 * `MAX_OUTSTANDING` batches queued per worker so a worker never idles while the main
 * thread handles its previous reply, every result readable by every worker (shared
 * memory), and GPU workers as slots of their own kind (tasks whose kernel has a GPU
 * version run there).
 *
 * Failures (docs/engine.md, "Failures"): a kernel error fails the compute; a worker that
 * exits is replaced and the dispatcher retries the task it was running (known from its
 * shared `control` array) up to `maxRetries` times. One out of heap (`resourceLimits`),
 * or over `maxWorkerMemory` of ArrayBuffers while it runs a task (the heap limit does not
 * cover them), is replaced and its task fails at once: the same task would exceed the
 * same limit again. After `MAX_START_FAILURES` workers in a row died before they were
 * ready, none is started again and computes fail with `NoWorkers` naming why
 * (replacing them for ever hung the compute). Cancelling sets the compute id in every
 * worker's `control[CANCEL]`, so workers drop the rest of its batches between tasks;
 * those still busy after `CANCEL_GRACE_MS` are replaced.
 *
 * Its parts: a slot's worker, its start, death and memory watch (poolWorkers.ts), the
 * GPU slot kind (poolGpu.ts), the messages about batches (poolBatch.ts), sampling
 * (poolSampling.ts).
 *
 * @since 0.1.0
 * @internal
 */
import { hostname } from "node:os"
import type { Worker } from "node:worker_threads"
import * as EngineClock from "../EngineClock.ts"
import * as EngineError from "../EngineError.ts"
import type * as Gpu from "../Gpu.ts"
import * as Kernel from "../Kernel.ts"
import type { KernelRef } from "../Kernel.ts"
import type { DeviceBook } from "./deviceBook.ts"
import { deliverRecords, erredInfo, MemoryBook, post, pre, record } from "./job.ts"
import type { Job } from "./job.ts"
import { CANCEL, KEPT_STRIDE } from "./protocol.ts"
import type { BatchDone, Ready } from "./protocol.ts"
import { hasRow, TIMING_FLOATS } from "./taskTiming.ts"
import { Dispatcher, type Run as DispatchRun } from "./dispatch/dispatcher.ts"
import { deliverTransfers, KernelTable, notSendable, runBatch, taskError } from "./poolBatch.ts"
import { GpuSlots } from "./poolGpu.ts"
import { PoolSampling } from "./poolSampling.ts"
import { type Batch, closeSlots, Drains, type ResourceLimits, runningIn, type Slot, spawnSlot, watchMemory } from "./poolWorkers.ts"

const TARGET_BATCH_MS = 2
/** ms per task assumed before the first batch comes back (no-op tasks: big first batches) */
const INITIAL_TASK_MS = 0.01
const MAX_BATCH = 1024
const MAX_OUTSTANDING = 2
const CANCEL_GRACE_MS = 100
/** how often a busy worker's memory outside its heap is measured (see `maxWorkerMemory`) */
const MEMORY_CHECK_MS = 50

/**
 * Pool options.
 *
 * @since 0.1.0
 * @internal
 */
export interface PoolOptions {
  readonly workers: number
  /** retries of a task whose worker died (default 3) */
  readonly maxRetries?: number
  readonly resourceLimits?: ResourceLimits
  /** start V8's sampler in each CPU worker as it boots, at this interval (ms; see Sampling) */
  readonly sampleInterval?: number
  /**
   * bytes of ArrayBuffers (V8's external memory) a CPU worker may hold while it runs a
   * task; above it the worker is replaced and the task fails (`WorkerMemoryExceeded`).
   * Absent: not checked.
   */
  readonly maxWorkerMemory?: number
  /**
   * GPU workers after the CPU ones (ids `workers ..`): tasks whose kernel has a GPU
   * version in `kernels` (keyed by `Kernel.id` of the CPU kernel) run there.
   */
  readonly gpu?: {
    readonly workers: number
    readonly options: Gpu.GpuOptions
    /** per GPU worker, its adapter name filter (overrides `options.adapter`) */
    readonly adapters: ReadonlyArray<string>
    readonly kernels: ReadonlyMap<string, KernelRef>
  }
}

/** Workers dying before they are ready, in a row, after which the pool stops replacing them. */
const MAX_START_FAILURES = 3

/**
 * One compute on the pool.
 *
 * @since 0.1.0
 * @internal
 */
export interface Run {
  readonly id: number
  readonly job: Job
  readonly kernelOf: Int32Array
  /** the outputs the tasks declared (`OUT_STRIDE` ints each), or null when none does */
  readonly outOf: Int32Array | null
  /** what runs where: readiness, batch sizes, fusion, retries (this pool carries it out) */
  readonly dispatcher: Dispatcher
  /** scratch, -1 outside `send`: position of a task in the batch being built */
  readonly pos: Int32Array
  readonly book: MemoryBook | null
  /** with GPU workers: the GPU kernel id of each task (-1: a CPU task) */
  readonly gpuKernelOf: Int32Array | null
  /** with GPU workers: which results come to the host, and the device copies to free */
  readonly devices: DeviceBook | null
  done: boolean
  readonly settle: Settle
}

/**
 * How a compute ended: null on success, a ComputeError, or a defect (a hook threw).
 *
 * @since 0.1.0
 * @internal
 */
export type Settle = (error: EngineError.ComputeError | null, defect?: { readonly cause: unknown }) => void

/**
 * A pool of worker threads.
 *
 * @since 0.1.0
 * @internal
 */
export class Pool {
  readonly size: number
  readonly host = hostname()
  readonly maxRetries: number
  readonly options: PoolOptions
  readonly slots: Array<Slot> = []
  /** the kernels by interned id (what the workers are told once each) */
  readonly kernels = new KernelTable()
  run: Run | null = null
  nextCompute = 1
  nextBatch = 1
  closed = false
  /** waits for "no slot holds a batch of compute c" (cancelling) */
  readonly drains = new Drains(() => this.slots)
  /** the hook this pool samples for (see Sampling) */
  readonly sampling: PoolSampling
  /** when the pool was built (epoch seconds: constructor start and end) */
  readonly built: readonly [start: number, end: number]
  /** every worker start so far (spawn to ready, epoch seconds), in the order they became ready */
  readonly workerStarts: Array<{ readonly worker: number; readonly start: number; readonly end: number }> = []
  /** CPU workers (ids below this run CPU tasks, the rest GPU tasks) */
  readonly cpuWorkers: number
  /** the GPU workers (ids `cpuWorkers ..`), when there are any */
  readonly gpu: GpuSlots | null
  /** stops the memory watch (see `maxWorkerMemory`) */
  private stopMemoryWatch: () => void = () => {}
  /** workers that died before they were ready, in a row (see `MAX_START_FAILURES`) */
  private startFailures = 0
  /** why the workers cannot start, once `MAX_START_FAILURES` did not: no worker is started again */
  private unstartable: string | undefined

  constructor(options: PoolOptions) {
    const t0 = EngineClock.nowSeconds()
    this.options = options
    this.cpuWorkers = Math.max(1, Math.floor(options.workers))
    this.size = this.cpuWorkers + Math.max(0, Math.floor(options.gpu?.workers ?? 0))
    this.gpu = this.size > this.cpuWorkers ? new GpuSlots(this.cpuWorkers, this.size - this.cpuWorkers, options.gpu!.options, options.gpu!.adapters) : null
    this.sampling = new PoolSampling(this.host, () => this.slots)
    this.maxRetries = options.maxRetries ?? 3
    for (let i = 0; i < this.size; i++) this.slots.push(this.spawn(i))
    const limit = options.maxWorkerMemory
    if (limit !== undefined && Number.isFinite(limit)) {
      this.stopMemoryWatch = watchMemory(() => this.slots, limit, MEMORY_CHECK_MS, (slot, worker, held) => this.onMemoryExceeded(slot, worker, limit, held))
    }
    this.built = [t0, EngineClock.nowSeconds()]
  }

  /** What a slot's worker reports (see `SlotEvents`). */
  private readonly events = {
    ready: (slot: Slot, m: Ready, spawned: number) => {
      slot.ready = true
      this.startFailures = 0
      this.workerStarts.push({ worker: slot.id, start: spawned, end: Math.max(spawned, m.at) })
      if (m.gpu !== undefined) this.gpu?.onReady(slot.id, m.gpu)
    },
    samples: (slot: Slot, m: Parameters<PoolSampling["onSamples"]>[1]) => this.sampling.onSamples(slot, m),
    done: (slot: Slot, m: BatchDone) => {
      const run = this.run
      if (run === null) this.onDone(slot, m)
      else this.guard(run, () => this.onDone(slot, m))
    },
    death: (slot: Slot, worker: Worker, detail: string, retry: boolean) => this.onDeath(slot, worker, detail, retry),
    messageError: (slot: Slot, worker: Worker, e: unknown) => this.onMessageError(slot, worker, e)
  }

  private spawn(id: number): Slot {
    const gpu = this.gpu !== null && id >= this.cpuWorkers ? this.gpu.optionsOf(id) : undefined
    return spawnSlot({ id, gpu, sample: this.options.sampleInterval, resourceLimits: this.options.resourceLimits }, this.events)
  }

  /** A worker held more than `limit`: it is replaced, and its running task fails (no retry: it would again). */
  private onMemoryExceeded(slot: Slot, worker: Worker, limit: number, held: number): void {
    if (slot.worker !== worker || !slot.alive) return
    const running = runningIn(slot, slot.outstanding)
    const run = this.run
    this.replace(slot)
    if (run === null || run.done) return this.drains.check()
    if (running !== undefined && running.batch.compute === run.id) {
      const i = running.batch.ids[running.index]!
      const error = EngineError.workerMemoryExceeded(run.job.graph.keys[i]!, Kernel.describe(run.job.graph.specs[i]!.kernel), limit, held)
      return this.failTask(run, i, error)
    }
    // measured between two tasks (whose garbage it held): its batches go to other workers
    this.guard(run, () => {
      run.dispatcher.lose(slot.id)
      this.rejoin(run, slot.id)
      this.carryOut(run)
    })
    this.drains.check()
  }

  /**
   * A worker's reply could not be deserialized (`messageerror`): its batch's results are
   * lost, and sending the batch again would lose them again. The worker is replaced and
   * the compute fails with WorkerCrashed naming the batch's first task and why.
   */
  private onMessageError(slot: Slot, worker: Worker, e: unknown): void {
    if (slot.worker !== worker || !slot.alive) return
    const batch = slot.outstanding[0]
    const run = this.run
    this.replace(slot)
    if (run === null || run.done || batch === undefined || batch.compute !== run.id) return this.drains.check()
    const i = batch.ids[0]!
    const detail = `worker ${slot.id}'s reply could not be deserialized (messageerror: ${e instanceof Error ? e.message : String(e)})`
    const error = EngineError.workerCrashed(run.job.graph.keys[i]!, 1, detail)
    this.failTask(run, i, error)
  }

  /** Resolves when every GPU worker has said which adapter it has (or why none). */
  gpuReady(): Promise<ReadonlyArray<Gpu.GpuInfo | { readonly why: string }>> {
    return this.gpu === null ? Promise.resolve([]) : this.gpu.ready()
  }

  /**
   * Starts a compute; `settle` is called once, with null on success.
   */
  start(job: Job, settle: Settle): Run {
    const { graph, state } = job
    const { kernelOf, gpuKernelOf, outOf } = this.kernels.tables(job, this.gpu !== null ? this.options.gpu!.kernels : null)
    const book = job.profile ? new MemoryBook(job, this.size, this.host) : null
    const run: Run = {
      id: this.nextCompute++,
      job,
      kernelOf,
      outOf,
      dispatcher: new Dispatcher(state, {
        batchSeconds: TARGET_BATCH_MS / 1000,
        maxBatch: MAX_BATCH,
        maxInflight: MAX_OUTSTANDING,
        initialTaskSeconds: INITIAL_TASK_MS / 1000,
        maxRetries: this.maxRetries,
        // every worker thread reads every result (shared memory)
        shared: true,
        // a GPU task (its kernel has a GPU version) runs on a GPU worker (slot kind 1)
        kindOf: gpuKernelOf === null ? null : Uint8Array.from(gpuKernelOf, (g) => (g >= 0 ? 1 : 0))
      }),
      pos: new Int32Array(graph.size).fill(-1),
      book,
      gpuKernelOf,
      devices: gpuKernelOf === null ? null : this.gpu!.deviceBook(state, gpuKernelOf, book, (slot, m) => {
        if (this.slots[slot]!.alive) this.slots[slot]!.worker.postMessage(m)
      }),
      done: false,
      settle
    }
    this.run = run
    if (this.unstartable !== undefined) {
      this.finish(run, this.cannotStart())
      return run
    }
    if (job.sampler !== undefined) this.sampling.use(job.sampler)
    for (const slot of this.slots) if (slot.alive) run.dispatcher.join(slot.id, slot.gpu ? 1 : 0)
    this.guard(run, () => {
      run.dispatcher.start()
      this.carryOut(run)
    })
    return run
  }

  /** Runs `f`; if it throws (a hook threw), cancels the compute and settles it as a defect. */
  private guard(run: Run, f: () => void): void {
    try {
      f()
    } catch (cause) {
      if (run.done) return
      void this.cancel(run).then(() => run.settle(null, { cause }))
    }
  }

  /**
   * Carries out the dispatcher's instructions: batches sent to their workers, and the
   * end (success: the records delivered, then settled; a failure the dispatcher decided:
   * a task out of retries).
   */
  private carryOut(run: Run): void {
    const ins = run.dispatcher.take()
    for (let k = 0; k < ins.length && !run.done; k++) {
      const x = ins[k]!
      if (x._tag === "Run") this.send(run, this.slots[x.slot]!, x)
      else if (x._tag === "Finish") {
        const f = x.failure
        if (f === null) {
          deliverRecords(run.job)
          this.finish(run, null)
        } else if (f._tag === "RetriesExhausted") {
          this.fail(run, EngineError.workerCrashed(run.job.graph.keys[f.task]!, f.attempts, String(f.cause)))
        } else if (f._tag === "TaskFailed") this.fail(run, f.cause as EngineError.ComputeError)
      }
    }
  }

  /**
   * Sends the dispatcher's batch `x` to `slot` (poolBatch.ts `runBatch`), calling
   * `pretask` for its ready tasks (fused ones get theirs as their results arrive).
   */
  private send(run: Run, slot: Slot, x: DispatchRun): void {
    const ids = x.tasks
    const n = x.fusedFrom
    if (run.job.pre.length > 0) for (let q = 0; q < n; q++) pre(run.job, ids[q]!)
    const msg = runBatch(run, slot, ids, n, this.nextBatch++, this.kernels.after(slot.known), this.sampling.intervalFor(slot, run.job.sampler))
    slot.outstanding.push({ id: msg.b, compute: run.id, ids, fusedFrom: n, dispatched: x.batch })
    try {
      slot.worker.postMessage(msg, (msg.out === null ? [msg.ks.buffer] : [msg.ks.buffer, msg.out.buffer]) as Array<ArrayBuffer>)
      slot.known = this.kernels.defs.length
    } catch (e) {
      // an argument structured clone cannot carry: the batch was never sent
      slot.outstanding.pop()
      const { task, error } = notSendable(run.job, msg, ids, e)
      this.failTask(run, task, error)
    }
  }

  private onDone(slot: Slot, m: BatchDone): void {
    const batch = slot.outstanding.shift()
    const run = this.run
    if (batch === undefined) return
    if (run === null || run.id !== m.c || run.done) {
      // a cancelled compute's results: nobody takes their device copies
      if (m.device !== undefined && m.device.kept.length > 0 && slot.alive) {
        slot.worker.postMessage({ t: "free", salt: m.device.salt, tags: m.device.kept.filter((_, o) => o % KEPT_STRIDE === 1) })
      }
      this.drains.check()
      return
    }
    if (m.device !== undefined) this.gpu?.onBatch(slot.id, m.device, batch.ids, run.book, run.devices)
    if (m.xfer != null && run.job.transferCbs.length > 0) deliverTransfers(run.job, this.host, slot.id, m.xfer, batch.ids)
    // records of this batch are delivered after the next batches are sent (finally)
    run.job.deferring = run.book !== null
    try {
      this.settleBatch(run, slot, m, batch)
    } finally {
      run.devices?.flush()
      deliverRecords(run.job)
    }
  }

  private settleBatch(run: Run, slot: Slot, m: BatchDone, batch: Batch): void {
    const d = run.dispatcher
    const { ids } = batch
    const hasPost = run.job.post.length > 0
    const hasPre = run.job.pre.length > 0
    const book = run.book
    const rec = m.rec
    for (let q = 0; q < m.n; q++) {
      const i = ids[q]!
      const r = m.results[q]
      // A fused task's pretask runs now, after its inputs' posttask.
      if (hasPre && q >= batch.fusedFrom) pre(run.job, i)
      if (book !== null && rec !== null) record(run.job, book, i, r, slot.id, this.host, rec, q * TIMING_FLOATS, "memory")
      d.taskDone(slot.id, batch.dispatched, q, r)
      if (hasPost) post(run.job, i, r, slot.id)
    }
    if (m.error !== null) {
      const e = m.error
      const i = ids[e.i]!
      const error = taskError(run.job, i, e)
      // the failed task's record (a CPU worker filled its row): state erred, with the error
      if (book !== null && rec !== null && hasRow(rec, e.i * TIMING_FLOATS)) {
        record(run.job, book, i, undefined, slot.id, this.host, rec, e.i * TIMING_FLOATS, "erred", erredInfo, { error: error.message, traceback: e.stack })
      }
      return this.failTask(run, i, error)
    }
    // positions not done (a batch cut short) go back to ready; the room is filled, or the compute ends
    d.batchDone(slot.id, batch.dispatched, m.busy / 1000)
    this.carryOut(run)
  }

  private onDeath(slot: Slot, worker: Worker, detail: string, retry = true): void {
    if (slot.worker !== worker || !slot.alive) return
    slot.alive = false
    // a dead worker's samples are lost; do not wait for them
    slot.lastSamples?.()
    slot.lastSamples = null
    const running = runningIn(slot, slot.outstanding.splice(0))
    this.startFailures = slot.ready ? 0 : this.startFailures + 1
    if (this.startFailures >= MAX_START_FAILURES) this.unstartable ??= detail
    if (!this.closed && this.unstartable === undefined) this.slots[slot.id] = this.spawn(slot.id)
    const run = this.run
    if (this.unstartable !== undefined) {
      if (run !== null && !run.done) this.fail(run, this.cannotStart())
      return
    }
    if (run !== null && !run.done) {
      // its batches go back to ready; the task it was running (if one of this compute's) counts an attempt
      const blame = running !== undefined && running.batch.compute === run.id ? { batch: running.batch.dispatched, index: running.index } : undefined
      this.guard(run, () => {
        run.dispatcher.lose(slot.id, blame, retry, detail)
        this.rejoin(run, slot.id)
        this.carryOut(run)
      })
    }
    this.drains.check()
  }

  /** The worker that replaced slot `id` (if one did) takes work for `run`. */
  private rejoin(run: Run, id: number): void {
    const slot = this.slots[id]
    if (slot !== undefined && slot.alive) run.dispatcher.join(id, slot.gpu ? 1 : 0)
  }

  private finish(run: Run, error: EngineError.ComputeError | null): void {
    if (run.done) return
    run.done = true
    run.devices?.end()
    if (this.run === run) this.run = null
    run.settle(error)
  }

  /** The error of a compute on a pool whose workers cannot start. */
  private cannotStart = (): EngineError.ComputeError =>
    EngineError.noWorkers(`the pool's worker threads cannot start (${MAX_START_FAILURES} in a row died before they were ready): ${this.unstartable}`)

  /** Task `i` failed with `error`: the dispatcher finishes, and so does the compute. */
  private failTask(run: Run, i: number, error: EngineError.ComputeError): void {
    run.dispatcher.fail({ _tag: "TaskFailed", task: i, cause: error })
    this.fail(run, error)
  }

  private fail(run: Run, error: EngineError.ComputeError): void {
    if (run.done) return
    void this.cancel(run).then(() => run.settle(error))
  }

  /**
   * Stops a compute: nothing more is dispatched, workers drop its queued tasks, and
   * workers still busy with it after a grace period are terminated and replaced.
   * Resolves when no worker holds any of its tasks.
   */
  cancel(run: Run): Promise<void> {
    if (!run.done) run.devices?.end()
    run.done = true
    if (this.run === run) this.run = null
    for (const slot of this.slots) Atomics.store(slot.control, CANCEL, run.id)
    return this.drains.wait(run.id, CANCEL_GRACE_MS, (slot) => this.replace(slot))
  }

  /** Cancels the running compute (interruption) and settles it as interrupted. */
  interrupt(run: Run): Promise<void> {
    const wasDone = run.done
    return this.cancel(run).then(() => {
      if (!wasDone) run.settle(EngineError.interrupted())
    })
  }

  private replace(slot: Slot): void {
    slot.alive = false
    slot.outstanding.length = 0
    void slot.worker.terminate()
    if (!this.closed) this.slots[slot.id] = this.spawn(slot.id)
  }

  /** Number of workers with queued batches (for tests). */
  busyCount = (): number => this.drains.busySlots()

  /** Asks every worker to exit (GPU workers one at a time), then terminates those that have not after `graceMs`. */
  async close(graceMs = 1000): Promise<void> {
    await this.sampling.stop()
    this.closed = true
    this.stopMemoryWatch()
    this.gpu?.close()
    await closeSlots(this.slots, graceMs)
  }
}

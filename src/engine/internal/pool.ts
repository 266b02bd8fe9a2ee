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
 * Failures: a kernel error fails the compute; a worker that exits is replaced and the
 * task it was running (known from its shared `control` array) is retried up to
 * `maxRetries` times, its batch-mates are re-queued without penalty. A worker that runs
 * out of heap (`resourceLimits`, which Executor always sets) is replaced too, but its task
 * fails at once (the same task would exhaust the same limit again), and the crash
 * detail names the limit it hit. The heap limit does not cover ArrayBuffers (typed
 * arrays' memory), so every `MEMORY_CHECK_MS` the pool asks each busy CPU worker for its
 * V8 external memory (`worker.getHeapStatistics()`, answered between two statements of a
 * running kernel): one over `maxWorkerMemory` is terminated and replaced, and its task
 * fails at once with `WorkerMemoryExceeded` naming the limit. SharedArrayBuffers are the
 * chunk store's (results, held by the scheduler) and are not counted. Workers that die before they have started
 * (`MAX_START_FAILURES` in a row: a worker module that cannot be loaded, an option the
 * thread refuses) are not replaced again: the compute fails with `NoWorkers` naming why,
 * and so does every later one, where replacing them for ever hung the compute. Cancelling
 * (interruption or failure) sets the compute id in every worker's `control[CANCEL]`, so
 * workers drop the rest of their batches between tasks; workers still busy after
 * `CANCEL_GRACE_MS` are terminated and replaced.
 *
 * @since 0.1.0
 * @internal
 */
import { hostname } from "node:os"
import { Worker } from "node:worker_threads"
import * as EngineClock from "../EngineClock.ts"
import { threadId } from "../EngineEvents.ts"
import * as EngineError from "../EngineError.ts"
import * as EngineEvents from "../EngineEvents.ts"
import type { TransferRecord } from "../EngineEvents.ts"
import * as Gpu from "../Gpu.ts"
import * as Kernel from "../Kernel.ts"
import type { Callbacks } from "../Hooks.ts"
import * as Sampling from "../Sampling.ts"
import type { KernelRef } from "../Kernel.ts"
import * as State from "../State.ts"
import { DeviceBook } from "./deviceBook.ts"
import { deliverRecords, erredInfo, MemoryBook, post, pre, record } from "./job.ts"
import { describeOutput, encodeOutput, OUT_STRIDE, unsendable } from "./kernels.ts"
import type { Job } from "./job.ts"
import { BATCH, CANCEL, CONTROL_SLOTS, INDEX, KEPT_STRIDE, LOCAL, XFER_STRIDE } from "./protocol.ts"
import { hasRow, TIMING_FLOATS } from "./taskTiming.ts"
import { Dispatcher, type Run as DispatchRun } from "./dispatch/dispatcher.ts"
import type { BatchDone, Ready, RunBatch, Samples } from "./protocol.ts"

const TARGET_BATCH_MS = 2
/** ms per task assumed before the first batch comes back (no-op tasks: big first batches) */
const INITIAL_TASK_MS = 0.01
const MAX_BATCH = 1024
const MAX_OUTSTANDING = 2
const CANCEL_GRACE_MS = 100
/** how often a busy worker's memory outside its heap is measured (see `maxWorkerMemory`) */
const MEMORY_CHECK_MS = 50
/** how long stopping sampling waits for a worker's last samples */
const LAST_SAMPLES_MS = 5000
const workerUrl = Kernel.sibling(import.meta.url, "./worker")
const gpuWorkerUrl = Kernel.sibling(import.meta.url, "./gpuWorker")

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
  readonly resourceLimits?: {
    readonly maxOldGenerationSizeMb?: number
    readonly maxYoungGenerationSizeMb?: number
    readonly stackSizeMb?: number
  }
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

interface Batch {
  readonly id: number
  readonly compute: number
  readonly ids: Int32Array
  /** positions >= fusedFrom were fused (their pretask runs when results arrive) */
  readonly fusedFrom: number
  /** the dispatcher's id of the batch */
  readonly dispatched: number
}

interface Slot {
  readonly id: number
  worker: Worker
  control: Int32Array
  /** kernel defs this worker knows (a prefix of pool.defs) */
  known: number
  readonly outstanding: Array<Batch>
  alive: boolean
  /** sent a batch asking for sampling (so it samples until told to stop) */
  sampling: boolean
  /** whose samples it sends (kept until its last ones arrive) */
  sampleOwner: Callbacks | null
  /** waiting for its last samples (a `take` with `stop`) */
  lastSamples: (() => void) | null
  readonly gpu: boolean
  /** has said it is ready (its start finished) */
  ready: boolean
  /** a memory measurement is on its way (see `checkMemory`) */
  measuring: boolean
}

/** Workers dying before they are ready, in a row, after which the pool stops replacing them. */
const MAX_START_FAILURES = 3

interface Run {
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
  readonly defs: Array<readonly [string, string]> = []
  readonly kernelIds = new Map<string, number>()
  run: Run | null = null
  nextCompute = 1
  nextBatch = 1
  closed = false
  /** waiters for "no slot holds a batch of compute c" */
  drainWaiters: Array<{ c: number; resolve: () => void }> = []
  /** the hook this pool samples for (see Sampling), and how to detach from it */
  sampler: { readonly owner: Callbacks; detach: () => void } | null = null
  /** when the pool was built (epoch seconds: constructor start and end) */
  readonly built: readonly [start: number, end: number]
  /** every worker start so far (spawn to ready, epoch seconds), in the order they became ready */
  readonly workerStarts: Array<{ readonly worker: number; readonly start: number; readonly end: number }> = []
  /** CPU workers (ids below this run CPU tasks, the rest GPU tasks) */
  readonly cpuWorkers: number
  /** each GPU worker's adapter (or why it has none), by worker id, once it is ready */
  readonly gpuInfo = new Map<number, Gpu.GpuInfo | { readonly why: string }>()
  private gpuWaiters: Array<() => void> = []
  /** per GPU worker: device bytes held after its last batch; busy seconds of all its batches */
  private readonly gpuHeld = new Map<number, number>()
  private gpuBusySeconds = 0
  private unregisterUsage: () => void = () => {}
  /** the memory check's timer (see `maxWorkerMemory`), when there is a limit */
  private memoryTimer: ReturnType<typeof setInterval> | undefined
  /** workers that died before they were ready, in a row (see `MAX_START_FAILURES`) */
  private startFailures = 0
  /** why the workers cannot start, once `MAX_START_FAILURES` did not: no worker is started again */
  private unstartable: string | undefined

  constructor(options: PoolOptions) {
    const t0 = EngineClock.nowSeconds()
    this.options = options
    this.cpuWorkers = Math.max(1, Math.floor(options.workers))
    this.size = this.cpuWorkers + Math.max(0, Math.floor(options.gpu?.workers ?? 0))
    // Mesa's EGL reads the process environment, which a worker thread's process.env does not set
    if (this.size > this.cpuWorkers) process.env["EGL_PLATFORM"] ??= "surfaceless"
    this.maxRetries = options.maxRetries ?? 3
    for (let i = 0; i < this.size; i++) this.slots.push(this.spawn(i))
    const limit = options.maxWorkerMemory
    if (limit !== undefined && Number.isFinite(limit)) {
      this.memoryTimer = setInterval(() => this.checkMemory(limit), MEMORY_CHECK_MS)
      this.memoryTimer.unref()
    }
    if (this.size > this.cpuWorkers) {
      this.unregisterUsage = Gpu.registerUsage(() => ({
        devices: this.size - this.cpuWorkers,
        heldBytes: [...this.gpuHeld.values()].reduce((a, b) => a + b, 0),
        busySeconds: this.gpuBusySeconds
      }))
    }
    this.built = [t0, EngineClock.nowSeconds()]
  }

  private spawn(id: number): Slot {
    const spawned = EngineClock.nowSeconds()
    const sab = new SharedArrayBuffer(CONTROL_SLOTS * 4)
    const control = new Int32Array(sab)
    control[INDEX] = -1
    const gpu = id >= this.cpuWorkers
    const worker = new Worker(gpu ? gpuWorkerUrl : workerUrl, {
      workerData: {
        control: sab,
        id,
        ...(gpu ? { gpu: this.gpuOptions(id) } : {}),
        ...(!gpu && this.options.sampleInterval !== undefined ? { sample: this.options.sampleInterval } : {})
      },
      ...(this.options.resourceLimits ? { resourceLimits: { ...this.options.resourceLimits } } : {})
    })
    const slot: Slot = { id, worker, control, known: 0, outstanding: [], alive: true, gpu, sampling: false, sampleOwner: null, lastSamples: null, ready: false, measuring: false }
    worker.on("message", (m: BatchDone | Ready | Samples) => {
      if (m.t === "ready") {
        slot.ready = true
        this.startFailures = 0
        this.workerStarts.push({ worker: id, start: spawned, end: Math.max(spawned, m.at) })
        if (m.gpu !== undefined) {
          this.gpuInfo.set(id, m.gpu)
          for (const w of this.gpuWaiters.splice(0)) w()
        }
        return
      }
      if (m.t === "samples") {
        this.onSamples(slot, m)
        return
      }
      const run = this.run
      if (run === null) this.onDone(slot, m)
      else this.guard(run, () => this.onDone(slot, m))
    })
    // a task that ran out of heap would again under the same limit: it fails without retries
    worker.on("error", (e) => this.onDeath(slot, worker, this.describeError(e), !isOutOfMemory(e)))
    worker.on("exit", (code) => this.onDeath(slot, worker, `exited with code ${code}`))
    worker.on("messageerror", (e) => this.onMessageError(slot, worker, e))
    return slot
  }

  /** The device options of GPU worker `id`. */
  private gpuOptions(id: number): Gpu.GpuOptions {
    const g = this.options.gpu!
    const adapter = g.adapters[id - this.cpuWorkers]
    return adapter === undefined ? g.options : { ...g.options, adapter }
  }

  /**
   * Measures every busy CPU worker's external memory (ArrayBuffers outside its heap); one
   * over `limit` is stopped and its running task fails (see `maxWorkerMemory`).
   */
  private checkMemory(limit: number): void {
    for (const slot of this.slots) {
      if (!slot.alive || slot.gpu || slot.measuring || slot.outstanding.length === 0) continue
      const worker = slot.worker
      slot.measuring = true
      worker.getHeapStatistics().then((h) => {
        slot.measuring = false
        const held = (h as { external_memory?: number }).external_memory ?? 0
        if (held > limit) this.onMemoryExceeded(slot, worker, limit, held)
      }, () => {
        slot.measuring = false // the worker ended meanwhile
      })
    }
  }

  /** A worker held more than `limit`: it is replaced, and its running task fails (no retry: it would again). */
  private onMemoryExceeded(slot: Slot, worker: Worker, limit: number, held: number): void {
    if (slot.worker !== worker || !slot.alive) return
    const batchId = slot.control[BATCH]!
    const q = slot.control[INDEX]!
    const lost = slot.outstanding.slice()
    const run = this.run
    this.replace(slot)
    if (run === null || run.done) return this.checkDrained()
    const running = lost.find((b) => b.id === batchId)
    if (running !== undefined && running.compute === run.id && q >= 0 && q < running.ids.length) {
      const i = running.ids[q]!
      const error = EngineError.workerMemoryExceeded(run.job.graph.keys[i]!, Kernel.describe(run.job.graph.specs[i]!.kernel), limit, held)
      run.dispatcher.fail({ _tag: "TaskFailed", task: i, cause: error })
      return this.fail(run, error)
    }
    // measured between two tasks (whose garbage it held): its batches go to other workers
    this.guard(run, () => {
      run.dispatcher.lose(slot.id)
      this.rejoin(run, slot.id)
      this.carryOut(run)
    })
    this.checkDrained()
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
    if (run === null || run.done || batch === undefined || batch.compute !== run.id) return this.checkDrained()
    const i = batch.ids[0]!
    const detail = `worker ${slot.id}'s reply could not be deserialized (messageerror: ${e instanceof Error ? e.message : String(e)})`
    const error = EngineError.workerCrashed(run.job.graph.keys[i]!, 1, detail)
    run.dispatcher.fail({ _tag: "TaskFailed", task: i, cause: error })
    this.fail(run, error)
  }

  /** Why a worker died of an error event; running out of heap names the limit that was hit. */
  private describeError(e: unknown): string {
    if (isOutOfMemory(e)) {
      const limits = this.options.resourceLimits ?? {}
      const set = (["maxOldGenerationSizeMb", "maxYoungGenerationSizeMb"] as const).flatMap((k) => (limits[k] === undefined ? [] : [`${k} ${limits[k]} MB`]))
      return `ran out of memory at its heap limit (resourceLimits: ${set.length > 0 ? set.join(", ") : "V8's defaults"}): ${(e as Error).message}`
    }
    return `uncaught error: ${e instanceof Error ? e.message : String(e)}`
  }

  private internKernel(k: KernelRef): number {
    const key = `${k.module}#${k.name}`
    let id = this.kernelIds.get(key)
    if (id === undefined) {
      id = this.defs.length
      this.defs.push([k.module, k.name])
      this.kernelIds.set(key, id)
    }
    return id
  }

  /** Resolves when every GPU worker has said which adapter it has (or why none). */
  gpuReady(): Promise<ReadonlyArray<Gpu.GpuInfo | { readonly why: string }>> {
    const want = this.size - this.cpuWorkers
    return new Promise((resolve) => {
      const check = () => {
        if (this.gpuInfo.size >= want) resolve([...this.gpuInfo.values()])
        else this.gpuWaiters.push(check)
      }
      check()
    })
  }

  /**
   * Starts a compute; `settle` is called once, with null on success.
   */
  start(job: Job, settle: Settle): Run {
    const { graph, state } = job
    const kernelOf = new Int32Array(graph.size)
    const gpuKernels = this.size > this.cpuWorkers ? this.options.gpu!.kernels : null
    const gpuKernelOf = gpuKernels === null ? null : new Int32Array(graph.size).fill(-1)
    let last: KernelRef | undefined
    let lastId = -1
    let lastGpu = -1
    let outOf: Int32Array | null = null
    for (let i = 0; i < graph.size; i++) {
      if (!state.needed[i]) continue
      const spec = graph.specs[i]!
      if (spec.output !== undefined) {
        if (outOf === null) {
          outOf = new Int32Array(graph.size * OUT_STRIDE)
          for (let j = 0; j < graph.size; j++) outOf[j * OUT_STRIDE] = -1
        }
        encodeOutput(spec.output, outOf, i * OUT_STRIDE)
      }
      const k = spec.kernel
      if (k !== last) {
        last = k
        lastId = this.internKernel(k)
        const g = gpuKernels?.get(Kernel.id(k))
        lastGpu = g === undefined ? -1 : this.internKernel(g)
      }
      kernelOf[i] = lastId
      if (gpuKernelOf !== null) gpuKernelOf[i] = lastGpu
    }
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
      devices: gpuKernelOf === null ? null : new DeviceBook(state, gpuKernelOf, this.size - this.cpuWorkers, (slot, bytes) => {
        this.gpuHeld.set(slot, Math.max(0, (this.gpuHeld.get(slot) ?? 0) - bytes))
        if (book !== null) book.device[slot] = Math.max(0, book.device[slot]! - bytes)
      }, (slot, m) => {
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
    if (job.sampler !== undefined && job.sampler !== this.sampler?.owner) this.startSampling(job.sampler)
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
   * Sends the dispatcher's batch `x` to `slot` (its first `fusedFrom` tasks ready, the
   * rest fused: their inputs are earlier in the batch, and the worker passes them over
   * locally), calling `pretask` for the ready ones.
   */
  private send(run: Run, slot: Slot, x: DispatchRun): void {
    const s = run.job.state
    const { pos } = run
    const hasPre = run.job.pre.length > 0
    const gpuOf = run.gpuKernelOf
    const ids = x.tasks
    const n = x.fusedFrom
    for (let q = 0; q < ids.length; q++) {
      const i = ids[q]!
      if (hasPre && q < n) pre(run.job, i)
      pos[i] = q
    }
    const total = ids.length
    const ks = new Int32Array(total)
    // declared outputs, for CPU workers (a GPU worker's kernels are another function of the task)
    const outOf = slot.gpu ? null : run.outOf
    const out = outOf === null ? null : new Int32Array(total * OUT_STRIDE)
    const args = new Array<ReadonlyArray<unknown>>(total)
    const locs: Array<number> = []
    for (let q = 0; q < total; q++) {
      const i = ids[q]!
      ks[q] = slot.gpu ? gpuOf![i]! : run.kernelOf[i]!
      if (out !== null) out.set(outOf!.subarray(i * OUT_STRIDE, i * OUT_STRIDE + OUT_STRIDE), q * OUT_STRIDE)
      if (q < n) args[q] = State.argsFor(s, i)
      else {
        args[q] = localArgs(s, i, pos)
        locs.push(q)
      }
    }
    for (let q = 0; q < total; q++) pos[ids[q]!] = -1
    const defs = this.defs.length > slot.known ? this.defs.slice(slot.known) : null
    const msg: RunBatch = {
      t: "run",
      c: run.id,
      b: this.nextBatch++,
      d0: slot.known,
      defs,
      p: run.job.profile ? 1 : 0,
      s: this.sampler !== null && run.job.sampler === this.sampler.owner ? this.sampler.owner.sampling!.interval : 0,
      ks,
      args,
      loc: locs.length > 0 ? Int32Array.from(locs) : null,
      out,
      ...(slot.gpu ? { plans: Array.from(ids, (i) => s.graph.argPlan[i] ?? null), host: Uint8Array.from(ids, (i) => run.devices!.toHost[i]!) } : {})
    }
    slot.outstanding.push({ id: msg.b, compute: run.id, ids, fusedFrom: n, dispatched: x.batch })
    if (msg.s > 0) {
      slot.sampling = true
      slot.sampleOwner = this.sampler!.owner
    }
    try {
      slot.worker.postMessage(msg, out === null ? [ks.buffer] : [ks.buffer, out.buffer])
      slot.known = this.defs.length
    } catch (e) {
      // An argument structured clone cannot carry: fail the compute naming the task, the
      // argument and the stage (the batch was never sent: no kernel ran).
      slot.outstanding.pop()
      const q = findUncloneable(args)
      const i = ids[q]!
      const spec = run.job.graph.specs[i]!
      const a = Math.max(0, args[q]!.findIndex((v) => unsendable(v) !== undefined))
      const what = unsendable(args[q]![a]) ?? "a value that cannot be cloned"
      const error = EngineError.argumentNotSendable(run.job.graph.keys[i]!, Kernel.describe(spec.kernel), spec.stage, a, what, e instanceof Error ? e.message : String(e))
      run.dispatcher.fail({ _tag: "TaskFailed", task: i, cause: error })
      this.fail(run, error)
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
      this.checkDrained()
      return
    }
    if (m.device !== undefined) {
      this.gpuHeld.set(slot.id, m.device.held)
      this.gpuBusySeconds += m.device.busy
      if (run.book !== null) run.book.device[slot.id] = m.device.held
      run.devices?.done(slot.id, m.device.salt, batch.ids, m.device.kept, m.device.evicted)
    }
    if (m.xfer != null && run.job.transferCbs.length > 0) this.transfers(run, slot, m.xfer, batch.ids)
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
      const i = ids[m.error.i]!
      const key = run.job.graph.keys[i]!
      const e = m.error
      const spec = run.job.graph.specs[i]!
      const error = e.refused === true
        ? EngineError.moduleRefused(key, e.module, e.name, e.message)
        : e.notFound
        ? EngineError.kernelNotFound(key, e.module, e.name, e.message)
        : e.oom !== undefined
        ? EngineError.gpuOutOfMemory(key, `${e.name} (${e.module})`, e.oom, e.message)
        : e.output !== undefined
        ? EngineError.badOutput(key, `${e.name} (${e.module})`, spec.stage, spec.output !== undefined ? describeOutput(spec.output) : "?", e.output)
        : EngineError.kernelFailed(key, `${e.name} (${e.module})`, e.message, e.stack, e.module)
      // the failed task's record (a CPU worker filled its row): state erred, with the error
      if (book !== null && rec !== null && hasRow(rec, e.i * TIMING_FLOATS)) {
        record(run.job, book, i, undefined, slot.id, this.host, rec, e.i * TIMING_FLOATS, "erred", erredInfo, { error: error.message, traceback: e.stack })
      }
      d.fail({ _tag: "TaskFailed", task: i, cause: error })
      this.fail(run, error)
      return
    }
    // positions not done (a batch cut short) go back to ready; the room is filled, or the compute ends
    d.batchDone(slot.id, batch.dispatched, m.busy / 1000)
    this.carryOut(run)
  }

  /**
   * Samples for `owner` from now on (see Sampling): workers start when they get a batch
   * asking for it; a pool samples for one owner at a time (a new one stops the old).
   */
  private startSampling(owner: Callbacks): void {
    if (this.sampler !== null) void this.stopSampling()
    const sampler = { owner, detach: () => {} }
    sampler.detach = Sampling.attach(owner, { stop: () => (this.sampler === sampler ? this.stopSampling() : Promise.resolve()) })
    this.sampler = sampler
  }

  /** Asks every sampling worker for its last samples; resolves when they are delivered. */
  stopSampling(): Promise<void> {
    const sampler = this.sampler
    if (sampler === null) return Promise.resolve()
    this.sampler = null
    sampler.detach()
    const waits: Array<Promise<void>> = []
    for (const slot of this.slots) {
      if (!slot.alive || !slot.sampling) continue
      slot.sampling = false
      waits.push(new Promise<void>((resolve) => {
        // a worker stuck in a kernel answers after it: its samples are not worth waiting long for
        const timer = setTimeout(() => {
          slot.lastSamples = null
          slot.sampleOwner = null // what arrives later is dropped
          resolve()
        }, LAST_SAMPLES_MS)
        slot.lastSamples = () => {
          clearTimeout(timer)
          resolve()
        }
        slot.worker.postMessage({ t: "take", stop: true })
      }))
    }
    return Promise.all(waits).then(() => undefined)
  }

  /** Delivers a worker's samples to the hook that asked for them. */
  private onSamples(slot: Slot, m: Samples): void {
    const owner = slot.sampleOwner
    if (m.last) {
      slot.sampleOwner = null
      const done = slot.lastSamples
      slot.lastSamples = null
      done?.()
    }
    if (owner === null || m.chunk.samples.length === 0) return
    owner.samples!({
      ...m.chunk,
      host: this.host,
      workerId: slot.id,
      threadId: threadId(this.host, slot.id),
      interval: m.interval / 1000
    })
  }

  /** Delivers a GPU batch's transfers (see `XFER_STRIDE`) as TransferRecords. */
  private transfers(run: Run, slot: Slot, x: Float64Array, ids: Int32Array): void {
    const keys = run.job.graph.keys
    const threadId = EngineEvents.threadId(this.host, slot.id)
    for (let o = 0; o < x.length; o += XFER_STRIDE) {
      const from = x[o + 5]!
      const r: TransferRecord = {
        keys: [keys[from >= 0 ? from : ids[x[o]!]!]!],
        bytes: x[o + 2]!,
        direction: x[o + 1] === 0 ? "host-to-device" : "device-to-host",
        host: this.host,
        workerId: slot.id,
        threadId,
        start: x[o + 3]!,
        stop: x[o + 4]!
      }
      for (const cb of run.job.transferCbs) cb.transfer!(r)
    }
  }

  private onDeath(slot: Slot, worker: Worker, detail: string, retry = true): void {
    if (slot.worker !== worker || !slot.alive) return
    slot.alive = false
    // a dead worker's samples are lost; do not wait for them
    slot.lastSamples?.()
    slot.lastSamples = null
    const lost = slot.outstanding.splice(0)
    const runningBatch = slot.control[BATCH]!
    const runningIndex = slot.control[INDEX]!
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
      const blamed = lost.find((b) => b.compute === run.id && b.id === runningBatch)
      const blame = blamed !== undefined && runningIndex >= 0 ? { batch: blamed.dispatched, index: runningIndex } : undefined
      this.guard(run, () => {
        run.dispatcher.lose(slot.id, blame, retry, detail)
        this.rejoin(run, slot.id)
        this.carryOut(run)
      })
    }
    this.checkDrained()
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
  private cannotStart(): EngineError.ComputeError {
    return EngineError.noWorkers(`the pool's worker threads cannot start (${MAX_START_FAILURES} in a row died before they were ready): ${this.unstartable}`)
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
    if (!this.busyWith(run.id)) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        for (const slot of this.slots) {
          if (slot.alive && slot.outstanding.some((b) => b.compute === run.id)) this.replace(slot)
        }
        this.checkDrained()
      }, CANCEL_GRACE_MS)
      this.drainWaiters.push({
        c: run.id,
        resolve: () => {
          clearTimeout(timer)
          resolve()
        }
      })
    })
  }

  /** Cancels the running compute (interruption) and settles it as interrupted. */
  interrupt(run: Run): Promise<void> {
    const wasDone = run.done
    return this.cancel(run).then(() => {
      if (!wasDone) run.settle(EngineError.interrupted())
    })
  }

  private busyWith(c: number): boolean {
    for (const slot of this.slots) if (slot.alive && slot.outstanding.some((b) => b.compute === c)) return true
    return false
  }

  private checkDrained(): void {
    if (this.drainWaiters.length === 0) return
    const still: typeof this.drainWaiters = []
    for (const w of this.drainWaiters) {
      if (this.busyWith(w.c)) still.push(w)
      else w.resolve()
    }
    this.drainWaiters = still
  }

  private replace(slot: Slot): void {
    slot.alive = false
    slot.outstanding.length = 0
    void slot.worker.terminate()
    if (!this.closed) this.slots[slot.id] = this.spawn(slot.id)
  }

  /** Number of workers with queued batches (for tests). */
  busyCount(): number {
    let n = 0
    for (const slot of this.slots) if (slot.alive && slot.outstanding.length > 0) n++
    return n
  }

  /** Asks every worker to exit (GPU workers one at a time), then terminates those that have not after `graceMs`. */
  async close(graceMs = 1000): Promise<void> {
    await this.stopSampling()
    this.closed = true
    if (this.memoryTimer !== undefined) clearInterval(this.memoryTimer)
    this.unregisterUsage()
    const closeOne = (slot: Slot) =>
      new Promise<void>((resolve) => {
        if (!slot.alive) return resolve()
        const timer = setTimeout(() => {
          void slot.worker.terminate().then(() => resolve())
        }, graceMs)
        slot.worker.once("exit", () => {
          clearTimeout(timer)
          resolve()
        })
        slot.alive = false
        slot.worker.postMessage({ t: "close" })
      })
    // GPU workers one after another: two llvmpipe (Mesa EGL) devices torn down at once by
    // two exiting threads crash the process (a segmentation fault, every time in
    // bench/gpu/gpu.ts --gpus 2); one at a time they exit cleanly (docs/gpu.md)
    const gpuExits = (async () => {
      for (const slot of this.slots) if (slot.gpu) await closeOne(slot)
    })()
    await Promise.all([...this.slots.filter((slot) => !slot.gpu).map(closeOne), gpuExits])
  }
}

/** Whether a worker's error event says it hit its heap limit. */
const isOutOfMemory = (e: unknown): boolean => (e as { code?: unknown } | null)?.code === "ERR_WORKER_OUT_OF_MEMORY"

/** Args of a fused task: inputs in the batch become `{ [LOCAL]: position }`. */
const localArgs = (s: State.SchedulerState, i: number, pos: Int32Array): ReadonlyArray<unknown> => {
  const spec = s.graph.specs[i]!
  const plan = s.graph.argPlan[i]
  if (plan === null || plan === undefined) return spec.args
  const at = (t: number): unknown => (pos[t]! >= 0 ? { [LOCAL]: pos[t]! } : s.cache[t])
  const out = new Array<unknown>(plan.length)
  for (let a = 0; a < plan.length; a++) {
    const slot = plan[a]!
    if (typeof slot === "number") out[a] = slot < 0 ? spec.args[a] : at(slot)
    else {
      const arr = new Array<unknown>(slot.length)
      for (let q = 0; q < slot.length; q++) arr[q] = at(slot[q]!)
      out[a] = arr
    }
  }
  return out
}

const findUncloneable = (args: ReadonlyArray<ReadonlyArray<unknown>>): number => {
  for (let q = 0; q < args.length; q++) {
    try {
      structuredClone(args[q])
    } catch {
      return q
    }
  }
  return 0
}

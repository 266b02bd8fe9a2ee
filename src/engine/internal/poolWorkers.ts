/**
 * The worker pool's slots: one worker thread (CPU) or GPU worker each, its shared
 * `control` array and the batches it holds; how a slot's worker is started and what it
 * reports (ready, samples, a batch done, its death, a reply that cannot be read), how a
 * busy CPU worker's memory outside its heap is watched, how the pool waits for the
 * workers to drop a cancelled compute's batches, and how the workers are closed.
 * What the pool does with those reports is pool.ts's.
 *
 * @since 0.1.0
 * @internal
 */
import { Worker } from "node:worker_threads"
import * as EngineClock from "../EngineClock.ts"
import type * as Gpu from "../Gpu.ts"
import type { Callbacks } from "../Hooks.ts"
import * as Kernel from "../Kernel.ts"
import { BATCH, CONTROL_SLOTS, INDEX } from "./protocol.ts"
import type { BatchDone, Ready, Samples } from "./protocol.ts"

const workerUrl = Kernel.sibling(import.meta.url, "./worker")
const gpuWorkerUrl = Kernel.sibling(import.meta.url, "./gpuWorker")

/**
 * A batch a slot's worker holds.
 *
 * @since 0.1.0
 * @internal
 */
export interface Batch {
  readonly id: number
  readonly compute: number
  readonly ids: Int32Array
  /** positions >= fusedFrom were fused (their pretask runs when results arrive) */
  readonly fusedFrom: number
  /** the dispatcher's id of the batch */
  readonly dispatched: number
}

/**
 * One worker of the pool.
 *
 * @since 0.1.0
 * @internal
 */
export interface Slot {
  readonly id: number
  worker: Worker
  control: Int32Array
  /** kernel defs this worker knows (a prefix of the pool's `kernels.defs`) */
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
  /** a memory measurement is on its way (see `watchMemory`) */
  measuring: boolean
}

/**
 * The batch of `batches` and the position in it that `slot`'s worker is running, as its
 * `control` array says (the worker writes it before each task); undefined when none.
 *
 * @since 0.1.0
 * @internal
 */
export const runningIn = (slot: Slot, batches: ReadonlyArray<Batch>): { readonly batch: Batch; readonly index: number } | undefined => {
  const id = slot.control[BATCH]!
  const index = slot.control[INDEX]!
  const batch = batches.find((b) => b.id === id)
  return batch === undefined || index < 0 || index >= batch.ids.length ? undefined : { batch, index }
}

/**
 * What a slot's worker reports, to the pool. `spawned`: when the worker was started
 * (epoch seconds); `retry` false: the task it ran must not be retried (it ran out of heap
 * and would again).
 *
 * @since 0.1.0
 * @internal
 */
export interface SlotEvents {
  readonly ready: (slot: Slot, m: Ready, spawned: number) => void
  readonly samples: (slot: Slot, m: Samples) => void
  readonly done: (slot: Slot, m: BatchDone) => void
  readonly death: (slot: Slot, worker: Worker, detail: string, retry: boolean) => void
  readonly messageError: (slot: Slot, worker: Worker, e: unknown) => void
}

/**
 * How a slot's worker is started: a GPU worker with `gpu` (its device options), a CPU
 * worker sampling from its start with `sample` (ms).
 *
 * @since 0.1.0
 * @internal
 */
export interface SpawnOptions {
  readonly id: number
  readonly gpu: Gpu.GpuOptions | undefined
  readonly sample: number | undefined
  readonly resourceLimits: ResourceLimits | undefined
}

/** @since 0.1.0 @internal */
export interface ResourceLimits {
  readonly maxOldGenerationSizeMb?: number
  readonly maxYoungGenerationSizeMb?: number
  readonly stackSizeMb?: number
}

/**
 * Starts slot `o.id`'s worker and wires what it reports to `events`.
 *
 * @since 0.1.0
 * @internal
 */
export const spawnSlot = (o: SpawnOptions, events: SlotEvents): Slot => {
  const spawned = EngineClock.nowSeconds()
  const sab = new SharedArrayBuffer(CONTROL_SLOTS * 4)
  const control = new Int32Array(sab)
  control[INDEX] = -1
  const gpu = o.gpu !== undefined
  const worker = new Worker(gpu ? gpuWorkerUrl : workerUrl, {
    workerData: {
      control: sab,
      id: o.id,
      ...(gpu ? { gpu: o.gpu } : {}),
      ...(!gpu && o.sample !== undefined ? { sample: o.sample } : {})
    },
    ...(o.resourceLimits ? { resourceLimits: { ...o.resourceLimits } } : {})
  })
  const slot: Slot = { id: o.id, worker, control, known: 0, outstanding: [], alive: true, gpu, sampling: false, sampleOwner: null, lastSamples: null, ready: false, measuring: false }
  worker.on("message", (m: BatchDone | Ready | Samples) => {
    if (m.t === "ready") events.ready(slot, m, spawned)
    else if (m.t === "samples") events.samples(slot, m)
    else events.done(slot, m)
  })
  // a task that ran out of heap would again under the same limit: it fails without retries
  worker.on("error", (e) => events.death(slot, worker, describeWorkerError(e, o.resourceLimits), !isOutOfMemory(e)))
  worker.on("exit", (code) => events.death(slot, worker, `exited with code ${code}`, true))
  worker.on("messageerror", (e) => events.messageError(slot, worker, e))
  return slot
}

/** Whether a worker's error event says it hit its heap limit. */
const isOutOfMemory = (e: unknown): boolean => (e as { code?: unknown } | null)?.code === "ERR_WORKER_OUT_OF_MEMORY"

/** Why a worker died of an error event; running out of heap names the limit that was hit. */
const describeWorkerError = (e: unknown, limits: ResourceLimits = {}): string => {
  if (isOutOfMemory(e)) {
    const set = (["maxOldGenerationSizeMb", "maxYoungGenerationSizeMb"] as const).flatMap((k) => (limits[k] === undefined ? [] : [`${k} ${limits[k]} MB`]))
    return `ran out of memory at its heap limit (resourceLimits: ${set.length > 0 ? set.join(", ") : "V8's defaults"}): ${(e as Error).message}`
  }
  return `uncaught error: ${e instanceof Error ? e.message : String(e)}`
}

/**
 * Every `everyMs`, measures each busy CPU worker's external memory (ArrayBuffers outside
 * its heap, `worker.getHeapStatistics()`, answered between two statements of a running
 * kernel) and calls `exceeded` for one over `limit`. Returns how to stop.
 *
 * @since 0.1.0
 * @internal
 */
export const watchMemory = (
  slots: () => ReadonlyArray<Slot>,
  limit: number,
  everyMs: number,
  exceeded: (slot: Slot, worker: Worker, held: number) => void
): () => void => {
  const timer = setInterval(() => {
    for (const slot of slots()) {
      if (!slot.alive || slot.gpu || slot.measuring || slot.outstanding.length === 0) continue
      const worker = slot.worker
      slot.measuring = true
      worker.getHeapStatistics().then((h) => {
        slot.measuring = false
        const held = (h as { external_memory?: number }).external_memory ?? 0
        if (held > limit) exceeded(slot, worker, held)
      }, () => {
        slot.measuring = false // the worker ended meanwhile
      })
    }
  }, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * Asks every worker to exit (GPU workers one at a time), then terminates those that have
 * not after `graceMs`.
 *
 * @since 0.1.0
 * @internal
 */
export const closeSlots = async (slots: ReadonlyArray<Slot>, graceMs: number): Promise<void> => {
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
    for (const slot of slots) if (slot.gpu) await closeOne(slot)
  })()
  await Promise.all([...slots.filter((slot) => !slot.gpu).map(closeOne), gpuExits])
}

/**
 * Waits for the slots to hold no batch of a compute (a cancelled one's batches are
 * dropped by its workers between tasks, or they are replaced).
 *
 * @since 0.1.0
 * @internal
 */
export class Drains {
  private waiters: Array<{ readonly c: number; readonly resolve: () => void }> = []
  private readonly slots: () => ReadonlyArray<Slot>

  constructor(slots: () => ReadonlyArray<Slot>) {
    this.slots = slots
  }

  /** Whether a live slot holds a batch of compute `c`. */
  busyWith(c: number): boolean {
    for (const slot of this.slots()) if (slot.alive && slot.outstanding.some((b) => b.compute === c)) return true
    return false
  }

  /** How many live slots hold a batch. */
  busySlots(): number {
    let n = 0
    for (const slot of this.slots()) if (slot.alive && slot.outstanding.length > 0) n++
    return n
  }

  /**
   * Resolves when no live slot holds a batch of compute `c`; slots still holding one
   * after `graceMs` are given to `replace` (which ends their worker).
   */
  wait(c: number, graceMs: number, replace: (slot: Slot) => void): Promise<void> {
    if (!this.busyWith(c)) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        for (const slot of this.slots()) {
          if (slot.alive && slot.outstanding.some((b) => b.compute === c)) replace(slot)
        }
        this.check()
      }, graceMs)
      this.waiters.push({
        c,
        resolve: () => {
          clearTimeout(timer)
          resolve()
        }
      })
    })
  }

  /** Resolves the waits whose compute no live slot holds any more (call after slots change). */
  check(): void {
    if (this.waiters.length === 0) return
    const still: typeof this.waiters = []
    for (const w of this.waiters) {
      if (this.busyWith(w.c)) still.push(w)
      else w.resolve()
    }
    this.waiters = still
  }
}

/**
 * Wire messages between the pool (main thread) and its worker threads. Tasks travel in
 * batches: one `RunBatch` carries many task descriptors (task index, interned kernel id,
 * resolved args), one `BatchDone` carries their results. Kernel refs are interned to
 * small ids; a worker learns new ids from `defs` (appended in id order).
 *
 * Each worker also shares an Int32Array `control` with the pool:
 * `[CANCEL] = compute id to abandon`, `[BATCH] = id of the batch running`,
 * `[INDEX] = index in that batch of the task running` (who to blame when it dies).
 *
 * @since 0.1.0
 * @internal
 */
import type { SampleChunk } from "../Sampling.ts"
import type * as Gpu from "../Gpu.ts"

/** @since 0.1.0 @internal */
export const CANCEL = 0
/** @since 0.1.0 @internal */
export const BATCH = 1
/** @since 0.1.0 @internal */
export const INDEX = 2
/** @since 0.1.0 @internal */
export const CONTROL_SLOTS = 4

/** @since 0.1.0 @internal */
export interface RunBatch {
  readonly t: "run"
  /** compute id */
  readonly c: number
  /** batch id */
  readonly b: number
  /** first id of `defs` */
  readonly d0: number
  readonly defs: ReadonlyArray<readonly [module: string, name: string]> | null
  /** 1 when TaskRecords are wanted */
  readonly p: number
  /** sampling interval in ms (0: none): the worker starts sampling if it is not yet */
  readonly s: number
  readonly ks: Int32Array
  readonly args: ReadonlyArray<ReadonlyArray<unknown>>
  /** batch positions whose args hold `LocalRef`s (results of earlier tasks of this batch) */
  readonly loc: Int32Array | null
  /**
   * the outputs the tasks declared, `OUT_STRIDE` ints per position (kernels.ts
   * `encodeOutput`), checked right after each kernel returns; null when none declares one
   */
  readonly out: Int32Array | null
  /** GPU workers: which task made each argument (`TaskGraph` argPlan), to name transfers */
  readonly plans?: ReadonlyArray<ReadonlyArray<number | ArrayLike<number>> | null>
  /** GPU workers: per position, 1 when a CPU task or the driver takes the result (it is read back) */
  readonly host?: Uint8Array
}

/**
 * Floats per transfer in `BatchDone.xfer`: batch position, direction (0 host to device,
 * 1 device to host), bytes, start, stop (epoch s), the task whose result moved (-1: the
 * task at that position, whose own argument or result it was).
 *
 * @since 0.1.0
 * @internal
 */
export const XFER_STRIDE = 6

/**
 * Key of a batch-local reference: `{ [LOCAL]: q }` stands for the result of the task at
 * position `q` of the same batch (directly as an arg, or inside a refs array).
 *
 * @since 0.1.0
 * @internal
 */
export const LOCAL = "~tessera/local"

/** @since 0.1.0 @internal */
export interface Close {
  readonly t: "close"
}

/**
 * Asks a sampling worker for its samples so far (see `Sampling`); `stop`: and stop
 * sampling. The worker answers with `Samples`.
 *
 * @since 0.1.0
 * @internal
 */
export interface TakeSamples {
  readonly t: "take"
  readonly stop: boolean
}

/**
 * A worker's samples: on `TakeSamples`, or on its own every `Sampling.flushSeconds`.
 *
 * @since 0.1.0
 * @internal
 */
export interface Samples {
  readonly t: "samples"
  readonly chunk: SampleChunk
  /** ms between samples */
  readonly interval: number
  /** the reply to a `TakeSamples` with `stop` */
  readonly last: boolean
}

/**
 * Tells a GPU worker to drop device copies (by tag) the scheduler released; `salt` is the
 * worker's (copies of a worker since replaced are ignored).
 *
 * @since 0.1.0
 * @internal
 */
export interface FreeDevice {
  readonly t: "free"
  readonly salt: number
  readonly tags: Float64Array
}

/**
 * Floats per result left on the device in `BatchDone.kept`: batch position, tag, bytes,
 * and 1 when it has no host copy (a `Gpu.DeviceChunk`).
 *
 * @since 0.1.0
 * @internal
 */
export const KEPT_STRIDE = 4

/** @since 0.1.0 @internal */
export type ToWorker = RunBatch | Close | TakeSamples | FreeDevice

/** @since 0.1.0 @internal */
export interface BatchError {
  /** index in the batch */
  readonly i: number
  readonly notFound: boolean
  /** with `notFound`: the module's URL was refused (`ModuleRefused`), not missing */
  readonly refused?: true
  readonly message: string
  readonly stack: string
  readonly module: string
  readonly name: string
  /** a GPU task ran out of device memory asking for this many bytes */
  readonly oom?: number
  /** the kernel returned something other than its task declared: what it returned */
  readonly output?: string
}

/**
 * Sent once by a worker when its module has loaded and it can take batches: `at` is
 * the worker's clock (epoch seconds), for the trace's "worker start" segment.
 *
 * @since 0.1.0
 * @internal
 */
export interface Ready {
  readonly t: "ready"
  readonly at: number
  /** a GPU worker's adapter, or why it has none */
  readonly gpu?: Gpu.GpuInfo | { readonly why: string }
}

/** @since 0.1.0 @internal */
export interface BatchDone {
  readonly t: "done"
  readonly c: number
  readonly b: number
  /** tasks completed (a prefix of the batch) */
  readonly n: number
  readonly results: ReadonlyArray<unknown>
  readonly error: BatchError | null
  /** ms the worker spent on the batch */
  readonly busy: number
  /**
   * when the batch asked for profiling: one timing row (taskTiming.ts) per task of the
   * batch, completed ones filled, and the failed one up to its failure where the worker
   * measured it (its `gatherStart` a number); the other rows NaN
   */
  readonly rec: Float64Array | null
  /** GPU workers: the batch's transfers (XFER_STRIDE floats each) */
  readonly xfer?: Float64Array | null
  /**
   * GPU workers: device bytes held after the batch, busy seconds over it (timestamp
   * queries, else submit to completion), the worker's salt, the results left on the
   * device (KEPT_STRIDE floats each) and the tags of copies it dropped to make room
   */
  readonly device?: { readonly held: number; readonly busy: number; readonly salt: number; readonly kept: Float64Array; readonly evicted: Float64Array }
}

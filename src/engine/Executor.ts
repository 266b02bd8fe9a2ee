/**
 * Executor: the service that runs a compute's tasks. Two layers:
 *
 * - `layerWorkers({ workers })`: a pool of worker threads (default
 *   `os.availableParallelism()`), alive for the layer's scope (graceful close, then
 *   terminate). Computes on one pool run one at a time. Each worker's V8 heap is
 *   limited ({@link defaultHeapLimitMb} unless `resourceLimits` says otherwise), so a
 *   runaway kernel dies in seconds with `WorkerCrashed` naming the limit instead of
 *   paging the machine into the OOM killer. What the heap limit does not cover, the
 *   ArrayBuffers a kernel allocates, is measured while it runs: above `maxWorkerMemory`
 *   ({@link defaultWorkerMemory} unless given) the worker is replaced and the task fails
 *   with `WorkerMemoryExceeded` naming the limit.
 * - `layerGpu({ kernels })`: the same pool plus one GPU worker (WebGPU through Dawn, see
 *   `Gpu.ts`); tasks whose kernel has a GPU version in `kernels` run on it, the others on
 *   the CPU workers. Building it fails with `GpuUnavailable` when no adapter is found.
 * - `layerSync`: everything in the calling thread, one task at a time, like `dask.get`
 *   — for debugging, and to measure the scheduler's own overhead.
 *
 * Loads anywhere: the module imports no `node:` builtin and neither does anything it
 * imports statically (the DSL builds on it; test/Layers.test.ts checks). The worker pool
 * and the in-process runner are imported when a layer is built or a sync executor first
 * runs; `node:os` is reached with `process.getBuiltinModule` when a function needs it.
 *
 * - `layerCluster(options)`: worker processes on Effect Cluster (docs/cluster.md); the
 *   scheduler and its runner registry are imported when the layer is built.
 *
 * Every count of workers an executor is given (`workers`, `gpus`, `local`, `threads`) must
 * be a whole number from 1 to {@link maxWorkers} (four per core, or free memory at 64 MiB
 * each, whichever is more); else its layer fails with `WorkerCountRefused` before any
 * worker starts. `tessera`'s `--workers`, `--threads` and `--cluster local:N` use the same
 * rule.
 *
 * Every executor imports a kernel module only from a `file:` URL inside the folders its
 * workers allow (the working directory, Tessera's install, the main script's folder, and
 * those given to {@link allowModules}); any other (`data:`, `http:`, `node:`, a file
 * elsewhere) fails the task with `ModuleRefused`.
 *
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as EngineError from "./EngineError.ts"
import type * as Gpu from "./Gpu.ts"
import type { KernelRef } from "./Kernel.ts"
import type { Job } from "./internal/job.ts"
import { allowModuleDirs } from "./internal/kernels.ts"
import type { PoolOptions } from "./internal/pool.ts"
import type { ClusterError, ClusterOptions } from "./Cluster.ts"
import { checkLocalCounts, checkWorkerCount, maxWorkers } from "./WorkerCount.ts"

export {
  /**
   * Checks a count of workers given as an option: `undefined` when it is a whole number
   * from 1 to {@link maxWorkers}, else the `WorkerCountRefused` to fail with.
   *
   * @since 0.1.0
   * @category guards
   */
  checkWorkerCount,
  /**
   * The most workers (threads or worker processes) this machine can host now, and why:
   * four per core, or free memory at 64 MiB each, whichever is more. Every executor's
   * counts and `tessera`'s `--workers`, `--threads`, `--cluster local:N` are bounded by it.
   *
   * @since 0.1.0
   * @category getters
   */
  maxWorkers
}

/** `node:os`, when a function needs it (not at load time: see the module comment). */
const os = () => process.getBuiltinModule("node:os")

/** The in-process runner, imported on first use. */
let syncRunner: Promise<typeof import("./internal/syncRunner.ts")> | undefined

/**
 * What an executor offers the engine.
 *
 * @since 0.1.0
 * @category models
 */
export interface ExecutorShape {
  readonly kind: "sync" | "workers" | "cluster"
  /** number of threads that run tasks */
  readonly size: number
  readonly host: string
  /** Runs every needed task of the job; fails with the first ComputeError. */
  readonly execute: (job: Job) => Effect.Effect<void, EngineError.ComputeError>
  /** Workers currently holding queued or running tasks (0 for sync). */
  readonly busyWorkers: () => number
  /**
   * Bytes free for new data where the tasks run (see {@link availableMemory}); what the
   * DSL checks an array against before computing it. Absent: no check.
   */
  readonly availableMemory?: () => number
  /**
   * How the executor started, for the trace's driver segments: when it was built and when
   * each worker thread booted (spawn to ready; epoch seconds). Absent: nothing to show.
   */
  readonly startup?: () => ExecutorStartup
  /** The adapters of the GPU workers (worker id, adapter), when there are any. */
  readonly gpus?: ReadonlyArray<{ readonly worker: number; readonly info: Gpu.GpuInfo }>
}

/**
 * An executor's start-up (see `ExecutorShape.startup`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ExecutorStartup {
  readonly built: readonly [start: number, end: number]
  readonly workers: ReadonlyArray<{ readonly worker: number; readonly start: number; readonly end: number }>
}

/**
 * Bytes this process can still use: `process.availableMemory()` (free memory, within a
 * cgroup's limit where one applies), or `os.freemem()` where that is not available.
 *
 * @since 0.1.0
 * @category getters
 */
export const availableMemory = (): number => {
  const fromProcess = typeof process.availableMemory === "function" ? process.availableMemory() : 0
  const free = os().freemem()
  return fromProcess > 0 ? Math.min(fromProcess, free) : free
}

/** Heap limits are kept within [MIN_HEAP_MB, MAX_HEAP_MB] whatever the memory. */
const MIN_HEAP_MB = 256
const MAX_HEAP_MB = 4096

/**
 * The default V8 heap limit of each worker (`resourceLimits.maxOldGenerationSizeMb`): the
 * available memory shared between the workers and the main thread, between 256 MiB and
 * 4 GiB (about V8's own default on 64-bit). Chunks live in SharedArrayBuffers, outside
 * this heap, so the limit caps what a kernel builds as JS objects.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultHeapLimitMb = (workers: number, available: number = availableMemory()): number =>
  Math.max(MIN_HEAP_MB, Math.min(MAX_HEAP_MB, Math.floor(available / (Math.max(1, workers) + 1) / 2 ** 20)))

/** The least ArrayBuffer memory a worker is allowed by default, bytes (1 GiB). */
const MIN_WORKER_MEMORY = 2 ** 30

/**
 * The default `maxWorkerMemory` of each worker (bytes of ArrayBuffers it may hold while it
 * runs a task): the available memory shared between the workers and the main thread, at
 * least 1 GiB.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultWorkerMemory = (workers: number, available: number = availableMemory()): number =>
  Math.max(MIN_WORKER_MEMORY, Math.floor(available / (Math.max(1, workers) + 1)))

/**
 * Lets workers import kernel, worker-plugin and preload modules from `dirs` too, in this
 * process and in the worker threads and processes it starts from now on (it sets
 * `TESSERA_ALLOW_MODULES`). By default they import only `file:` URLs inside the working
 * directory, Tessera's install and the main script's folder; `tessera run` allows its
 * file's folder, `tessera worker --allow-modules DIR,DIR` those folders.
 *
 * **Example** (kernels in a folder of their own)
 *
 * ```ts
 * Executor.allowModules(["/opt/kernels"])
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const allowModules = (dirs: Iterable<string>): void => allowModuleDirs(dirs)

/**
 * The executor service.
 *
 * @since 0.1.0
 * @category layers
 */
export class Executor extends Context.Service<Executor, ExecutorShape>()("tessera/engine/Executor") {}

/**
 * Runs tasks in the calling thread.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeSync = (): ExecutorShape => ({
  kind: "sync",
  size: 1,
  host: os().hostname(),
  availableMemory,
  execute: (job) =>
    Effect.flatMap(Effect.promise(() => (syncRunner ??= import("./internal/syncRunner.ts"))), ({ runSync }) =>
    Effect.callback<void, EngineError.ComputeError>((resume) => {
      const cancel = { cancelled: false }
      runSync(job, cancel).then(
        () => resume(Effect.void),
        (e) => resume(EngineError.isComputeError(e) ? Effect.fail(e) : Effect.die(e))
      )
      return Effect.sync(() => {
        cancel.cancelled = true
      })
    })),
  busyWorkers: () => 0
})

/**
 * Options of the worker-thread executor.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkersOptions {
  /**
   * default `os.availableParallelism()`; a whole number from 1 to {@link maxWorkers}, else
   * the layer fails with `WorkerCountRefused` before any worker starts
   */
  readonly workers?: number
  /** retries of a task whose worker died (default 3) */
  readonly maxRetries?: number
  /**
   * per-worker V8 limits; a worker that exceeds them dies (`WorkerCrashed`, naming the
   * limit) and is replaced. `maxOldGenerationSizeMb` defaults to
   * {@link defaultHeapLimitMb} for the number of workers.
   */
  readonly resourceLimits?: PoolOptions["resourceLimits"]
  /**
   * bytes of ArrayBuffers (typed arrays a kernel allocates: outside the V8 heap, so not
   * under `resourceLimits`) a worker may hold while it runs a task, measured every 50 ms;
   * above it the worker is replaced and the task fails with `WorkerMemoryExceeded`, naming
   * the limit. Default {@link defaultWorkerMemory}; `Infinity`: not checked.
   */
  readonly maxWorkerMemory?: number
  /**
   * start V8's sampler in each worker as it boots, at this interval (ms), for a
   * `StatisticalProfiler` at the same interval: V8's start-up cost (it logs the code
   * the thread holds) is then paid while the worker has little code and before its first
   * task, not on a compute's critical path (see `Sampling`). Default: a worker starts it
   * at the first compute that asks.
   */
  readonly sampleInterval?: number
}

/**
 * Starts a worker pool in the current scope (closed when the scope closes); fails with
 * `WorkerCountRefused` when `workers` is out of bounds (see {@link maxWorkers}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeWorkers = (
  options: WorkersOptions = {}
) => // no GPU workers: GpuUnavailable cannot happen
  makePool(options).pipe(Effect.catchTag("GpuUnavailable", (e) => Effect.die(e)))

/**
 * Options of the GPU executor: the worker pool's, plus its GPU workers.
 *
 * @since 0.1.0
 * @category models
 */
export interface GpuWorkersOptions extends WorkersOptions {
  /** GPU versions of kernels: [CPU kernel, GPU kernel] pairs (`kernels/gpu/GpuKernels.ts` lists Tessera's) */
  readonly kernels: Iterable<readonly [KernelRef, KernelRef]>
  /**
   * GPU workers (default 1; with several, give each an adapter name filter in `adapters`);
   * bounded like `workers`, and so are the two together
   */
  readonly gpus?: number
  readonly gpu?: Gpu.GpuOptions
  /** per GPU worker, a substring of its adapter's name (Dawn's `adapter=`) */
  readonly adapters?: ReadonlyArray<string>
}

const makePool = Effect.fnUntraced(function*(options: WorkersOptions, gpu?: GpuWorkersOptions) {
  const workers = options.workers ?? os().availableParallelism()
  const refused = checkWorkerCount("workers", workers) ??
    (gpu === undefined ? undefined : checkWorkerCount("gpus", gpu.gpus ?? 1) ?? checkWorkerCount("workers + gpus", workers + (gpu.gpus ?? 1)))
  if (refused !== undefined) return yield* refused
  const { Pool } = yield* Effect.promise(() => import("./internal/pool.ts"))
  const pool = yield* Effect.acquireRelease(
    Effect.sync(() =>
      new Pool({
        workers,
        ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
        ...(options.sampleInterval !== undefined ? { sampleInterval: options.sampleInterval } : {}),
        resourceLimits: { maxOldGenerationSizeMb: defaultHeapLimitMb(workers), ...options.resourceLimits },
        maxWorkerMemory: options.maxWorkerMemory ?? defaultWorkerMemory(workers),
        ...(gpu === undefined ? {} : {
          gpu: {
            workers: gpu.gpus ?? 1,
            options: gpu.gpu ?? {},
            adapters: gpu.adapters ?? [],
            kernels: new Map([...gpu.kernels].map(([c, g]) => [`${c.module}#${c.name}`, g]))
          }
        })
      })
    ),
    (pool) => Effect.promise(() => pool.close())
  )
  const gpus: Array<{ readonly worker: number; readonly info: Gpu.GpuInfo }> = []
  if (gpu !== undefined) {
    const infos = yield* Effect.promise(() => pool.gpuReady())
    for (let g = 0; g < infos.length; g++) {
      const info = infos[g]!
      const worker = pool.cpuWorkers + g
      if ("why" in info) return yield* new EngineError.GpuUnavailable({ worker, why: info.why, message: `GPU worker ${worker} found no GPU adapter: ${info.why}` })
      gpus.push({ worker, info })
    }
  }
  const lock = yield* Semaphore.make(1)
  const shape: ExecutorShape = {
    kind: "workers",
    size: pool.size,
    host: pool.host,
    execute: (job) =>
      Semaphore.withPermits(
        lock,
        1,
        Effect.callback<void, EngineError.ComputeError>((resume) => {
          const run = pool.start(job, (error, defect) =>
            resume(defect !== undefined ? Effect.die(defect.cause) : error === null ? Effect.void : Effect.fail(error))
          )
          return Effect.promise(() => pool.interrupt(run))
        })
      ),
    busyWorkers: () => pool.busyCount(),
    availableMemory,
    startup: () => ({ built: pool.built, workers: pool.workerStarts }),
    ...(gpus.length > 0 ? { gpus } : {})
  }
  return shape
})

/**
 * Starts a worker pool with GPU workers in the current scope (see {@link layerGpu}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeGpu = (options: GpuWorkersOptions) => makePool(options, options)

/**
 * The worker pool with GPU workers beside the CPU ones, as a layer (see the module
 * comment); fails with `GpuUnavailable` when a GPU worker finds no adapter, with
 * `WorkerCountRefused` when `workers` or `gpus` is out of bounds (see {@link maxWorkers}).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerGpu = (
  options: GpuWorkersOptions
): Layer.Layer<Executor, EngineError.GpuUnavailable | EngineError.WorkerCountRefused> =>
  Layer.effect(Executor, makeGpu(options))

/**
 * The worker-thread executor as a layer; fails with `WorkerCountRefused`, before any
 * worker starts, when `workers` is not a whole number from 1 to {@link maxWorkers}.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWorkers = (options: WorkersOptions = {}): Layer.Layer<Executor, EngineError.WorkerCountRefused> =>
  Layer.effect(Executor, makeWorkers(options))

/**
 * The in-process synchronous executor as a layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSync: Layer.Layer<Executor> = Layer.succeed(Executor, makeSync())

/**
 * The cluster executor as a layer: a scheduler in this process and worker processes on
 * Effect Cluster (`local: N` starts N on this machine, stopped with the layer's scope;
 * others join with `tessera worker --scheduler HOST:PORT`). See docs/cluster.md. Its
 * start's expected failures are typed (`ClusterError`, as `Cluster.layer`'s): with
 * `WorkerCountRefused`, before any process starts, when `local`, `threads` or the two
 * multiplied are not a whole number from 1 to {@link maxWorkers}; a bad scheduler address
 * or storage URL, links refused, a port taken, workers not joined in time.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCluster = (options: ClusterOptions = {}): Layer.Layer<Executor, ClusterError> =>
  Layer.effect(
    Executor,
    Effect.suspend((): Effect.Effect<ExecutorShape, ClusterError, Scope.Scope> => {
      const refused = checkLocalCounts(options.local, options.threads)
      return refused !== undefined
        ? Effect.fail(refused)
        : Effect.flatMap(Effect.promise(() => import("./internal/cluster/scheduler.ts")), (m) => m.makeTyped(options))
    })
  )

/**
 * Engine events for profilers: one `TaskRecord` per finished (or erred) task, with
 * phase timestamps measured in the thread that ran it, and one `MemoryRecord` per
 * change of a worker's held bytes. All timestamps are epoch seconds (see EngineClock).
 *
 * Records are only built when some callback has a `task` / `memory` method, so plain
 * computes pay nothing for them.
 *
 * @since 0.1.0
 */

/**
 * Start/stop of one phase, epoch seconds.
 *
 * @since 0.1.0
 * @category models
 */
export type Span = readonly [start: number, stop: number]

/**
 * One task as it ran.
 *
 * - `gather`: resolving the task's inputs in the worker (inputs arrive already resolved
 *   as shared-memory views, so this is the time to unpack them);
 * - `compute`: the kernel call (including awaiting a returned Promise);
 * - `transfer`: moving the result into shared memory and measuring it for the reply.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskRecord {
  readonly key: string
  readonly name: string
  readonly stage?: string
  readonly host: string
  readonly workerId: number
  /** `worker-{host}-{i}` */
  readonly threadId: string
  readonly phases: { readonly gather: Span; readonly compute: Span; readonly transfer: Span }
  /** Thread CPU seconds spent in gather + compute + transfer (see docs/engine.md). */
  readonly cpuTime: number
  /**
   * Bytes: the highest V8 heap used + external (ArrayBuffer) memory of the task's thread
   * read at the task's start, after its kernel returned and after its transfer (see
   * docs/engine.md "Per-task resources": a GC inside the task can hide a peak).
   * Set by Tessera's executors; absent from records made elsewhere.
   */
  readonly peakMemory?: number
  /** Bytes the task's kernel reported reading from files (`TaskIo.reportBytesRead`). */
  readonly ioBytes?: number
  /**
   * GPU tasks: seconds its kernels ran on the device (the `gpu_time` arg): timestamp
   * queries where the adapter has them, else submit to completion (docs/gpu.md).
   */
  readonly gpuTime?: number
  readonly nbytes: number
  readonly shape: ReadonlyArray<number>
  readonly dtype: string
  /** Result type: `Chunk`, `Float64Array`, `number`, `object`, ... */
  readonly type: string
  readonly dependencies: ReadonlyArray<string>
  readonly dependents: ReadonlyArray<string>
  readonly state: "memory" | "erred"
  /**
   * An erred task (`state` "erred": its kernel threw, or returned something other than
   * its task declared): the error's message, naming the task, the kernel and, where the
   * stack shows it, the kernel's `file:line:column`. Its timings run from the task's
   * start to the failure. Only the task that failed is recorded: its batch-mates that
   * had not run are not.
   */
  readonly error?: string
  /** An erred task: the stack on the thread that ran it (the worker's, not the driver's). */
  readonly traceback?: string
  /**
   * Set when the task ran on the main thread (the in-process executor under a sampling
   * hook): the statistical profiler attributes the main thread's samples to it.
   */
  readonly mainThread?: boolean
}

/**
 * Bytes and chunk count a worker holds after a change (`key` entered `state`).
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryRecord {
  readonly timestamp: number
  readonly host: string
  readonly workerId: number
  readonly threadId: string
  readonly key: string
  readonly state: "memory" | "released" | "erred"
  readonly bytes: number
  readonly chunks: number
  /** GPU workers: device bytes held (results left on the device, see docs/gpu.md) */
  readonly device?: number
}

/**
 * Whether an engine record is a task's (and not a memory change's or a driver segment's).
 *
 * @since 0.1.0
 * @category guards
 */
export const isTaskRecord = (r: TaskRecord | MemoryRecord | DriverRecord): r is TaskRecord => "phases" in r

/**
 * Whether an engine record is a driver segment's.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDriverRecord = (r: TaskRecord | MemoryRecord | DriverRecord): r is DriverRecord => "activity" in r

/**
 * The thread id string for worker `i` on `host`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const threadId = (host: string, workerId: number): string => `worker-${host}-${workerId}`

/**
 * What the driver (the main thread) was doing in a segment:
 *
 * - `pool start`: building the executor (spawning the worker threads);
 * - `worker start`: a worker thread booting, from its spawn until it can take tasks (on
 *   that worker's row, not the driver's);
 * - `setup`: the run's start (profiler registered) until its first compute, less the
 *   segments above and `graph build`;
 * - `graph build`: validating the compute's task graph (`TaskGraph.make`);
 * - `between computes`: the driver's own work between two computes (reading the
 *   previous results, convergence checks, building the next arrays);
 * - `submit`: from the compute's start to handing the graph to the executor (scheduler
 *   state, start hooks);
 * - `wait`: the executor running the compute; the driver dispatches batches and
 *   otherwise waits for results.
 *
 * @since 0.1.0
 * @category models
 */
export type DriverActivity = "pool start" | "worker start" | "setup" | "graph build" | "between computes" | "submit" | "wait"

/**
 * One segment of the driver's time (epoch seconds). Consecutive driver segments of a run
 * tile its time: every segment starts where the previous one ended. `key` is unique
 * within the run (`driver-{compute}-{activity}`); `dependencies` name the previous
 * segment, and for the first segment after a compute, the execution keys of that
 * compute's requested tasks (what the driver waited for).
 *
 * @since 0.1.0
 * @category models
 */
export interface DriverRecord {
  readonly key: string
  readonly activity: DriverActivity
  readonly start: number
  readonly end: number
  readonly host: string
  /** `driver`, or the worker's thread id for `worker start` */
  readonly threadId: string
  /** number of the compute within its run (the next compute for the segments before it) */
  readonly compute: number
  readonly dependencies: ReadonlyArray<string>
  /** tasks the compute ran (`wait` only; 0 otherwise) */
  readonly tasks: number
}

/**
 * The driver's thread id in trace events.
 *
 * @since 0.1.0
 * @category constants
 */
export const driverThreadId = "driver"

/**
 * Data moved to a worker for its tasks (epoch seconds, on the scheduler's clock): a peer
 * fetch between cluster workers (`direction` absent), or a copy to or from a device
 * (`direction` says which). Drawn on the receiving worker's row.
 *
 * @since 0.1.0
 * @category models
 */
export interface TransferRecord {
  /** the keys whose results moved */
  readonly keys: ReadonlyArray<string>
  /** bytes on the wire (encoded) */
  readonly bytes: number
  /** the receiving worker (for a read-back from a device: the GPU worker): its host and thread id */
  readonly host: string
  readonly threadId: string
  /** the pool's worker number, where the transfer was a pool worker's (GPU copies) */
  readonly workerId?: number
  /** the sending side of a peer fetch (a worker's name) */
  readonly peer?: string
  readonly start: number
  readonly stop: number
  /** seconds the sender spent serialising and the receiver deserialising (peer fetches) */
  readonly serialize?: number
  readonly deserialize?: number
  /** a copy to or from a GPU worker's device; absent for a peer fetch */
  readonly direction?: "host-to-device" | "device-to-host"
}

/**
 * A cluster worker's clock as the scheduler measured it when a compute started: its
 * offset (worker clock minus scheduler clock, seconds) and the uncertainty (half the
 * fastest round trip of the samples it was measured with). Every timestamp of that
 * worker in the records is already moved onto the scheduler's clock by `offset`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClockRecord {
  readonly timestamp: number
  readonly host: string
  /** the worker's first thread row */
  readonly threadId: string
  /** the worker's name (`tessera-worker@HOST:PORT`) */
  readonly worker: string
  readonly offset: number
  readonly uncertainty: number
}

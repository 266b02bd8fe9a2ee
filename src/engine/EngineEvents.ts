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
  readonly nbytes: number
  readonly shape: ReadonlyArray<number>
  readonly dtype: string
  /** Result type: `Chunk`, `Float64Array`, `number`, `object`, ... */
  readonly type: string
  readonly dependencies: ReadonlyArray<string>
  readonly dependents: ReadonlyArray<string>
  readonly state: "memory" | "erred"
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
}

/**
 * Whether an engine record is a task's (and not a memory change's).
 *
 * @since 0.1.0
 * @category guards
 */
export const isTaskRecord = (r: TaskRecord | MemoryRecord): r is TaskRecord => "phases" in r

/**
 * The thread id string for worker `i` on `host`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const threadId = (host: string, workerId: number): string => `worker-${host}-${workerId}`

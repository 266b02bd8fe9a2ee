/**
 * Typed errors of the engine. `GraphError` is raised while validating a task graph,
 * before anything runs; `ComputeError` while running one. Each holds a tagged `reason`
 * whose message names what went wrong and where (task key, kernel, module, cycle).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"

/**
 * A kernel threw (or rejected). `stack` is the worker-side stack.
 *
 * @since 0.1.0
 * @category errors
 */
export class KernelFailed extends Data.TaggedError("KernelFailed")<{
  readonly key: string
  readonly kernel: string
  readonly stack: string
  readonly message: string
}> {}

/**
 * The kernel's module failed to import or has no such export.
 *
 * @since 0.1.0
 * @category errors
 */
export class KernelNotFound extends Data.TaggedError("KernelNotFound")<{
  readonly module: string
  readonly name: string
  readonly key: string
  readonly message: string
}> {}

/**
 * A worker died while running the task, on every attempt.
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkerCrashed extends Data.TaggedError("WorkerCrashed")<{
  readonly key: string
  readonly attempts: number
  readonly message: string
}> {}

/**
 * The compute was interrupted (cancelled) before it finished.
 *
 * @since 0.1.0
 * @category errors
 */
export class Interrupted extends Data.TaggedError("Interrupted")<{
  readonly message: string
}> {}

/**
 * A GPU executor was asked for but a GPU worker found no adapter (`why` lists what it tried).
 *
 * @since 0.1.0
 * @category errors
 */
export class GpuUnavailable extends Data.TaggedError("GpuUnavailable")<{
  readonly worker: number
  readonly why: string
  readonly message: string
}> {}

/**
 * An executor had no live worker to run a task on: a cluster with none, or a pool whose
 * worker threads cannot start (they die before they are ready: a worker module that
 * cannot be loaded, an option the thread refuses).
 *
 * @since 0.1.0
 * @category errors
 */
export class NoWorkers extends Data.TaggedError("NoWorkers")<{
  readonly message: string
}> {}

/**
 * A cluster worker could not start a hook's worker plugin (see `WorkerPlugin`): its
 * module could not be imported there, or its factory failed (a file it could not create).
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkerPluginFailed extends Data.TaggedError("WorkerPluginFailed")<{
  /** the worker's name */
  readonly worker: string
  /** `module#name` of the plugin's factory */
  readonly plugin: string
  readonly message: string
}> {}

/**
 * Why a compute failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type ComputeErrorReason =
  | KernelFailed
  | KernelNotFound
  | WorkerCrashed
  | Interrupted
  | GpuOutOfMemory
  | NoWorkers
  | WorkerPluginFailed

/**
 * A task on a GPU worker needed more device memory than the worker may hold.
 *
 * @since 0.1.0
 * @category errors
 */
export class GpuOutOfMemory extends Data.TaggedError("GpuOutOfMemory")<{
  readonly key: string
  readonly kernel: string
  /** bytes the task asked for (0 when the device itself refused an allocation) */
  readonly bytes: number
  readonly message: string
}> {}

/**
 * A compute failed; see `reason`.
 *
 * @since 0.1.0
 * @category errors
 */
export class ComputeError extends Data.TaggedError("ComputeError")<{
  readonly reason: ComputeErrorReason
  readonly message: string
}> {}

/**
 * The graph has a cycle; `cycle` lists its keys in order, first key repeated at the end.
 *
 * @since 0.1.0
 * @category errors
 */
export class CycleDetected extends Data.TaggedError("CycleDetected")<{
  readonly cycle: ReadonlyArray<string>
  readonly message: string
}> {}

/**
 * A task refers to a key that is not in the graph.
 *
 * @since 0.1.0
 * @category errors
 */
export class MissingDependency extends Data.TaggedError("MissingDependency")<{
  readonly key: string
  readonly missing: string
  readonly message: string
}> {}

/**
 * Two tasks share a key. (A requested output key that is not in the graph is reported
 * as `MissingDependency` with key `"<requested>"`.)
 *
 * @since 0.1.0
 * @category errors
 */
export class DuplicateKey extends Data.TaggedError("DuplicateKey")<{
  readonly key: string
  readonly message: string
}> {}

/**
 * Why a graph is invalid.
 *
 * @since 0.1.0
 * @category errors
 */
export type GraphErrorReason = CycleDetected | MissingDependency | DuplicateKey

/**
 * A task graph failed validation; see `reason`.
 *
 * @since 0.1.0
 * @category errors
 */
export class GraphError extends Data.TaggedError("GraphError")<{
  readonly reason: GraphErrorReason
  readonly message: string
}> {}

/**
 * Constructors that write the messages, so every message has the same shape.
 *
 * @since 0.1.0
 * @category constructors
 */
export const kernelFailed = (key: string, kernel: string, message: string, stack: string): ComputeError => {
  const reason = new KernelFailed({ key, kernel, stack, message: `task "${key}": kernel ${kernel} threw: ${message}` })
  return new ComputeError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const kernelNotFound = (key: string, module: string, name: string, detail: string): ComputeError => {
  const reason = new KernelNotFound({
    key,
    module,
    name,
    message: `task "${key}": kernel "${name}" not found in module ${module}: ${detail}`
  })
  return new ComputeError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const workerCrashed = (key: string, attempts: number, detail: string): ComputeError => {
  const reason = new WorkerCrashed({
    key,
    attempts,
    message: `task "${key}": worker died on each of ${attempts} attempts (last: ${detail})`
  })
  return new ComputeError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const gpuOutOfMemory = (key: string, kernel: string, bytes: number, detail: string): ComputeError => {
  const reason = new GpuOutOfMemory({ key, kernel, bytes, message: `task "${key}": kernel ${kernel} on a GPU worker: ${detail}` })
  return new ComputeError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const interrupted = (detail = "compute interrupted"): ComputeError => {
  const reason = new Interrupted({ message: detail })
  return new ComputeError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const noWorkers = (detail: string): ComputeError => {
  const reason = new NoWorkers({ message: `no workers: ${detail}` })
  return new ComputeError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const workerPluginFailed = (worker: string, plugin: string, detail: string): ComputeError => {
  const reason = new WorkerPluginFailed({ worker, plugin, message: `worker plugin ${plugin} did not start on ${worker}: ${detail}` })
  return new ComputeError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const cycleDetected = (cycle: ReadonlyArray<string>): GraphError => {
  const reason = new CycleDetected({ cycle, message: `task graph has a cycle: ${cycle.join(" -> ")}` })
  return new GraphError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const missingDependency = (key: string, missing: string): GraphError => {
  const reason = new MissingDependency({
    key,
    missing,
    message: `task "${key}" depends on "${missing}", which is not in the graph`
  })
  return new GraphError({ reason, message: reason.message })
}

/** @since 0.1.0 @category constructors */
export const duplicateKey = (key: string): GraphError => {
  const reason = new DuplicateKey({ key, message: `task key "${key}" appears more than once in the graph` })
  return new GraphError({ reason, message: reason.message })
}

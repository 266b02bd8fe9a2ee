/**
 * Typed errors of the engine. `GraphError` is raised while validating a task graph,
 * before anything runs; `ComputeError` while running one. Each holds a tagged `reason`
 * whose message names what went wrong and where (task key, kernel, module, cycle).
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import { kernelFrame as frameOf, mib, shownModule, taskPlace } from "./internal/errorText.ts"

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
  /**
   * `file:line:column` of the frame that threw in the kernel's module (else the first
   * frame outside Tessera's engine), when the stack names one; also in `message`
   */
  readonly at?: string
  readonly message: string
}> {}

/**
 * A kernel returned something other than what its task declared (`TaskSpec.output`): a
 * chunk of another dtype or shape (rows of the block, columns), or not a chunk at all.
 * Checked on the thread that ran the kernel, right after it returned.
 *
 * @since 0.1.0
 * @category errors
 */
export class BadOutput extends Data.TaggedError("BadOutput")<{
  readonly key: string
  readonly kernel: string
  /** the task's stage, when it has one */
  readonly stage?: string
  /** what the task declared, e.g. `a Chunk of float64 [300, 4]` */
  readonly declared: string
  /** what the kernel returned, e.g. `a Chunk of float64 [150, 4]` */
  readonly actual: string
  readonly message: string
}> {}

/**
 * An argument of a task cannot be sent to a worker (structured clone refuses it: a
 * function, a class instance holding one, a symbol, ...). Raised before the task is
 * dispatched: its kernel never ran.
 *
 * @since 0.1.0
 * @category errors
 */
export class ArgumentNotSendable extends Data.TaggedError("ArgumentNotSendable")<{
  readonly key: string
  readonly kernel: string
  readonly stage?: string
  /** 0-based position among the task's arguments (the kernel's parameters) */
  readonly argument: number
  /** what it is: `a function`, `an object holding a function at .f`, ... */
  readonly what: string
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
 * An executor was asked for a count of workers (worker threads, GPU workers, local worker
 * processes, or threads in each) it cannot start: not a whole number of at least 1, or
 * more than this machine can host (`Executor.maxWorkers`: four per core, or its free
 * memory at 64 MiB each, whichever is more). The executor's layer fails with it before
 * any worker starts. `tessera` refuses such a flag the same way, as a usage error.
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkerCountRefused extends Data.TaggedError("WorkerCountRefused")<{
  /** the option that gave the count: `workers`, `gpus`, `local`, `threads`, `local × threads` */
  readonly option: string
  /** the count asked for, as given */
  readonly asked: number
  /** the most this machine can host now (`Executor.maxWorkers().bound`) */
  readonly bound: number
  /** why: `not a whole number of at least 1`, or what the bound comes from */
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
 * A worker refused to import a task's kernel module: its URL is not a `file:` URL
 * (`data:`, `http:`, `node:`, a bare name) or names a file outside the folders the
 * worker may import from (its working directory, Tessera's install, the pipeline file's
 * folder, `tessera worker --allow-modules`, `Executor.allowModules`). Workers run only
 * code that is on their disk where the user put it. Worker plugins and preloads are
 * checked the same way (a refused plugin is a `WorkerPluginFailed` naming the URL).
 *
 * @since 0.1.0
 * @category errors
 */
export class ModuleRefused extends Data.TaggedError("ModuleRefused")<{
  readonly key: string
  /** the module URL (its first 200 characters) */
  readonly module: string
  readonly name: string
  /** why: the URL's kind, or the file and the folders allowed */
  readonly why: string
  readonly message: string
}> {}

/**
 * A task's worker thread held more memory outside its V8 heap (ArrayBuffers: typed arrays
 * it allocated and kept) than the executor's `maxWorkerMemory`: the worker was stopped
 * and replaced, and the task fails without a retry (it would again). The heap itself is
 * bounded by `resourceLimits` (`WorkerCrashed` naming that limit).
 *
 * @since 0.1.0
 * @category errors
 */
export class WorkerMemoryExceeded extends Data.TaggedError("WorkerMemoryExceeded")<{
  readonly key: string
  readonly kernel: string
  /** the limit, bytes */
  readonly limit: number
  /** what the worker held when it was measured, bytes */
  readonly held: number
  readonly message: string
}> {}

/**
 * A cluster worker started with a bound on the results it holds (`tessera worker
 * --max-held-bytes`) would exceed it with a task's result: the task fails (its result is
 * not kept), naming the worker, the limit and what it held.
 *
 * @since 0.1.0
 * @category errors
 */
export class HeldBytesExceeded extends Data.TaggedError("HeldBytesExceeded")<{
  readonly key: string
  /** the worker's name */
  readonly worker: string
  /** the worker's limit, bytes */
  readonly limit: number
  /** bytes it would hold with the task's result */
  readonly held: number
  readonly message: string
}> {}

/**
 * Why a compute failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type ComputeErrorReason =
  | HeldBytesExceeded
  | KernelFailed
  | BadOutput
  | ArgumentNotSendable
  | KernelNotFound
  | WorkerCrashed
  | Interrupted
  | GpuOutOfMemory
  | NoWorkers
  | WorkerPluginFailed
  | ModuleRefused
  | WorkerMemoryExceeded

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
 * A task's declared `output` is not a Chunk declaration: a dtype that is not one of
 * Tessera's, or a shape that is not a list of non-negative integers.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidOutput extends Data.TaggedError("InvalidOutput")<{
  readonly key: string
  readonly detail: string
  readonly message: string
}> {}

/**
 * Why a graph is invalid.
 *
 * @since 0.1.0
 * @category errors
 */
export type GraphErrorReason = CycleDetected | MissingDependency | DuplicateKey | InvalidOutput

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
 * Whether `u` is a {@link ComputeError} (by its tag, so a copy of this module loaded
 * twice still answers; what `Effect.catchTag("ComputeError")` matches).
 *
 * @since 0.1.0
 * @category guards
 */
export const isComputeError = (u: unknown): u is ComputeError =>
  typeof u === "object" && u !== null && (u as { readonly _tag?: unknown })._tag === "ComputeError"

/**
 * Whether `u` is a {@link GraphError} (by its tag).
 *
 * @since 0.1.0
 * @category guards
 */
export const isGraphError = (u: unknown): u is GraphError =>
  typeof u === "object" && u !== null && (u as { readonly _tag?: unknown })._tag === "GraphError"

/** A compute's error, and a graph's, with their reason's message. */
const computeError = (reason: ComputeErrorReason): ComputeError => new ComputeError({ reason, message: reason.message })
const graphError = (reason: GraphErrorReason): GraphError => new GraphError({ reason, message: reason.message })

/**
 * Constructors that write the messages, so every message has the same shape.
 *
 * @since 0.1.0
 * @category constructors
 */
export const kernelFailed = (key: string, kernel: string, message: string, stack: string, module?: string): ComputeError => {
  const at = kernelFrame(stack, module)
  return computeError(new KernelFailed({
    key,
    kernel,
    stack,
    ...(at !== undefined ? { at } : {}),
    message: `task "${key}": kernel ${kernel} threw${at !== undefined ? ` at ${at}` : ""}: ${message}`
  }))
}

/**
 * `file:line:column` of the kernel's frame in a worker-side stack: the first frame in the
 * kernel's module (`module`, a URL), else the first frame with a file location outside
 * Tessera's engine (a helper the kernel called); undefined when the stack names none.
 * File URLs are written as paths.
 *
 * @since 0.1.0
 * @category getters
 */
export const kernelFrame: (stack: string, module?: string) => string | undefined = frameOf

/** @since 0.1.0 @category constructors */
export const badOutput = (key: string, kernel: string, stage: string | undefined, declared: string, actual: string): ComputeError => {
  const { fields, where } = taskPlace(key, kernel, stage)
  return computeError(new BadOutput({ ...fields, declared, actual, message: `${where}: kernel ${kernel} returned ${actual}, but the task declared ${declared}` }))
}

/** @since 0.1.0 @category constructors */
export const argumentNotSendable = (
  key: string,
  kernel: string,
  stage: string | undefined,
  argument: number,
  what: string,
  detail: string
): ComputeError => {
  const { fields, where } = taskPlace(key, kernel, stage)
  return computeError(new ArgumentNotSendable({
    ...fields,
    argument,
    what,
    message: `${where}: argument ${argument + 1} of kernel ${kernel} (${what}) cannot be sent to a worker, so the task was not run (${detail}); pass plain data (numbers, strings, arrays, typed arrays, chunks, plain objects), and name functions as kernels`
  }))
}

/** @since 0.1.0 @category constructors */
export const kernelNotFound = (key: string, module: string, name: string, detail: string): ComputeError => {
  return computeError(new KernelNotFound({
    key,
    module,
    name,
    message: `task "${key}": kernel "${name}" not found in module ${module}: ${detail}`
  }))
}

/** @since 0.1.0 @category constructors */
export const workerCrashed = (key: string, attempts: number, detail: string): ComputeError => {
  return computeError(new WorkerCrashed({
    key,
    attempts,
    message: `task "${key}": worker died on each of ${attempts} attempts (last: ${detail})`
  }))
}

/** @since 0.1.0 @category constructors */
export const gpuOutOfMemory = (key: string, kernel: string, bytes: number, detail: string): ComputeError => {
  return computeError(new GpuOutOfMemory({ key, kernel, bytes, message: `task "${key}": kernel ${kernel} on a GPU worker: ${detail}` }))
}

/** @since 0.1.0 @category constructors */
export const interrupted = (detail = "compute interrupted"): ComputeError => {
  return computeError(new Interrupted({ message: detail }))
}

/** @since 0.1.0 @category constructors */
export const noWorkers = (detail: string): ComputeError => {
  return computeError(new NoWorkers({ message: `no workers: ${detail}` }))
}

/** @since 0.1.0 @category constructors */
export const workerPluginFailed = (worker: string, plugin: string, detail: string): ComputeError => {
  return computeError(new WorkerPluginFailed({ worker, plugin, message: `worker plugin ${plugin} did not start on ${worker}: ${detail}` }))
}

/** @since 0.1.0 @category constructors */
export const moduleRefused = (key: string, module: string, name: string, why: string): ComputeError => {
  const shown = shownModule(module)
  return computeError(new ModuleRefused({ key, module: shown, name, why, message: `task "${key}": kernel module ${shown} refused (kernel "${name}"): ${why}` }))
}

/** @since 0.1.0 @category constructors */
export const workerMemoryExceeded = (key: string, kernel: string, limit: number, held: number): ComputeError => {
  return computeError(new WorkerMemoryExceeded({
    key,
    kernel,
    limit,
    held,
    message: `task "${key}": kernel ${kernel} held ${mib(held)} of ArrayBuffers on its worker thread, over maxWorkerMemory (${mib(limit)}); the worker was replaced`
  }))
}

/** @since 0.1.0 @category constructors */
export const cycleDetected = (cycle: ReadonlyArray<string>): GraphError => {
  return graphError(new CycleDetected({ cycle, message: `task graph has a cycle: ${cycle.join(" -> ")}` }))
}

/** @since 0.1.0 @category constructors */
export const missingDependency = (key: string, missing: string): GraphError => {
  return graphError(new MissingDependency({
    key,
    missing,
    message: `task "${key}" depends on "${missing}", which is not in the graph`
  }))
}

/** @since 0.1.0 @category constructors */
export const invalidOutput = (key: string, detail: string): GraphError => {
  return graphError(new InvalidOutput({ key, detail, message: `task "${key}": invalid output declaration: ${detail}` }))
}

/** @since 0.1.0 @category constructors */
export const duplicateKey = (key: string): GraphError => {
  return graphError(new DuplicateKey({ key, message: `task key "${key}" appears more than once in the graph` }))
}

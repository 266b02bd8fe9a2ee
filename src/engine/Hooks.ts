/**
 * Hooks: dask's five local-scheduler callbacks (start, startState, pretask, posttask,
 * finish) plus three event streams for profilers (task, memory, driver), and where a compute
 * finds them.
 *
 * A compute sees, in this order and without duplicates:
 *
 * 1. the globally registered callbacks (`register`: dask's `Callback.register()`, the
 *    escape hatch for code that cannot provide a layer: every compute sees them);
 * 2. the callbacks in its Effect context (`CurrentCallbacks`, a `Context.Reference`
 *    holding a list, empty by default): `layer(cb)` / `layerEffect(make)` append to it
 *    for the effects the layer is provided to, `provide(cb)` for one effect — so a
 *    profiler is a plain layer, seen only within that layer's scope, and two computes
 *    with different profiler layers never see each other's callbacks;
 * 3. the compute's own (`compute(graph, { callbacks })`).
 *
 * `finish` always runs — on success, failure and interruption — but only for callbacks
 * whose `start` ran.
 *
 * Order within one compute: start, startState, then pretask(k)/posttask(k) pairs (a
 * task's pretask comes before its posttask; on the worker executor pretasks of a batch
 * are called when the batch is dispatched), finish last. task/memory records arrive
 * between start and finish.
 *
 * Gotcha: each hook layer extends the list it finds when it is built, so stack several
 * by providing them one inside the other (`Layer.provideMerge`, or successive
 * `Effect.provide`), or pass several callbacks to one `layer(a, b)`; `Layer.mergeAll`
 * builds its layers side by side, and of two that both extend `CurrentCallbacks` only
 * the last one's list survives the merge. (Merging a hook layer with layers that provide
 * other services, such as an Executor, is fine.)
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, type Scope } from "effect"
import type { ClockRecord, DriverRecord, MemoryRecord, TaskRecord, TransferRecord } from "./EngineEvents.ts"
import type { Run } from "./Lineage.ts"
import * as Sampling from "./Sampling.ts"
import type { SampleRecord, SamplingRequest } from "./Sampling.ts"
import type { SchedulerState } from "./State.ts"
import type { TaskGraph } from "./TaskGraph.ts"
import type { WorkerPlugin } from "./WorkerPlugin.ts"

/**
 * A set of hooks; every method is optional.
 *
 * @since 0.1.0
 * @category models
 */
export interface Callbacks {
  start?(graph: TaskGraph): void
  startState?(graph: TaskGraph, state: SchedulerState): void
  pretask?(key: string, graph: TaskGraph, state: SchedulerState): void
  posttask?(key: string, result: unknown, graph: TaskGraph, state: SchedulerState, workerId: number): void
  finish?(graph: TaskGraph, state: SchedulerState, failed: boolean): void
  /**
   * One record per task that ran: finished (`state` "memory"), or failed (`state`
   * "erred", with `error` and the worker-side `traceback`: its kernel threw or returned
   * something other than its task declared), delivered before `finish`.
   */
  task?(record: TaskRecord): void
  memory?(record: MemoryRecord): void
  /**
   * The driver's segments of each compute (see `EngineEvents.DriverRecord`), delivered
   * before `finish`; only built when some callback has this method.
   */
  driver?(record: DriverRecord): void
  /** Data moved for tasks: cluster peer fetches, GPU workers' host↔device copies (see `EngineEvents.TransferRecord`). */
  transfer?(record: TransferRecord): void
  /** Each cluster worker's clock offset, at the start of each compute (`EngineEvents.ClockRecord`). */
  clock?(record: ClockRecord): void
  /**
   * Statistical sampling of the worker threads (see `Sampling`): executors that can
   * sample do so at this interval and deliver the samples to `samples`. Several
   * callbacks of a compute with both share one sampler (`collect`, `Sampling.share`):
   * each gets every record.
   */
  readonly sampling?: SamplingRequest
  samples?(record: SampleRecord): void
  /**
   * The run this callback records (see `Lineage`): task keys unique within it, and
   * dependencies on results of its earlier computes. The first callback of a compute
   * that carries one is used.
   */
  readonly lineage?: Run
  /**
   * Accepted and ignored: every record `task` and `memory` receive is a new object the
   * hook may keep, with its own arrays, whatever this says.
   *
   * It used to let the engine pass one TaskRecord and one MemoryRecord, refilled for each
   * task, when every task and memory callback of a compute set it; a hook that set it
   * and kept a record (or its `dependencies` or `phases`) then read a later task's values,
   * with nothing to tell it so. What dropping it costs: docs/engine.md, "Records
   * a hook may keep".
   *
   * @deprecated records are always the hook's to keep; this flag changes nothing
   */
  readonly transientRecords?: boolean
  /**
   * The part of this hook that runs in worker processes (see `WorkerPlugin`): an
   * executor whose tasks run in other processes starts it there and gives it those
   * workers' task, memory, transfer and sample records instead of this hook; other
   * executors ignore it.
   */
  readonly workerPlugin?: WorkerPlugin
}

/**
 * The callbacks in the current Effect context (empty by default). `Engine.compute`
 * reads it when the compute starts.
 *
 * @since 0.1.0
 * @category layers
 */
export const CurrentCallbacks: Context.Reference<ReadonlyArray<Callbacks>> = Context.Reference<ReadonlyArray<Callbacks>>(
  "tessera/engine/Hooks/CurrentCallbacks",
  { defaultValue: () => [] }
)

const append = (list: ReadonlyArray<Callbacks>, more: ReadonlyArray<Callbacks>): ReadonlyArray<Callbacks> => {
  const out = [...list]
  for (const cb of more) if (!out.includes(cb)) out.push(cb)
  return out
}

/**
 * Runs `self` with `callbacks` added to the context's callbacks.
 *
 * @since 0.1.0
 * @category combinators
 */
export const provide = (...callbacks: ReadonlyArray<Callbacks>) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.updateService(self, CurrentCallbacks, (list) => append(list, callbacks))

/**
 * A layer adding callbacks built by an effect (which may open resources in the layer's
 * scope, e.g. a database closed when the layer closes) to the context's callbacks.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerEffect = <E, R>(
  make: Effect.Effect<Callbacks | ReadonlyArray<Callbacks>, E, R>
): Layer.Layer<never, E, Exclude<R, Scope.Scope>> =>
  Layer.effect(
    CurrentCallbacks,
    Effect.gen(function*() {
      const made = yield* make
      const list = yield* CurrentCallbacks
      return append(list, Array.isArray(made) ? made : [made as Callbacks])
    })
  ) as Layer.Layer<never, E, Exclude<R, Scope.Scope>>

/**
 * A layer adding `callbacks` to the context's callbacks, for the effects it is provided to.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (...callbacks: ReadonlyArray<Callbacks>): Layer.Layer<never> =>
  layerEffect(Effect.succeed(callbacks))

const globalCallbacks = new Set<Callbacks>()

/**
 * Registers callbacks for every compute, in any context, until the returned function is
 * called (dask's `Callback.register()`).
 *
 * @since 0.1.0
 * @category layers
 */
export const register = (cb: Callbacks): () => void => {
  globalCallbacks.add(cb)
  return () => {
    globalCallbacks.delete(cb)
  }
}

/**
 * Registers callbacks globally until the current scope closes (dask's `with cb:`).
 *
 * @since 0.1.0
 * @category layers
 */
export const registerScoped = (cb: Callbacks): Effect.Effect<void, never, Scope.Scope> =>
  Effect.asVoid(Effect.acquireRelease(Effect.sync(() => register(cb)), (unregister) => Effect.sync(unregister)))

/**
 * The globally registered callbacks, in registration order (a snapshot).
 *
 * @since 0.1.0
 * @category getters
 */
export const registered = (): ReadonlyArray<Callbacks> => [...globalCallbacks]

/**
 * Global callbacks, then the context's, then the compute's own, without duplicates.
 * When more than one asks for sampling (`sampling` and `samples`), one shared sampler
 * for them (`Sampling.share`: the smallest interval, the shortest flush, every record to
 * each) comes before them, so that each gets the samples (a compute samples for the first
 * sampling callback it finds).
 *
 * @since 0.1.0
 * @category getters
 */
export const collect = (
  context: ReadonlyArray<Callbacks>,
  local: ReadonlyArray<Callbacks> | undefined
): Array<Callbacks> => {
  const out = [...globalCallbacks]
  for (const cb of context) if (!out.includes(cb)) out.push(cb)
  if (local) for (const cb of local) if (!out.includes(cb)) out.push(cb)
  const samplers = out.filter((c) => c.sampling !== undefined && typeof c.samples === "function")
  if (samplers.length > 1) out.splice(out.indexOf(samplers[0]!), 0, Sampling.share(samplers))
  return out
}

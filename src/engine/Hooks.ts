/**
 * Hooks: dask's five local-scheduler callbacks (start, startState, pretask, posttask,
 * finish) plus two event streams for profilers (task, memory). A `Callbacks` object is
 * registered for one compute (`compute(graph, { callbacks })`) or globally
 * (`register`, or the scoped `layer`). `finish` always runs — on success, failure and
 * interruption — but only for callbacks whose `start` ran.
 *
 * Order within one compute: start, startState, then pretask(k)/posttask(k) pairs (a
 * task's pretask comes before its posttask; on the worker executor pretasks of a batch
 * are called when the batch is dispatched), finish last. task/memory records arrive
 * between start and finish.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import type { MemoryRecord, TaskRecord } from "./EngineEvents.ts"
import type { SchedulerState } from "./State.ts"
import type { TaskGraph } from "./TaskGraph.ts"

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
  task?(record: TaskRecord): void
  memory?(record: MemoryRecord): void
}

const globalCallbacks = new Set<Callbacks>()

/**
 * Registers callbacks for every compute until the returned function is called.
 *
 * @since 0.1.0
 * @category registration
 */
export const register = (cb: Callbacks): () => void => {
  globalCallbacks.add(cb)
  return () => {
    globalCallbacks.delete(cb)
  }
}

/**
 * The globally registered callbacks, in registration order (a snapshot).
 *
 * @since 0.1.0
 * @category getters
 */
export const registered = (): ReadonlyArray<Callbacks> => [...globalCallbacks]

/**
 * Registers callbacks globally for the lifetime of the layer's scope.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (cb: Callbacks): Layer.Layer<never> =>
  Layer.effectDiscard(Effect.acquireRelease(Effect.sync(() => register(cb)), (unregister) => Effect.sync(unregister)))

/**
 * Global callbacks followed by the compute's own, without duplicates.
 *
 * @since 0.1.0
 * @category getters
 */
export const collect = (local: ReadonlyArray<Callbacks> | undefined): Array<Callbacks> => {
  const out = [...globalCallbacks]
  if (local) for (const cb of local) if (!out.includes(cb)) out.push(cb)
  return out
}

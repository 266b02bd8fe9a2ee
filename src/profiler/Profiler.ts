/**
 * Profiler: dask.diagnostics' `Profiler` — one record per completed task: key, task (its
 * function: the task's group name, dask's `key_split` of the key unless the graph names
 * it), startTime, endTime (epoch seconds, EngineClock) and workerId. Tasks that never
 * complete (erred, interrupted) leave no record, as in dask. Results accumulate over
 * computes until `clear()`.
 *
 * Times are the worker's own: the engine's `TaskRecord` (the `task` hook) carries the
 * gather / compute / transfer spans measured in the thread that ran the task, and a
 * record spans gather start to transfer end. dask's Profiler takes pretask / posttask
 * times instead; here those run on the main thread, and on the worker executor a batch's
 * pretasks run when the batch is dispatched, so they would time queueing, not running.
 * Asking for task records makes workers time each task (a few hundred ns a task).
 *
 * @since 0.1.0
 */
import type { TaskRecord } from "../engine/EngineEvents.ts"
import type * as Hooks from "../engine/Hooks.ts"
import type { HasCallbacks } from "./Callback.ts"

/**
 * One completed task (dask's `TaskData`; `task` is the function name, not the task tuple).
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskData {
  readonly key: string
  readonly task: string
  readonly startTime: number
  readonly endTime: number
  readonly workerId: number
}

/**
 * A task profiler.
 *
 * @since 0.1.0
 * @category models
 */
export interface Profiler extends HasCallbacks {
  readonly results: ReadonlyArray<TaskData>
  readonly clear: () => void
}

/**
 * The profiler's row for an engine task record: gather start to transfer end.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromTaskRecord = (r: TaskRecord): TaskData => ({
  key: r.key,
  task: r.name,
  startTime: r.phases.gather[0],
  endTime: r.phases.transfer[1],
  workerId: r.workerId
})

/**
 * A new task profiler.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Profiler => {
  let results: Array<TaskData> = []
  const callbacks: Hooks.Callbacks = {
    task: (r) => {
      if (r.state === "memory") results.push(fromTaskRecord(r))
    }
  }
  return {
    callbacks,
    get results() {
      return results
    },
    clear: () => {
      results = []
    }
  }
}

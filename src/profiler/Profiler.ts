/**
 * Profiler: dask.diagnostics' `Profiler` — one record per completed task: key, task (the
 * kernel, `module#name`), startTime, endTime (epoch seconds, EngineClock) and workerId,
 * from the pretask / posttask hooks. Tasks that never complete leave no record. Results
 * accumulate over computes until `clear()`.
 *
 * On the worker executor the engine calls a batch's pretasks when it dispatches the batch,
 * so `startTime` includes queueing in the batch; for exact per-phase times use the Trace
 * layer (TaskRecord phases).
 *
 * @since 0.1.0
 */
import * as EngineClock from "../engine/EngineClock.ts"
import type * as Hooks from "../engine/Hooks.ts"
import type { HasCallbacks } from "./Callback.ts"

/**
 * One completed task (dask's `TaskData`).
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
 * A new task profiler.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Profiler => {
  let results: Array<TaskData> = []
  let starts = new Map<string, number>()
  const callbacks: Hooks.Callbacks = {
    pretask: (key) => {
      starts.set(key, EngineClock.nowSeconds())
    },
    posttask: (key, _result, graph, _state, workerId) => {
      const endTime = EngineClock.nowSeconds()
      const startTime = starts.get(key) ?? endTime
      starts.delete(key)
      const i = graph.index.get(key)
      const k = i === undefined ? undefined : graph.specs[i]!.kernel
      results.push({ key, task: k === undefined ? "" : `${k.module}#${k.name}`, startTime, endTime, workerId })
    }
  }
  return {
    callbacks,
    get results() {
      return results
    },
    clear: () => {
      results = []
      starts = new Map()
    }
  }
}

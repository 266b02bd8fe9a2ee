/**
 * CacheProfiler: dask.diagnostics' `CacheProfiler({ metric })` — for each task result,
 * how long it stayed in the scheduler's cache: key, task (its function: the task's group
 * name, dask's `key_split` of the key unless the graph names it), metric
 * (default 1 per result; e.g. `Chunk.nbytes`), cacheTime (when the result arrived,
 * posttask) and freeTime (when the scheduler released it, or the end of the compute for
 * results still held then: the requested outputs).
 *
 * Releases are read from the scheduler state (`state.released`), as dask does; the cache
 * is only rescanned when `state.releasedCount` changed, so a wide fan-out (nothing
 * released until the end) stays linear.
 *
 * @since 0.1.0
 */
import * as EngineClock from "../engine/EngineClock.ts"
import type * as Hooks from "../engine/Hooks.ts"
import type { TaskGraph } from "../engine/TaskGraph.ts"
import type { HasCallbacks } from "./Callback.ts"

/**
 * One cached result's lifetime (dask's `CacheData`).
 *
 * @since 0.1.0
 * @category models
 */
export interface CacheData {
  readonly key: string
  readonly task: string
  readonly metric: number
  readonly cacheTime: number
  readonly freeTime: number
}

/**
 * A cache profiler.
 *
 * @since 0.1.0
 * @category models
 */
export interface CacheProfiler extends HasCallbacks {
  readonly metricName: string
  readonly results: ReadonlyArray<CacheData>
  readonly clear: () => void
}

const taskOf = (graph: TaskGraph, i: number): string => graph.names[i]!

/**
 * Options of the cache profiler.
 *
 * @since 0.1.0
 * @category models
 */
export interface CacheProfilerOptions {
  /** measures each result (default: 1 per result) */
  readonly metric?: (result: unknown) => number
  /** the metric's name in results (default "count", or the metric function's name) */
  readonly metricName?: string
}

/**
 * A new cache profiler; `metric(result)` measures each result (default 1).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: CacheProfilerOptions = {}): CacheProfiler => {
  const metric = options.metric ?? (() => 1)
  let results: Array<CacheData> = []
  // task index -> [metric, cacheTime] while cached (per compute)
  let cache = new Map<number, [number, number]>()
  let seenReleased = 0
  const sweep = (graph: TaskGraph, released: Uint8Array, t: number) => {
    for (const [i, [m, c]] of cache) {
      if (released[i]) {
        cache.delete(i)
        results.push({ key: graph.keys[i]!, task: taskOf(graph, i), metric: m, cacheTime: c, freeTime: t })
      }
    }
  }
  const callbacks: Hooks.Callbacks = {
    start: () => {
      cache = new Map()
      seenReleased = 0
    },
    posttask: (key, result, graph, state) => {
      const t = EngineClock.nowSeconds()
      const i = graph.index.get(key)
      if (i !== undefined && !state.released[i]) cache.set(i, [metric(result), t])
      if (state.releasedCount !== seenReleased) {
        seenReleased = state.releasedCount
        sweep(graph, state.released, t)
      }
    },
    finish: (graph, state) => {
      const t = EngineClock.nowSeconds()
      sweep(graph, state.released, t)
      for (const [i, [m, c]] of cache) {
        results.push({ key: graph.keys[i]!, task: taskOf(graph, i), metric: m, cacheTime: c, freeTime: t })
      }
      cache = new Map()
    }
  }
  return {
    metricName: options.metricName ?? (options.metric === undefined ? "count" : options.metric.name || "metric"),
    callbacks,
    get results() {
      return results
    },
    clear: () => {
      results = []
    }
  }
}

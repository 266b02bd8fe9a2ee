/**
 * Engine: computes a task graph on the current Executor. `compute` is the Effect API;
 * `computePromise` is the same for callers who don't use Effect (it starts and closes a
 * worker pool, or runs in-process with `workers: 0`).
 *
 * Hooks: global callbacks (Hooks.register), then those in the Effect context
 * (Hooks.layer / Hooks.provide: `Hooks.CurrentCallbacks`), then the compute's own run
 * start -> startState -> pretask/posttask pairs -> finish; finish always runs for the
 * callbacks whose start ran, with `failed` true on failure and interruption.
 *
 * Stages: tasks without a `stage` get the pipeline stage running (`TaskGraph.CurrentStage`,
 * set by `Pipeline.run`), so their records and trace events name it.
 *
 * @since 0.1.0
 */
import { Effect, Exit } from "effect"
import * as EngineClock from "./EngineClock.ts"
import * as EngineError from "./EngineError.ts"
import { Executor, layerSync, layerWorkers } from "./Executor.ts"
import * as Hooks from "./Hooks.ts"
import type { Callbacks } from "./Hooks.ts"
import { driverRecords } from "./internal/driver.ts"
import { makeJob, markOutputs } from "./internal/job.ts"
import * as Lineage from "./Lineage.ts"
import * as State from "./State.ts"
import * as TaskGraphs from "./TaskGraph.ts"
import type { TaskGraph } from "./TaskGraph.ts"

/**
 * Options of a compute.
 *
 * @since 0.1.0
 * @category models
 */
export interface ComputeOptions {
  /** keys whose results are returned (default: tasks without dependents) */
  readonly keys?: ReadonlyArray<string>
  readonly callbacks?: ReadonlyArray<Callbacks>
}

/**
 * Resolves requested keys to indices; unknown keys are a MissingDependency of `<requested>`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const requestedIndices = (
  graph: TaskGraph,
  keys: ReadonlyArray<string> | undefined
): Int32Array | EngineError.GraphError => {
  if (keys === undefined) {
    const out: Array<number> = []
    for (let i = 0; i < graph.size; i++) if (graph.dependentStart[i + 1] === graph.dependentStart[i]) out.push(i)
    return Int32Array.from(out)
  }
  const out = new Int32Array(keys.length)
  for (let q = 0; q < keys.length; q++) {
    const i = graph.index.get(keys[q]!)
    if (i === undefined) return EngineError.missingDependency("<requested>", keys[q]!)
    out[q] = i
  }
  return out
}

/**
 * Computes `graph` (or the part needed for `keys`) and returns the requested results
 * by key.
 *
 * @since 0.1.0
 * @category combinators
 */
export const compute = (
  given: TaskGraph,
  options: ComputeOptions = {}
): Effect.Effect<ReadonlyMap<string, unknown>, EngineError.ComputeError | EngineError.GraphError, Executor> =>
  Effect.gen(function*() {
    const entered = EngineClock.nowSeconds()
    const executor = yield* Executor
    // tasks without a stage belong to the pipeline stage running, if any
    const graph = TaskGraphs.withStage(given, yield* TaskGraphs.CurrentStage)
    const requested = requestedIndices(graph, options.keys)
    if (requested instanceof EngineError.GraphError) return yield* requested
    const callbacks = Hooks.collect(yield* Hooks.CurrentCallbacks, options.callbacks)
    const state = State.init(graph, requested)
    const started: Array<Callbacks> = []
    let run: Lineage.Run | undefined
    let submitted = entered
    let job: ReturnType<typeof makeJob> | undefined
    yield* Effect.acquireUseRelease(
      Effect.sync(() => {
        for (const cb of callbacks) {
          started.push(cb)
          cb.start?.(graph)
        }
        for (const cb of callbacks) cb.startState?.(graph, state)
        run = started.find((cb) => cb.lineage !== undefined)?.lineage
        job = makeJob(graph, state, started, run)
        submitted = EngineClock.nowSeconds()
      }),
      () => executor.execute(job!),
      (_, exit) =>
        Effect.sync(() => {
          const failed = Exit.isFailure(exit)
          if (job !== undefined) markOutputs(job)
          const driverCbs = started.filter((cb) => typeof cb.driver === "function")
          if (driverCbs.length > 0 || run !== undefined) {
            const records = driverRecords({
              run: run ?? Lineage.makeRun(),
              executor,
              graph,
              state,
              exec: job?.exec ?? null,
              entered,
              submitted,
              done: EngineClock.nowSeconds()
            })
            for (const r of records) for (const cb of driverCbs) cb.driver!(r)
          }
          for (const cb of started) cb.finish?.(graph, state, failed)
        })
    )
    const out = new Map<string, unknown>()
    for (const i of requested) out.set(graph.keys[i]!, state.cache[i])
    return out as ReadonlyMap<string, unknown>
  })

/**
 * Options of `computePromise`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ComputePromiseOptions extends ComputeOptions {
  /** worker threads (default availableParallelism()); 0 runs in-process (sync executor) */
  readonly workers?: number
}

/**
 * Plain-Promise API: starts a pool (or the sync executor), computes, closes the pool.
 * Rejects with the ComputeError / GraphError.
 *
 * @since 0.1.0
 * @category combinators
 */
export const computePromise = (
  graph: TaskGraph,
  options: ComputePromiseOptions = {}
): Promise<ReadonlyMap<string, unknown>> => {
  const layer = options.workers === 0
    ? layerSync
    : layerWorkers(options.workers !== undefined ? { workers: options.workers } : {})
  const { workers: _workers, ...rest } = options
  return Effect.runPromise(compute(graph, rest).pipe(Effect.provide(layer)))
}

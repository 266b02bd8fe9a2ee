/**
 * `Bench.pipeline(p, options)`: a pipeline benchmarked through tinybench, for users who
 * benchmark inside their own test files (issue 36; the command line's `tessera bench
 * FILE` does the same with bootstrap intervals and saved results, docs/bench.md).
 *
 * Each iteration runs the whole pipeline on one executor built once (a warm pool);
 * tinybench times it (warm-up, mean with a t-distribution margin of error,
 * percentiles), and the engine's `task` hook records every task, so the result also
 * holds, per iteration, each stage's and each function's task time (the sum of its
 * tasks' kernel and transfer phases, seconds) and its count of tasks. Warm-up
 * iterations run first and are not recorded.
 *
 * **Example** (in a test file)
 *
 * ```ts
 * const r = await Bench.pipeline(makePipeline(), { executor: Executor.layerWorkers({ workers: 2 }), iterations: 20 })
 * console.log(r.task.result.latency.p50, r.stages.get("SOM.fitPredict"))
 * ```
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as References from "effect/References"
import { Bench, type Task } from "tinybench"
import type { Executor } from "../engine/Executor.ts"
import * as Hooks from "../engine/Hooks.ts"

/**
 * What `pipeline` runs: anything with a name and a `run()` on an executor (a DSL
 * `Pipeline`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Benchable {
  readonly name: string
  readonly run: () => Effect.Effect<unknown, unknown, Executor>
}

/**
 * Options: the executor's layer (built once for every iteration), and tinybench's own
 * (`iterations`, `time` in ms, `warmupIterations`; tinybench's defaults otherwise).
 *
 * @since 0.1.0
 * @category models
 */
export interface PipelineOptions {
  readonly executor: Layer.Layer<Executor, unknown>
  readonly iterations?: number
  readonly time?: number
  /** iterations run before measuring, not recorded (default 2) */
  readonly warmupIterations?: number
  /** keep the pipeline's INFO log lines (default false: warnings only) */
  readonly log?: boolean
}

/**
 * The result: tinybench's bench and task (`task.result.latency`: mean, p50, p99, moe,
 * ... in ms), and per stage and per function (`"stage/function"`) the task time of every
 * measured iteration (seconds) and tasks per iteration.
 *
 * @since 0.1.0
 * @category models
 */
export interface PipelineResult {
  readonly bench: Bench
  readonly task: Task
  readonly stages: ReadonlyMap<string, ReadonlyArray<number>>
  readonly functions: ReadonlyMap<string, ReadonlyArray<number>>
  readonly tasks: ReadonlyMap<string, number>
}

/**
 * Benchmarks `p` through tinybench (see the module header). Rejects with the pipeline's
 * failure.
 *
 * @since 0.1.0
 * @category testing
 */
export const pipeline = async (p: Benchable, options: PipelineOptions): Promise<PipelineResult> => {
  let current: Map<string, number> | undefined
  const counts = new Map<string, number>()
  const add = (k: string, s: number) => current?.set(k, (current.get(k) ?? 0) + s)
  const recorder: Hooks.Callbacks = {
    task: (r) => {
      if (current === undefined) return
      const s = (r.phases.compute[1] - r.phases.compute[0]) + (r.phases.gather[1] - r.phases.gather[0]) + (r.phases.transfer[1] - r.phases.transfer[0])
      const stage = r.stage ?? "(no stage)"
      add(`s\u0000${stage}`, s)
      add(`f\u0000${stage}/${r.name}`, s)
      add(`n\u0000${stage}/${r.name}`, 1)
      add(`n\u0000${stage}`, 1)
    }
  }
  const quiet = options.log === true ? Layer.empty : Layer.succeed(References.MinimumLogLevel, "Warn")
  const rt = ManagedRuntime.make(Layer.mergeAll(options.executor, Hooks.layer(recorder), quiet) as Layer.Layer<Executor, unknown>)
  const perIteration: Array<Map<string, number>> = []
  const once = () => rt.runPromise(p.run())
  try {
    for (let k = 0; k < (options.warmupIterations ?? 2); k++) await once()
    const bench = new Bench({
      name: p.name,
      warmup: false,
      ...(options.iterations === undefined ? {} : { iterations: options.iterations }),
      ...(options.time === undefined ? {} : { time: options.time }),
      throws: true
    })
    bench.add(p.name, async () => {
      current = new Map()
      await once()
      perIteration.push(current)
      current = undefined
    })
    await bench.run()
    const stages = new Map<string, Array<number>>()
    const functions = new Map<string, Array<number>>()
    for (const m of perIteration) {
      for (const [k, v] of m) {
        const [kind, name] = k.split("\u0000") as [string, string]
        if (kind === "n") counts.set(name, v)
        else {
          const into = kind === "s" ? stages : functions
          into.set(name, [...(into.get(name) ?? []), v])
        }
      }
    }
    return { bench, task: bench.tasks[0]!, stages, functions, tasks: counts }
  } finally {
    await rt.dispose()
  }
}

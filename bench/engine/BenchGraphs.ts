/**
 * No-op task graphs for measuring the engine itself (the `tessera bench engine`
 * command and bench/engine/*): fan-out, binary-tree reduction and chain, each built
 * from the `noop` kernel defined here, plus one measurement routine.
 *
 * Definitions (the dask side-by-side script builds the same shapes):
 * - `fanout(n)`: one root task and `n - 1` tasks that each depend on the root; all
 *   leaves are requested.
 * - `tree(n)`: a binary reduction over `ceil(n / 2)` leaves rounded up to a power of
 *   two: 2L - 1 tasks; the root is requested. (`tree(131071)` = 65,536 leaves.)
 * - `chain(n)`: `t0 <- t1 <- ... <- t(n-1)`; the last is requested (pure latency).
 *
 * Overhead per task (`overheadMicros`) is the wall time of the same graph on the
 * in-process sync executor divided by its task count: all the scheduler's bookkeeping
 * (state transitions, argument resolution, hook dispatch, result release) plus a call
 * of a kernel that does nothing.
 *
 * `measureCluster` times the same graphs on a LocalCluster of worker processes
 * (`tessera bench cluster`); the cluster's start-up is in the untimed warm-up compute.
 *
 * @since 0.1.0
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

/**
 * The no-op kernel: ignores its arguments, returns null.
 *
 * @since 0.1.0
 * @category kernels
 */
export const noop = (..._args: ReadonlyArray<unknown>): null => null

const noopRef = Kernel.ref(import.meta.url, "noop")

/**
 * Graph shapes the benchmark knows.
 *
 * @since 0.1.0
 * @category models
 */
export type Shape = "fanout" | "tree" | "chain"

/**
 * A benchmark graph and the keys to request.
 *
 * @since 0.1.0
 * @category models
 */
export interface BenchGraph {
  readonly shape: Shape
  readonly graph: TaskGraph.TaskGraph
  readonly keys: ReadonlyArray<string>
}

/** @since 0.1.0 @category constructors */
export const fanout = (n: number): BenchGraph => {
  const specs: Array<TaskGraph.TaskSpec> = [{ key: "root", kernel: noopRef, args: [] }]
  const root = [TaskGraph.ref("root")]
  const keys: Array<string> = []
  for (let i = 1; i < n; i++) {
    const key = `leaf-${i}`
    specs.push({ key, kernel: noopRef, args: root })
    keys.push(key)
  }
  return { shape: "fanout", graph: TaskGraph.makeUnsafe(specs), keys: n === 1 ? ["root"] : keys }
}

/** @since 0.1.0 @category constructors */
export const tree = (n: number): BenchGraph => {
  let leaves = 1
  while (leaves * 2 - 1 < n) leaves *= 2
  const specs: Array<TaskGraph.TaskSpec> = []
  let level: Array<string> = []
  for (let i = 0; i < leaves; i++) {
    const key = `leaf-${i}`
    specs.push({ key, kernel: noopRef, args: [] })
    level.push(key)
  }
  for (let depth = 1; level.length > 1; depth++) {
    const next: Array<string> = []
    for (let i = 0; i < level.length; i += 2) {
      const key = `add-${depth}-${i / 2}`
      specs.push({ key, kernel: noopRef, args: [TaskGraph.ref(level[i]!), TaskGraph.ref(level[i + 1]!)] })
      next.push(key)
    }
    level = next
  }
  return { shape: "tree", graph: TaskGraph.makeUnsafe(specs), keys: level }
}

/** @since 0.1.0 @category constructors */
export const chain = (n: number): BenchGraph => {
  const specs: Array<TaskGraph.TaskSpec> = [{ key: "step-0", kernel: noopRef, args: [] }]
  for (let i = 1; i < n; i++) specs.push({ key: `step-${i}`, kernel: noopRef, args: [TaskGraph.ref(`step-${i - 1}`)] })
  return { shape: "chain", graph: TaskGraph.makeUnsafe(specs), keys: [`step-${n - 1}`] }
}

/** @since 0.1.0 @category constructors */
export const build = (shape: Shape, n: number): BenchGraph =>
  shape === "fanout" ? fanout(n) : shape === "tree" ? tree(n) : chain(n)

/**
 * One measurement.
 *
 * @since 0.1.0
 * @category models
 */
export interface Measurement {
  readonly graph: Shape
  readonly tasks: number
  readonly workers: number
  /** median wall seconds of one compute on the worker pool */
  readonly seconds: number
  readonly tasksPerSecond: number
  /** median sync-executor wall time per task, µs (see module header) */
  readonly overheadMicros: number
  readonly repeats: number
}

const median = (xs: Array<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/**
 * Times `repeats` computes of `g` (after one warm-up) with `layer`; median seconds.
 *
 * @since 0.1.0
 * @category measurement
 */
export const timeCompute = async (g: BenchGraph, layer: Layer.Layer<Executor.Executor, unknown>, repeats: number): Promise<number> => {
  const rt = ManagedRuntime.make(layer)
  try {
    const once = Effect.gen(function*() {
      const t0 = performance.now()
      yield* Engine.compute(g.graph, { keys: g.keys })
      return (performance.now() - t0) / 1000
    })
    await rt.runPromise(once)
    const times: Array<number> = []
    for (let r = 0; r < repeats; r++) times.push(await rt.runPromise(once))
    return median(times)
  } finally {
    await rt.dispose()
  }
}

/**
 * Measures tasks/s on a worker pool and the sync-executor overhead per task.
 *
 * @since 0.1.0
 * @category measurement
 */
export const measure = async (options: {
  readonly graph: Shape
  readonly tasks: number
  readonly workers: number
  readonly repeats?: number
}): Promise<Measurement> => {
  const repeats = options.repeats ?? 5
  const g = build(options.graph, options.tasks)
  const seconds = await timeCompute(g, Executor.layerWorkers({ workers: options.workers }), repeats)
  const syncSeconds = await timeCompute(g, Executor.layerSync, repeats)
  return {
    graph: options.graph,
    tasks: g.graph.size,
    workers: options.workers,
    seconds,
    tasksPerSecond: g.graph.size / seconds,
    overheadMicros: (syncSeconds / g.graph.size) * 1e6,
    repeats
  }
}

/**
 * One cluster measurement.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClusterMeasurement {
  readonly graph: Shape
  readonly tasks: number
  /** worker processes (one kernel thread each) */
  readonly workers: number
  /** median wall seconds of one compute, start-up excluded */
  readonly seconds: number
  readonly tasksPerSecond: number
  readonly repeats: number
}

/**
 * Measures tasks/s on a LocalCluster of `workers` processes.
 *
 * @since 0.1.0
 * @category measurement
 */
export const measureCluster = async (options: {
  readonly graph: Shape
  readonly tasks: number
  readonly workers: number
  readonly repeats?: number
}): Promise<ClusterMeasurement> => {
  const repeats = options.repeats ?? 5
  const g = build(options.graph, options.tasks)
  const seconds = await timeCompute(g, Executor.layerCluster({ local: options.workers }), repeats)
  return { graph: options.graph, tasks: g.graph.size, workers: options.workers, seconds, tasksPerSecond: g.graph.size / seconds, repeats }
}

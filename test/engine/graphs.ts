/**
 * Random DAGs for the engine's property tests, their sequential reference evaluation,
 * and a runtime per executor shared across property runs.
 *
 * @since 0.1.0
 */
import { Layer, ManagedRuntime } from "effect"
import * as fc from "fast-check"
import * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { mix } from "../fixtures/kernels/basic.ts"

/** The fixture kernel module's URL. */
export const basic = new URL("../fixtures/kernels/basic.ts", import.meta.url).href
/** A kernel of the fixture module. */
export const k = (name: string): Kernel.KernelRef => Kernel.ref(basic, name)

/** A random DAG: task i depends on some tasks < i; some tasks are async. */
export interface RandomDag {
  readonly deps: ReadonlyArray<ReadonlyArray<number>>
  readonly async: ReadonlyArray<boolean>
  /** tasks whose results are requested */
  readonly requested: ReadonlyArray<number>
}

/** Arbitrary random DAGs with up to `max` tasks. */
export const dagArb = (max = 40): fc.Arbitrary<RandomDag> =>
  fc.integer({ min: 1, max }).chain((n) =>
    fc.record({
      deps: fc.tuple(
        ...Array.from({ length: n }, (_, i) =>
          i === 0 ? fc.constant([] as Array<number>) : fc.uniqueArray(fc.nat(i - 1), { maxLength: Math.min(i, 4) })
        )
      ),
      async: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      requested: fc.uniqueArray(fc.nat(n - 1), { minLength: 1, maxLength: Math.min(n, 5) })
    })
  )

/** The graph of a random DAG; `counter` counts runs per task; keys shuffled by `rev`. */
export const toGraph = (dag: RandomDag, counter: Int32Array): TaskGraph.TaskGraph => {
  const specs = dag.deps.map((ds, i): TaskGraph.TaskSpec => ({
    key: `t-${i}`,
    kernel: k(dag.async[i] ? "countedMixAsync" : "countedMix"),
    args: [counter, i, TaskGraph.refs(ds.map((d) => `t-${d}`))]
  }))
  return TaskGraph.makeUnsafe(specs.reverse())
}

/** The graph of a random DAG without run counters (for workers in other processes). */
export const mixGraph = (dag: RandomDag): TaskGraph.TaskGraph =>
  TaskGraph.makeUnsafe(dag.deps.map((ds, i) => ({
    key: `t-${i}`,
    kernel: k(dag.async[i] ? "mixAsync" : "mix"),
    args: [i, TaskGraph.refs(ds.map((d) => `t-${d}`))]
  })))

/** Sequential reference evaluation of every task. */
export const reference = (dag: RandomDag): Array<number> => {
  const out: Array<number> = []
  dag.deps.forEach((ds, i) => out.push(mix(i, ds.map((d) => out[d]!))))
  return out
}

/** Tasks needed for the requested ones. */
export const neededOf = (dag: RandomDag): Set<number> => {
  const need = new Set<number>()
  const stack = [...dag.requested]
  while (stack.length > 0) {
    const t = stack.pop()!
    if (need.has(t)) continue
    need.add(t)
    stack.push(...dag.deps[t]!)
  }
  return need
}

/** Runtimes: "sync" and worker pools of 1..3 workers, created lazily, disposed by `disposeAll`. */
const runtimes = new Map<string, ManagedRuntime.ManagedRuntime<Executor.Executor, unknown>>()
export const runtime = (workers: number): ManagedRuntime.ManagedRuntime<Executor.Executor, unknown> => {
  const name = workers === 0 ? "sync" : `workers-${workers}`
  let rt = runtimes.get(name)
  if (rt === undefined) {
    const layer: Layer.Layer<Executor.Executor, unknown> = workers === 0 ? Executor.layerSync : Executor.layerWorkers({ workers })
    rt = ManagedRuntime.make(layer)
    runtimes.set(name, rt)
  }
  return rt
}
export const disposeAll = async (): Promise<void> => {
  for (const rt of runtimes.values()) await rt.dispose()
  runtimes.clear()
}

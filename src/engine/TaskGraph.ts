/**
 * TaskGraph: a validated DAG of tasks keyed by strings. A task is a kernel ref, its
 * arguments (plain structured-cloneable values, `ref(key)` for another task's result,
 * `refs(keys)` for an array of results) and metadata (group name, stage).
 *
 * `make` validates before anything runs: duplicate keys, missing dependencies,
 * cycles (the error names the cycle) and malformed output declarations. The validated graph is index-based: task `i` has
 * key `keys[i]`; dependencies and dependents are stored as CSR int arrays so the
 * scheduler's hot loop touches no Maps or strings.
 *
 * Leaves out: refs nested inside objects/arrays (only top-level args are resolved);
 * graph optimisation (fusion, culling is done by the scheduler from the requested keys).
 *
 * @since 0.1.0
 */
import { Context, Effect } from "effect"
// the one leaf module of src/trace any layer may import (test/Layers.test.ts): the key
// rule must be the same for the engine's names, the trace writer and the analysis
import { keySplit } from "../trace/KeySplit.ts"
import * as EngineClock from "./EngineClock.ts"
import * as EngineError from "./EngineError.ts"
import type { DType } from "./Chunk.ts"
import type { KernelRef } from "./Kernel.ts"

/**
 * The result a task declares: a Chunk of `dtype` and `shape` (`[rows]` or `[rows,
 * columns, ...]`). An executor checks the kernel's result against it where the kernel
 * ran and fails the task with `BadOutput` when it differs.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskOutput {
  readonly dtype: DType
  readonly shape: ReadonlyArray<number>
}

/**
 * One task as written by a user or by the DSL compiler.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskSpec {
  readonly key: string
  readonly kernel: KernelRef
  readonly args: ReadonlyArray<unknown>
  /**
   * Function / group name; default derived from the key by `keySplit` (dask's
   * `key_split`, src/trace/KeySplit.ts): the one rule the trace writer and the analysis
   * use too, so a key has one function name everywhere.
   */
  readonly name?: string
  /** the pipeline stage the task belongs to (default: the stage running, see `CurrentStage`) */
  readonly stage?: string
  /** what the kernel must return (absent: anything) */
  readonly output?: TaskOutput
}

/**
 * The name of the pipeline stage running (set by `Pipeline.run` around each stage;
 * undefined outside one). `Engine.compute` gives it to the tasks of the graphs it
 * computes that have no `stage` of their own (`withStage`).
 *
 * @since 0.1.0
 * @category layers
 */
export const CurrentStage: Context.Reference<string | undefined> = Context.Reference<string | undefined>(
  "tessera/engine/TaskGraph/CurrentStage",
  { defaultValue: () => undefined }
)

const RefKey = "~tessera/ref"
const RefsKey = "~tessera/refs"

/**
 * An argument that resolves to another task's result.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskRef {
  readonly [RefKey]: string
}

/**
 * An argument that resolves to the array of several tasks' results.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskRefs {
  readonly [RefsKey]: ReadonlyArray<string>
}

/**
 * Refers to the result of task `key`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ref = (key: string): TaskRef => ({ [RefKey]: key })

/**
 * Refers to the results of tasks `keys`, passed to the kernel as one array.
 *
 * @since 0.1.0
 * @category constructors
 */
export const refs = (keys: ReadonlyArray<string>): TaskRefs => ({ [RefsKey]: [...keys] })

/** @since 0.1.0 @category guards */
export const isRef = (u: unknown): u is TaskRef =>
  typeof u === "object" && u !== null && typeof (u as Record<string, unknown>)[RefKey] === "string"

/** @since 0.1.0 @category guards */
export const isRefs = (u: unknown): u is TaskRefs =>
  typeof u === "object" && u !== null && Array.isArray((u as Record<string, unknown>)[RefsKey])

/**
 * How one argument is resolved: `-1` literal, `i >= 0` the result of task `i`, an
 * `Int32Array` the results of those tasks as an array.
 *
 * @since 0.1.0
 * @category models
 */
export type ArgSlot = number | Int32Array

/**
 * A validated task graph.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskGraph {
  readonly size: number
  readonly keys: ReadonlyArray<string>
  readonly specs: ReadonlyArray<TaskSpec>
  /** Group name of each task (`spec.name`, else `keySplit(key)`). */
  readonly names: ReadonlyArray<string>
  readonly index: ReadonlyMap<string, number>
  /** CSR: dependencies of task i are depList[depStart[i] .. depStart[i+1]) (unique). */
  readonly depStart: Int32Array
  readonly depList: Int32Array
  /** CSR: dependents of task i are dependentList[dependentStart[i] .. dependentStart[i+1]). */
  readonly dependentStart: Int32Array
  readonly dependentList: Int32Array
  /** Per task: null when no argument is a ref, else one slot per argument. */
  readonly argPlan: ReadonlyArray<ReadonlyArray<ArgSlot> | null>
  /** A topological order of task indices (dependencies first). */
  readonly order: Int32Array
}

/** Keys of the dependencies of task index `i`. @since 0.1.0 @category getters */
export const dependencyKeysAt = (g: TaskGraph, i: number): Array<string> => {
  const out: Array<string> = new Array(g.depStart[i + 1]! - g.depStart[i]!)
  for (let j = g.depStart[i]!, q = 0; j < g.depStart[i + 1]!; j++, q++) out[q] = g.keys[g.depList[j]!]!
  return out
}

/** Keys of the dependents of task index `i`. @since 0.1.0 @category getters */
export const dependentKeysAt = (g: TaskGraph, i: number): Array<string> => {
  const out: Array<string> = new Array(g.dependentStart[i + 1]! - g.dependentStart[i]!)
  for (let j = g.dependentStart[i]!, q = 0; j < g.dependentStart[i + 1]!; j++, q++) out[q] = g.keys[g.dependentList[j]!]!
  return out
}

/** Dependencies of task `key` as keys ([] for an unknown key). @since 0.1.0 @category getters */
export const dependenciesOf = (g: TaskGraph, key: string): Array<string> => {
  const i = g.index.get(key)
  return i === undefined ? [] : dependencyKeysAt(g, i)
}

/** Dependents of task `key` as keys ([] for an unknown key). @since 0.1.0 @category getters */
export const dependentsOf = (g: TaskGraph, key: string): Array<string> => {
  const i = g.index.get(key)
  return i === undefined ? [] : dependentKeysAt(g, i)
}

const dtypes: ReadonlyArray<string> = ["float32", "float64", "int32", "int64", "uint8"]

/** What is wrong with a declared output, if anything. */
const outputProblem = (o: TaskOutput): string | undefined => {
  if (!dtypes.includes(o.dtype)) return `dtype ${JSON.stringify(o.dtype)} is not one of ${dtypes.join(", ")}`
  if (!Array.isArray(o.shape) || o.shape.length === 0 || !o.shape.every((d) => Number.isInteger(d) && d >= 0 && d < 2 ** 31)) {
    return `shape ${JSON.stringify(o.shape)} is not a non-empty list of non-negative integers`
  }
  return undefined
}

const validate = (specs: ReadonlyArray<TaskSpec>): TaskGraph | EngineError.GraphError => {
  const n = specs.length
  const index = new Map<string, number>()
  for (let i = 0; i < n; i++) {
    const key = specs[i]!.key
    if (index.has(key)) return EngineError.duplicateKey(key)
    index.set(key, i)
  }
  const argPlan: Array<Array<ArgSlot> | null> = new Array(n)
  const depsOf: Array<Array<number>> = new Array(n)
  let depCount = 0
  for (let i = 0; i < n; i++) {
    const spec = specs[i]!
    if (spec.output !== undefined) {
      const bad = outputProblem(spec.output)
      if (bad !== undefined) return EngineError.invalidOutput(spec.key, bad)
    }
    let plan: Array<ArgSlot> | null = null
    const deps: Array<number> = []
    const seen = new Set<number>()
    const add = (k: string): number | EngineError.GraphError => {
      const d = index.get(k)
      if (d === undefined) return EngineError.missingDependency(spec.key, k)
      if (!seen.has(d)) {
        seen.add(d)
        deps.push(d)
      }
      return d
    }
    for (let a = 0; a < spec.args.length; a++) {
      const arg = spec.args[a]
      if (isRef(arg)) {
        const d = add(arg[RefKey])
        if (typeof d !== "number") return d
        plan ??= new Array(spec.args.length).fill(-1)
        plan[a] = d
      } else if (isRefs(arg)) {
        const ks = arg[RefsKey]
        const slot = new Int32Array(ks.length)
        for (let q = 0; q < ks.length; q++) {
          const d = add(ks[q]!)
          if (typeof d !== "number") return d
          slot[q] = d
        }
        plan ??= new Array(spec.args.length).fill(-1)
        plan[a] = slot
      }
    }
    argPlan[i] = plan
    depsOf[i] = deps
    depCount += deps.length
  }
  const depStart = new Int32Array(n + 1)
  const depList = new Int32Array(depCount)
  const nDependents = new Int32Array(n)
  for (let i = 0, p = 0; i < n; i++) {
    depStart[i] = p
    for (const d of depsOf[i]!) {
      depList[p++] = d
      nDependents[d]!++
    }
    depStart[i + 1] = p
  }
  const dependentStart = new Int32Array(n + 1)
  for (let i = 0; i < n; i++) dependentStart[i + 1] = dependentStart[i]! + nDependents[i]!
  const fill = dependentStart.slice(0, n)
  const dependentList = new Int32Array(depCount)
  for (let i = 0; i < n; i++) {
    for (let j = depStart[i]!; j < depStart[i + 1]!; j++) dependentList[fill[depList[j]!]!++] = i
  }
  // Kahn's algorithm for the order; leftovers are on or behind a cycle.
  const indeg = new Int32Array(n)
  for (let i = 0; i < n; i++) indeg[i] = depStart[i + 1]! - depStart[i]!
  const order = new Int32Array(n)
  let head = 0
  let tail = 0
  for (let i = 0; i < n; i++) if (indeg[i] === 0) order[tail++] = i
  while (head < tail) {
    const t = order[head++]!
    for (let j = dependentStart[t]!; j < dependentStart[t + 1]!; j++) {
      const d = dependentList[j]!
      if (--indeg[d]! === 0) order[tail++] = d
    }
  }
  if (tail < n) {
    // Walk dependencies among unordered tasks until a task repeats: that is a cycle.
    let start = 0
    while (indeg[start] === 0) start++
    const pos = new Map<number, number>()
    const path: Array<number> = []
    let cur = start
    while (!pos.has(cur)) {
      pos.set(cur, path.length)
      path.push(cur)
      for (let j = depStart[cur]!; j < depStart[cur + 1]!; j++) {
        if (indeg[depList[j]!]! > 0) {
          cur = depList[j]!
          break
        }
      }
    }
    const cyc = path.slice(pos.get(cur)!).map((i) => specs[i]!.key).reverse()
    return EngineError.cycleDetected([...cyc, cyc[0]!])
  }
  return {
    size: n,
    keys: specs.map((s) => s.key),
    specs,
    names: specs.map((s) => s.name ?? keySplit(s.key)),
    index,
    depStart,
    depList,
    dependentStart,
    dependentList,
    argPlan,
    order
  }
}

// when each graph was validated (epoch seconds), for the driver's "graph build" segment
const built = new WeakMap<TaskGraph, readonly [start: number, end: number]>()

const validateTimed = (specs: ReadonlyArray<TaskSpec>): TaskGraph | EngineError.GraphError => {
  const t0 = EngineClock.nowSeconds()
  const r = validate(specs)
  if (!(r instanceof EngineError.GraphError)) built.set(r, [t0, EngineClock.nowSeconds()])
  return r
}

/**
 * When `graph` was validated (`make` / `makeUnsafe`): start and end, epoch seconds.
 *
 * @since 0.1.0
 * @category getters
 */
export const buildSpan = (graph: TaskGraph): readonly [start: number, end: number] | undefined => built.get(graph)

/**
 * `graph` with `stage` given to every task that has none: the same graph when every task
 * has one (or `stage` is undefined), else a copy whose specs are (new objects only for
 * the tasks that change; the validated structure is shared).
 *
 * @since 0.1.0
 * @category combinators
 */
export const withStage = (graph: TaskGraph, stage: string | undefined): TaskGraph => {
  if (stage === undefined) return graph
  let specs: Array<TaskSpec> | null = null
  for (let i = 0; i < graph.size; i++) {
    const s = graph.specs[i]!
    if (s.stage !== undefined) continue
    specs ??= graph.specs.slice()
    specs[i] = { ...s, stage }
  }
  if (specs === null) return graph
  const out: TaskGraph = { ...graph, specs }
  const span = built.get(graph)
  if (span !== undefined) built.set(out, span)
  return out
}

/**
 * Validates specs into a graph.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (specs: ReadonlyArray<TaskSpec>): Effect.Effect<TaskGraph, EngineError.GraphError> =>
  Effect.suspend(() => {
    const r = validateTimed(specs)
    return r instanceof EngineError.GraphError ? Effect.fail(r) : Effect.succeed(r)
  })

/**
 * Validates specs into a graph; throws the `GraphError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (specs: ReadonlyArray<TaskSpec>): TaskGraph => {
  const r = validateTimed(specs)
  if (r instanceof EngineError.GraphError) throw r
  return r
}

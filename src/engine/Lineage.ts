/**
 * Lineage: what ties the many computes of one run (a pipeline runs one per stage, one per
 * Lloyd step, one per SOM epoch) into one connected trace.
 *
 * - **Execution keys.** A `Run` counts the executions of each task key. The first
 *   execution of `k` in a run is recorded as `k`; a later one (a lazy array computed
 *   again by a later compute: the same key, the same spec) as `k#2`, `k#3`, ... So every
 *   task of a run has a key unique within the run, and the `#n` suffix says that it is
 *   the n-th execution of `k`.
 * - **Origins.** A value returned by a compute (a persisted chunk, a reduction's result)
 *   remembers the execution key of the task that made it (a `WeakMap` keyed by the value,
 *   so nothing is kept alive). A task of a later compute that takes such a value as an
 *   argument lists that key in its dependencies, although the value is passed in
 *   directly. A value the driver derives from results (KMeans' next centers from a
 *   reduction) carries their origins when the code says so with {@link derive}.
 * - **The driver's timeline.** A `Run` remembers when the previous compute ended and the
 *   key of the last driver record, so the engine can emit the driver's segments between
 *   computes (see `EngineEvents.DriverRecord`).
 *
 * The engine finds a run on its callbacks (`Callbacks.lineage`; the Trace layer makes one
 * per trace); the first callback that carries one wins. Without one, keys are recorded
 * as they are and cross-compute dependencies are not looked for.
 *
 * Leaves out: values that are not objects (a number result has no identity to remember)
 * and arguments nested inside other objects (only top-level arguments are looked at, as
 * for refs).
 *
 * @since 0.1.0
 */
import * as EngineClock from "./EngineClock.ts"

/**
 * One run's books: executions per key and the driver's timeline.
 *
 * @since 0.1.0
 * @category models
 */
export interface Run {
  readonly _tag: "Run"
  /** epoch seconds when the run began (the profiler started) */
  readonly createdAt: number
  /** executions so far of each task key */
  readonly executions: Map<string, number>
  /** computes seen so far (the number of the last one) */
  computes: number
  /** when the driver's last recorded segment ended (the previous compute's end), or createdAt */
  lastEnd: number
  /** key of the driver's last segment */
  lastDriverKey: string | undefined
  /** execution keys of the previous compute's requested tasks (what the driver waited for) */
  lastOutputs: ReadonlyArray<string>
  /** executors whose start-up was recorded, and how many worker starts of each */
  readonly executors: WeakMap<object, number>
}

/**
 * A new run, starting now.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRun = (): Run => {
  const now = EngineClock.nowSeconds()
  return {
    _tag: "Run",
    createdAt: now,
    executions: new Map(),
    computes: 0,
    lastEnd: now,
    lastDriverKey: undefined,
    lastOutputs: [],
    executors: new WeakMap()
  }
}

/**
 * The execution key of the next execution of `key` in `run`, counting it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const executeKey = (run: Run, key: string): string => {
  const n = run.executions.get(key) ?? 0
  run.executions.set(key, n + 1)
  return n === 0 ? key : `${key}#${n + 1}`
}

/**
 * The execution key the next execution of `key` will get (nothing is counted): what a
 * task's dependents will be called once they run.
 *
 * @since 0.1.0
 * @category getters
 */
export const nextKey = (run: Run, key: string): string => {
  const n = run.executions.get(key)
  return n === undefined ? key : `${key}#${n + 1}`
}

/**
 * The key a `#n` execution key is an execution of (`"k#2"` -> `"k"`); other keys as
 * they are.
 *
 * @since 0.1.0
 * @category getters
 */
export const baseKey = (key: string): string => {
  const m = /#\d+$/.exec(key)
  return m === null ? key : key.slice(0, m.index)
}

interface Origin {
  readonly run: Run
  readonly keys: ReadonlyArray<string>
}

const origins = new WeakMap<object, Origin>()

const isObject = (u: unknown): u is object => (typeof u === "object" && u !== null) || typeof u === "function"

/**
 * Remembers that `value` was made by the executions `keys` of `run` (the engine calls
 * this for each requested result of a profiled compute, when the compute ends: only
 * those reach the driver).
 *
 * @since 0.1.0
 * @category constructors
 */
export const markUnsafe = (run: Run, value: unknown, keys: ReadonlyArray<string>): void => {
  if (isObject(value)) origins.set(value, { run, keys })
}

/**
 * The execution keys of the tasks that made `value` in `run` (undefined when it was not
 * made by a compute of that run).
 *
 * @since 0.1.0
 * @category getters
 */
export const originOf = (run: Run, value: unknown): ReadonlyArray<string> | undefined => {
  if (!isObject(value)) return undefined
  const o = origins.get(value)
  return o !== undefined && o.run === run ? o.keys : undefined
}

/**
 * Says that `value`, computed by the driver, was derived from `sources` (results of
 * earlier computes, or values derived from them): a task that later takes `value` as an
 * argument depends on the tasks that made the sources. Returns `value`.
 *
 * **Example** (KMeans: the next centers come from one Lloyd step's reduction)
 *
 * ```ts
 * const next = Lineage.derive(new Float64Array(k * d), partial)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const derive = <A>(value: A, ...sources: ReadonlyArray<unknown>): A => {
  if (!isObject(value)) return value
  let run: Run | undefined
  const keys = new Set<string>()
  for (const s of sources) {
    const o = isObject(s) ? origins.get(s) : undefined
    if (o === undefined) continue
    if (run === undefined) run = o.run
    if (o.run !== run) continue
    for (const k of o.keys) keys.add(k)
  }
  if (run !== undefined) origins.set(value, { run, keys: [...keys] })
  return value
}

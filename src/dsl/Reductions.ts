/**
 * Reductions of a ChunkedArray as tree reductions: count, sum, mean, var and std (any
 * ddof), min and max, along axis 0 (per column) or over every element (`axis: null`,
 * the default, as NumPy's). Each is one moments partial per chunk, a tree of pairwise
 * combines (Chan, Golub & LeVeque), and one task for the statistic, so the chunking
 * changes results only by floating-point reassociation.
 *
 * Values are read as float64 (int64 through Number: exact up to 2^53); `sum` is
 * `mean x count`. Lazy: the result is a `Delayed`, computed by `computeDelayed`.
 *
 * @since 0.1.0
 */
import type { Delayed } from "./ChunkedArray.ts"
import type { ChunkedArray } from "./ChunkedArray.ts"
import { kernel, token, treeReduce } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"
import * as TaskGraph from "../engine/TaskGraph.ts"

/**
 * A statistic.
 *
 * @since 0.1.0
 * @category models
 */
export type Stat = "count" | "sum" | "mean" | "var" | "std" | "min" | "max"

/**
 * Options of a reduction: `axis` 0 (per column) or null (every element, the default);
 * `ddof` for var / std (default 0, NumPy's); `stage` names the stage in errors and
 * task records. Without `stage`, the tasks carry the pipeline stage running when they
 * are computed (`TaskGraph.CurrentStage`), and errors name the statistic (`"count"`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ReduceOptions<A extends 0 | null> {
  readonly axis?: A
  readonly ddof?: number
  readonly stage?: string
}

/**
 * Reduces `X` to one statistic: a number over every element, a Float64Array (one value
 * per column; one value for a 1-D array) along axis 0.
 *
 * @since 0.1.0
 * @category kernels
 */
export const reduce = <A extends 0 | null = null>(
  X: ChunkedArray,
  stat: Stat,
  options: ReduceOptions<A> = {}
): Delayed<A extends 0 ? Float64Array : number> => {
  const axis = (options.axis ?? null) as 0 | null
  const ddof = options.ddof ?? 0
  // errors name the statistic when no stage is given; the tasks then carry none, so
  // the pipeline stage running when they are computed applies (Engine.compute)
  const stage = options.stage ?? stat
  const taskStage = options.stage
  if (!(Number.isInteger(ddof) && ddof >= 0)) throw DslError.invalidOption("ddof", `stage "${stage}": must be a non-negative integer, got ${ddof}`)
  if (X.shape.length < 1 || X.shape.length > 2) throw DslError.shapeMismatch(stage, ["n", "d?"], X.shape)
  const m = treeReduce(X, {
    name: "moments",
    partial: kernel("moments", "momentsPartial"),
    extra: [axis],
    combine: kernel("moments", "momentsCombine"),
    ...(taskStage !== undefined ? { stage: taskStage } : {})
  })
  const key = `('${token(stat)}', 0)`
  const specs = new Map(m.specs)
  specs.set(key, { key, name: stat, kernel: kernel("moments", "momentsStat"), args: [TaskGraph.ref(m.key), stat, ddof, axis === null], ...(taskStage !== undefined ? { stage: taskStage } : {}) })
  return { _tag: "Delayed", key, specs }
}

/**
 * Number of elements (axis null) or rows (axis 0).
 *
 * @since 0.1.0
 * @category kernels
 */
export const count = <A extends 0 | null = null>(X: ChunkedArray, options?: ReduceOptions<A>) => reduce(X, "count", options)

/**
 * Sum.
 *
 * @since 0.1.0
 * @category kernels
 */
export const sum = <A extends 0 | null = null>(X: ChunkedArray, options?: ReduceOptions<A>) => reduce(X, "sum", options)

/**
 * Arithmetic mean.
 *
 * @since 0.1.0
 * @category kernels
 */
export const mean = <A extends 0 | null = null>(X: ChunkedArray, options?: ReduceOptions<A>) => reduce(X, "mean", options)

/**
 * Variance, `M2 / (n - ddof)`.
 *
 * @since 0.1.0
 * @category kernels
 */
export const variance = <A extends 0 | null = null>(X: ChunkedArray, options?: ReduceOptions<A>) => reduce(X, "var", options)

/**
 * Standard deviation, `sqrt(M2 / (n - ddof))`.
 *
 * @since 0.1.0
 * @category kernels
 */
export const std = <A extends 0 | null = null>(X: ChunkedArray, options?: ReduceOptions<A>) => reduce(X, "std", options)

/**
 * Minimum.
 *
 * @since 0.1.0
 * @category kernels
 */
export const min = <A extends 0 | null = null>(X: ChunkedArray, options?: ReduceOptions<A>) => reduce(X, "min", options)

/**
 * Maximum.
 *
 * @since 0.1.0
 * @category kernels
 */
export const max = <A extends 0 | null = null>(X: ChunkedArray, options?: ReduceOptions<A>) => reduce(X, "max", options)

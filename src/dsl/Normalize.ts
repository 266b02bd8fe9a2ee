/**
 * Normalize: standard scaling, DASF's `(X - mean) / std` with the population standard
 * deviation, as a tree reduction of per-chunk moments followed by a map.
 *
 * Rows holding NaN or ±Infinity follow `nonFinite` (NonFinite.ts): by default the fit
 * fails naming the first; with `"skip"` the mean and deviation come from the other rows,
 * and those rows are still scaled in place (so they stay non-finite, row for row).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { ChunkedArray } from "./ChunkedArray.ts"
import { computeDelayed, ensurePersisted, kernel, mapBlocks, treeReduce } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"
import * as NonFinite from "./NonFinite.ts"
import type { Moments } from "../kernels/moments.ts"

/**
 * Column moments of a 2-D array (or of every element with `axis: null`), lazily.
 *
 * @since 0.1.0
 * @category reductions
 */
export const moments = (X: ChunkedArray, axis: 0 | null = 0, stage?: string) =>
  treeReduce<Moments>(X, {
    name: "moments",
    partial: kernel("moments", "momentsPartial"),
    extra: [axis],
    combine: kernel("moments", "momentsCombine"),
    ...(stage === undefined ? {} : { stage })
  })

/**
 * A fitted standard scaler: the column means and standard deviations it uses.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scaler {
  readonly mean: ReadonlyArray<number>
  readonly std: ReadonlyArray<number>
  readonly moments: Moments
  /** rows left out of the fit for holding NaN or ±Infinity (`nonFinite: "skip"`) */
  readonly skipped: number
}

/**
 * Options of {@link fitTransform}.
 *
 * @since 0.1.0
 * @category models
 */
export interface NormalizeOptions {
  /** rows with NaN or ±Infinity: fail (default) or leave them out of the fit */
  readonly nonFinite?: NonFinite.Policy
}

/**
 * Fits the scaler and returns the scaled array, lazily (persist it if it is read more
 * than once). The input is persisted first when lazy, since fitting and scaling both
 * read it.
 *
 * @since 0.1.0
 * @category transforms
 */
export const fitTransform = (X: ChunkedArray, stage = "Normalize.transform", options: NormalizeOptions = {}) =>
  Effect.gen(function*() {
    if (X.shape.length < 1 || X.shape.length > 2 || X.shape[0] === 0) {
      return yield* Effect.fail(DslError.shapeMismatch(stage, ["n >= 1", ...X.shape.slice(1)], X.shape))
    }
    const data = yield* ensurePersisted(X, stage)
    const finite = yield* NonFinite.apply(data, options.nonFinite, stage)
    const m = yield* computeDelayed(moments(finite.X, 0, stage))
    const scaler: Scaler = {
      mean: Array.from(m.mean),
      std: Array.from(m.m2, (v) => Math.sqrt(v / m.count)),
      moments: m,
      skipped: finite.skipped
    }
    const out = mapBlocks(data, {
      name: "normalize",
      kernel: kernel("moments", "standardize"),
      extra: [m],
      dtype: "float64",
      ...(X.shape.length === 2 ? { columns: X.shape[1]! } : {}),
      stage
    })
    return { scaler, X: out }
  })

/**
 * Maps scaled coordinates back to original units.
 *
 * @since 0.1.0
 * @category transforms
 */
export const inverse = (scaler: Scaler, points: Float64Array): Float64Array => {
  const d = scaler.mean.length
  return points.map((v, i) => v * scaler.std[i % d]! + scaler.mean[i % d]!)
}

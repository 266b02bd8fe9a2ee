/**
 * Normalize: standard scaling, DASF's `(X - mean) / std` with the population standard
 * deviation, as a tree reduction of per-chunk moments followed by a map.
 *
 * Rows holding NaN or ±Infinity follow `nonFinite` (NonFinite.ts): by default the fit
 * fails naming the first; with `"skip"` the mean and deviation come from the other rows,
 * and those rows are still scaled in place (so they stay non-finite, row for row).
 *
 * Values near float64's limit (±1e308) do not overflow: where a column's mean or sum of
 * squares is not finite although its values are, the column is first scaled by a power
 * of two at least its largest |x| (exact), its moments taken there and scaled back, and
 * the output standardizes the scaled values. A column of size 0 (`[n, 0]`) is refused,
 * naming the stage and the shape.
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
 * @category kernels
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
  /** in the data's units; `m2` is Infinity where a column's spread exceeds float64 (its `std` is still finite) */
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
 * @category kernels
 */
export const fitTransform = (X: ChunkedArray, stage = "Normalize.transform", options: NormalizeOptions = {}) =>
  Effect.gen(function*() {
    if (X.shape.length < 1 || X.shape.length > 2 || X.shape[0] === 0) {
      return yield* Effect.fail(DslError.shapeMismatch(stage, ["n >= 1", ...X.shape.slice(1)], X.shape))
    }
    if (X.shape.length === 2 && !(X.shape[1]! >= 1)) {
      return yield* Effect.fail(DslError.shapeMismatch(stage, ["n", "d >= 1"], X.shape, "a dimension of size 0: there is no column to scale"))
    }
    const data = yield* ensurePersisted(X, stage)
    const finite = yield* NonFinite.apply(data, options.nonFinite, stage)
    const m = yield* computeDelayed(moments(finite.X, 0, stage))
    const columns = X.shape.length === 2 ? { columns: X.shape[1]! } : {}
    const over = overflowed(m)
    if (over.length === 0) {
      const out = mapBlocks(data, { name: "normalize", kernel: kernel("moments", "standardize"), extra: [m], dtype: "float64", ...columns, stage })
      return { scaler: scalerOf(m, undefined, finite.skipped), X: out }
    }
    // finite values whose mean or spread overflows: the same computation on x / 2^e
    const scale = Array.from(m.min, (lo, j) => powerOfTwoAbove(Math.max(Math.abs(lo), Math.abs(m.max[j]!))))
    const inverse = scale.map((s) => 1 / s) // exact: powers of two
    const zero = scale.map(() => 0)
    const scaledFit = mapBlocks(finite.X, { name: "normalize_prescale", kernel: kernel("moments", "affine"), extra: [inverse, zero], dtype: "float64", ...columns, stage })
    const ms = yield* computeDelayed(moments(scaledFit, 0, stage))
    const bad = overflowed(ms)
    if (bad.length > 0) return yield* Effect.fail(DslError.overflow(stage, bad[0]!, "the column's mean or variance"))
    const scaled = mapBlocks(data, { name: "normalize_prescale", kernel: kernel("moments", "affine"), extra: [inverse, zero], dtype: "float64", ...columns, stage })
    const out = mapBlocks(scaled, { name: "normalize", kernel: kernel("moments", "standardize"), extra: [ms], dtype: "float64", ...columns, stage })
    return { scaler: scalerOf(ms, scale, finite.skipped), X: out }
  })

/** Columns whose mean or sum of squared deviations is not finite. */
const overflowed = (m: Moments): Array<number> => {
  const out: Array<number> = []
  for (let j = 0; j < m.mean.length; j++) if (!Number.isFinite(m.mean[j]!) || !Number.isFinite(m.m2[j]!)) out.push(j)
  return out
}

/**
 * The least power of two >= a (1 for 0 or a non-finite a), at most 2^1023 (2^1024 is
 * not a float64; values up to Number.MAX_VALUE then scale to below 2). Dividing by it
 * is exact.
 */
const powerOfTwoAbove = (a: number): number => {
  if (!(a > 0) || !Number.isFinite(a)) return 1
  let e = Math.ceil(Math.log2(a))
  if (2 ** e < a) e++
  return 2 ** Math.min(e, 1023)
}

/**
 * The scaler in the data's units: moments taken over x / scale (per column) scaled
 * back; `m2` may then be Infinity (a spread beyond float64), the mean and deviation not.
 */
const scalerOf = (m: Moments, scale: ReadonlyArray<number> | undefined, skipped: number): Scaler => {
  const s = (j: number) => scale?.[j] ?? 1
  const mean = Array.from(m.mean, (v, j) => v * s(j))
  const std = Array.from(m.m2, (v, j) => Math.sqrt(v / m.count) * s(j))
  const moments: Moments = scale === undefined ? m : {
    count: m.count,
    mean: Float64Array.from(mean),
    m2: m.m2.map((v, j) => v * s(j) * s(j)),
    min: m.min.map((v, j) => v * s(j)),
    max: m.max.map((v, j) => v * s(j))
  }
  return { mean, std, moments, skipped }
}

/**
 * Maps scaled coordinates back to original units.
 *
 * @since 0.1.0
 * @category kernels
 */
export const inverse = (scaler: Scaler, points: Float64Array): Float64Array => {
  const d = scaler.mean.length
  return points.map((v, i) => v * scaler.std[i % d]! + scaler.mean[i % d]!)
}

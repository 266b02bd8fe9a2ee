/**
 * Reduction kernels: per-column moments of a chunk (count, mean, M2, min, max) and
 * their pairwise combination (Chan, Golub & LeVeque's parallel update), so that sum,
 * mean, var/std (any ddof), min, max and count along axis 0 or over all elements run
 * as tree reductions whose result does not depend on the chunking beyond rounding.
 *
 * @since 0.1.0
 */
import type * as Chunk from "../engine/Chunk.ts"

/**
 * Moments of a set of rows, per column (one column when reducing over all elements).
 *
 * @since 0.1.0
 * @category models
 */
export interface Moments {
  readonly count: number
  readonly mean: Float64Array
  readonly m2: Float64Array
  readonly min: Float64Array
  readonly max: Float64Array
}

/**
 * Moments of one chunk, along axis 0 (`axis: 0`) or over every element (`axis: null`).
 *
 * @since 0.1.0
 * @category kernels
 */
export const momentsPartial = (chunk: Chunk.Chunk, axis: 0 | null): Moments => {
  const rows = chunk.shape[0] ?? 0
  const perRow = chunk.shape.length > 1 ? chunk.data.length / Math.max(rows, 1) : 1
  const d = axis === null ? 1 : perRow
  const n = axis === null ? chunk.data.length : rows
  const data = chunk.data
  const mean = new Float64Array(d)
  const m2 = new Float64Array(d)
  const min = new Float64Array(d).fill(Infinity)
  const max = new Float64Array(d).fill(-Infinity)
  // Welford per column; a column is every d-th element.
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < d; j++) {
      const x = Number(data[i * d + j])
      const delta = x - mean[j]!
      mean[j] = mean[j]! + delta / (i + 1)
      m2[j] = m2[j]! + delta * (x - mean[j]!)
      if (x < min[j]!) min[j] = x
      if (x > max[j]!) max[j] = x
    }
  }
  return { count: n, mean, m2, min, max }
}

/**
 * Combines the moments of disjoint row sets.
 *
 * @since 0.1.0
 * @category kernels
 */
export const momentsCombine = (parts: ReadonlyArray<Moments>): Moments => {
  const d = parts[0]!.mean.length
  let count = 0
  const mean = new Float64Array(d)
  const m2 = new Float64Array(d)
  const min = new Float64Array(d).fill(Infinity)
  const max = new Float64Array(d).fill(-Infinity)
  for (const p of parts) {
    if (p.count === 0) continue
    const n = count + p.count
    for (let j = 0; j < d; j++) {
      const delta = p.mean[j]! - mean[j]!
      mean[j] = mean[j]! + (delta * p.count) / n
      m2[j] = m2[j]! + p.m2[j]! + (delta * delta * count * p.count) / n
      if (p.min[j]! < min[j]!) min[j] = p.min[j]!
      if (p.max[j]! > max[j]!) max[j] = p.max[j]!
    }
    count = n
  }
  return { count, mean, m2, min, max }
}

/**
 * Standard scaling of a chunk: `(x - mean) / std` per column (DASF's Normalize),
 * with `std` the population standard deviation; a constant column maps to 0.
 *
 * @since 0.1.0
 * @category kernels
 */
export const standardize = (chunk: Chunk.Chunk, m: Moments): Chunk.Chunk => {
  const d = m.mean.length
  const out = new Float64Array(chunk.data.length)
  const inv = new Float64Array(d)
  for (let j = 0; j < d; j++) {
    const sd = Math.sqrt(m.m2[j]! / m.count)
    inv[j] = sd > 0 ? 1 / sd : 0
  }
  const x = chunk.data
  for (let i = 0; i < out.length; i += d) {
    for (let j = 0; j < d; j++) out[i + j] = (Number(x[i + j]) - m.mean[j]!) * inv[j]!
  }
  return { dtype: "float64", shape: chunk.shape, data: out }
}

/**
 * Maps a chunk through an affine transform per column: `x * scale + offset`
 * (used to undo a standard scaling).
 *
 * @since 0.1.0
 * @category kernels
 */
export const affine = (chunk: Chunk.Chunk, scale: ReadonlyArray<number>, offset: ReadonlyArray<number>): Chunk.Chunk => {
  const d = scale.length
  const out = new Float64Array(chunk.data.length)
  const x = chunk.data
  for (let i = 0; i < out.length; i++) out[i] = Number(x[i]) * scale[i % d]! + offset[i % d]!
  return { dtype: "float64", shape: chunk.shape, data: out }
}

/**
 * A statistic of combined moments, per column: count, sum, mean, var / std (with
 * `ddof`: divides M2 by count - ddof; NaN where that is <= 0), min, max (±Infinity
 * over no rows). `scalar` returns the first column's value as a number (for
 * reductions over all elements).
 *
 * @since 0.1.0
 * @category kernels
 */
export const momentsStat = (
  m: Moments,
  stat: "count" | "sum" | "mean" | "var" | "std" | "min" | "max",
  ddof: number,
  scalar: boolean
): Float64Array | number => {
  const d = m.mean.length
  const out = new Float64Array(d)
  for (let j = 0; j < d; j++) {
    const v = m.m2[j]! / (m.count - ddof)
    out[j] = stat === "count"
      ? m.count
      : stat === "sum"
      ? m.mean[j]! * m.count
      : stat === "mean"
      ? (m.count > 0 ? m.mean[j]! : NaN)
      : stat === "var"
      ? (m.count - ddof > 0 ? v : NaN)
      : stat === "std"
      ? (m.count - ddof > 0 ? Math.sqrt(v) : NaN)
      : stat === "min"
      ? m.min[j]!
      : m.max[j]!
  }
  return scalar ? out[0]! : out
}

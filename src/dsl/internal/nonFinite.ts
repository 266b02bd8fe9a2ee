/**
 * Kernels of the DSL's non-finite data policy (`NonFinite.ts`): find the rows of a float
 * chunk that hold NaN or ±Infinity, copy out the others, and label rows with the nearest
 * center except those, which get -1. Plain loops over the typed arrays; pure, so workers
 * import this module by URL like any kernel module.
 *
 * @since 0.1.0
 * @internal
 */
import * as Chunk from "../../engine/Chunk.ts"
import { assign } from "../../kernels/cluster.ts"

/**
 * What one chunk holds: how many rows have a non-finite value, and the first such value
 * (row within the chunk, column, value); `row` -1 when none.
 *
 * @since 0.1.0
 * @internal
 */
export interface Scan {
  readonly rows: number
  readonly row: number
  readonly column: number
  readonly value: number
}

const width = (chunk: Chunk.Chunk): number => (chunk.shape.length > 1 ? chunk.shape.slice(1).reduce((a, b) => a * b, 1) : 1)

/**
 * Kernel: counts the rows with NaN or ±Infinity and locates the first.
 *
 * @since 0.1.0
 * @internal
 */
export const scanNonFinite = (chunk: Chunk.Chunk): Scan => {
  const x = chunk.data as Float64Array
  const d = width(chunk)
  const n = chunk.shape[0] ?? 1
  let rows = 0
  let row = -1
  let column = -1
  let value = 0
  for (let r = 0; r < n; r++) {
    for (let j = 0, o = r * d; j < d; j++, o++) {
      // x - x is NaN exactly for NaN and ±Infinity: one test instead of Number.isFinite's call
      if (x[o]! - x[o]! !== 0) {
        if (row < 0) {
          row = r
          column = j
          value = x[o]!
        }
        rows++
        break
      }
    }
  }
  return { rows, row, column, value }
}

/**
 * Kernel: the rows of a chunk without NaN or ±Infinity, in order (same dtype).
 *
 * @since 0.1.0
 * @internal
 */
export const dropNonFinite = (chunk: Chunk.Chunk): Chunk.Chunk => {
  const x = chunk.data as Float64Array
  const d = width(chunk)
  const kept = (chunk.shape[0] ?? 1) - scanNonFinite(chunk).rows
  // shared, as persisted chunks are: later graphs hand it to workers without a copy
  const out = Chunk.allocShared(chunk.dtype, chunk.shape.length > 1 ? [kept, ...chunk.shape.slice(1)] : [kept])
  const o = out.data as Float64Array
  for (let r = 0, k = 0; k < kept; r++) {
    const row = x.subarray(r * d, r * d + d)
    if (row.every((v) => v - v === 0)) o.set(row, k++ * d)
  }
  return out
}

/**
 * Kernel: the nearest center of every row (as `cluster.assign`), -1 for rows that hold
 * NaN or ±Infinity.
 *
 * @since 0.1.0
 * @internal
 */
export const assignFinite = (chunk: Chunk.Chunk, centers: Float64Array, k: number): Chunk.Chunk => {
  const out = assign(chunk, centers, k)
  const labels = out.data as Int32Array
  const x = chunk.data as Float64Array
  const d = centers.length / k
  for (let r = 0; r < labels.length; r++) {
    for (let j = 0, o = r * d; j < d; j++, o++) {
      if (x[o]! - x[o]! !== 0) {
        labels[r] = -1
        break
      }
    }
  }
  return out
}

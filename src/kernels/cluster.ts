/**
 * Clustering kernels over row chunks of float64 data (rows x d): Lloyd's KMeans step
 * as per-chunk partial sums and counts, batch SOM step as per-chunk numerators and
 * denominators, assignment (predict) for both, and a row sampler for initialisation.
 * Hot loops are flat index arithmetic over the typed arrays: no per-row allocation.
 *
 * @since 0.1.0
 */
import type * as Chunk from "../engine/Chunk.ts"

/**
 * Partial sums of one chunk for a Lloyd step (or a SOM step).
 *
 * @since 0.1.0
 * @category models
 */
export interface Partial {
  /** k x d sums (KMeans) or nodes x d numerators (SOM) */
  readonly sums: Float64Array
  /** k counts (KMeans) or nodes denominators (SOM) */
  readonly counts: Float64Array
  /** sum of squared distances to the nearest center / best matching unit */
  readonly error: number
  readonly rows: number
}

/** squared distance to the winner of the last `nearest` call (a slot, not a tuple per row) */
const nearestDist = new Float64Array(1)

/**
 * Index of the center nearest to row `x[o..o+d)`; its squared distance is left in
 * `nearestDist[0]`. (Returning an `[index, distance]` pair allocated it per row and
 * destructured it through the iterator protocol: `lloydPartial` was 1.2x and
 * `somPartial` 1.1x slower on a 5,000-row chunk, BENCHMARKS.md.)
 */
const nearest = (x: Float64Array, o: number, d: number, centers: Float64Array, k: number): number => {
  let best = 0
  let bestD = Infinity
  for (let c = 0; c < k; c++) {
    let s = 0
    for (let j = 0; j < d; j++) {
      const t = x[o + j]! - centers[c * d + j]!
      s += t * t
    }
    if (s < bestD) {
      bestD = s
      best = c
    }
  }
  nearestDist[0] = bestD
  return best
}

/**
 * One chunk's share of a Lloyd iteration: per-center sums and counts, and inertia.
 *
 * @since 0.1.0
 * @category kernels
 */
export const lloydPartial = (chunk: Chunk.Chunk, centers: Float64Array, k: number): Partial => {
  const x = chunk.data as Float64Array
  const d = centers.length / k
  const rows = chunk.shape[0]!
  const sums = new Float64Array(k * d)
  const counts = new Float64Array(k)
  let error = 0
  for (let r = 0; r < rows; r++) {
    const o = r * d
    const c = nearest(x, o, d, centers, k)
    counts[c] = counts[c]! + 1
    for (let j = 0; j < d; j++) sums[c * d + j] = sums[c * d + j]! + x[o + j]!
    error += nearestDist[0]!
  }
  return { sums, counts, error, rows }
}

/**
 * Adds partials element by element (tree-reduction combine for both KMeans and SOM).
 *
 * @since 0.1.0
 * @category kernels
 */
export const partialCombine = (parts: ReadonlyArray<Partial>): Partial => {
  const sums = new Float64Array(parts[0]!.sums.length)
  const counts = new Float64Array(parts[0]!.counts.length)
  let error = 0
  let rows = 0
  for (const p of parts) {
    for (let i = 0; i < sums.length; i++) sums[i] = sums[i]! + p.sums[i]!
    for (let i = 0; i < counts.length; i++) counts[i] = counts[i]! + p.counts[i]!
    error += p.error
    rows += p.rows
  }
  return { sums, counts, error, rows }
}

/**
 * Index of the nearest center (or SOM node) for every row: an int32 chunk.
 *
 * @since 0.1.0
 * @category kernels
 */
export const assign = (chunk: Chunk.Chunk, centers: Float64Array, k: number): Chunk.Chunk => {
  const x = chunk.data as Float64Array
  const d = centers.length / k
  const rows = chunk.shape[0]!
  const out = new Int32Array(rows)
  for (let r = 0; r < rows; r++) out[r] = nearest(x, r * d, d, centers, k)
  return { dtype: "int32", shape: [rows], data: out }
}

/**
 * One chunk's share of a batch-SOM epoch: for every node, the neighbourhood-weighted
 * sum of the rows (numerator) and of the weights (denominator), with a Gaussian
 * neighbourhood of width `sigma` on the x-by-y grid around each row's best matching unit.
 *
 * @since 0.1.0
 * @category kernels
 */
export const somPartial = (chunk: Chunk.Chunk, weights: Float64Array, gx: number, gy: number, sigma: number): Partial => {
  const x = chunk.data as Float64Array
  const nodes = gx * gy
  const d = weights.length / nodes
  const rows = chunk.shape[0]!
  const h = neighbourhood(gx, gy, sigma)
  const sums = new Float64Array(nodes * d)
  const counts = new Float64Array(nodes)
  let error = 0
  for (let r = 0; r < rows; r++) {
    const o = r * d
    const bmu = nearest(x, o, d, weights, nodes)
    error += Math.sqrt(nearestDist[0]!)
    for (let n = 0; n < nodes; n++) {
      const w = h[bmu * nodes + n]!
      if (w === 0) continue
      counts[n] = counts[n]! + w
      for (let j = 0; j < d; j++) sums[n * d + j] = sums[n * d + j]! + w * x[o + j]!
    }
  }
  return { sums, counts, error, rows }
}

/** nodes x nodes Gaussian neighbourhood weights on the grid. */
/**
 * The SOM's Gaussian neighbourhood: `h[a * nodes + b]` weighs node b's update by node a
 * being the best matching unit.
 *
 * @since 0.1.0
 * @category kernels
 */
export const neighbourhood = (gx: number, gy: number, sigma: number): Float64Array => {
  const nodes = gx * gy
  const h = new Float64Array(nodes * nodes)
  const s2 = 2 * sigma * sigma
  for (let a = 0; a < nodes; a++) {
    for (let b = 0; b < nodes; b++) {
      const di = Math.floor(a / gy) - Math.floor(b / gy)
      const dj = (a % gy) - (b % gy)
      h[a * nodes + b] = s2 > 0 ? Math.exp(-(di * di + dj * dj) / s2) : a === b ? 1 : 0
    }
  }
  return h
}

/**
 * Up to `count` rows of a chunk picked by a seeded stride, with their global row
 * numbers (for k-means++ / SOM initialisation on a sample).
 *
 * @since 0.1.0
 * @category kernels
 */
export const sampleRows = (chunk: Chunk.Chunk, count: number): Float64Array => {
  const x = chunk.data as Float64Array
  const rows = chunk.shape[0]!
  const d = rows > 0 ? x.length / rows : 0
  const take = Math.min(count, rows)
  const out = new Float64Array(take * d)
  for (let t = 0; t < take; t++) {
    const r = Math.floor((t * rows) / take)
    for (let j = 0; j < d; j++) out[t * d + j] = x[r * d + j]!
  }
  return out
}

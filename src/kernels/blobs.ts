/**
 * Kernels that make isotropic Gaussian blobs (scikit-learn's `make_blobs`) one row
 * chunk at a time. Row `i` belongs to center `permute(i) % centers` (so the centers
 * get equal counts, as make_blobs gives, in shuffled order) and its coordinates are
 * counter-based normal draws: the data depend only on the seed, never on the chunking.
 *
 * @since 0.1.0
 */
import * as Chunk from "../engine/Chunk.ts"
import { normal, permute } from "./random.ts"

/**
 * Options of one blobs chunk.
 *
 * @since 0.1.0
 * @category models
 */
export interface BlobsChunkOptions {
  readonly nSamples: number
  readonly centers: ReadonlyArray<ReadonlyArray<number>>
  readonly clusterStd: number
  readonly shuffle: boolean
  readonly randomState: number
  readonly rowStart: number
  readonly rows: number
}

const labelOf = (o: BlobsChunkOptions, row: number): number =>
  (o.shuffle ? permute(o.randomState, o.nSamples, row) : row) % o.centers.length

/**
 * Rows `[rowStart, rowStart + rows)` of the blobs' X, as a float64 chunk.
 *
 * @since 0.1.0
 * @category kernels
 */
export const blobsX = (o: BlobsChunkOptions): Chunk.Chunk => {
  const d = o.centers[0]!.length
  const out = Chunk.allocShared("float64", [o.rows, d])
  const x = out.data as Float64Array
  for (let r = 0; r < o.rows; r++) {
    const row = o.rowStart + r
    const c = o.centers[labelOf(o, row)]!
    for (let j = 0; j < d; j++) x[r * d + j] = c[j]! + o.clusterStd * normal(o.randomState, row, j >> 1, (j & 1) as 0 | 1)
  }
  return out
}

/**
 * Rows `[rowStart, rowStart + rows)` of the blobs' labels y, as an int32 chunk.
 *
 * @since 0.1.0
 * @category kernels
 */
export const blobsY = (o: BlobsChunkOptions): Chunk.Chunk => {
  const out = Chunk.allocShared("int32", [o.rows])
  const y = out.data as Int32Array
  for (let r = 0; r < o.rows; r++) y[r] = labelOf(o, o.rowStart + r)
  return out
}

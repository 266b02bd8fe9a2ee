/**
 * Synthetic datasets as chunked arrays. `makeBlobs` follows scikit-learn's
 * `make_blobs` (isotropic Gaussian blobs, equal counts per center, shuffled), made chunk
 * by chunk on the workers and reproducible from the seed whatever the chunking.
 *
 * @since 0.1.0
 */
import type { ChunkedArray } from "./ChunkedArray.ts"
import { fromTasks, kernel, splitRows } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"

/**
 * Options of {@link makeBlobs}.
 *
 * @since 0.1.0
 * @category models
 */
export interface BlobsOptions {
  readonly nSamples: number
  readonly centers: ReadonlyArray<ReadonlyArray<number>>
  readonly clusterStd?: number
  readonly shuffle?: boolean
  readonly randomState?: number
  /** rows per chunk */
  readonly chunks: number
}

/**
 * Gaussian blobs: X (nSamples x d, float64) and labels y (int32), lazily.
 *
 * **Example** (DASF tutorial 5's data)
 * ```ts
 * const { X, y } = makeBlobs({ nSamples: 100_000, centers: [[-6, -6], [0, 0], [9, 1]], chunks: 5_000, randomState: 42 })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeBlobs = (options: BlobsOptions): { readonly X: ChunkedArray<"float64">; readonly y: ChunkedArray<"int32"> } => {
  const d = options.centers[0]?.length ?? 0
  if (options.centers.length === 0 || d === 0) throw DslError.invalidOption("centers", "need at least one center with one coordinate")
  if (options.centers.some((c) => c.length !== d)) throw DslError.invalidOption("centers", "every center needs the same number of coordinates")
  if (!Number.isInteger(options.nSamples) || options.nSamples < 1) {
    throw DslError.invalidOption("nSamples", `must be a positive integer, got ${options.nSamples}`)
  }
  const chunkRows = splitRows(options.nSamples, options.chunks)
  const base = {
    nSamples: options.nSamples,
    centers: options.centers,
    clusterStd: options.clusterStd ?? 1,
    shuffle: options.shuffle ?? true,
    randomState: options.randomState ?? 0
  }
  const args = (_: number, rowStart: number, rows: number) => [{ ...base, rowStart, rows }]
  return {
    X: fromTasks({ name: "make_blobs_X", dtype: "float64", shape: [options.nSamples, d], chunkRows, kernel: kernel("blobs", "blobsX"), args }),
    y: fromTasks({ name: "make_blobs_y", dtype: "int32", shape: [options.nSamples], chunkRows, kernel: kernel("blobs", "blobsY"), args })
  }
}

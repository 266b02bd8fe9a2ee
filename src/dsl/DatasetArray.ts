/**
 * DatasetArray: a lazy ChunkedArray over a dataset file (NumPy `.npy`, or numeric
 * columns of an Arrow IPC file or stream), in row chunks of `chunks` rows. The file is
 * described first, on the client, through the `DatasetSource` service (the header only:
 * dtype, shape, where the data are), so a bad file fails here, before anything runs;
 * each chunk is then a task whose kernel (`kernels/io`) reads only its rows.
 *
 * Pure: the I/O is the service's (`kernels/io/NodeDatasetSource.ts` `layer` for local
 * files) and the kernels'. Chunk boundaries depend only on `chunks`, never on the
 * file's record batches.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type * as Chunk from "../engine/Chunk.ts"
import type { DatasetInfo } from "../kernels/io/DatasetSource.ts"
import { DatasetSource } from "../kernels/io/DatasetSource.ts"
import type { ChunkedArray } from "./ChunkedArray.ts"
import { fromTasks, kernel, splitRows } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"

export { DatasetSource } from "../kernels/io/DatasetSource.ts"

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatasetArrayOptions<D extends Chunk.DType> {
  /** rows per chunk */
  readonly chunks: number
  /** Arrow only: the columns to read, in order (default: all); one column gives a 1-D array */
  readonly columns?: ReadonlyArray<string>
  /** the dtype the file must hold (a mismatch is a DslError naming the file) */
  readonly dtype?: D
  /** the format the file must be (default: recognised from its magic bytes) */
  readonly format?: DatasetInfo["format"]
}

/**
 * A lazy row-chunked array over a dataset file. Fails with a `DslError` (`BadDataset`,
 * naming the file and what is wrong; `DTypeMismatch` / `ShapeMismatch` naming
 * `DatasetArray(<file>)`) before any task runs.
 *
 * **Example**
 * ```ts
 * const X = yield* DatasetArray.make("data/X.npy", { chunks: 5_000, dtype: "float64" })
 * // provide kernels/io/NodeDatasetSource.ts `layer`
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <D extends Chunk.DType = Chunk.DType>(
  path: string,
  options: DatasetArrayOptions<D>
): Effect.Effect<ChunkedArray<D>, DslError, DatasetSource> =>
  Effect.gen(function*() {
    const stage = `DatasetArray(${path})`
    if (!Number.isInteger(options.chunks) || options.chunks < 1) {
      return yield* Effect.fail(DslError.invalidOption("chunks", `rows per chunk must be a positive integer, got ${options.chunks}`))
    }
    if (options.columns !== undefined && options.format === "npy") {
      return yield* Effect.fail(DslError.invalidOption("columns", `${path}: columns select Arrow columns; a .npy file has none`))
    }
    const source = yield* DatasetSource
    const info = yield* source.describe(path, options.columns === undefined ? {} : { columns: options.columns }).pipe(
      Effect.mapError((e) => DslError.badDataset(e.file, e.problem, e.detail, e.offset))
    )
    if (options.format !== undefined && info.format !== options.format) {
      return yield* Effect.fail(DslError.badDataset(path, "UnknownFormat", `expected a ${options.format} file, found ${info.format}`))
    }
    if (options.columns !== undefined && info.format === "npy") {
      return yield* Effect.fail(DslError.invalidOption("columns", `${path}: columns select Arrow columns; a .npy file has none`))
    }
    if (options.dtype !== undefined && info.dtype !== options.dtype) {
      return yield* Effect.fail(DslError.dtypeMismatch(stage, options.dtype, info.dtype))
    }
    if (info.shape.length < 1 || info.shape.length > 2) {
      return yield* Effect.fail(DslError.shapeMismatch(stage, ["n", "d?"], info.shape))
    }
    const chunkRows = splitRows(info.shape[0]!, options.chunks)
    const dtype = info.dtype as D
    if (info.format === "npy") {
      const header = { dtype: info.dtype, shape: info.shape, dataOffset: info.dataOffset }
      return fromTasks({
        name: "read_npy",
        dtype,
        shape: info.shape,
        chunkRows,
        kernel: kernel("io/npy", "readNpyRows"),
        // the described path: absolute (resolved where the pipeline is built), so workers
        // started in other directories read the same file
        args: (_, rowStart, rows) => [info.path, header, rowStart, rows]
      })
    }
    return fromTasks({
      name: "read_arrow",
      dtype,
      shape: info.shape,
      chunkRows,
      kernel: kernel("io/arrow", "readArrowRows"),
      args: (_, rowStart, rows) => [info, rowStart, rows]
    })
  })

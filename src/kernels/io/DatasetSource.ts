/**
 * DatasetSource: the service that describes a dataset file (format, dtype, shape, where
 * the data are) before any task runs, so a lazy ChunkedArray can know its dtype and
 * shape up front. Pure: only the service tag, the description and the typed error live
 * here, so src/dsl may import it; the node:fs implementation is `NodeDatasetSource.ts`
 * (its `layer`), and the chunk readers are the kernels of `npy.ts` and `arrow.ts`.
 *
 * The tag lives in kernels rather than dsl because the implementation (kernels/io, the
 * layer allowed to do I/O) must reference it, and kernels may not import dsl.
 *
 * @since 0.1.0
 */
import { Context, Data } from "effect"
import type * as Effect from "effect/Effect"
import type * as Chunk from "../../engine/Chunk.ts"

/**
 * A `.npy` file: C-order data of `shape` starting at byte `dataOffset`.
 *
 * @since 0.1.0
 * @category models
 */
export interface NpyInfo {
  readonly format: "npy"
  readonly path: string
  readonly dtype: Chunk.DType
  readonly shape: ReadonlyArray<number>
  readonly dataOffset: number
}

/**
 * An Arrow IPC file (`ipc: "file"`) or stream (`"stream"`): the numeric `columns` read
 * (one dtype), and the row count of each record batch in order.
 *
 * @since 0.1.0
 * @category models
 */
export interface ArrowInfo {
  readonly format: "arrow"
  readonly ipc: "file" | "stream"
  readonly path: string
  readonly dtype: Chunk.DType
  /** [rows] for one column, [rows, columns] otherwise */
  readonly shape: ReadonlyArray<number>
  readonly columns: ReadonlyArray<string>
  readonly batchRows: ReadonlyArray<number>
  /** each record batch message's byte range [start, end), body included */
  readonly batchOffsets: ReadonlyArray<readonly [number, number]>
  /** file format: a stream schema message made from the footer's schema */
  readonly schemaMessage?: Uint8Array
  /** byte ranges of the schema (stream format) and dictionary messages that precede any batch */
  readonly prefixRanges: ReadonlyArray<readonly [number, number]>
}

/**
 * What a dataset file holds, as far as chunking it needs.
 *
 * @since 0.1.0
 * @category models
 */
export type DatasetInfo = NpyInfo | ArrowInfo

/**
 * What is wrong with a dataset file.
 *
 * @since 0.1.0
 * @category errors
 */
export type DatasetFileProblem =
  | "NotFound"
  | "Unreadable"
  | "UnknownFormat"
  | "NotNpy"
  | "Truncated"
  | "SizeMismatch"
  | "FortranOrder"
  | "UnsupportedDType"
  | "BadHeader"
  | "NotArrow"
  | "UnknownColumn"
  | "MixedDTypes"
  | "NullValues"
  | "Compressed"

/**
 * A bad or unsupported dataset file; the message is `<file>: <problem>: <detail>`.
 * `offset` is the byte where the problem lies, when it lies at one place (the detail
 * says it too).
 *
 * @since 0.1.0
 * @category errors
 */
export class DatasetFileError extends Data.TaggedError("DatasetFileError")<{
  readonly file: string
  readonly problem: DatasetFileProblem
  readonly detail: string
  readonly offset?: number
}> {
  override get message(): string {
    return `${this.file}: ${this.problem}: ${this.detail}`
  }
}

/**
 * Options of {@link DatasetSourceShape.describe}.
 *
 * @since 0.1.0
 * @category models
 */
export interface DescribeOptions {
  /** Arrow only: the columns to read, in order (default: every column) */
  readonly columns?: ReadonlyArray<string>
}

/**
 * What a dataset source offers.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatasetSourceShape {
  /** Reads just enough of the file to describe it; validates it against its size. */
  readonly describe: (path: string, options?: DescribeOptions) => Effect.Effect<DatasetInfo, DatasetFileError>
}

/**
 * The dataset source service (`NodeDatasetSource.layer` reads local files).
 *
 * @since 0.1.0
 * @category layers
 */
export class DatasetSource extends Context.Service<DatasetSource, DatasetSourceShape>()("tessera/kernels/io/DatasetSource") {}

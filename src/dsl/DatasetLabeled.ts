/**
 * DatasetLabeled: DASF's labeled dataset, train / val (and optionally test) splits, each
 * a pair of chunked arrays X (samples) and y (labels or targets). Members are plain
 * typed ChunkedArrays, so a pipeline takes them as inputs directly
 * (`p.add(normalize.transform, { X: data.train.X })`) and the stage's input type is
 * checked at compile time.
 *
 * Checked before anything runs: every split's X and y have the same rows, and every
 * split's X has the train split's columns; a mismatch is a `DslError` naming the split
 * and both shapes.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type * as Chunk from "../engine/Chunk.ts"
import type { DatasetSource } from "../kernels/io/DatasetSource.ts"
import type { ChunkedArray } from "./ChunkedArray.ts"
import * as DatasetArray from "./DatasetArray.ts"
import { DslError } from "./DslError.ts"

/**
 * One split: samples X and their labels y, row for row.
 *
 * @since 0.1.0
 * @category models
 */
export interface Split<DX extends Chunk.DType = Chunk.DType, DY extends Chunk.DType = Chunk.DType> {
  readonly X: ChunkedArray<DX>
  readonly y: ChunkedArray<DY>
}

/**
 * A labeled dataset with train, val and (optionally) test splits.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatasetLabeled<DX extends Chunk.DType = Chunk.DType, DY extends Chunk.DType = Chunk.DType> {
  readonly _tag: "DatasetLabeled"
  readonly name: string
  readonly train: Split<DX, DY>
  readonly val: Split<DX, DY>
  readonly test?: Split<DX, DY>
}

/**
 * The splits of {@link fromArrays}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Splits<S> {
  readonly train: S
  readonly val: S
  readonly test?: S
}

const names = ["train", "val", "test"] as const

/**
 * A labeled dataset over arrays already made (lazy or persisted), checked.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromArrays = <DX extends Chunk.DType, DY extends Chunk.DType>(
  name: string,
  splits: Splits<Split<DX, DY>>
): DatasetLabeled<DX, DY> => {
  const columns = splits.train.X.shape.slice(1)
  for (const k of names) {
    const s = splits[k]
    if (s === undefined) continue
    if (s.X.shape[0] !== s.y.shape[0]) throw DslError.shapeMismatch(`DatasetLabeled(${name}).${k}.y`, [s.X.shape[0]!, ...s.y.shape.slice(1)], s.y.shape)
    if (s.X.shape.slice(1).join() !== columns.join()) {
      throw DslError.shapeMismatch(`DatasetLabeled(${name}).${k}.X`, ["n", ...columns], s.X.shape)
    }
    if (s.X.dtype !== splits.train.X.dtype) throw DslError.dtypeMismatch(`DatasetLabeled(${name}).${k}.X`, splits.train.X.dtype, s.X.dtype)
    if (s.y.dtype !== splits.train.y.dtype) throw DslError.dtypeMismatch(`DatasetLabeled(${name}).${k}.y`, splits.train.y.dtype, s.y.dtype)
  }
  return splits.test === undefined
    ? { _tag: "DatasetLabeled", name, train: splits.train, val: splits.val }
    : { _tag: "DatasetLabeled", name, train: splits.train, val: splits.val, test: splits.test }
}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatasetLabeledOptions<DX extends Chunk.DType, DY extends Chunk.DType> {
  /** rows per chunk */
  readonly chunks: number
  /** the dtype every X file must hold */
  readonly dtypeX?: DX
  /** the dtype every y file must hold */
  readonly dtypeY?: DY
}

/**
 * A labeled dataset over files (`.npy` or Arrow), one X and one y file per split, each a
 * {@link DatasetArray.make} with the same `chunks`; described and checked before
 * anything runs.
 *
 * **Example**
 * ```ts
 * const data = yield* DatasetLabeled.make("blobs", {
 *   train: { X: "train_X.npy", y: "train_y.npy" },
 *   val: { X: "val_X.npy", y: "val_y.npy" }
 * }, { chunks: 5_000, dtypeX: "float64", dtypeY: "int32" })
 * pipeline.add(normalize.transform, { X: data.train.X })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <DX extends Chunk.DType = Chunk.DType, DY extends Chunk.DType = Chunk.DType>(
  name: string,
  files: Splits<{ readonly X: string; readonly y: string }>,
  options: DatasetLabeledOptions<DX, DY>
): Effect.Effect<DatasetLabeled<DX, DY>, DslError, DatasetSource> =>
  Effect.gen(function*() {
    const load = (f: { readonly X: string; readonly y: string }) =>
      Effect.gen(function*() {
        const X = yield* DatasetArray.make<DX>(f.X, options.dtypeX === undefined ? { chunks: options.chunks } : { chunks: options.chunks, dtype: options.dtypeX })
        const y = yield* DatasetArray.make<DY>(f.y, options.dtypeY === undefined ? { chunks: options.chunks } : { chunks: options.chunks, dtype: options.dtypeY })
        return { X, y }
      })
    const train = yield* load(files.train)
    const val = yield* load(files.val)
    const test = files.test === undefined ? undefined : yield* load(files.test)
    return yield* Effect.try({
      try: () => fromArrays(name, test === undefined ? { train, val } : { train, val, test }),
      catch: (e) => e as DslError
    })
  })

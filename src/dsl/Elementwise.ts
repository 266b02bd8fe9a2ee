/**
 * Elementwise map on ChunkedArray: a closed set of named operations (add, sub, mul, div,
 * minimum, maximum with a scalar, a row vector broadcast along rows, or a second array of
 * the same shape and chunking; abs, neg, square, sqrt, exp, log; clip; astype), one
 * `elementwise` kernel task per chunk. A user function cannot run on the workers (it
 * would be a closure), so user elementwise code is a kernel referenced with
 * `ChunkedArray.mapBlocks(X, { kernel: Kernel.ref(import.meta.url, "myKernel"), ... })`.
 *
 * Result dtypes follow NumPy 2 (see `kernels/elementwise.ts`); they are in the type where
 * they do not depend on runtime values. Everything is checked before anything runs: a
 * row vector of the wrong length, arrays of different shapes or chunkings, an integer
 * scalar out of the array dtype's range (NumPy 2 rejects those too) are `DslError`s
 * naming the stage and both shapes.
 *
 * @since 0.1.0
 */
import type * as Chunk from "../engine/Chunk.ts"
import type { BinaryOp, ElementwiseSpec, Operand, UnaryOp } from "../kernels/elementwise.ts"
import { resultDType } from "../kernels/elementwise.ts"
import type { ChunkedArray } from "./ChunkedArray.ts"
import { kernel, mapBlocks, zipBlocks } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"

export type { BinaryOp, UnaryOp } from "../kernels/elementwise.ts"

type Float = "float32" | "float64"

/**
 * A scalar operand: a number, or a bigint (exact for int64).
 *
 * @since 0.1.0
 * @category models
 */
export type Value = number | bigint

/**
 * The right operand of a binary operation: a scalar, a row vector (one value per column
 * of a 2-D array), or an array of the same shape and chunking.
 *
 * @since 0.1.0
 * @category models
 */
export type Right = Value | ReadonlyArray<Value> | ChunkedArray

/**
 * Result dtype of a binary operation (other than div), as far as types know it.
 *
 * @since 0.1.0
 * @category models
 */
export type BinaryResult<D extends Chunk.DType, R> = R extends ChunkedArray ? Chunk.DType : D extends Float ? D : Chunk.DType

/**
 * Result dtype of div: float.
 *
 * @since 0.1.0
 * @category models
 */
export type DivResult<D extends Chunk.DType, R> = R extends ChunkedArray ? Chunk.DType : D extends Float ? D : "float64"

/**
 * Result dtype of sqrt, exp and log.
 *
 * @since 0.1.0
 * @category models
 */
export type FloatResult<D extends Chunk.DType> = D extends "float32" ? "float32" : "float64"

const ranges: Partial<Record<Chunk.DType, readonly [bigint, bigint]>> = {
  uint8: [0n, 255n],
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n]
}

/** Integer scalars meeting an integer array must fit its dtype (NumPy 2 raises OverflowError). */
const checkRange = (stage: string, d: Chunk.DType, values: ReadonlyArray<Value>): void => {
  const r = ranges[d]
  if (r === undefined) return
  for (const v of values) {
    if (typeof v === "number" && !Number.isInteger(v)) continue // makes the result float64
    const b = BigInt(v)
    if (b < r[0] || b > r[1]) throw DslError.invalidOption("operand", `stage "${stage}": ${v} is out of range for ${d} (${r[0]}..${r[1]})`)
  }
}

const isArray = (u: unknown): u is ChunkedArray => typeof u === "object" && u !== null && (u as ChunkedArray)._tag === "ChunkedArray"

const run = (X: ChunkedArray, spec: ElementwiseSpec, stage: string, other?: ChunkedArray): ChunkedArray => {
  const options = { name: `elementwise-${stage}`, kernel: kernel("elementwise", "elementwise"), extra: [spec], dtype: spec.out, stage }
  if (other !== undefined) return zipBlocks(X, other, options)
  return mapBlocks(X, X.shape.length === 2 ? { ...options, columns: X.shape[1]! } : options)
}

/**
 * A binary operation with a scalar, a row vector or an array.
 *
 * @since 0.1.0
 * @category combinators
 */
export const binary = <D extends Chunk.DType, O extends BinaryOp, R extends Right>(
  X: ChunkedArray<D>,
  op: O,
  right: R,
  options: { readonly stage?: string } = {}
): ChunkedArray<O extends "div" ? DivResult<D, R> : BinaryResult<D, R>> => {
  const stage = options.stage ?? op
  let operand: Operand
  if (isArray(right)) {
    if (right.shape.join() !== X.shape.join()) throw DslError.shapeMismatch(stage, X.shape, right.shape)
    if (right.chunkRows.join() !== X.chunkRows.join()) throw DslError.chunksMismatch(stage, X.chunkRows, right.chunkRows)
    operand = { _tag: "Array", dtype: right.dtype }
  } else if (typeof right === "number" || typeof right === "bigint") {
    checkRange(stage, X.dtype, [right])
    operand = { _tag: "Scalar", value: right }
  } else {
    const values = Array.from(right as ReadonlyArray<Value>)
    if (X.shape.length !== 2) throw DslError.shapeMismatch(stage, ["n", values.length], X.shape)
    if (values.length !== X.shape[1]) throw DslError.shapeMismatch(stage, [X.shape[1]!], [values.length])
    checkRange(stage, X.dtype, values)
    operand = { _tag: "Row", values }
  }
  const out = resultDType(X.dtype, { _tag: "Binary", op, operand })
  return run(X, { _tag: "Binary", op, operand, out }, stage, isArray(right) ? right : undefined) as never
}

/**
 * `X + right`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const add = <D extends Chunk.DType, R extends Right>(X: ChunkedArray<D>, right: R, options?: { readonly stage?: string }) =>
  binary(X, "add", right, options ?? {}) as ChunkedArray<BinaryResult<D, R>>

/**
 * `X - right`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const sub = <D extends Chunk.DType, R extends Right>(X: ChunkedArray<D>, right: R, options?: { readonly stage?: string }) =>
  binary(X, "sub", right, options ?? {}) as ChunkedArray<BinaryResult<D, R>>

/**
 * `X * right` (`scale` with a scalar).
 *
 * @since 0.1.0
 * @category combinators
 */
export const mul = <D extends Chunk.DType, R extends Right>(X: ChunkedArray<D>, right: R, options?: { readonly stage?: string }) =>
  binary(X, "mul", right, options ?? {}) as ChunkedArray<BinaryResult<D, R>>

/**
 * `X / right` (true division: integer arrays give float64).
 *
 * @since 0.1.0
 * @category combinators
 */
export const div = <D extends Chunk.DType, R extends Right>(X: ChunkedArray<D>, right: R, options?: { readonly stage?: string }) =>
  binary(X, "div", right, options ?? {}) as ChunkedArray<DivResult<D, R>>

/**
 * Elementwise minimum (NaN propagates).
 *
 * @since 0.1.0
 * @category combinators
 */
export const minimum = <D extends Chunk.DType, R extends Right>(X: ChunkedArray<D>, right: R, options?: { readonly stage?: string }) =>
  binary(X, "minimum", right, options ?? {}) as ChunkedArray<BinaryResult<D, R>>

/**
 * Elementwise maximum (NaN propagates).
 *
 * @since 0.1.0
 * @category combinators
 */
export const maximum = <D extends Chunk.DType, R extends Right>(X: ChunkedArray<D>, right: R, options?: { readonly stage?: string }) =>
  binary(X, "maximum", right, options ?? {}) as ChunkedArray<BinaryResult<D, R>>

/**
 * A unary operation: abs, neg, square keep the dtype (integers wrap); sqrt, exp, log
 * give float32 for float32 and float64 otherwise.
 *
 * @since 0.1.0
 * @category combinators
 */
export const unary = <D extends Chunk.DType, O extends UnaryOp>(
  X: ChunkedArray<D>,
  op: O,
  options: { readonly stage?: string } = {}
): ChunkedArray<O extends "sqrt" | "exp" | "log" ? FloatResult<D> : D> =>
  run(X, { _tag: "Unary", op, out: resultDType(X.dtype, { _tag: "Unary", op }) }, options.stage ?? op) as never

/**
 * Clips every element to `[lo, hi]` (NumPy's `minimum(maximum(x, lo), hi)`).
 *
 * @since 0.1.0
 * @category combinators
 */
export const clip = <D extends Chunk.DType>(
  X: ChunkedArray<D>,
  lo: Value,
  hi: Value,
  options: { readonly stage?: string } = {}
): ChunkedArray<D extends Float ? D : Chunk.DType> => {
  const stage = options.stage ?? "clip"
  checkRange(stage, X.dtype, [lo, hi])
  return run(X, { _tag: "Clip", lo, hi, out: resultDType(X.dtype, { _tag: "Clip", lo, hi }) }, stage) as never
}

/**
 * Casts to another dtype (floats to integers truncate toward zero and wrap; NaN gives 0).
 *
 * @since 0.1.0
 * @category combinators
 */
export const astype = <T extends Chunk.DType>(X: ChunkedArray, dtype: T, options: { readonly stage?: string } = {}): ChunkedArray<T> =>
  run(X, { _tag: "AsType", out: dtype }, options.stage ?? `astype(${dtype})`) as ChunkedArray<T>

/**
 * Elementwise kernels: a small closed set of named operations (unary, binary with a
 * scalar, a row vector broadcast along rows, or a second array chunk; clip; astype) over
 * every dtype a chunk holds. Operations are plain data (`ElementwiseSpec`) so they
 * cross worker threads; closures never do.
 *
 * Result dtypes follow NumPy 2 (NEP 50): a float array keeps its dtype; an integer
 * array keeps its dtype with integer scalars / vectors and becomes float64 with
 * non-integer ones, and under div, sqrt, exp, log; two arrays promote as NumPy does.
 * Integer arithmetic wraps modulo 2^bits like NumPy's; int64 is computed in BigInt.
 * float32 results round every operation to float32 (scalars are cast to float32 first,
 * as NEP 50's weak scalars are). Leaves out: NumPy's overflow warnings, and its
 * platform-defined casts of NaN / out-of-range floats to integers (here NaN gives 0).
 *
 * @since 0.1.0
 */
import * as Chunk from "../engine/Chunk.ts"

/**
 * Unary operations.
 *
 * @since 0.1.0
 * @category models
 */
export type UnaryOp = "abs" | "neg" | "square" | "sqrt" | "exp" | "log"

/**
 * Binary operations.
 *
 * @since 0.1.0
 * @category models
 */
export type BinaryOp = "add" | "sub" | "mul" | "div" | "minimum" | "maximum"

/**
 * The right operand of a binary operation: a scalar, a row vector (one value per
 * column), or the matching chunk of a second array (passed as the kernel's third arg).
 *
 * @since 0.1.0
 * @category models
 */
export type Operand =
  | { readonly _tag: "Scalar"; readonly value: number | bigint }
  | { readonly _tag: "Row"; readonly values: ReadonlyArray<number | bigint> }
  | { readonly _tag: "Array"; readonly dtype: Chunk.DType }

/**
 * One elementwise operation, with its result dtype (see {@link resultDType}).
 *
 * @since 0.1.0
 * @category models
 */
export type ElementwiseSpec =
  | { readonly _tag: "Unary"; readonly op: UnaryOp; readonly out: Chunk.DType }
  | { readonly _tag: "Binary"; readonly op: BinaryOp; readonly operand: Operand; readonly out: Chunk.DType }
  | { readonly _tag: "Clip"; readonly lo: number | bigint; readonly hi: number | bigint; readonly out: Chunk.DType }
  | { readonly _tag: "AsType"; readonly out: Chunk.DType }

const isFloat = (d: Chunk.DType): boolean => d === "float32" || d === "float64"
const isInt = (v: number | bigint): boolean => typeof v === "bigint" || Number.isInteger(v)

/**
 * NumPy's promotion of two array dtypes.
 *
 * @since 0.1.0
 * @category getters
 */
export const promote = (a: Chunk.DType, b: Chunk.DType): Chunk.DType => {
  if (a === b) return a
  if (isFloat(a) || isFloat(b)) {
    if (a === "float64" || b === "float64") return "float64"
    const other = a === "float32" ? b : a // the integer one
    return other === "uint8" ? "float32" : "float64"
  }
  if (a === "int64" || b === "int64") return "int64"
  return "int32" // int32 with uint8
}

/** dtype of an integer array meeting a scalar/vector (weak): its own if integral, else float64. */
const withWeak = (d: Chunk.DType, values: ReadonlyArray<number | bigint>): Chunk.DType =>
  isFloat(d) || values.every(isInt) ? d : "float64"

/**
 * The dtype an operation on an array of dtype `d` gives.
 *
 * @since 0.1.0
 * @category getters
 */
export const resultDType = (
  d: Chunk.DType,
  op:
    | { readonly _tag: "Unary"; readonly op: UnaryOp }
    | { readonly _tag: "Binary"; readonly op: BinaryOp; readonly operand: Operand }
    | { readonly _tag: "Clip"; readonly lo: number | bigint; readonly hi: number | bigint }
    | { readonly _tag: "AsType"; readonly out: Chunk.DType }
): Chunk.DType => {
  switch (op._tag) {
    case "AsType":
      return op.out
    case "Clip":
      return withWeak(d, [op.lo, op.hi])
    case "Unary":
      return op.op === "sqrt" || op.op === "exp" || op.op === "log" ? (d === "float32" ? "float32" : "float64") : d
    case "Binary": {
      const o = op.operand
      const base = o._tag === "Array" ? promote(d, o.dtype) : withWeak(d, o._tag === "Scalar" ? [o.value] : o.values)
      return op.op === "div" && !isFloat(base) ? "float64" : base
    }
  }
}

type Num = (a: number, b: number) => number
type Big = (a: bigint, b: bigint) => bigint

const numBinary = (op: BinaryOp, out: Chunk.DType): Num => {
  switch (op) {
    case "add":
      return (a, b) => a + b
    case "sub":
      return (a, b) => a - b
    // int32: the exact product can pass 2^53; Math.imul gives its low 32 bits
    case "mul":
      return out === "int32" ? Math.imul : (a, b) => a * b
    case "div":
      return (a, b) => a / b
    case "minimum":
      return (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : a < b ? a : b)
    case "maximum":
      return (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : a > b ? a : b)
  }
}

const bigBinary = (op: BinaryOp): Big => {
  switch (op) {
    case "add":
      return (a, b) => a + b
    case "sub":
      return (a, b) => a - b
    case "mul":
      return (a, b) => a * b
    case "div":
      throw new RangeError("elementwise: div has a float result, never an int64 one")
    case "minimum":
      return (a, b) => (a < b ? a : b)
    case "maximum":
      return (a, b) => (a > b ? a : b)
  }
}

const numUnary = (op: UnaryOp, out: Chunk.DType): (a: number) => number => {
  switch (op) {
    case "abs":
      return Math.abs
    case "neg":
      return (a) => -a
    case "square":
      return out === "int32" ? (a) => Math.imul(a, a) : (a) => a * a
    case "sqrt":
      return Math.sqrt
    case "exp":
      return Math.exp
    case "log":
      return Math.log
  }
}

const bigUnary = (op: UnaryOp): (a: bigint) => bigint => {
  switch (op) {
    case "abs":
      return (a) => (a < 0n ? -a : a)
    case "neg":
      return (a) => -a
    case "square":
      return (a) => a * a
    default:
      throw new RangeError(`elementwise: ${op} has a float result, never an int64 one`)
  }
}

/** A value in the number domain of `out`: float32-rounded, or reduced to out's integer width. */
const toNum = (v: number | bigint, out: Chunk.DType): number => {
  if (typeof v === "bigint") {
    return out === "int32" ? Number(BigInt.asIntN(32, v)) : out === "uint8" ? Number(BigInt.asUintN(8, v)) : Number(v)
  }
  return out === "float32" ? Math.fround(v) : out === "int32" ? v | 0 : out === "uint8" ? v & 255 : v
}

/** A value in the BigInt domain: integers exactly, floats truncated toward zero (NaN and ±Inf: 0). */
const toBig = (v: number | bigint): bigint => (typeof v === "bigint" ? v : Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n)

/** The data of a chunk converted to the domain of `out` (no copy when already there). */
const domainNum = (data: Chunk.TypedArray, out: Chunk.DType): ArrayLike<number> => {
  if (data instanceof BigInt64Array) return Float64Array.from(data, (v) => toNum(v, out))
  if (out === "int32" && !(data instanceof Int32Array) && !(data instanceof Uint8Array)) return Int32Array.from(data as Float64Array, (v) => v | 0)
  if (out === "uint8" && !(data instanceof Uint8Array)) return Uint8Array.from(data as Float64Array, (v) => v & 255)
  return data as ArrayLike<number>
}
const domainBig = (data: Chunk.TypedArray): ArrayLike<bigint> =>
  data instanceof BigInt64Array ? data : BigInt64Array.from(data as Float64Array, (v) => toBig(v))

/**
 * Kernel: applies `spec` to every element of `chunk` (and of `other`, the matching chunk
 * of a second array, for an `Array` operand); returns a new shared chunk of `spec.out`.
 *
 * @since 0.1.0
 * @category kernels
 */
export const elementwise = (chunk: Chunk.Chunk, spec: ElementwiseSpec, other?: Chunk.Chunk): Chunk.Chunk => {
  const out = Chunk.allocShared(spec.out, chunk.shape)
  const n = chunk.data.length
  const d = chunk.shape.length === 2 ? chunk.shape[1]! : 1
  // Hot loops below: plain indexed loops over typed arrays, one per domain.
  if (spec.out === "int64") {
    const x = domainBig(chunk.data)
    const o = out.data as BigInt64Array
    switch (spec._tag) {
      case "AsType":
        for (let i = 0; i < n; i++) o[i] = x[i]!
        break
      case "Unary": {
        const f = bigUnary(spec.op)
        for (let i = 0; i < n; i++) o[i] = f(x[i]!)
        break
      }
      case "Clip": {
        const lo = toBig(spec.lo)
        const hi = toBig(spec.hi)
        for (let i = 0; i < n; i++) {
          const v = x[i]! < lo ? lo : x[i]!
          o[i] = v > hi ? hi : v
        }
        break
      }
      case "Binary": {
        const f = bigBinary(spec.op)
        const r = spec.operand
        if (r._tag === "Scalar") {
          const b = toBig(r.value)
          for (let i = 0; i < n; i++) o[i] = f(x[i]!, b)
        } else if (r._tag === "Row") {
          const row = r.values.map(toBig)
          for (let i = 0; i < n; i++) o[i] = f(x[i]!, row[i % d]!)
        } else {
          const y = domainBig(other!.data)
          for (let i = 0; i < n; i++) o[i] = f(x[i]!, y[i]!)
        }
        break
      }
    }
    return out
  }
  const x = domainNum(chunk.data, spec.out)
  const o = out.data as Float64Array // the store rounds (float32) or wraps (int32, uint8)
  switch (spec._tag) {
    case "AsType":
      for (let i = 0; i < n; i++) o[i] = x[i]!
      break
    case "Unary": {
      const f = numUnary(spec.op, spec.out)
      for (let i = 0; i < n; i++) o[i] = f(x[i]!)
      break
    }
    case "Clip": {
      const lo = toNum(spec.lo, spec.out)
      const hi = toNum(spec.hi, spec.out)
      for (let i = 0; i < n; i++) {
        const v = x[i]!
        o[i] = Number.isNaN(v) ? v : v < lo ? (lo > hi ? hi : lo) : v > hi ? hi : v
      }
      break
    }
    case "Binary": {
      const f = numBinary(spec.op, spec.out)
      const r = spec.operand
      if (r._tag === "Scalar") {
        const b = toNum(r.value, spec.out)
        for (let i = 0; i < n; i++) o[i] = f(x[i]!, b)
      } else if (r._tag === "Row") {
        const row = r.values.map((v) => toNum(v, spec.out))
        for (let i = 0; i < n; i++) o[i] = f(x[i]!, row[i % d]!)
      } else {
        const y = domainNum(other!.data, spec.out)
        for (let i = 0; i < n; i++) o[i] = f(x[i]!, y[i]!)
      }
      break
    }
  }
  return out
}

/**
 * Chunk: the unit of numeric data that flows between tasks. A chunk is a typed array
 * with a dtype and a shape, normally backed by a `SharedArrayBuffer`, so posting it to
 * another worker thread shares the bytes instead of copying them (the chunk store is
 * just "every chunk lives in shared memory").
 *
 * Leaves out: strided views, Arrow vectors (build them over `chunk.data`, zero copy).
 *
 * @since 0.1.0
 */

/**
 * Element types a chunk can hold.
 *
 * @since 0.1.0
 * @category models
 */
export type DType = "float32" | "float64" | "int32" | "int64" | "uint8"

/**
 * Typed arrays that back a chunk.
 *
 * @since 0.1.0
 * @category models
 */
export type TypedArray =
  | Float32Array
  | Float64Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Int8Array
  | Int16Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | Uint8ClampedArray

/**
 * A dense, row-major block of numbers. Plain data: it survives structured clone, so
 * the guard {@link isChunk} checks its shape rather than a brand.
 *
 * @since 0.1.0
 * @category models
 */
export interface Chunk {
  readonly dtype: DType
  readonly shape: ReadonlyArray<number>
  readonly data: TypedArray
}

const ctors = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array
} as const

/**
 * Bytes per element of a dtype.
 *
 * @since 0.1.0
 * @category getters
 */
export const itemSize = (dtype: DType): number => ctors[dtype].BYTES_PER_ELEMENT

/**
 * The dtype of a typed array, when it is one a chunk can hold.
 *
 * @since 0.1.0
 * @category getters
 */
export const dtypeOf = (data: TypedArray): DType | undefined =>
  data instanceof Float64Array
    ? "float64"
    : data instanceof Float32Array
    ? "float32"
    : data instanceof Int32Array
    ? "int32"
    : data instanceof BigInt64Array
    ? "int64"
    : data instanceof Uint8Array
    ? "uint8"
    : undefined

const product = (shape: ReadonlyArray<number>): number => {
  let n = 1
  for (const d of shape) n *= d
  return n
}

/**
 * Wraps existing data as a chunk. Throws a `RangeError` when the shape does not match
 * the data length or the dtype does not match the array type.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (dtype: DType, shape: ReadonlyArray<number>, data: TypedArray): Chunk => {
  if (!(data instanceof ctors[dtype])) {
    throw new RangeError(`Chunk.make: data is ${data.constructor.name}, dtype ${dtype} needs ${ctors[dtype].name}`)
  }
  if (product(shape) !== data.length) {
    throw new RangeError(`Chunk.make: shape [${shape.join(", ")}] needs ${product(shape)} elements, data has ${data.length}`)
  }
  return { dtype, shape: [...shape], data }
}

/**
 * Allocates a zero-filled chunk in a new `SharedArrayBuffer`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const allocShared = (dtype: DType, shape: ReadonlyArray<number>): Chunk => {
  const Ctor = ctors[dtype] as unknown as new(buffer: SharedArrayBuffer) => TypedArray
  const n = product(shape)
  const data = new Ctor(new SharedArrayBuffer(n * ctors[dtype].BYTES_PER_ELEMENT))
  return { dtype, shape: [...shape], data }
}

/**
 * True when a typed array's bytes live in a `SharedArrayBuffer`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isShared = (data: TypedArray): boolean => data.buffer instanceof SharedArrayBuffer

/**
 * Copies a typed array into a new `SharedArrayBuffer` (returns it unchanged when it is
 * already shared).
 *
 * @since 0.1.0
 * @category constructors
 */
export const shareArray = <T extends TypedArray>(data: T): T => {
  if (isShared(data)) return data
  const Ctor = data.constructor as new(buffer: SharedArrayBuffer) => T
  const sab = new SharedArrayBuffer(data.byteLength)
  const out = new Ctor(sab)
  new Uint8Array(sab).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength))
  return out
}

/**
 * Returns the chunk with its data in shared memory (a copy only when it is not).
 *
 * @since 0.1.0
 * @category constructors
 */
export const toShared = (chunk: Chunk): Chunk =>
  isShared(chunk.data) ? chunk : { dtype: chunk.dtype, shape: chunk.shape, data: shareArray(chunk.data) }

/**
 * Bytes held by a chunk's data.
 *
 * @since 0.1.0
 * @category getters
 */
export const nbytes = (c: Chunk): number => c.data.byteLength

/**
 * Structural guard: a dtype string, a shape array and a typed array of that dtype.
 *
 * @since 0.1.0
 * @category guards
 */
export const isChunk = (u: unknown): u is Chunk => {
  if (typeof u !== "object" || u === null) return false
  const c = u as { dtype?: unknown; shape?: unknown; data?: unknown }
  return typeof c.dtype === "string" && c.dtype in ctors && Array.isArray(c.shape) &&
    ArrayBuffer.isView(c.data) && c.data instanceof ctors[c.dtype as DType]
}

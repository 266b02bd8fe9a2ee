/**
 * Kernel loading and result handling shared by the in-process executor and the worker
 * threads: a per-thread module cache (each module is imported once), the move of
 * returned typed arrays / Chunks into shared memory, and the description of a result
 * (bytes, shape, dtype, type) for TaskRecords.
 *
 * @since 0.1.0
 * @internal
 */
import * as Chunk from "../Chunk.ts"
import type { KernelFn } from "../Kernel.ts"

/**
 * A kernel could not be loaded: the module failed to import or has no such function.
 *
 * @since 0.1.0
 * @internal
 */
export class KernelLoadError extends Error {
  readonly module: string
  readonly kernel: string
  readonly detail: string
  constructor(module: string, kernel: string, detail: string) {
    super(`kernel "${kernel}" not found in module ${module}: ${detail}`)
    this.module = module
    this.kernel = kernel
    this.detail = detail
  }
}

const modules = new Map<string, Promise<Record<string, unknown>>>()

/**
 * Imports `module` (once per thread) and returns its export `name` as a function.
 *
 * @since 0.1.0
 * @internal
 */
export const loadKernel = async (module: string, name: string): Promise<KernelFn> => {
  let m = modules.get(module)
  if (m === undefined) {
    m = import(module) as Promise<Record<string, unknown>>
    modules.set(module, m)
  }
  let ns: Record<string, unknown>
  try {
    ns = await m
  } catch (e) {
    modules.delete(module)
    throw new KernelLoadError(module, name, `module failed to import: ${e instanceof Error ? e.message : String(e)}`)
  }
  const fn = ns[name]
  if (typeof fn !== "function") {
    throw new KernelLoadError(
      module,
      name,
      fn === undefined ? "no such export" : `export is a ${typeof fn}, not a function`
    )
  }
  return fn as KernelFn
}

/**
 * Moves a result into shared memory when it is a typed array or a Chunk that is not
 * there yet; other values are returned unchanged.
 *
 * @since 0.1.0
 * @internal
 */
export const shareResult = (r: unknown): unknown => {
  if (typeof r !== "object" || r === null) return r
  if (ArrayBuffer.isView(r)) {
    return r instanceof DataView || Chunk.isShared(r as Chunk.TypedArray) ? r : Chunk.shareArray(r as Chunk.TypedArray)
  }
  if (Chunk.isChunk(r)) return Chunk.toShared(r)
  return r
}

/**
 * Bytes, shape, dtype and type name of a result (cheap estimates for non-array values).
 *
 * @since 0.1.0
 * @internal
 */
export interface ResultInfo {
  readonly nbytes: number
  readonly shape: ReadonlyArray<number>
  readonly dtype: string
  readonly type: string
}

/**
 * Describes a result for a TaskRecord / memory accounting.
 *
 * @since 0.1.0
 * @internal
 */
export const describeResult = (r: unknown): ResultInfo => describeAt(r, maxDepth, null)

/** nesting followed into arrays and object literals */
const maxDepth = 32

/**
 * `seen`: the objects already counted (created at the first array or object literal),
 * so a shared or cyclic part is counted once.
 */
const describeAt = (r: unknown, depth: number, seen: Set<object> | null): ResultInfo => {
  if (r === null || r === undefined) return { nbytes: 0, shape: [], dtype: "", type: String(r) }
  switch (typeof r) {
    case "number":
      return { nbytes: 8, shape: [], dtype: "float64", type: "number" }
    case "bigint":
      return { nbytes: 8, shape: [], dtype: "int64", type: "bigint" }
    case "boolean":
      return { nbytes: 1, shape: [], dtype: "bool", type: "boolean" }
    case "string":
      return { nbytes: r.length * 2, shape: [r.length], dtype: "string", type: "string" }
    case "object":
      break
    default:
      return { nbytes: 0, shape: [], dtype: "", type: typeof r }
  }
  if (ArrayBuffer.isView(r)) {
    const ta = r as Chunk.TypedArray
    return {
      nbytes: r.byteLength,
      shape: r instanceof DataView ? [r.byteLength] : [ta.length],
      dtype: r instanceof DataView ? "uint8" : (Chunk.dtypeOf(ta) ?? ta.constructor.name),
      type: r.constructor.name
    }
  }
  if (Chunk.isChunk(r)) return { nbytes: Chunk.nbytes(r), shape: r.shape, dtype: r.dtype, type: "Chunk" }
  if (r instanceof ArrayBuffer || r instanceof SharedArrayBuffer) {
    return { nbytes: r.byteLength, shape: [r.byteLength], dtype: "uint8", type: r.constructor.name }
  }
  const isArray = Array.isArray(r)
  if (!isArray && !isPlainObject(r)) {
    return { nbytes: 0, shape: [], dtype: "object", type: (r as object).constructor?.name ?? "Object" }
  }
  // arrays, and object literals as dask's sizeof of a dict: the sum of their values (a
  // reduction's partial results are objects of typed arrays and numbers; counted as 0
  // bytes they left the memory records of the demo's reduction steps without a change)
  const visited = seen ?? new Set<object>()
  visited.add(r)
  let nbytes = 0
  if (depth > 0) {
    const values: ReadonlyArray<unknown> = isArray ? r : Object.values(r)
    for (const x of values) {
      if (typeof x === "object" && x !== null) {
        if (visited.has(x)) continue
        visited.add(x)
      }
      nbytes += describeAt(x, depth - 1, visited).nbytes
    }
  }
  return isArray
    ? { nbytes, shape: [r.length], dtype: "object", type: "Array" }
    : { nbytes, shape: [], dtype: "object", type: "Object" }
}

/** An object literal (or a null-prototype object), not a class instance. */
const isPlainObject = (u: object): u is Record<string, unknown> => {
  const proto = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

/**
 * Chunks held by a result (1 for a Chunk or typed array, the count inside an array or
 * an object literal).
 *
 * @since 0.1.0
 * @internal
 */
export const chunkCount = (r: unknown, depth = maxDepth, seen: Set<object> | null = null): number => {
  if (typeof r !== "object" || r === null) return 0
  if (ArrayBuffer.isView(r) || Chunk.isChunk(r)) return 1
  const isArray = Array.isArray(r)
  if (depth <= 0 || (!isArray && !isPlainObject(r))) return 0
  const visited = seen ?? new Set<object>()
  visited.add(r)
  let n = 0
  for (const x of isArray ? r : Object.values(r)) {
    if (typeof x !== "object" || x === null || visited.has(x)) continue
    visited.add(x)
    n += chunkCount(x, depth - 1, visited)
  }
  return n
}

/**
 * Message and stack of a thrown value.
 *
 * @since 0.1.0
 * @internal
 */
export const errorParts = (e: unknown): { message: string; stack: string } =>
  e instanceof Error
    ? { message: e.message, stack: e.stack ?? `${e.name}: ${e.message}` }
    : { message: String(e), stack: String(e) }

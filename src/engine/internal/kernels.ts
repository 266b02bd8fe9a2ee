/**
 * Kernel loading and result handling shared by the in-process executor and the worker
 * threads: a per-thread module cache (each module is imported once), the move of
 * returned typed arrays / Chunks into shared memory, and the description of a result
 * (bytes, shape, dtype, type) for TaskRecords, and what a structured clone refuses. Which
 * module URLs may be imported is moduleAccess.ts's; the check of a result against what
 * its task declared, taskOutput.ts's (both re-exported here).
 *
 * @since 0.1.0
 * @internal
 */
import * as Chunk from "../Chunk.ts"
import * as Gpu from "../Gpu.ts"
import type { KernelFn } from "../Kernel.ts"
import { checkModuleUrl, ModuleRefused } from "./moduleAccess.ts"

export { ALLOW_MODULES_ENV, allowModuleDirs, checkModuleUrl, importChecked, ModuleRefused, moduleRoots, type ModuleUse } from "./moduleAccess.ts"
export { checkOutput, describeOutput, dtypeCodes, encodeOutput, OUT_STRIDE, OutputMismatch, outputMismatch } from "./taskOutput.ts"

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

/**
 * A failed kernel load as a worker thread reports it (`BatchError` fields): the detail,
 * and whether the module was refused ({@link ModuleRefused}) rather than not found.
 *
 * @since 0.1.0
 * @internal
 */
export const loadFailure = (e: unknown): { readonly message: string; readonly refused?: true } =>
  e instanceof ModuleRefused
    ? { message: e.why, refused: true }
    : { message: e instanceof KernelLoadError ? e.detail : errorParts(e).message }

const modules = new Map<string, Promise<Record<string, unknown>>>()

/**
 * Imports `module` (once per thread) and returns its export `name` as a function. The
 * URL passes {@link checkModuleUrl} first: a refused one throws {@link ModuleRefused}.
 *
 * @since 0.1.0
 * @internal
 */
export const loadKernel = async (module: string, name: string): Promise<KernelFn> => {
  let m = modules.get(module)
  if (m === undefined) {
    checkModuleUrl(module, "kernel")
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
 * Bytes, chunks, shape, dtype and type name of a result (cheap estimates for non-array
 * values).
 *
 * @since 0.1.0
 * @internal
 */
export interface ResultInfo {
  readonly nbytes: number
  /**
   * Chunks held: 1 for a Chunk or typed array, those inside an array or an object
   * literal (each once), 0 otherwise
   */
  readonly chunks: number
  readonly shape: ReadonlyArray<number>
  readonly dtype: string
  readonly type: string
  /** the result stayed on a GPU worker's device (a `Gpu.DeviceChunk`): no host bytes */
  readonly device?: boolean
}

/**
 * Describes a result for a TaskRecord / memory accounting.
 *
 * @since 0.1.0
 * @internal
 */
export const describeResult = (r: unknown): ResultInfo => {
  if (r === null || r === undefined) return { nbytes: 0, chunks: 0, shape: [], dtype: "", type: String(r) }
  switch (typeof r) {
    case "number":
      return { nbytes: 8, chunks: 0, shape: [], dtype: "float64", type: "number" }
    case "bigint":
      return { nbytes: 8, chunks: 0, shape: [], dtype: "int64", type: "bigint" }
    case "boolean":
      return { nbytes: 1, chunks: 0, shape: [], dtype: "bool", type: "boolean" }
    case "string":
      return { nbytes: r.length * 2, chunks: 0, shape: [r.length], dtype: "string", type: "string" }
    case "object":
      break
    default:
      return { nbytes: 0, chunks: 0, shape: [], dtype: "", type: typeof r }
  }
  if (ArrayBuffer.isView(r)) {
    const ta = r as Chunk.TypedArray
    return {
      nbytes: r.byteLength,
      chunks: 1,
      shape: r instanceof DataView ? [r.byteLength] : [ta.length],
      dtype: r instanceof DataView ? "uint8" : (Chunk.dtypeOf(ta) ?? ta.constructor.name),
      type: r.constructor.name
    }
  }
  if (Gpu.isDeviceChunk(r)) return { nbytes: r.bytes, chunks: 1, shape: r.shape, dtype: r.dtype, type: "DeviceChunk", device: true }
  if (Chunk.isChunk(r)) return { nbytes: Chunk.nbytes(r), chunks: 1, shape: r.shape, dtype: r.dtype, type: "Chunk" }
  if (r instanceof ArrayBuffer || r instanceof SharedArrayBuffer) {
    return { nbytes: r.byteLength, chunks: 0, shape: [r.byteLength], dtype: "uint8", type: r.constructor.name }
  }
  // arrays, and object literals as dask's sizeof of a dict: the sum of their values (a
  // reduction's partial results are objects of typed arrays and numbers; counted as 0
  // bytes they left the memory records of the demo's reduction steps without a change)
  if (Array.isArray(r)) {
    walk(r)
    return { nbytes: accBytes, chunks: accChunks, shape: [r.length], dtype: "object", type: "Array" }
  }
  if (isPlainObject(r)) {
    walk(r)
    return { nbytes: accBytes, chunks: accChunks, shape: [], dtype: "object", type: "Object" }
  }
  return { nbytes: 0, chunks: 0, shape: [], dtype: "object", type: (r as object).constructor?.name ?? "Object" }
}

/** An object literal (or a null-prototype object), not a class instance. */
const isPlainObject = (u: object): u is Record<string, unknown> => {
  const proto = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

// The walk over an array or object literal: depth first, each object once (a shared or
// cyclic part counts once), into module-level accumulators. Walks are synchronous, so
// one seen-list serves them all, and nothing is allocated for a result of up to
// `listed` objects (a Set's clear() allocates a new table): this runs for every task
// of a profiled compute.
const maxDepth = 32
const listed = 64
const seenList: Array<object | null> = []
let seenCount = 0
let seenSet: Set<object> | null = null
let accBytes = 0
let accChunks = 0

/** Marks `x` seen; true when it already was. */
const alreadySeen = (x: object): boolean => {
  if (seenSet !== null) {
    if (seenSet.has(x)) return true
    seenSet.add(x)
    return false
  }
  for (let i = 0; i < seenCount; i++) if (seenList[i] === x) return true
  if (seenCount < listed) {
    seenList[seenCount++] = x
    return false
  }
  seenSet = new Set<object>()
  for (let i = 0; i < seenCount; i++) seenSet.add(seenList[i]!)
  seenSet.add(x)
  return false
}

const walk = (r: object): void => {
  accBytes = 0
  accChunks = 0
  alreadySeen(r)
  try {
    addInside(r, maxDepth)
  } finally {
    // drop the references: the walked result must not be kept alive by this module
    for (let i = 0; i < seenCount; i++) seenList[i] = null
    seenCount = 0
    seenSet = null
  }
}

const addInside = (r: object, depth: number): void => {
  if (Array.isArray(r)) {
    for (let i = 0; i < r.length; i++) addValue(r[i], depth)
  } else {
    for (const k in r) if (Object.hasOwn(r, k)) addValue((r as Record<string, unknown>)[k], depth)
  }
}

const addValue = (x: unknown, depth: number): void => {
  switch (typeof x) {
    case "number":
    case "bigint":
      accBytes += 8
      return
    case "boolean":
      accBytes += 1
      return
    case "string":
      accBytes += x.length * 2
      return
    case "object":
      break
    default:
      return
  }
  if (x === null || alreadySeen(x)) return
  if (ArrayBuffer.isView(x)) {
    accBytes += x.byteLength
    accChunks++
  } else if (Chunk.isChunk(x)) {
    accBytes += Chunk.nbytes(x)
    accChunks++
  } else if (x instanceof ArrayBuffer || x instanceof SharedArrayBuffer) {
    accBytes += x.byteLength
  } else if (depth > 1 && (Array.isArray(x) || isPlainObject(x))) {
    addInside(x, depth - 1)
  }
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

/**
 * What a structured clone of `value` refuses, in words (`a function`, `an object holding a
 * function at .f`), or undefined when it clones.
 *
 * @since 0.1.0
 * @internal
 */
export const unsendable = (value: unknown): string | undefined => {
  try {
    structuredClone(value)
    return undefined
  } catch {
    return findUnsendable(value, "", 0, new Set()) ?? `${article(value)} that cannot be cloned`
  }
}

const article = (u: unknown): string => {
  const t = typeof u === "object" && u !== null ? ((u as object).constructor?.name ?? "object") : typeof u
  return `${/^[aeiouAEIOU]/.test(t) ? "an" : "a"} ${t}`
}

const findUnsendable = (u: unknown, path: string, depth: number, seen: Set<object>): string | undefined => {
  if (typeof u === "function") return path === "" ? "a function" : `a function at ${path}`
  if (typeof u === "symbol") return path === "" ? "a symbol" : `a symbol at ${path}`
  if (typeof u !== "object" || u === null || depth > 8 || seen.has(u)) return undefined
  seen.add(u)
  if (u instanceof Promise || u instanceof WeakMap || u instanceof WeakSet) return path === "" ? article(u) : `${article(u)} at ${path}`
  const entries: Array<[string, unknown]> = Array.isArray(u)
    ? u.map((v, i) => [`[${i}]`, v])
    : u instanceof Map
    ? [...u.entries()].map(([k, v]) => [`.get(${String(k)})`, v])
    : Object.keys(u).map((k) => [`.${k}`, (u as Record<string, unknown>)[k]])
  for (const [k, v] of entries) {
    const found = findUnsendable(v, path + k, depth + 1, seen)
    if (found !== undefined) return path === "" ? `${article(u)} holding ${found}` : found
  }
  return undefined
}

/**
 * Kernel loading and result handling shared by the in-process executor and the worker
 * threads: a per-thread module cache (each module is imported once), the move of
 * returned typed arrays / Chunks into shared memory, and the description of a result
 * (bytes, shape, dtype, type) for TaskRecords, and the check of a result against what its
 * task declared (`TaskSpec.output`), made where the kernel ran.
 *
 * @since 0.1.0
 * @internal
 */
import * as Chunk from "../Chunk.ts"
import * as Gpu from "../Gpu.ts"
import type { KernelFn } from "../Kernel.ts"
import type { TaskOutput } from "../TaskGraph.ts"

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
 * The environment variable that adds folders workers may import modules from (a list,
 * `path.delimiter`-separated): `tessera worker --allow-modules` and
 * `Executor.allowModules` set it, so worker threads and the worker processes of a local
 * cluster, started after, inherit it.
 *
 * @since 0.1.0
 * @internal
 */
export const ALLOW_MODULES_ENV = "TESSERA_ALLOW_MODULES"

/**
 * `node:` builtins a module URL may name: none. Tessera names no builtin as a kernel, a
 * worker plugin or a preload (its own modules import the builtins they use themselves).
 */
const allowedBuiltins: ReadonlySet<string> = new Set()

/** The folder above `src/` (the checkout, or the package's `dist/`): Tessera's own modules. */
const installRoot = new URL("../../../", import.meta.url)

/**
 * What a module URL is for, in {@link ModuleRefused}'s message.
 *
 * @since 0.1.0
 * @internal
 */
export type ModuleUse = "kernel" | "worker plugin" | "preload"

/**
 * A module URL a worker will not import: not a `file:` URL (`data:`, `http:`, `node:`,
 * a bare name), or a file outside the folders it may import from ({@link moduleRoots}).
 *
 * @since 0.1.0
 * @internal
 */
export class ModuleRefused extends Error {
  override readonly name = "ModuleRefused"
  /** the URL (its first 200 characters) */
  readonly url: string
  readonly use: ModuleUse
  readonly why: string
  constructor(url: string, use: ModuleUse, why: string) {
    const shown = url.length > 200 ? `${url.slice(0, 200)}…` : url
    super(`${use} module ${shown} refused: ${why}`)
    this.url = shown
    this.use = use
    this.why = why
  }
}

/**
 * The folders a worker may import kernel, worker-plugin and preload modules from: its
 * working directory, Tessera's own install, the folder of the process's main script (a
 * pipeline script run with `node`), and those in `TESSERA_ALLOW_MODULES`
 * ({@link ALLOW_MODULES_ENV}; `tessera run` adds its file's folder there, `tessera
 * worker --allow-modules` its folders). The same in every thread of a process.
 *
 * @since 0.1.0
 * @internal
 */
export const moduleRoots = (): ReadonlyArray<string> => {
  const path = process.getBuiltinModule("node:path")
  const roots = [process.cwd(), process.getBuiltinModule("node:url").fileURLToPath(installRoot)]
  const main = process.argv[1]
  if (main !== undefined && main !== "") roots.push(path.dirname(path.resolve(main)))
  for (const d of (process.env[ALLOW_MODULES_ENV] ?? "").split(path.delimiter)) if (d !== "") roots.push(d)
  return [...new Set(roots.map((r) => path.resolve(r)))]
}

/**
 * Adds `dirs` to the folders workers may import modules from ({@link moduleRoots}), for
 * this process and the worker threads and processes it starts from now on.
 *
 * @since 0.1.0
 * @internal
 */
export const allowModuleDirs = (dirs: Iterable<string>): void => {
  const path = process.getBuiltinModule("node:path")
  const have = (process.env[ALLOW_MODULES_ENV] ?? "").split(path.delimiter).filter((d) => d !== "")
  for (const d of dirs) if (d !== "" && !have.includes(path.resolve(d))) have.push(path.resolve(d))
  process.env[ALLOW_MODULES_ENV] = have.join(path.delimiter)
}

/** `p` with its links resolved, or as given when it does not exist. */
const realOr = (p: string): string => {
  try {
    return process.getBuiltinModule("node:fs").realpathSync(p)
  } catch {
    return p
  }
}

/** Whether `file` is `root` or inside it. */
const inside = (file: string, root: string): boolean => {
  const sep = process.getBuiltinModule("node:path").sep
  return file === root || file.startsWith(root.endsWith(sep) ? root : root + sep)
}

/**
 * The one check every module a worker imports by URL passes first (kernels, worker
 * plugins, preloads): returns `url` when it is a `file:` URL of a file inside
 * {@link moduleRoots} (as written, or with links resolved), else throws
 * {@link ModuleRefused} naming the URL and why. So no client of a scheduler can make a
 * worker run code that is not on its disk (a `data:` URL), fetch code (`http:`), or
 * import a builtin as a kernel.
 *
 * @since 0.1.0
 * @internal
 */
export const checkModuleUrl = (url: string, use: ModuleUse): string => {
  if (typeof url !== "string" || !URL.canParse(url)) {
    throw new ModuleRefused(String(url), use, "not a URL (workers import modules by file: URL only)")
  }
  const u = new URL(url)
  if (u.protocol === "node:" && allowedBuiltins.has(u.href)) return url
  if (u.protocol !== "file:") {
    throw new ModuleRefused(url, use, `a ${u.protocol} URL: workers import only file: URLs, code on their own disk`)
  }
  if (u.host !== "" && u.host !== "localhost") throw new ModuleRefused(url, use, `a file: URL of another host (${u.host})`)
  const path = process.getBuiltinModule("node:path")
  const file = path.resolve(process.getBuiltinModule("node:url").fileURLToPath(u))
  const roots = moduleRoots()
  if (roots.some((r) => inside(file, r))) return url
  const real = realOr(file)
  if (roots.some((r) => inside(real, realOr(r)) || inside(file, realOr(r)))) return url
  throw new ModuleRefused(
    url,
    use,
    `${file} is outside the folders this worker may import from (${roots.join(", ")}); allow its folder with \`tessera worker --allow-modules DIR\`, Executor.allowModules or ${ALLOW_MODULES_ENV}`
  )
}

/**
 * `import(url)` after {@link checkModuleUrl}: how workers import worker plugins and
 * preloads (kernels go through {@link loadKernel}, which checks the same way).
 *
 * @since 0.1.0
 * @internal
 */
export const importChecked = (url: string, use: ModuleUse): Promise<Record<string, unknown>> => {
  try {
    checkModuleUrl(url, use)
  } catch (e) {
    return Promise.reject(e)
  }
  return import(url) as Promise<Record<string, unknown>>
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
 * A task's declared output as four ints (`OUT_STRIDE`), as batches carry it to workers:
 * dtype code (index in `dtypeCodes`; -1: nothing declared, no check), number of
 * dimensions, rows, and elements per row (the product of the other dimensions).
 *
 * @since 0.1.0
 * @internal
 */
export const OUT_STRIDE = 4

/** @since 0.1.0 @internal */
export const dtypeCodes: ReadonlyArray<Chunk.DType> = ["float32", "float64", "int32", "int64", "uint8"]

/**
 * Writes `output` (or "nothing declared") at `o` of `into`.
 *
 * @since 0.1.0
 * @internal
 */
export const encodeOutput = (output: TaskOutput | undefined, into: Int32Array, o: number): void => {
  if (output === undefined) {
    into[o] = -1
    return
  }
  let inner = 1
  for (let d = 1; d < output.shape.length; d++) inner *= output.shape[d]!
  into[o] = dtypeCodes.indexOf(output.dtype)
  into[o + 1] = output.shape.length
  into[o + 2] = output.shape[0] ?? 1
  into[o + 3] = inner
}

/**
 * Null when `r` is the chunk declared at `o` of `out` (or nothing is declared there),
 * else a description of what `r` is. Cheap: a few comparisons on a chunk's fields.
 *
 * @since 0.1.0
 * @internal
 */
export const outputMismatch = (r: unknown, out: Int32Array, o: number): string | null => {
  const code = out[o]!
  if (code < 0) return null
  if (Chunk.isChunk(r)) {
    const s = r.shape
    if (r.dtype === dtypeCodes[code] && s.length === out[o + 1] && s[0] === out[o + 2]) {
      let inner = 1
      for (let d = 1; d < s.length; d++) inner *= s[d]!
      if (inner === out[o + 3] && r.data.length === out[o + 2]! * inner) return null
    }
  }
  return describeValue(r)
}

/**
 * Checks a result against a declared output; null when it matches (or nothing is
 * declared), else what it is. The in-process form of `outputMismatch`, for executors
 * that hold the spec (the sync runner, a cluster worker's local graph).
 *
 * @since 0.1.0
 * @internal
 */
export const checkOutput = (r: unknown, output: TaskOutput | undefined): string | null => {
  if (output === undefined) return null
  if (Chunk.isChunk(r) && r.dtype === output.dtype && r.shape.length === output.shape.length) {
    let n = 1
    let same = true
    for (let d = 0; d < r.shape.length; d++) {
      if (r.shape[d] !== output.shape[d]) same = false
      n *= r.shape[d]!
    }
    if (same && r.data.length === n) return null
  }
  return describeValue(r)
}

/**
 * A declared output in words: `a Chunk of float64 [300, 4]`.
 *
 * @since 0.1.0
 * @internal
 */
export const describeOutput = (output: TaskOutput): string => `a Chunk of ${output.dtype} [${output.shape.join(", ")}]`

/** What a kernel returned, in words, for a BadOutput error. */
const describeValue = (r: unknown): string => {
  if (r === null || r === undefined) return String(r)
  if (typeof r !== "object") return `a ${typeof r} (${String(r).slice(0, 40)})`
  if (Chunk.isChunk(r)) {
    let n = 1
    for (const d of r.shape) n *= d
    return `a Chunk of ${r.dtype} [${r.shape.join(", ")}]${n !== r.data.length ? ` whose data has ${r.data.length} elements` : ""}`
  }
  if (ArrayBuffer.isView(r)) {
    return `a ${r.constructor.name} of ${(r as Chunk.TypedArray).length ?? r.byteLength} elements (not a Chunk: return { dtype, shape, data })`
  }
  const c = r as { dtype?: unknown; shape?: unknown; data?: unknown }
  if ("dtype" in c || "shape" in c || "data" in c) {
    const data = ArrayBuffer.isView(c.data) ? `a ${c.data.constructor.name}` : typeof c.data
    return `an object with dtype ${JSON.stringify(c.dtype)}, shape ${JSON.stringify(c.shape)} and data ${data} (not a valid Chunk: the data must be the dtype's typed array)`
  }
  if (Array.isArray(r)) return `an Array of ${r.length} elements`
  return `an object (${(r as object).constructor?.name ?? "Object"})`
}

/**
 * A kernel's result did not match its declaration: thrown inside a worker's task loop
 * and turned into a `BatchError` with `output` set.
 *
 * @since 0.1.0
 * @internal
 */
export class OutputMismatch extends Error {
  readonly actual: string
  constructor(actual: string) {
    super(`returned ${actual}`)
    this.actual = actual
  }
}

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

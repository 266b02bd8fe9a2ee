/**
 * NumPy `.npy` reader (format versions 1, 2 and 3; C order only) for the dtypes Tessera
 * chunks hold: float32, float64, int32, int64, uint8 (little-endian). Runs inside the
 * engine as a kernel so that src/dsl stays free of I/O. Leaves out: Fortran order,
 * big-endian data, structured / object dtypes (all rejected with a typed error).
 *
 * Hostile input: the header is parsed as a Python literal (`pyLiteral.ts`), its length is
 * capped ({@link MAX_HEADER_BYTES}), and shape product x itemsize must equal the data
 * bytes exactly (in BigInt) before anything is allocated, so memory is bounded by the
 * file. Every failure is an {@link NpyError} naming the file and the byte offset.
 *
 * @since 0.1.0
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as Chunk from "../../engine/Chunk.ts"
import { reportBytesRead } from "../../engine/TaskIo.ts"
import * as PyLiteral from "./pyLiteral.ts"

/**
 * A bad or unsupported `.npy` file; the message names the file, what is wrong and, where
 * the problem lies at one place, the byte offset (`offset`, also in the detail).
 *
 * @since 0.1.0
 * @category errors
 */
export class NpyError extends Error {
  readonly _tag = "NpyError"
  readonly file: string
  readonly reason: "NotFound" | "Unreadable" | "NotNpy" | "Truncated" | "SizeMismatch" | "FortranOrder" | "UnsupportedDType" | "BadHeader"
  readonly detail: string
  readonly offset: number | undefined
  constructor(file: string, reason: NpyError["reason"], detail: string, offset?: number) {
    super(`${file}: ${reason}: ${detail}`)
    this.file = file
    this.reason = reason
    this.detail = detail
    this.offset = offset
  }
}

const DTYPES: Record<string, Chunk.DType> = {
  "<f4": "float32",
  "<f8": "float64",
  "<i4": "int32",
  "<i8": "int64",
  "|u1": "uint8",
  "<u1": "uint8"
}

/**
 * The longest header accepted, in bytes. NumPy writes a few hundred at most (its own
 * reader refuses more than 10,000 unless told otherwise); a larger claim is a bad file,
 * not a reason to read megabytes of it.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_HEADER_BYTES = 1 << 20

/**
 * Parsed `.npy` header.
 *
 * @since 0.1.0
 * @category models
 */
export interface NpyHeader {
  readonly dtype: Chunk.DType
  readonly shape: ReadonlyArray<number>
  readonly dataOffset: number
}

/** The byte offset of character `index` of the header text (v3 headers are UTF-8). */
const byteAt = (text: string, index: number, start: number, utf8: boolean): number =>
  start + (utf8 ? new TextEncoder().encode(text.slice(0, index)).length : index)

/**
 * Parses and validates the header of `.npy` bytes: the preamble, then the header as a
 * Python literal (pyLiteral.ts, not regexes) holding exactly the keys `descr`,
 * `fortran_order` and `shape`, as NumPy requires. Data size is checked by
 * {@link checkSize}.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseHeader = (file: string, bytes: Uint8Array): NpyHeader => {
  const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]
  if (bytes.length < 10 || magic.some((m, i) => bytes[i] !== m)) {
    throw new NpyError(file, "NotNpy", "missing the \\x93NUMPY magic", 0)
  }
  const major = bytes[6]!
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let headerLen: number
  let start: number
  if (major === 1) {
    headerLen = view.getUint16(8, true)
    start = 10
  } else if (major === 2 || major === 3) {
    if (bytes.length < 12) throw new NpyError(file, "Truncated", `file ends at byte ${bytes.length} inside the preamble`, bytes.length)
    headerLen = view.getUint32(8, true)
    start = 12
  } else {
    throw new NpyError(file, "NotNpy", `format version ${major} is not 1, 2 or 3 (byte 6)`, 6)
  }
  if (headerLen > MAX_HEADER_BYTES) {
    throw new NpyError(file, "BadHeader", `header length ${headerLen} (byte 8) is over the ${MAX_HEADER_BYTES}-byte limit`, 8)
  }
  if (start + headerLen > bytes.length) {
    throw new NpyError(file, "Truncated", `header needs ${start + headerLen} bytes, file has ${bytes.length}`, bytes.length)
  }
  const utf8 = major === 3
  let text: string
  try {
    text = new TextDecoder(utf8 ? "utf-8" : "latin1", { fatal: true }).decode(bytes.subarray(start, start + headerLen))
  } catch {
    throw new NpyError(file, "BadHeader", `header at byte ${start} is not valid UTF-8`, start)
  }
  const bad = (index: number, what: string): NpyError => {
    const at = byteAt(text, index, start, utf8)
    return new NpyError(file, "BadHeader", `${what} at byte ${at}`, at)
  }
  let lit: PyLiteral.Literal
  try {
    lit = PyLiteral.parse(text)
  } catch (e) {
    if (e instanceof PyLiteral.LiteralError) throw bad(e.position, `header is not a Python literal: ${e.problem}`)
    throw e
  }
  if (lit._tag !== "dict") throw bad(lit.at, `header is a ${lit._tag}, not a dict`)
  const fields = new Map<string, PyLiteral.Literal>()
  for (const [k, v] of lit.entries) {
    if (k._tag !== "str") throw bad(k.at, `header dict has a ${k._tag} key`)
    if (!["descr", "fortran_order", "shape"].includes(k.value)) throw bad(k.at, `header dict has key '${k.value}' (NumPy writes only descr, fortran_order and shape)`)
    if (fields.has(k.value)) throw bad(k.at, `header dict repeats key '${k.value}'`)
    fields.set(k.value, v)
  }
  if (fields.size !== 3) {
    const missing = ["descr", "fortran_order", "shape"].filter((k) => !fields.has(k))
    throw bad(lit.at, `header dict lacks ${missing.join(", ")}`)
  }
  const descr = fields.get("descr")!
  const fortran = fields.get("fortran_order")!
  const shapeLit = fields.get("shape")!
  if (fortran._tag !== "bool") throw bad(fortran.at, `fortran_order is a ${fortran._tag}, not True or False`)
  if (shapeLit._tag !== "tuple") throw bad(shapeLit.at, `shape is a ${shapeLit._tag}, not a tuple`)
  const shape = shapeLit.items.map((d) => (d._tag === "int" && d.value >= 0 ? d.value : -1))
  const wrong = shape.indexOf(-1)
  if (wrong >= 0) throw bad(shapeLit.items[wrong]!.at, `shape (${shapeLit.items.map(show).join(", ")}) holds ${show(shapeLit.items[wrong]!)}, not a non-negative integer`)
  if (descr._tag !== "str") {
    throw new NpyError(file, "UnsupportedDType", `dtype ${show(descr)} (structured dtypes are not supported; supported: <f4 <f8 <i4 <i8 |u1)`, byteAt(text, descr.at, start, utf8))
  }
  if (fortran.value) throw new NpyError(file, "FortranOrder", "Fortran-ordered arrays are not supported; save with C order", byteAt(text, fortran.at, start, utf8))
  const dtype = DTYPES[descr.value]
  if (dtype === undefined) {
    throw new NpyError(file, "UnsupportedDType", `dtype '${descr.value}' (supported: <f4 <f8 <i4 <i8 |u1)`, byteAt(text, descr.at, start, utf8))
  }
  return { dtype, shape, dataOffset: start + headerLen }
}

const show = (l: PyLiteral.Literal): string =>
  l._tag === "str" ? `'${l.value}'` : l._tag === "int" ? String(l.value) : l._tag === "bool" ? (l.value ? "True" : "False") : l._tag === "none" ? "None" : `<${l._tag}>`

const itemSize: Record<Chunk.DType, number> = { float32: 4, float64: 8, int32: 4, int64: 8, uint8: 1 }

/**
 * Checks that a file of `byteLength` bytes holds exactly the data its header announces:
 * shape product x itemsize == data bytes, computed without overflow (a shape whose byte
 * count passes 2^53 fails as too large, whatever the file).
 *
 * @since 0.1.0
 * @category encoding
 */
export const checkSize = (file: string, h: NpyHeader, byteLength: number): void => {
  const exact = h.shape.reduce((a, b) => a * BigInt(b), BigInt(itemSize[h.dtype]))
  const have = byteLength - h.dataOffset
  const shape = `shape (${h.shape.join(", ")})`
  if (exact > BigInt(have)) {
    throw new NpyError(file, "Truncated", `${shape} needs ${exact} data bytes, file has ${have} (data from byte ${h.dataOffset})`, h.dataOffset)
  }
  const need = Number(exact)
  if (have > need) throw new NpyError(file, "SizeMismatch", `${shape} needs ${need} data bytes, file has ${have} (extra bytes from byte ${h.dataOffset + need})`, h.dataOffset + need)
}

/**
 * Decodes whole `.npy` bytes into row chunks of at most `chunkRows` rows (SAB-backed).
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodeUnsafe = (file: string, bytes: Uint8Array, chunkRows = Infinity): Array<Chunk.Chunk> => {
  const h = parseHeader(file, bytes)
  checkSize(file, h, bytes.length)
  const rows = h.shape.length === 0 ? 1 : h.shape[0]!
  const rowItems = h.shape.slice(1).reduce((a, b) => a * b, 1)
  const out: Array<Chunk.Chunk> = []
  const step = Math.max(1, Math.min(rows, chunkRows))
  for (let r0 = 0; r0 < rows || (rows === 0 && out.length === 0); r0 += step) {
    const r1 = Math.min(rows, r0 + step)
    const shape = h.shape.length === 0 ? [] : [r1 - r0, ...h.shape.slice(1)]
    const c = Chunk.allocShared(h.dtype, shape)
    const from = h.dataOffset + r0 * rowItems * itemSize[h.dtype]
    new Uint8Array(c.data.buffer, c.data.byteOffset, c.data.byteLength).set(
      bytes.subarray(from, from + (r1 - r0) * rowItems * itemSize[h.dtype])
    )
    out.push(c)
    if (rows === 0) break
  }
  return out
}

/**
 * Kernel: reads a `.npy` file (path or file URL) into row chunks of `chunkRows` rows.
 *
 * @since 0.1.0
 * @category kernels
 */
export const readNpy = (path: string, chunkRows = Infinity): Array<Chunk.Chunk> => {
  let bytes: Uint8Array
  try {
    bytes = NodeFs.readFileSync(fsPath(path))
    reportBytesRead(bytes.length)
  } catch (e) {
    throw cannotOpen(path, e)
  }
  return decodeUnsafe(path, bytes, chunkRows)
}

const fsPath = (path: string): string | URL => (path.startsWith("file:") ? new URL(path) : path)

/** Reads up to `n` bytes at `position`; fewer at the end of the file. */
const readAtUnsafe = (fd: number, n: number, position: number): Uint8Array => {
  const out = new Uint8Array(n)
  let got = 0
  while (got < n) {
    const r = NodeFs.readSync(fd, out, got, n - got, position + got)
    if (r === 0) break
    got += r
  }
  reportBytesRead(got)
  return out.subarray(0, got)
}

/**
 * Why a file could not be opened: `NotFound` (no such file; the detail says which
 * directory a relative path was resolved in, the process's, which on a cluster worker is
 * not the driver's) or `Unreadable` (permissions, a directory, …), naming it.
 *
 * @since 0.1.0
 * @category errors
 */
export const cannotOpen = (path: string, e: unknown): NpyError => {
  const code = (e as { code?: unknown }).code
  if (code === "ENOENT" || code === "ENOTDIR") {
    const where = path.startsWith("file:") || NodePath.isAbsolute(path) ? "" : ` (relative to ${process.cwd()})`
    return new NpyError(path, "NotFound", `no such file${where}`)
  }
  return new NpyError(path, "Unreadable", `cannot read: ${(e as Error).message}`)
}

/** Opens a file for reading; one that cannot be opened fails `NotFound` / `Unreadable` naming it. */
const openUnsafe = (path: string): number => {
  try {
    return NodeFs.openSync(fsPath(path), "r")
  } catch (e) {
    throw cannotOpen(path, e)
  }
}

/**
 * Reads and validates only the header of a `.npy` file (and its size, with fstat):
 * what a client needs to plan row chunks before any task runs.
 *
 * @since 0.1.0
 * @category encoding
 */
export const describeNpyUnsafe = (path: string): NpyHeader => {
  const fd = openUnsafe(path)
  try {
    const size = NodeFs.fstatSync(fd).size
    const pre = readAtUnsafe(fd, 12, 0)
    const view = new DataView(pre.buffer, pre.byteOffset, pre.byteLength)
    // header length from the preamble (v1: u16 at 8; v2/3: u32 at 8); parseHeader validates it
    const headerEnd = pre.length < 10 ? pre.length : pre[6] === 1 ? 10 + view.getUint16(8, true) : pre.length < 12 ? pre.length : 12 + view.getUint32(8, true)
    // a header claiming more than MAX_HEADER_BYTES fails on its preamble; read no more
    const h = parseHeader(path, readAtUnsafe(fd, Math.min(headerEnd, size, 12 + MAX_HEADER_BYTES), 0))
    checkSize(path, h, size)
    return h
  } finally {
    NodeFs.closeSync(fd)
  }
}

/**
 * Kernel: rows `[rowStart, rowStart + rows)` of a `.npy` file whose header was read by
 * {@link describeNpyUnsafe} (dtype, shape, dataOffset): reads only those bytes, at
 * their offset, into a shared chunk. A file that got shorter since fails `Truncated`.
 *
 * @since 0.1.0
 * @category kernels
 */
export const readNpyRows = (path: string, h: NpyHeader, rowStart: number, rows: number): Chunk.Chunk => {
  const rowBytes = h.shape.slice(1).reduce((a, b) => a * b, 1) * itemSize[h.dtype]
  const out = Chunk.allocShared(h.dtype, h.shape.length === 0 ? [] : [rows, ...h.shape.slice(1)])
  const target = new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.byteLength)
  const fd = openUnsafe(path)
  try {
    const from = h.dataOffset + rowStart * rowBytes
    let got = 0
    while (got < target.length) {
      const r = NodeFs.readSync(fd, target, got, target.length - got, from + got)
      if (r === 0) break
      got += r
    }
    reportBytesRead(got)
    if (got < target.length) {
      throw new NpyError(path, "Truncated", `rows ${rowStart}..${rowStart + rows} need bytes ${from}..${from + target.length}, file ends at ${from + got}`)
    }
  } finally {
    NodeFs.closeSync(fd)
  }
  return out
}

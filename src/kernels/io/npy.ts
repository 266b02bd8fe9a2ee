/**
 * NumPy `.npy` reader (format versions 1, 2 and 3; C order only) for the dtypes Tessera
 * chunks hold: float32, float64, int32, int64, uint8 (little-endian). Runs inside the
 * engine as a kernel so that src/dsl stays free of I/O. Leaves out: Fortran order,
 * big-endian data, structured / object dtypes (all rejected with a typed error).
 *
 * @since 0.1.0
 */
import * as NodeFs from "node:fs"
import * as Chunk from "../../engine/Chunk.ts"

/**
 * A bad or unsupported `.npy` file; the message names the file and what is wrong.
 *
 * @since 0.1.0
 * @category errors
 */
export class NpyError extends Error {
  readonly _tag = "NpyError"
  readonly file: string
  readonly reason: "NotNpy" | "Truncated" | "SizeMismatch" | "FortranOrder" | "UnsupportedDType" | "BadHeader"
  readonly detail: string
  constructor(file: string, reason: NpyError["reason"], detail: string) {
    super(`${file}: ${reason}: ${detail}`)
    this.file = file
    this.reason = reason
    this.detail = detail
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

/**
 * Parses and validates the header of `.npy` bytes against the byte length.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseHeader = (file: string, bytes: Uint8Array): NpyHeader => {
  const magic = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]
  if (bytes.length < 10 || magic.some((m, i) => bytes[i] !== m)) {
    throw new NpyError(file, "NotNpy", "missing the \\x93NUMPY magic")
  }
  const major = bytes[6]!
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let headerLen: number
  let start: number
  if (major === 1) {
    headerLen = view.getUint16(8, true)
    start = 10
  } else if (major === 2 || major === 3) {
    if (bytes.length < 12) throw new NpyError(file, "Truncated", `file ends at byte ${bytes.length} inside the preamble`)
    headerLen = view.getUint32(8, true)
    start = 12
  } else {
    throw new NpyError(file, "NotNpy", `format version ${major} is not 1, 2 or 3`)
  }
  if (start + headerLen > bytes.length) {
    throw new NpyError(file, "Truncated", `header needs ${start + headerLen} bytes, file has ${bytes.length}`)
  }
  const text = new TextDecoder(major === 3 ? "utf-8" : "latin1").decode(bytes.subarray(start, start + headerLen))
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(text)?.[1]
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(text)?.[1]
  const shapeText = /'shape'\s*:\s*\(([^)]*)\)/.exec(text)?.[1]
  if (descr === undefined || fortran === undefined || shapeText === undefined) {
    throw new NpyError(file, "BadHeader", `header dict lacks descr / fortran_order / shape: ${text.trim()}`)
  }
  if (fortran === "True") throw new NpyError(file, "FortranOrder", "Fortran-ordered arrays are not supported; save with C order")
  const dtype = DTYPES[descr]
  if (dtype === undefined) {
    throw new NpyError(file, "UnsupportedDType", `dtype '${descr}' (supported: <f4 <f8 <i4 <i8 |u1)`)
  }
  const shape = shapeText.split(",").map((s) => s.trim()).filter((s) => s.length > 0).map(Number)
  if (shape.some((n) => !Number.isInteger(n) || n < 0)) throw new NpyError(file, "BadHeader", `bad shape (${shapeText})`)
  return { dtype, shape, dataOffset: start + headerLen }
}

const itemSize: Record<Chunk.DType, number> = { float32: 4, float64: 8, int32: 4, int64: 8, uint8: 1 }

/**
 * Checks that a file of `byteLength` bytes holds exactly the data its header announces.
 *
 * @since 0.1.0
 * @category parsing
 */
export const checkSize = (file: string, h: NpyHeader, byteLength: number): void => {
  const rows = h.shape.length === 0 ? 1 : h.shape[0]!
  const need = rows * h.shape.slice(1).reduce((a, b) => a * b, 1) * itemSize[h.dtype]
  const have = byteLength - h.dataOffset
  if (have < need) throw new NpyError(file, "Truncated", `shape (${h.shape.join(", ")}) needs ${need} data bytes, file has ${have}`)
  if (have > need) throw new NpyError(file, "SizeMismatch", `shape (${h.shape.join(", ")}) needs ${need} data bytes, file has ${have}`)
}

/**
 * Decodes whole `.npy` bytes into row chunks of at most `chunkRows` rows (SAB-backed).
 *
 * @since 0.1.0
 * @category parsing
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
  } catch (e) {
    throw new NpyError(path, "NotNpy", `cannot read: ${(e as Error).message}`)
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
  return out.subarray(0, got)
}

/** Opens a file for reading; a file that cannot be opened fails `NotNpy` naming it. */
const openUnsafe = (path: string): number => {
  try {
    return NodeFs.openSync(fsPath(path), "r")
  } catch (e) {
    throw new NpyError(path, "NotNpy", `cannot read: ${(e as Error).message}`)
  }
}

/**
 * Reads and validates only the header of a `.npy` file (and its size, with fstat):
 * what a client needs to plan row chunks before any task runs.
 *
 * @since 0.1.0
 * @category parsing
 */
export const describeNpyUnsafe = (path: string): NpyHeader => {
  const fd = openUnsafe(path)
  try {
    const size = NodeFs.fstatSync(fd).size
    const pre = readAtUnsafe(fd, 12, 0)
    const view = new DataView(pre.buffer, pre.byteOffset, pre.byteLength)
    // header length from the preamble (v1: u16 at 8; v2/3: u32 at 8); parseHeader validates it
    const headerEnd = pre.length < 10 ? pre.length : pre[6] === 1 ? 10 + view.getUint16(8, true) : pre.length < 12 ? pre.length : 12 + view.getUint32(8, true)
    const h = parseHeader(path, readAtUnsafe(fd, Math.min(headerEnd, size), 0))
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
    if (got < target.length) {
      throw new NpyError(path, "Truncated", `rows ${rowStart}..${rowStart + rows} need bytes ${from}..${from + target.length}, file ends at ${from + got}`)
    }
  } finally {
    NodeFs.closeSync(fd)
  }
  return out
}

/**
 * Arrow IPC reader (file and stream formats) for numeric columns: float32, float64,
 * int32, int64 and uint8, all of one dtype, without nulls. `describeArrow` reads the
 * schema and every record batch's row count (client side, one batch in memory at a
 * time); the `readArrowRows` kernel returns any row range as one chunk, whatever the
 * file's record batches are: with the file format it reads only the batches that
 * overlap the range (random access through the footer); with the stream format it
 * reads batches from the start until the range is covered.
 *
 * Leaves out: nullable data, mixed column types (no implicit casts), dictionary,
 * decimal, date and nested types (all rejected with a typed error naming the file).
 *
 * @since 0.1.0
 */
import * as NodeFsP from "node:fs/promises"
import { DataType, RecordBatchReader } from "apache-arrow"
import type { RecordBatch } from "apache-arrow"
import * as Chunk from "../../engine/Chunk.ts"
import type { ArrowInfo } from "./DatasetSource.ts"
import { DatasetFileError } from "./DatasetSource.ts"

const fsPath = (path: string): string | URL => (path.startsWith("file:") ? new URL(path) : path)

/**
 * The chunk dtype of an Arrow type, if it is one Tessera holds.
 *
 * @since 0.1.0
 * @category getters
 */
export const dtypeOfArrow = (t: DataType): Chunk.DType | undefined => {
  if (DataType.isFloat(t)) return t.precision === 2 ? "float64" : t.precision === 1 ? "float32" : undefined
  if (DataType.isInt(t)) {
    if (t.isSigned && t.bitWidth === 32) return "int32"
    if (t.isSigned && t.bitWidth === 64) return "int64"
    if (!t.isSigned && t.bitWidth === 8) return "uint8"
  }
  return undefined
}

const fail = (file: string, problem: DatasetFileError["problem"], detail: string) => new DatasetFileError({ file, problem, detail })

/** Opens an IPC reader over the file; anything the Arrow reader rejects is `NotArrow`. */
const open = async (path: string) => {
  let handle: NodeFsP.FileHandle
  try {
    handle = await NodeFsP.open(fsPath(path), "r")
  } catch (e) {
    throw fail(path, "Unreadable", (e as Error).message)
  }
  try {
    const reader = await RecordBatchReader.from(handle)
    await reader.open()
    return { handle, reader }
  } catch (e) {
    await handle.close()
    throw fail(path, "NotArrow", `not an Arrow IPC file or stream (${(e as Error).message})`)
  }
}

/**
 * Describes an Arrow IPC file: dtype and shape of the selected numeric columns and the
 * row count of every record batch. Fails with a {@link DatasetFileError} naming the file.
 *
 * @since 0.1.0
 * @category parsing
 */
export const describeArrow = async (path: string, columns?: ReadonlyArray<string>): Promise<ArrowInfo> => {
  const { handle, reader } = await open(path)
  try {
    const fields = reader.schema.fields
    const names = columns ?? fields.map((f) => f.name)
    if (names.length === 0) throw fail(path, "UnknownColumn", "the file has no columns")
    let dtype: Chunk.DType | undefined
    const indices = names.map((name) => {
      const i = fields.findIndex((f) => f.name === name)
      if (i < 0) throw fail(path, "UnknownColumn", `no column "${name}" (columns: ${fields.map((f) => f.name).join(", ")})`)
      const t = dtypeOfArrow(fields[i]!.type)
      if (t === undefined) {
        throw fail(path, "UnsupportedDType", `column "${name}" is ${fields[i]!.type} (supported: Float32, Float64, Int32, Int64, Uint8)`)
      }
      if (dtype !== undefined && t !== dtype) {
        throw fail(path, "MixedDTypes", `column "${name}" is ${t}, earlier columns are ${dtype}; read them separately`)
      }
      dtype = t
      return i
    })
    const batchRows: Array<number> = []
    try {
      for await (const batch of reader) {
        for (const [j, i] of indices.entries()) {
          const nulls = batch.getChildAt(i)?.nullCount ?? 0
          if (nulls > 0) throw fail(path, "NullValues", `column "${names[j]}" has ${nulls} nulls in record batch ${batchRows.length}`)
        }
        batchRows.push(batch.numRows)
      }
    } catch (e) {
      if (e instanceof DatasetFileError) throw e
      throw fail(path, "Truncated", `record batch ${batchRows.length} cannot be read (${(e as Error).message})`)
    }
    const rows = batchRows.reduce((a, b) => a + b, 0)
    return {
      format: "arrow",
      ipc: reader.isFile() ? "file" : "stream",
      path,
      dtype: dtype!,
      shape: names.length === 1 ? [rows] : [rows, names.length],
      columns: names,
      batchRows
    }
  } finally {
    await reader.cancel().catch(() => undefined)
    await handle.close().catch(() => undefined)
  }
}

/** Copies rows [from, to) of a batch's columns into `out` at row `at` (row-major). */
const copyRows = (batch: RecordBatch, indices: ReadonlyArray<number>, from: number, to: number, out: Chunk.Chunk, at: number): void => {
  const c = indices.length
  const target = out.data as unknown as { [i: number]: number | bigint }
  for (let j = 0; j < c; j++) {
    const values = batch.getChildAt(indices[j]!)!.toArray() as unknown as ArrayLike<number | bigint>
    // hot loop: interleave one column into row-major order
    for (let r = from; r < to; r++) target[(at + r - from) * c + j] = values[r]!
  }
}

/**
 * Kernel: rows `[rowStart, rowStart + rows)` of the columns `info` describes, as one
 * shared chunk ([rows] for one column, [rows, columns] otherwise).
 *
 * @since 0.1.0
 * @category kernels
 */
export const readArrowRows = async (info: ArrowInfo, rowStart: number, rows: number): Promise<Chunk.Chunk> => {
  const out = Chunk.allocShared(info.dtype, info.columns.length === 1 ? [rows] : [rows, info.columns.length])
  const { handle, reader } = await open(info.path)
  try {
    const indices = info.columns.map((name) => reader.schema.fields.findIndex((f) => f.name === name))
    if (indices.some((i) => i < 0)) throw fail(info.path, "UnknownColumn", `columns changed since the file was described`)
    const end = rowStart + rows
    let batchStart = 0
    const take = (batch: RecordBatch) => {
      const lo = Math.max(rowStart, batchStart)
      const hi = Math.min(end, batchStart + batch.numRows)
      if (hi > lo) copyRows(batch, indices, lo - batchStart, hi - batchStart, out, lo - rowStart)
    }
    if (reader.isFile()) {
      for (let b = 0; b < info.batchRows.length && batchStart < end; b++) {
        const n = info.batchRows[b]!
        if (batchStart + n > rowStart) {
          const batch = await reader.readRecordBatch(b)
          if (batch === null || batch.numRows !== n) throw fail(info.path, "Truncated", `record batch ${b} changed since the file was described`)
          take(batch)
        }
        batchStart += n
      }
    } else {
      for await (const batch of reader) {
        take(batch)
        batchStart += batch.numRows
        if (batchStart >= end) break
      }
    }
    if (batchStart < end) throw fail(info.path, "Truncated", `rows ${rowStart}..${end} asked, the file has ${batchStart}`)
    return out
  } finally {
    await reader.cancel().catch(() => undefined)
    await handle.close().catch(() => undefined)
  }
}

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
import { DataType, Message, MessageHeader, RecordBatchReader } from "apache-arrow"
import type { AsyncRecordBatchFileReader, Field, RecordBatch, RecordBatchFileReader, Schema } from "apache-arrow"
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

const openHandle = async (path: string): Promise<NodeFsP.FileHandle> => {
  try {
    return await NodeFsP.open(fsPath(path), "r")
  } catch (e) {
    throw fail(path, "Unreadable", (e as Error).message)
  }
}

/** Reads up to `n` bytes at `position` (fewer at the end of the file). */
const readAt = async (h: NodeFsP.FileHandle, position: number, n: number): Promise<Uint8Array> => {
  const out = new Uint8Array(n)
  let got = 0
  while (got < n) {
    const { bytesRead } = await h.read(out, got, n - got, position + got)
    if (bytesRead === 0) break
    got += bytesRead
  }
  return out.subarray(0, got)
}

/** An IPC message's metadata read at `pos`: the decoded message and where it ends (body included). */
interface Framed {
  readonly message: Message
  readonly start: number
  readonly end: number
}

/**
 * Reads the message framed at `pos` (`0xFFFFFFFF`, int32 metadata length, flatbuffer,
 * body; or the pre-1.0 framing without the continuation marker) without its body.
 * `null` at the end-of-stream marker or the end of the file.
 */
const readMessageAt = async (file: string, h: NodeFsP.FileHandle, pos: number, size: number): Promise<Framed | null> => {
  if (pos + 4 > size) return null
  const pre = await readAt(h, pos, 8)
  const view = new DataView(pre.buffer, pre.byteOffset, pre.byteLength)
  const marked = view.getInt32(0, true) === -1
  if (marked && pre.length < 8) throw fail(file, "Truncated", `message at byte ${pos} ends inside its length prefix`)
  const len = marked ? view.getInt32(4, true) : view.getInt32(0, true)
  const metaStart = pos + (marked ? 8 : 4)
  if (len === 0) return null
  if (len < 0 || metaStart + len > size) throw fail(file, "Truncated", `message at byte ${pos} claims ${len} metadata bytes, the file has ${size - metaStart} left`)
  let message: Message
  try {
    message = Message.decode(await readAt(h, metaStart, len))
  } catch (e) {
    throw fail(file, "NotArrow", `message at byte ${pos} cannot be decoded (${(e as Error).message})`)
  }
  const end = metaStart + len + message.bodyLength
  if (end > size) throw fail(file, "Truncated", `message at byte ${pos} needs bytes up to ${end}, the file has ${size}`)
  return { message, start: pos, end }
}

/** The part of a record batch message header read here. */
interface BatchHeader {
  readonly length: number
  readonly nodes: ReadonlyArray<{ readonly nullCount: number | bigint }>
}

/** Number of IPC field nodes a field takes (itself and its children, depth first). */
const nodeCount = (f: Field): number => 1 + (f.type.children ?? []).reduce((n: number, c: Field) => n + nodeCount(c), 0)

/**
 * Describes an Arrow IPC file or stream from its metadata only, never the data bodies:
 * the schema (the footer's, or the stream's first message), and each record batch's row
 * count and null counts from its message header (the footer's blocks locate them in the
 * file format; the stream is walked message by message, skipping bodies). Fails with a
 * {@link DatasetFileError} naming the file.
 *
 * @since 0.1.0
 * @category parsing
 */
export const describeArrow = async (path: string, columns?: ReadonlyArray<string>): Promise<ArrowInfo> => {
  const h = await openHandle(path)
  try {
    const size = (await h.stat()).size
    const isFile = new TextDecoder("latin1").decode(await readAt(h, 0, 6)) === "ARROW1"
    let schema: Schema
    const batches: Array<{ readonly at: number; readonly framed: Framed }> = []
    let streamPrefixEnd = 0
    if (isFile) {
      let footer: NonNullable<RecordBatchFileReader["footer"]>
      try {
        const reader = await RecordBatchReader.from(h)
        await reader.open()
        if (!reader.isFile() || reader.footer === null) throw new Error("no footer")
        footer = reader.footer
        schema = reader.schema
      } catch (e) {
        throw fail(path, "NotArrow", `not an Arrow IPC file (${(e as Error).message})`)
      }
      for (let b = 0; b < footer.numRecordBatches; b++) {
        const block = footer.getRecordBatch(b)!
        const framed = await readMessageAt(path, h, Number(block.offset), size)
        if (framed === null) throw fail(path, "Truncated", `record batch ${b} at byte ${block.offset} is missing`)
        batches.push({ at: framed.start, framed })
      }
    } else {
      const first = await readMessageAt(path, h, 0, size).catch((e: unknown) => {
        throw e instanceof DatasetFileError && e.problem === "Truncated" && size < 64
          ? fail(path, "NotArrow", "not an Arrow IPC file or stream")
          : e
      })
      if (first === null || first.message.headerType !== MessageHeader.Schema) {
        throw fail(path, "NotArrow", "not an Arrow IPC file or stream (no schema message first)")
      }
      schema = first.message.header() as Schema
      for (let pos = first.end; ;) {
        const framed = await readMessageAt(path, h, pos, size)
        if (framed === null) break
        if (framed.message.headerType === MessageHeader.RecordBatch) batches.push({ at: framed.start, framed })
        else if (batches.length === 0) streamPrefixEnd = framed.end // dictionaries before the first batch
        pos = framed.end
      }
      if (streamPrefixEnd === 0) streamPrefixEnd = first.end
    }
    const fields = schema.fields
    const names = columns ?? fields.map((f) => f.name)
    if (names.length === 0) throw fail(path, "UnknownColumn", "the file has no columns")
    const firstNode: Array<number> = []
    fields.reduce((n, f) => (firstNode.push(n), n + nodeCount(f)), 0)
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
    const batchRows = batches.map(({ framed }, b) => {
      const header = framed.message.header() as unknown as BatchHeader
      for (const [j, i] of indices.entries()) {
        const nulls = header.nodes[firstNode[i]!]?.nullCount ?? 0
        if (Number(nulls) > 0) throw fail(path, "NullValues", `column "${names[j]}" has ${nulls} nulls in record batch ${b}`)
      }
      return header.length
    })
    const rows = batchRows.reduce((a, b) => a + b, 0)
    return {
      format: "arrow",
      ipc: isFile ? "file" : "stream",
      path,
      dtype: dtype!,
      shape: names.length === 1 ? [rows] : [rows, names.length],
      columns: names,
      batchRows,
      batchOffsets: batches.map(({ framed }) => [framed.start, framed.end] as const),
      prefixEnd: streamPrefixEnd
    }
  } finally {
    await h.close().catch(() => undefined)
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
  const handle = await openHandle(info.path)
  let fileReader: AsyncRecordBatchFileReader | undefined
  try {
    const end = rowStart + rows
    let batchStart = 0
    let indices: ReadonlyArray<number> = []
    const columnsOf = (schema: Schema) => {
      indices = info.columns.map((name) => schema.fields.findIndex((f) => f.name === name))
      if (indices.some((i) => i < 0)) throw fail(info.path, "UnknownColumn", `columns changed since the file was described`)
    }
    const take = (batch: RecordBatch) => {
      const lo = Math.max(rowStart, batchStart)
      const hi = Math.min(end, batchStart + batch.numRows)
      if (hi > lo) copyRows(batch, indices, lo - batchStart, hi - batchStart, out, lo - rowStart)
    }
    // the record batches overlapping the rows: the file format reads each through the
    // footer (random access); a stream has none, so a small stream is rebuilt from the
    // schema (and leading dictionary) bytes and the batch's byte range the description recorded
    let prefix: Uint8Array | undefined
    if (info.ipc === "file") {
      try {
        const r = await RecordBatchReader.from(handle)
        await r.open()
        if (!r.isFile()) throw new Error("no footer")
        fileReader = r as AsyncRecordBatchFileReader
      } catch (e) {
        throw fail(info.path, "NotArrow", `not an Arrow IPC file (${(e as Error).message})`)
      }
      columnsOf(fileReader.schema)
    } else {
      prefix = await readAt(handle, 0, info.prefixEnd)
    }
    for (let b = 0; b < info.batchRows.length && batchStart < end; b++) {
      const n = info.batchRows[b]!
      if (batchStart + n > rowStart) {
        let batch: RecordBatch | null | undefined
        if (fileReader !== undefined) {
          batch = await fileReader.readRecordBatch(b)
        } else {
          const [from, to] = info.batchOffsets[b]!
          const bytes = new Uint8Array(prefix!.length + to - from)
          bytes.set(prefix!)
          const body = await readAt(handle, from, to - from)
          if (body.length !== to - from) throw fail(info.path, "Truncated", `record batch ${b} (bytes ${from}..${to}) is cut short`)
          bytes.set(body, prefix!.length)
          batch = RecordBatchReader.from(bytes).readAll()[0]
          if (batch !== undefined && indices.length === 0) columnsOf(batch.schema)
        }
        if (batch == null || batch.numRows !== n) throw fail(info.path, "Truncated", `record batch ${b} changed since the file was described`)
        take(batch)
      }
      batchStart += n
    }
    if (batchStart < end) throw fail(info.path, "Truncated", `rows ${rowStart}..${end} asked, the file has ${batchStart}`)
    return out
  } finally {
    await fileReader?.cancel().catch(() => undefined)
    await handle.close().catch(() => undefined)
  }
}

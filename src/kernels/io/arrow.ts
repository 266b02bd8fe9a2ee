/**
 * Arrow IPC reader (file and stream formats) for numeric columns: float32, float64,
 * int32, int64 and uint8, all of one dtype, without nulls.
 *
 * `describeArrowUnsafe` reads metadata only, never data: it walks the IPC messages
 * (the stream, or the stream embedded in a file, up to its footer) reading each
 * message's length prefix and flatbuffer header and skipping its body, and records the
 * schema, every record batch's row count, null counts and byte range. The
 * `readArrowRows` kernel then returns any row range as one chunk, whatever the file's
 * record batches are: it reads only the batches that overlap the range (their byte
 * ranges, plus the schema and leading dictionary messages) and decodes them with
 * apache-arrow.
 *
 * Leaves out: nullable data, mixed column types (no implicit casts), dictionary,
 * decimal, date and nested columns (rejected with a typed error naming the file; such
 * columns may sit beside the ones read), dictionaries replaced mid-stream, compressed
 * bodies (as far as apache-arrow does not decode them).
 *
 * @since 0.1.0
 */
import * as NodeFs from "node:fs"
import { DataType, Message, MessageHeader, RecordBatchReader } from "apache-arrow"
import type { Field, RecordBatch, Schema } from "apache-arrow"
import { Footer } from "apache-arrow/ipc/metadata/file"
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

const openUnsafe = (path: string): number => {
  try {
    return NodeFs.openSync(fsPath(path), "r")
  } catch (e) {
    throw fail(path, "Unreadable", (e as Error).message)
  }
}

/** Reads up to `n` bytes at `position` (fewer at the end of the file). */
const readAtUnsafe = (fd: number, position: number, n: number, into?: Uint8Array, at = 0): Uint8Array => {
  const out = into ?? new Uint8Array(n)
  let got = 0
  while (got < n) {
    const r = NodeFs.readSync(fd, out, at + got, n - got, position + got)
    if (r === 0) break
    got += r
  }
  return into === undefined ? out.subarray(0, got) : out.subarray(at, at + got)
}

/** An IPC message's metadata read at `start`: the decoded message and where it ends (body included). */
interface Framed {
  readonly message: Message
  readonly start: number
  readonly end: number
}

/**
 * Reads the message framed at `pos` (`0xFFFFFFFF`, int32 metadata length, flatbuffer,
 * body; or the pre-1.0 framing without the continuation marker) without its body.
 * `null` at the end-of-stream marker or at `limit`.
 */
const readMessageUnsafe = (file: string, fd: number, pos: number, limit: number): Framed | null => {
  if (pos + 4 > limit) return null
  const pre = readAtUnsafe(fd, pos, 8)
  const view = new DataView(pre.buffer, pre.byteOffset, pre.byteLength)
  const marked = view.getInt32(0, true) === -1
  if (marked && pre.length < 8) throw fail(file, "Truncated", `message at byte ${pos} ends inside its length prefix`)
  const len = marked ? view.getInt32(4, true) : view.getInt32(0, true)
  const metaStart = pos + (marked ? 8 : 4)
  if (len === 0) return null
  if (len < 0 || metaStart + len > limit) {
    throw fail(file, "Truncated", `message at byte ${pos} claims ${len} metadata bytes, ${limit - metaStart} are left`)
  }
  let message: Message
  try {
    message = Message.decode(readAtUnsafe(fd, metaStart, len))
  } catch (e) {
    throw fail(file, "NotArrow", `message at byte ${pos} cannot be decoded (${(e as Error).message})`)
  }
  const end = metaStart + len + message.bodyLength
  if (end > limit) throw fail(file, "Truncated", `message at byte ${pos} needs bytes up to ${end}, the file has ${limit}`)
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
 * Where the IPC messages of a file lie: `[start, limit)` — the whole stream, or for the
 * file format the messages between the leading magic and the footer, with the footer
 * decoded (schema, record batch and dictionary blocks).
 */
const messageSpanUnsafe = (path: string, fd: number, size: number): {
  readonly start: number
  readonly limit: number
  readonly footer: Footer | undefined
} => {
  const head = new TextDecoder("latin1").decode(readAtUnsafe(fd, 0, 6))
  if (head !== "ARROW1") return { start: 0, limit: size, footer: undefined }
  const tail = size >= 16 ? readAtUnsafe(fd, size - 10, 10) : new Uint8Array(0)
  if (tail.length < 10 || new TextDecoder("latin1").decode(tail.subarray(4)) !== "ARROW1") {
    throw fail(path, "Truncated", "starts like an Arrow IPC file but does not end with its footer (cut short?)")
  }
  const footerLength = new DataView(tail.buffer, tail.byteOffset, 4).getInt32(0, true)
  const limit = size - 10 - footerLength
  if (footerLength <= 0 || limit < 8) throw fail(path, "NotArrow", `footer length ${footerLength} does not fit the file (${size} bytes)`)
  try {
    return { start: 8, limit, footer: Footer.decode(readAtUnsafe(fd, limit, footerLength)) }
  } catch (e) {
    throw fail(path, "NotArrow", `the footer at byte ${limit} cannot be decoded (${(e as Error).message})`)
  }
}

/** A schema message framed as in a stream (continuation marker, padded length, flatbuffer). */
const schemaMessage = (schema: Schema): Uint8Array => {
  const meta = Message.encode(Message.from(schema))
  const padded = Math.ceil(meta.length / 8) * 8
  const out = new Uint8Array(8 + padded)
  const view = new DataView(out.buffer)
  view.setInt32(0, -1, true)
  view.setInt32(4, padded, true)
  out.set(meta, 8)
  return out
}

/**
 * Describes an Arrow IPC file or stream from its metadata only (see the module
 * comment). Throws a {@link DatasetFileError} naming the file.
 *
 * @since 0.1.0
 * @category parsing
 */
export const describeArrowUnsafe = (path: string, columns?: ReadonlyArray<string>): ArrowInfo => {
  const fd = openUnsafe(path)
  try {
    const size = NodeFs.fstatSync(fd).size
    const span = messageSpanUnsafe(path, fd, size)
    let schema: Schema
    const batches: Array<Framed> = []
    const prefixRanges: Array<readonly [number, number]> = []
    if (span.footer !== undefined) {
      // file format: the footer has the schema and locates every batch and dictionary
      schema = span.footer.schema
      for (const block of span.footer.dictionaryBatches()) {
        const framed = readMessageUnsafe(path, fd, Number(block.offset), span.limit)
        if (framed === null) throw fail(path, "Truncated", `dictionary batch at byte ${block.offset} is missing`)
        prefixRanges.push([framed.start, framed.end])
      }
      let b = 0
      for (const block of span.footer.recordBatches()) {
        const framed = readMessageUnsafe(path, fd, Number(block.offset), span.limit)
        if (framed === null || framed.message.headerType !== MessageHeader.RecordBatch) {
          throw fail(path, "Truncated", `record batch ${b} at byte ${block.offset} is missing`)
        }
        batches.push(framed)
        b++
      }
    } else {
      // stream format: a schema message, then dictionaries and batches until EOS
      let first: Framed | null
      try {
        first = readMessageUnsafe(path, fd, span.start, span.limit)
      } catch (e) {
        if (e instanceof DatasetFileError) throw fail(path, "NotArrow", `not an Arrow IPC file or stream (${e.detail})`)
        throw e
      }
      if (first === null || first.message.headerType !== MessageHeader.Schema) {
        throw fail(path, "NotArrow", "not an Arrow IPC file or stream (no schema message first)")
      }
      schema = first.message.header() as Schema
      let prefixEnd = first.end
      for (let pos = first.end; ;) {
        const framed = readMessageUnsafe(path, fd, pos, span.limit)
        if (framed === null) break
        if (framed.message.headerType === MessageHeader.RecordBatch) batches.push(framed)
        else if (batches.length === 0) prefixEnd = framed.end // dictionaries before the first batch
        pos = framed.end
      }
      prefixRanges.push([first.start, prefixEnd])
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
    const batchRows = batches.map((framed, b) => {
      const header = framed.message.header() as unknown as BatchHeader
      for (const [j, i] of indices.entries()) {
        const nulls = header.nodes[firstNode[i]!]?.nullCount ?? 0
        if (Number(nulls) > 0) throw fail(path, "NullValues", `column "${names[j]}" has ${nulls} nulls in record batch ${b}`)
      }
      return Number(header.length)
    })
    const rows = batchRows.reduce((a, b) => a + b, 0)
    return {
      format: "arrow",
      ipc: span.footer !== undefined ? "file" : "stream",
      path,
      dtype: dtype!,
      shape: names.length === 1 ? [rows] : [rows, names.length],
      columns: names,
      batchRows,
      batchOffsets: batches.map((f) => [f.start, f.end] as const),
      ...(span.footer !== undefined ? { schemaMessage: schemaMessage(schema) } : {}),
      prefixRanges
    }
  } finally {
    NodeFs.closeSync(fd)
  }
}

/** Copies rows [from, to) of a batch's columns into `out` at row `at` (row-major). */
const copyRows = (batch: RecordBatch, indices: ReadonlyArray<number>, from: number, to: number, out: Chunk.Chunk, at: number): void => {
  const c = indices.length
  if (c === 1) {
    const values = batch.getChildAt(indices[0]!)!.toArray() as Chunk.TypedArray
    ;(out.data as Float64Array).set(values.subarray(from, to) as Float64Array, at)
    return
  }
  const target = out.data as unknown as { [i: number]: number | bigint }
  for (let j = 0; j < c; j++) {
    const values = batch.getChildAt(indices[j]!)!.toArray() as unknown as ArrayLike<number | bigint>
    // hot loop: interleave one column into row-major order
    for (let r = from, o = at * c + j; r < to; r++, o += c) target[o] = values[r]!
  }
}

/**
 * Kernel: rows `[rowStart, rowStart + rows)` of the columns `info` describes, as one
 * shared chunk ([rows] for one column, [rows, columns] otherwise). Reads only the
 * overlapping record batches: each is decoded from a small stream rebuilt from the
 * schema (and leading dictionary) bytes and the batch's byte range.
 *
 * @since 0.1.0
 * @category kernels
 */
export const readArrowRows = (info: ArrowInfo, rowStart: number, rows: number): Chunk.Chunk => {
  const out = Chunk.allocShared(info.dtype, info.columns.length === 1 ? [rows] : [rows, info.columns.length])
  const fd = openUnsafe(info.path)
  try {
    const end = rowStart + rows
    // the schema (read from the file, or made from the footer's) and dictionaries, once
    const parts = info.prefixRanges.map(([from, to]) => {
      const part = readAtUnsafe(fd, from, to - from)
      if (part.length !== to - from) throw fail(info.path, "Truncated", `bytes ${from}..${to} are cut short`)
      return part
    })
    const prefix = new Uint8Array((info.schemaMessage?.length ?? 0) + parts.reduce((n, p) => n + p.length, 0))
    let o = 0
    for (const part of info.schemaMessage === undefined ? parts : [info.schemaMessage, ...parts]) {
      prefix.set(part, o)
      o += part.length
    }
    let indices: ReadonlyArray<number> | undefined
    let batchStart = 0
    for (let b = 0; b < info.batchRows.length && batchStart < end; b++) {
      const n = info.batchRows[b]!
      if (batchStart + n > rowStart) {
        const [from, to] = info.batchOffsets[b]!
        const bytes = new Uint8Array(prefix.length + to - from)
        bytes.set(prefix)
        if (readAtUnsafe(fd, from, to - from, bytes, prefix.length).length !== to - from) throw fail(info.path, "Truncated", `record batch ${b} (bytes ${from}..${to}) is cut short`)
        let batch: RecordBatch | undefined
        try {
          batch = RecordBatchReader.from(bytes).readAll()[0]
        } catch (e) {
          throw fail(info.path, "NotArrow", `record batch ${b} (bytes ${from}..${to}) cannot be decoded (${(e as Error).message})`)
        }
        if (batch === undefined || batch.numRows !== n) throw fail(info.path, "Truncated", `record batch ${b} changed since the file was described`)
        if (indices === undefined) {
          const fields = batch.schema.fields
          indices = info.columns.map((name) => fields.findIndex((f) => f.name === name))
          if (indices.some((i) => i < 0)) throw fail(info.path, "UnknownColumn", "columns changed since the file was described")
        }
        const lo = Math.max(rowStart, batchStart)
        const hi = Math.min(end, batchStart + n)
        copyRows(batch, indices, lo - batchStart, hi - batchStart, out, lo - rowStart)
      }
      batchStart += n
    }
    if (batchStart < end) throw fail(info.path, "Truncated", `rows ${rowStart}..${end} asked, the file has ${batchStart}`)
    return out
  } finally {
    NodeFs.closeSync(fd)
  }
}

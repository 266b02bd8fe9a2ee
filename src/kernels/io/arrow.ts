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
import type { FileBlock } from "apache-arrow/ipc/metadata/file"
import * as Chunk from "../../engine/Chunk.ts"
import { reportBytesRead } from "../../engine/TaskIo.ts"
import { checkFooter, checkMessage, Malformed } from "./arrowCheck.ts"
import type { ArrowInfo } from "./DatasetSource.ts"
import { DatasetFileError } from "./DatasetSource.ts"
import { cannotOpen } from "./npy.ts"

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

/** A failure at one byte of the file: the detail ends with "(byte N)". */
const failAt = (file: string, problem: DatasetFileError["problem"], offset: number, detail: string) =>
  new DatasetFileError({ file, problem, detail: `${detail} (byte ${offset})`, offset })

const itemSize: Record<Chunk.DType, number> = { float32: 4, float64: 8, int32: 4, int64: 8, uint8: 1 }

const openUnsafe = (path: string): number => {
  try {
    return NodeFs.openSync(fsPath(path), "r")
  } catch (e) {
    const c = cannotOpen(path, e)
    throw fail(path, c.reason as "NotFound" | "Unreadable", c.detail)
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
  reportBytesRead(got)
  return into === undefined ? out.subarray(0, got) : out.subarray(at, at + got)
}

/** An IPC message's metadata read at `start`: the decoded message and where it ends (body included). */
interface Framed {
  readonly message: Message
  readonly start: number
  /** where the body starts */
  readonly body: number
  readonly end: number
}

/** Reads up to `n` bytes at a position: of the file (fd) or of bytes in memory. */
type ReadAt = (position: number, n: number) => Uint8Array

const fileReader = (fd: number): ReadAt => (position, n) => readAtUnsafe(fd, position, n)

/** The part of a record batch (or a dictionary batch's data) checked against its body. */
interface BatchBody {
  readonly length: number
  readonly nodes: ReadonlyArray<{ readonly length: number; readonly nullCount: number }>
  readonly buffers: ReadonlyArray<{ readonly offset: number; readonly length: number }>
  readonly compression: unknown
}

/**
 * What a batch's metadata claims, checked against the body that backs it: a row count
 * that is not negative, field nodes whose null counts are within their lengths, every
 * buffer inside the body, no compression (no codec is registered, so apache-arrow could
 * not decode it anyway). Row counts are checked against the column buffers that must
 * hold them in `describeArrowUnsafe`, which knows the schema.
 */
const checkBatchBody = (file: string, what: string, b: BatchBody, body: number, bodyLength: number): void => {
  if (!(b.length >= 0)) throw failAt(file, "NotArrow", body, `${what} claims ${b.length} rows`)
  b.nodes.forEach((n, j) => {
    if (!(n.length >= 0 && n.nullCount >= 0 && n.nullCount <= n.length)) {
      throw failAt(file, "NotArrow", body, `${what}: field node ${j} claims ${n.length} values with ${n.nullCount} nulls`)
    }
  })
  b.buffers.forEach((r, j) => {
    if (!(r.offset >= 0 && r.length >= 0 && r.offset + r.length <= bodyLength)) {
      throw failAt(file, "NotArrow", body + Math.max(0, Math.min(r.offset, bodyLength)), `${what}: buffer ${j} (body bytes ${r.offset}..${r.offset + r.length}) lies outside its ${bodyLength}-byte body`)
    }
  })
  if (b.compression !== null && b.compression !== undefined) {
    throw failAt(file, "Compressed", body, `${what} is compressed (LZ4 / ZSTD bodies are not supported; write the file uncompressed)`)
  }
}

/**
 * Reads the message framed at `pos` (`0xFFFFFFFF`, int32 metadata length, flatbuffer,
 * body; or the pre-1.0 framing without the continuation marker) without its body.
 * `null` at the end-of-stream marker or at `limit`. The flatbuffer is checked
 * (arrowCheck.ts) before apache-arrow decodes it, and a batch's buffers against its body.
 */
const readMessageUnsafe = (file: string, read: ReadAt, pos: number, limit: number): Framed | null => {
  if (pos + 4 > limit) return null
  const pre = read(pos, 8)
  const view = new DataView(pre.buffer, pre.byteOffset, pre.byteLength)
  const marked = view.getInt32(0, true) === -1
  if (marked && pre.length < 8) throw failAt(file, "Truncated", pos, `message at byte ${pos} ends inside its length prefix`)
  const len = marked ? view.getInt32(4, true) : view.getInt32(0, true)
  const metaStart = pos + (marked ? 8 : 4)
  if (len === 0) return null
  if (len < 0 || metaStart + len > limit) {
    throw failAt(file, "Truncated", pos, `message at byte ${pos} claims ${len} metadata bytes, ${limit - metaStart} are left`)
  }
  const meta = read(metaStart, len)
  if (meta.length < len) throw failAt(file, "Truncated", metaStart + meta.length, `message at byte ${pos} is cut short`)
  let message: Message
  try {
    checkMessage(meta)
    message = Message.decode(meta)
  } catch (e) {
    if (e instanceof Malformed) throw failAt(file, "NotArrow", metaStart + e.at, `message at byte ${pos}: ${e.problem}`)
    throw failAt(file, "NotArrow", metaStart, `message at byte ${pos} cannot be decoded (${(e as Error).message})`)
  }
  const bodyLength = message.bodyLength
  const body = metaStart + len
  const end = body + bodyLength
  if (!(bodyLength >= 0)) throw failAt(file, "NotArrow", metaStart, `message at byte ${pos} claims a body of ${bodyLength} bytes`)
  if (end > limit) throw failAt(file, "Truncated", pos, `message at byte ${pos} needs bytes up to ${end}, the file has ${limit}`)
  try {
    if (message.headerType === MessageHeader.RecordBatch) {
      checkBatchBody(file, `record batch at byte ${pos}`, message.header() as unknown as BatchBody, body, bodyLength)
    } else if (message.headerType === MessageHeader.DictionaryBatch) {
      checkBatchBody(file, `dictionary batch at byte ${pos}`, (message.header() as unknown as { data: BatchBody }).data, body, bodyLength)
    } else if (message.headerType === MessageHeader.Schema) message.header()
  } catch (e) {
    if (e instanceof DatasetFileError) throw e
    throw failAt(file, "NotArrow", metaStart, `message at byte ${pos} cannot be decoded (${(e as Error).message})`)
  }
  return { message, start: pos, body, end }
}

/** Number of IPC field nodes a field takes (itself and its children, depth first). */
const nodeCount = (f: Field): number => 1 + (f.type.children ?? []).reduce((n: number, c: Field) => n + nodeCount(c), 0)

/**
 * Number of IPC buffers a field takes (itself and its children), as apache-arrow's
 * VectorLoader reads them for metadata V4 / V5; undefined for types whose count depends
 * on the batch (views) or that it does not know.
 */
const bufferCount = (f: Field, version: number): number | undefined => {
  const t = f.type
  const children = (): number | undefined => {
    let n = 0
    for (const c of t.children ?? []) {
      const k = bufferCount(c, version)
      if (k === undefined) return undefined
      n += k
    }
    return n
  }
  const plus = (own: number) => {
    const c = children()
    return c === undefined ? undefined : own + c
  }
  if (DataType.isDictionary(t)) return 2
  if (DataType.isNull(t)) return 0
  if (DataType.isUtf8(t) || DataType.isBinary(t) || DataType.isLargeUtf8(t) || DataType.isLargeBinary(t)) return 3
  if (DataType.isList(t) || DataType.isLargeList(t) || DataType.isMap(t)) return plus(2)
  if (DataType.isStruct(t) || DataType.isFixedSizeList(t)) return plus(1)
  if (DataType.isUnion(t)) return plus((DataType.isDenseUnion(t) ? 2 : 1) + (version < 4 ? 1 : 0))
  if (DataType.isBinaryView(t) || DataType.isUtf8View(t)) return undefined
  if (
    DataType.isInt(t) || DataType.isFloat(t) || DataType.isBool(t) || DataType.isDecimal(t) || DataType.isDate(t) ||
    DataType.isTime(t) || DataType.isTimestamp(t) || DataType.isInterval(t) || DataType.isDuration(t) || DataType.isFixedSizeBinary(t)
  ) return 2
  return undefined
}

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
  if (footerLength <= 0 || limit < 8) {
    throw failAt(path, "NotArrow", size - 10, `footer length ${footerLength} does not fit the file (${size} bytes)`)
  }
  const bytes = readAtUnsafe(fd, limit, footerLength)
  try {
    checkFooter(bytes)
    return { start: 8, limit, footer: Footer.decode(bytes) }
  } catch (e) {
    if (e instanceof Malformed) throw failAt(path, "NotArrow", limit + e.at, `the footer at byte ${limit}: ${e.problem}`)
    throw failAt(path, "NotArrow", limit, `the footer at byte ${limit} cannot be decoded (${(e as Error).message})`)
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
 * @category encoding
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
      const read = fileReader(fd)
      const located = (block: FileBlock, what: string): Framed => {
        const at = block.offset
        if (!(at >= span.start && block.metaDataLength > 0 && block.bodyLength >= 0 && at + block.metaDataLength + block.bodyLength <= span.limit)) {
          throw failAt(path, "NotArrow", span.limit, `the footer places ${what} at bytes ${at}..${at + block.metaDataLength + block.bodyLength}, outside the messages (bytes ${span.start}..${span.limit})`)
        }
        const framed = readMessageUnsafe(path, read, at, span.limit)
        if (framed === null) throw failAt(path, "Truncated", at, `${what} at byte ${at} is missing`)
        if (framed.message.bodyLength !== block.bodyLength) {
          throw failAt(path, "NotArrow", at, `the footer gives ${what} at byte ${at} a ${block.bodyLength}-byte body, its message says ${framed.message.bodyLength}`)
        }
        return framed
      }
      let d = 0
      for (const block of span.footer.dictionaryBatches()) {
        const framed = located(block, `dictionary batch ${d++}`)
        if (framed.message.headerType !== MessageHeader.DictionaryBatch) throw failAt(path, "NotArrow", framed.start, `dictionary batch ${d - 1} at byte ${framed.start} is not a dictionary batch`)
        prefixRanges.push([framed.start, framed.end])
      }
      let b = 0
      for (const block of span.footer.recordBatches()) {
        const framed = located(block, `record batch ${b}`)
        if (framed.message.headerType !== MessageHeader.RecordBatch) {
          throw failAt(path, "NotArrow", framed.start, `record batch ${b} at byte ${block.offset} is not a record batch`)
        }
        batches.push(framed)
        b++
      }
    } else {
      // stream format: a schema message, then dictionaries and batches until EOS
      let first: Framed | null
      try {
        first = readMessageUnsafe(path, fileReader(fd), span.start, span.limit)
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
        const framed = readMessageUnsafe(path, fileReader(fd), pos, span.limit)
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
    const totalNodes = fields.reduce((n, f) => (firstNode.push(n), n + nodeCount(f)), 0)
    // the data buffer of field i is its second (after validity), where counts are known
    const dataBuffer: Array<number | undefined> = []
    fields.reduce<number | undefined>((n, f) => {
      dataBuffer.push(n === undefined ? undefined : n + 1)
      const k = bufferCount(f, schema.metadataVersion)
      return n === undefined || k === undefined ? undefined : n + k
    }, 0)
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
    const width = itemSize[dtype!]
    const batchRows = batches.map((framed, b) => {
      const header = framed.message.header() as unknown as BatchBody
      const rows = header.length
      const what = `record batch ${b} (at byte ${framed.start})`
      // rows are bounded by the bytes that back them before anything is planned from them
      const bodyLength = framed.end - framed.body
      if (rows * width > bodyLength) {
        throw failAt(path, "NotArrow", framed.body, `${what} claims ${rows} rows, which need ${rows * width} bytes of ${dtype}; its body has ${bodyLength}`)
      }
      if (header.nodes.length !== totalNodes) {
        throw failAt(path, "NotArrow", framed.start, `${what} has ${header.nodes.length} field nodes, the schema needs ${totalNodes}`)
      }
      for (const [j, i] of indices.entries()) {
        const node = header.nodes[firstNode[i]!]!
        if (node.length !== rows) throw failAt(path, "NotArrow", framed.start, `${what} claims ${rows} rows, column "${names[j]}" holds ${node.length}`)
        if (node.nullCount > 0) throw fail(path, "NullValues", `column "${names[j]}" has ${node.nullCount} nulls in record batch ${b}`)
        const k = dataBuffer[i]
        const buffer = k === undefined ? undefined : header.buffers[k]
        if (k !== undefined && (buffer === undefined || buffer.length < rows * width)) {
          throw failAt(
            path,
            "NotArrow",
            framed.body + (buffer?.offset ?? 0),
            `${what} claims ${rows} rows, column "${names[j]}" has ${buffer === undefined ? "no data buffer" : `a ${buffer.length}-byte data buffer`} (${rows * width} bytes needed)`
          )
        }
      }
      return rows
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

/**
 * Checks the small stream rebuilt for one batch before apache-arrow decodes it (the file
 * may have changed since it was described): every message's flatbuffer and buffers, as
 * when describing, and the batch's row count.
 */
const checkRebuiltUnsafe = (file: string, bytes: Uint8Array, batchAt: number, fileAt: number, rows: number): void => {
  const read: ReadAt = (position, n) => bytes.subarray(position, position + n)
  const changed = (why: string) => failAt(file, "Truncated", fileAt, `the record batch at byte ${fileAt} changed since the file was described (${why})`)
  for (let pos = 0; pos < bytes.length;) {
    let framed: Framed | null
    try {
      framed = readMessageUnsafe(file, read, pos, bytes.length)
    } catch (e) {
      // offsets inside the rebuilt stream mean nothing in the file: name the batch
      if (e instanceof DatasetFileError) throw changed(`${e.problem} when re-read`)
      throw e
    }
    if (framed === null) break
    if (pos === batchAt) {
      const length = framed.message.headerType === MessageHeader.RecordBatch ? (framed.message.header() as unknown as BatchBody).length : -1
      if (length !== rows) throw changed(`${length} rows, ${rows} described`)
    }
    pos = framed.end
  }
}

/** A column's values, at least `to` of them (a data buffer shorter than its rows fails). */
const columnValues = (batch: RecordBatch, index: number, to: number): Chunk.TypedArray => {
  const values = batch.getChildAt(index)!.toArray() as Chunk.TypedArray
  if (values.length < to) throw new RangeError(`column ${index} holds ${values.length} values, ${to} needed`)
  return values
}

/** Copies rows [from, to) of a batch's columns into `out` at row `at` (row-major). */
const copyRows = (batch: RecordBatch, indices: ReadonlyArray<number>, from: number, to: number, out: Chunk.Chunk, at: number): void => {
  const c = indices.length
  if (c === 1) {
    const values = columnValues(batch, indices[0]!, to)
    ;(out.data as Float64Array).set(values.subarray(from, to) as Float64Array, at)
    return
  }
  const target = out.data as unknown as { [i: number]: number | bigint }
  for (let j = 0; j < c; j++) {
    const values = columnValues(batch, indices[j]!, to) as unknown as ArrayLike<number | bigint>
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
        checkRebuiltUnsafe(info.path, bytes, prefix.length, from, n)
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
        try {
          copyRows(batch, indices, lo - batchStart, hi - batchStart, out, lo - rowStart)
        } catch (e) {
          throw failAt(info.path, "NotArrow", from, `record batch ${b} (bytes ${from}..${to}) cannot be read (${(e as Error).message})`)
        }
      }
      batchStart += n
    }
    if (batchStart < end) throw fail(info.path, "Truncated", `rows ${rowStart}..${end} asked, the file has ${batchStart}`)
    return out
  } finally {
    NodeFs.closeSync(fd)
  }
}

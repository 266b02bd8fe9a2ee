/**
 * CSV rows as bytes from plain column data (no Arrow: a worker thread formats part of a
 * large table with it, `Analyze.ts`): numbers in JS's shortest round-trip form (NaN
 * empty), dictionary strings copied from their own UTF-8 and quoted per RFC 4180 where
 * they must be, other cells as given. `Format.csvBlocks` turns an Arrow table into these
 * columns; both ways give the same bytes.
 *
 * Hot path: plain loops over typed arrays, on purpose.
 *
 * @since 0.1.0
 * @internal
 */
import type { TaskBottleneckRows, TaskColumns } from "./taskRows.ts"

/**
 * CSV bytes built in place: ASCII text (every number) copied a character at a time, other
 * text through UTF-8. Building strings and encoding them afterwards cost more than
 * formatting the numbers (a 378k-row task table: ~0.8 s of 1.3 s).
 */
export class CsvSink {
  private buf: Buffer
  private pos = 0
  private readonly size: number
  constructor(size: number) {
    this.size = size
    this.buf = Buffer.allocUnsafe(size)
  }
  /** room for `n` more bytes; full blocks are handed to `out` */
  reserve(n: number, out: Array<Uint8Array>): void {
    if (this.pos + n <= this.buf.length) return
    if (this.pos > 0) out.push(this.buf.subarray(0, this.pos))
    this.buf = Buffer.allocUnsafe(Math.max(this.size, n))
    this.pos = 0
  }
  byte(b: number): void {
    this.buf[this.pos++] = b
  }
  /** `s` (at most `s.length * 3` bytes once reserved) */
  text(s: string): void {
    const n = s.length
    const buf = this.buf
    let pos = this.pos
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i)
      if (c >= 0x80) {
        this.pos += buf.write(s, this.pos, "utf8")
        return
      }
      buf[pos++] = c
    }
    this.pos = pos
  }
  bytes(b: Uint8Array): void {
    this.range(b, 0, b.length)
  }
  range(b: Uint8Array, from: number, to: number): void {
    const buf = this.buf
    let pos = this.pos
    for (let i = from; i < to; i++) buf[pos++] = b[i]!
    this.pos = pos
  }
  /** UTF-8 bytes as a quoted cell: `"`, the bytes with each quote doubled, `"` */
  quoted(b: Uint8Array, from: number, to: number): void {
    const buf = this.buf
    let pos = this.pos
    buf[pos++] = 0x22
    for (let i = from; i < to; i++) {
      const c = b[i]!
      buf[pos++] = c
      if (c === 0x22) buf[pos++] = 0x22
    }
    buf[pos++] = 0x22
    this.pos = pos
  }
  take(): Uint8Array {
    const done = this.buf.subarray(0, this.pos)
    this.buf = Buffer.allocUnsafe(this.size)
    this.pos = 0
    return done
  }
}

/**
 * One column's cells: numbers (NaN: empty), dictionary codes into UTF-8 entries (-1:
 * empty; an entry is quoted if it needs it), or finished cell texts.
 *
 * @since 0.1.0
 * @internal
 */
export type CsvColumn =
  | { readonly kind: "numbers"; readonly values: NumberArray }
  | { readonly kind: "dictionary"; readonly codes: Int32Array; readonly bytes: Uint8Array; readonly offsets: ArrayLike<number> }
  | { readonly kind: "text"; readonly cells: ReadonlyArray<string> }

/**
 * A numeric column's values: a typed array of its own type (an Arrow column's values).
 *
 * @since 0.1.0
 * @internal
 */
export type NumberArray = Float64Array | Float32Array | Int32Array | Uint32Array | Int16Array | Uint16Array | Int8Array | Uint8Array

const longestNumber = 32 // "-1.2345678901234567e-308" and the like
const [QUOTE, COMMA, LF, CR] = [0x22, 0x2c, 0x0a, 0x0d]

/** A column's row writer and the most bytes a cell takes (undefined: measured per cell). */
const writerOf = (c: CsvColumn): { readonly write: (row: number, sink: CsvSink) => void; readonly worst: number | undefined } => {
  if (c.kind === "numbers") {
    const values = c.values
    return {
      write: (row, sink) => {
        const x = values[row]!
        if (x === x) sink.text(String(x))
      },
      worst: longestNumber
    }
  }
  if (c.kind === "dictionary") {
    const { bytes, codes, offsets } = c
    const entries = offsets.length - 1
    const kinds = new Int8Array(entries) // 0 not looked at yet, 1 plain, 2 to be quoted
    let widest = 0
    for (let j = 0; j < entries; j++) widest = Math.max(widest, offsets[j + 1]! - offsets[j]!)
    return {
      write: (row, sink) => {
        const code = codes[row]!
        if (code < 0) return
        const from = offsets[code]!
        const to = offsets[code + 1]!
        let kind = kinds[code]!
        if (kind === 0) {
          kind = 1
          for (let k = from; k < to; k++) {
            const b = bytes[k]!
            if (b === QUOTE || b === COMMA || b === LF || b === CR) {
              kind = 2
              break
            }
          }
          kinds[code] = kind
        }
        if (kind === 1) sink.range(bytes, from, to)
        else sink.quoted(bytes, from, to)
      },
      // quoting doubles quotes at most, plus the two around
      worst: widest * 2 + 2
    }
  }
  const cells = c.cells
  return { write: (row, sink) => sink.text(cells[row]!), worst: undefined }
}

/**
 * Rows `from` to `to` of these columns as CSV bytes (no header), a block of about
 * `blockBytes` at a time.
 *
 * @since 0.1.0
 * @internal
 */
export const csvRowBlocks = function*(columns: ReadonlyArray<CsvColumn>, from: number, to: number, blockBytes = 1 << 20): Generator<Uint8Array> {
  const writers = columns.map(writerOf)
  const sink = new CsvSink(blockBytes)
  const out: Array<Uint8Array> = []
  // bytes a row takes at most: columns of unknown width reserve their own
  const rowWorst = writers.reduce((n, w) => n + (w.worst ?? 0) + 1, 1)
  const texts = columns.map((c) => (c.kind === "text" ? c.cells : undefined))
  for (let i = from; i < to; i++) {
    sink.reserve(rowWorst, out)
    for (let c = 0; c < writers.length; c++) {
      if (c > 0) sink.byte(COMMA)
      const t = texts[c]
      if (t !== undefined) sink.reserve(t[i]!.length * 3 + rowWorst, out)
      writers[c]!.write(i, sink)
    }
    sink.byte(LF)
    while (out.length > 0) yield out.shift()!
  }
  const last = sink.take()
  if (last.length > 0) yield last
}

/**
 * Rows `from` to `to` of these columns, as columns of their own (row `from` becomes 0):
 * what a worker thread needs to format them (a dictionary's entries stay whole).
 *
 * @since 0.1.0
 * @internal
 */
export const sliceColumns = (columns: ReadonlyArray<CsvColumn>, from: number, to: number): Array<CsvColumn> =>
  columns.map((c) =>
    c.kind === "numbers"
      ? { kind: "numbers", values: c.values.slice(from, to) }
      : c.kind === "dictionary"
      ? { ...c, codes: c.codes.slice(from, to) }
      : { kind: "text", cells: c.cells.slice(from, to) }
  )

/**
 * The row at which a table of `rows` rows is split between the two threads that format
 * it: rows before it here, the rest (a `share` of them) on the CSV worker.
 *
 * @since 0.1.0
 * @internal
 */
export const splitRow = (rows: number, share: number): number => Math.round(rows * (1 - share))

/**
 * A dictionary's strings as UTF-8: string `c` is `bytes[offsets[c]..offsets[c + 1])`
 * (an Arrow Utf8 vector's buffers; shared memory when large, `Load.ts`).
 *
 * @since 0.1.0
 * @internal
 */
export interface Utf8Strings {
  readonly bytes: Uint8Array
  readonly offsets: Int32Array
}

/**
 * The per-task bottleneck computed by the CSV worker (`taskRows.ts`) from the loaded
 * task columns, which then formats the last `share` of its rows as CSV.
 *
 * @since 0.1.0
 * @internal
 */
export interface TaskBottleneckRequest {
  readonly columns: TaskColumns
  readonly hosts: Utf8Strings
  readonly workers: ReadonlyArray<string>
  readonly keys: Utf8Strings
  readonly share: number
}

/**
 * A worker thread that formats CSV rows (`csvWorker.ts`), one request at a time (requests
 * made meanwhile wait their turn); a failed or crashed worker rejects, and the caller
 * formats the rows itself.
 *
 * `taskBottleneck`: the per-task bottleneck's rows (on shared memory, read where they
 * are), then the CSV bytes of the rows from `splitRow(rows, share)` on.
 *
 * @since 0.1.0
 * @internal
 */
export interface CsvHelper {
  readonly format: (columns: ReadonlyArray<CsvColumn>, rows: number) => Promise<ReadonlyArray<Uint8Array>>
  readonly taskBottleneck: (request: TaskBottleneckRequest) => {
    readonly rows: Promise<TaskBottleneckRows>
    readonly blocks: Promise<ReadonlyArray<Uint8Array>>
  }
  readonly close: () => void
}

/** What the CSV worker answers: a table's rows, CSV bytes, or why it could not. */
export type CsvReply =
  | { readonly rows: TaskBottleneckRows }
  | { readonly blocks: ReadonlyArray<Uint8Array> }
  | { readonly error: string }

/** What the CSV worker is asked. */
export type CsvRequest =
  | { readonly type: "format"; readonly columns: ReadonlyArray<CsvColumn>; readonly rows: number }
  | ({ readonly type: "taskBottleneck" } & TaskBottleneckRequest)

// `.ts` when run from the sources, `.js` from the compiled package (dist/).
const workerUrl = new URL(`./csvWorker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url)

/**
 * Start a CSV worker thread.
 *
 * @since 0.1.0
 * @internal
 */
export const csvHelper = async (): Promise<CsvHelper> => {
  const { Worker } = await import("node:worker_threads")
  const worker = new Worker(workerUrl)
  let failed: unknown
  worker.on("error", (e) => (failed = e))
  const exited = (code: number) => new Error(`CSV worker exited with code ${code}`)
  // stopped (`close`) or crashed: later requests are refused at once, not left unanswered
  worker.on("exit", (code) => (failed ??= exited(code)))
  // one request at a time: each waits for the one before (a reply names no request);
  // with none in flight it is posted at once, not on a later turn (its caller may keep
  // this thread busy for a while)
  let last: Promise<unknown> = Promise.resolve()
  let inFlight = 0
  /** post `request` once the one before is answered; a promise per reply it gets, in order */
  const exchange = (request: CsvRequest, replies: number): Array<Promise<CsvReply>> => {
    const settle = Array.from({ length: replies }, () => Promise.withResolvers<CsvReply>())
    const run = () => {
      if (failed !== undefined) return settle.forEach((s) => s.reject(failed))
      let got = 0
      const done = () => (worker.off("message", onMessage), worker.off("error", onError), worker.off("exit", onExit))
      const failAll = (e: unknown) => (done(), settle.slice(got).forEach((s) => s.reject(e)))
      const onMessage = (m: CsvReply) => {
        if ("error" in m) return failAll(new Error(m.error))
        settle[got++]!.resolve(m)
        if (got === replies) done()
      }
      const onError = (e: unknown) => failAll(e)
      const onExit = (code: number) => failAll(exited(code))
      worker.on("message", onMessage)
      worker.on("error", onError)
      worker.on("exit", onExit)
      try {
        worker.postMessage(request)
      } catch (e) {
        failAll(e) // data that cannot be cloned: refused, as a worker's error would be
      }
    }
    const answered = inFlight === 0 ? Promise.resolve(run()) : last.then(run)
    inFlight++
    last = Promise.all([answered, ...settle.map((s) => s.promise)]).catch(() => undefined).then(() => void inFlight--)
    return settle.map((s) => s.promise)
  }
  const blocksOf = (r: CsvReply) => ("blocks" in r ? r.blocks : Promise.reject(new Error("CSV worker: expected CSV bytes")))
  return {
    format: (columns, rows) => exchange({ type: "format", columns, rows }, 1)[0]!.then(blocksOf),
    taskBottleneck: (request) => {
      const [rows, blocks] = exchange({ type: "taskBottleneck", ...request }, 2)
      return {
        rows: rows!.then((r) => ("rows" in r ? r.rows : Promise.reject(new Error("CSV worker: expected rows")))),
        blocks: blocks!.then(blocksOf)
      }
    },
    close: () => void worker.terminate()
  }
}

/**
 * CSV rows as bytes from plain column data (no Arrow: a worker thread formats part of a
 * large table with it, `Analyze.ts`): numbers in JS's shortest round-trip form (NaN
 * empty), dictionary strings copied from their own UTF-8 and quoted per RFC 4180 where
 * they must be, other cells as given. `Format.csvBlocks` turns an Arrow table into these
 * columns; both ways give the same bytes. Bytes are built in place, a block at a time:
 * ASCII text (every number) copied a character at a time, other text through UTF-8
 * (building strings and encoding them afterwards cost more than formatting the numbers:
 * ~0.8 s of 1.3 s for a 378k-row task table).
 *
 * Hot path: plain loops over typed arrays, on purpose.
 *
 * @since 0.1.0
 * @internal
 */
import type { BottleneckTaskColumns, TaskBottleneckRows } from "./taskRows.ts"

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
const [NUMBERS, DICTIONARY, TEXT] = [0, 1, 2]
/** Rows per step: a dictionary column's entries for this many rows are loaded before they are written. */
const stepRows = 256
/**
 * Dictionaries of at least this many bytes have their entries loaded ahead
 * (`csvRowBlocks`); smaller ones stay in cache.
 *
 * @since 0.1.0
 * @internal
 */
export const aheadBytes = 1 << 20

/**
 * A column made ready for the row loop: every column has every field (one object shape,
 * so that the loop's property loads see one shape), the unused ones empty.
 */
interface Prepared {
  readonly kind: number
  readonly values: NumberArray
  readonly codes: Int32Array
  readonly bytes: Uint8Array
  readonly offsets: ArrayLike<number>
  /** per dictionary entry: 0 not looked at yet, 1 plain, 2 to be quoted */
  readonly quote: Int8Array
  readonly cells: ReadonlyArray<string>
  /** most bytes a cell takes (0: measured per cell, as for text and wide dictionaries) */
  readonly worst: number
}

/**
 * A dictionary whose widest cell would take more bytes than this is measured row by row:
 * its widest entry (one long string anywhere in it, used by no row here perhaps) is not
 * taken as every row's size, which made every row a block of its own.
 */
const wideCell = 1 << 12

const none = { values: new Float64Array(0), codes: new Int32Array(0), bytes: new Uint8Array(0), offsets: [] as ArrayLike<number>, quote: new Int8Array(0), cells: [] as ReadonlyArray<string> }

const prepare = (c: CsvColumn): Prepared => {
  if (c.kind === "numbers") return { ...none, kind: NUMBERS, values: c.values, worst: longestNumber }
  if (c.kind === "text") return { ...none, kind: TEXT, cells: c.cells, worst: 0 }
  const entries = c.offsets.length - 1
  let widest = 0
  for (let j = 0; j < entries; j++) widest = Math.max(widest, c.offsets[j + 1]! - c.offsets[j]!)
  // quoting doubles quotes at most, plus the two around
  const worst = widest * 2 + 2
  return { ...none, kind: DICTIONARY, codes: c.codes, bytes: c.bytes, offsets: c.offsets, quote: new Int8Array(entries), worst: worst > wideCell ? 0 : worst }
}

/** Does a dictionary entry need quoting (a quote, comma or line break in it)? 2 if so, else 1. */
const quoting = (bytes: Uint8Array, from: number, to: number): number => {
  for (let k = from; k < to; k++) {
    const b = bytes[k]!
    if (b === QUOTE || b === COMMA || b === LF || b === CR) return 2
  }
  return 1
}

/**
 * How `csvRowBlocks` cuts and reads: blocks of about `blockBytes`; dictionaries of at
 * least `aheadFrom` bytes loaded ahead; with `reuse`, every block is written into the
 * same buffer (a block is then only valid until the next one is asked for: a consumer
 * that writes each to a file before the next, where fresh buffers cost a page fault per
 * 4 KiB, ~5k of them for a 20 MB share of the per-task bottleneck).
 *
 * @since 0.1.0
 * @internal
 */
export interface CsvBlockOptions {
  readonly blockBytes?: number
  readonly aheadFrom?: number
  readonly reuse?: boolean
}

/**
 * Rows `from` to `to` of these columns as CSV bytes (no header), a block at a time
 * (`CsvBlockOptions`).
 *
 * One loop over rows and columns, each kind of cell written inline (a writer function
 * per column made the call megamorphic: ~1.0 µs a row of the per-task bottleneck against
 * ~0.75 µs for its cells alone). A large dictionary's entries are read in the rows'
 * order, at random places in megabytes of strings (the per-task bottleneck's keys, sorted
 * by duration): each step first loads the entries of its rows in a tight loop whose cache
 * misses overlap, then writes them from cache.
 *
 * @since 0.1.0
 * @internal
 */
export const csvRowBlocks = function*(
  columns: ReadonlyArray<CsvColumn>,
  from: number,
  to: number,
  options?: CsvBlockOptions
): Generator<Uint8Array> {
  const blockBytes = options?.blockBytes ?? 1 << 20
  const aheadFrom = options?.aheadFrom ?? aheadBytes
  const reuse = options?.reuse === true
  const cols = columns.map(prepare)
  const C = cols.length
  // bytes a row takes at most, but for text cells and wide dictionaries (measured per row)
  const fixed = cols.reduce((n, c) => n + c.worst + 1, 1)
  const texts = cols.filter((c) => c.kind === TEXT)
  const wide = cols.filter((c) => c.kind === DICTIONARY && c.worst === 0)
  const ahead = cols.filter((c) => c.kind === DICTIONARY && c.bytes.length >= aheadFrom)
  let buf = Buffer.allocUnsafe(blockBytes)
  let pos = 0
  let touched = 0
  for (let s0 = from; s0 < to; s0 += stepRows) {
    const s1 = Math.min(to, s0 + stepRows)
    for (let a = 0; a < ahead.length; a++) {
      const { bytes, codes, offsets, quote } = ahead[a]!
      for (let r = s0; r < s1; r++) {
        const code = codes[r]!
        if (code >= 0) touched = (touched + (bytes[offsets[code]!]! | 0) + quote[code]!) & 0xffffff
      }
    }
    for (let r = s0; r < s1; r++) {
      let worst = fixed
      for (let t = 0; t < texts.length; t++) worst += texts[t]!.cells[r]!.length * 3
      for (let w = 0; w < wide.length; w++) {
        const { codes, offsets } = wide[w]!
        const code = codes[r]!
        if (code >= 0) worst += (offsets[code + 1]! - offsets[code]!) * 2 + 2
      }
      if (pos + worst > buf.length) {
        if (pos > 0) yield buf.subarray(0, pos)
        if (!reuse || worst > buf.length) buf = Buffer.allocUnsafe(Math.max(blockBytes, worst))
        pos = 0
      }
      for (let c = 0; c < C; c++) {
        if (c > 0) buf[pos++] = COMMA
        const col = cols[c]!
        const kind = col.kind
        if (kind === NUMBERS) {
          const x = col.values[r]!
          if (x === x) {
            const s = String(x)
            for (let j = 0; j < s.length; j++) buf[pos++] = s.charCodeAt(j)
          }
        } else if (kind === DICTIONARY) {
          const code = col.codes[r]!
          if (code < 0) continue
          const bytes = col.bytes
          const f = col.offsets[code]!
          const e = col.offsets[code + 1]!
          let q = col.quote[code]!
          if (q === 0) q = col.quote[code] = quoting(bytes, f, e)
          if (q === 1) for (let k = f; k < e; k++) buf[pos++] = bytes[k]!
          else {
            buf[pos++] = QUOTE
            for (let k = f; k < e; k++) {
              const b = bytes[k]!
              buf[pos++] = b
              if (b === QUOTE) buf[pos++] = QUOTE
            }
            buf[pos++] = QUOTE
          }
        } else {
          const s = col.cells[r]!
          let ascii = true
          for (let j = 0; j < s.length; j++) {
            const ch = s.charCodeAt(j)
            if (ch >= 0x80) {
              ascii = false
              break
            }
            buf[pos + j] = ch
          }
          pos += ascii ? s.length : buf.write(s, pos, "utf8")
        }
      }
      buf[pos++] = LF
    }
  }
  if (touched < 0) throw new Error("unreachable") // keeps the loads above from being dropped
  if (pos > 0) yield buf.subarray(0, pos)
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
  readonly columns: BottleneckTaskColumns
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

/**
 * Views of analysis tables: CSV (RFC 4180 quoting, nulls empty, numbers in JS's
 * shortest round-trip form, which equals Python's `repr` for floats) and aligned
 * terminal text for people: each float column with the decimals its magnitude needs (4
 * significant digits at its largest value), whole-number columns as integers, thousands
 * separated, and a value too small for its column's decimals in exponent form. DASF's
 * command prints every float with 5 decimals (`Bytes In 782719936.00000`, `0.00000`);
 * the CSV and Arrow outputs keep every digit.
 * DASF's CSVs carry pandas' meaningless row index as a first column; these do not.
 *
 * @since 0.1.0
 */
import { DataType } from "apache-arrow/type"
import type { Table, Vector } from "apache-arrow"

const summaryKey = "tessera.summary"

/**
 * An analysis table's summary line (one sentence on the whole table, e.g. the critical
 * path's split into tasks, driver and latency), kept in its schema's metadata; `analyze`
 * prints it under the table, the report under its caption. Undefined when it has none.
 *
 * @since 0.1.0
 * @category formatting
 */
export const summaryOf = (table: Table): string | undefined => table.schema.metadata.get(summaryKey)

/**
 * Gives a table its summary line (see {@link summaryOf}).
 *
 * @since 0.1.0
 * @category formatting
 */
export const setSummary = (table: Table, line: string): void => void table.schema.metadata.set(summaryKey, line)

const csvCell = (x: unknown): string => {
  if (x === null || x === undefined) return ""
  const s = typeof x === "number" ? (Number.isNaN(x) ? "" : String(x)) : String(x)
  return /[",\n\r]/.test(s) ? `"${s.replaceAll("\"", "\"\"")}"` : s
}

/**
 * CSV bytes built in place: ASCII text (every number) copied a character at a time, other
 * text through UTF-8. Building strings and encoding them afterwards cost more than
 * formatting the numbers (a 378k-row task table: ~0.8 s of 1.3 s).
 */
class CsvSink {
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
 * One column's cells: `write` puts row `row`'s bytes (at most `worst`) into a sink with
 * room for them; columns whose widest cell is not known give the cell's text instead.
 */
type CellWriter =
  | { readonly write: (row: number, sink: CsvSink) => void; readonly worst: number }
  | { readonly text: (row: number) => string }

const utf8 = new TextEncoder()
const longestNumber = 32 // "-1.2345678901234567e-308" and the like; bigints are checked below

/** One column's cells, specialised by type so a large table neither decodes its strings per row nor builds one string per cell. */
const cellWriter = (column: Vector): CellWriter => {
  const type = column.type
  if (DataType.isFloat(type) || DataType.isInt(type)) {
    const number = (x: number | bigint, sink: CsvSink) => {
      if (typeof x !== "number" || x === x) sink.text(String(x))
    }
    const bigints = column.data.some((d) => d.values instanceof BigInt64Array || d.values instanceof BigUint64Array)
    const worst = bigints ? 21 : longestNumber
    if (column.data.length === 1 && column.nullCount === 0) {
      // the common case (one batch, no nulls): read the values array directly
      const d = column.data[0]!
      const values = d.values as ArrayLike<number | bigint>
      const offset = d.offset
      return { write: (row, sink) => number(values[offset + row]!, sink), worst }
    }
    const parts = column.data.map((d) => ({ values: d.values as ArrayLike<number | bigint>, offset: d.offset, length: d.length, d }))
    return {
      write: chunked(parts, (p, i, sink) => {
        if (p.d.nullCount === 0 || p.d.getValid(i)) number(p.values[p.offset + i]!, sink)
      }),
      worst
    }
  }
  if (DataType.isDictionary(type)) {
    const dicts = new Map<Vector, DictionaryCells>()
    const parts = column.data.map((d) => {
      const dict = d.dictionary!
      let cells = dicts.get(dict)
      if (cells === undefined) dicts.set(dict, cells = dictionaryCells(dict))
      return { codes: d.values as ArrayLike<number>, offset: d.offset, length: d.length, d, cells }
    })
    return {
      write: chunked(parts, (p, i, sink) => {
        if (p.d.nullCount === 0 || p.d.getValid(i)) p.cells.write(p.codes[p.offset + i]!, sink)
      }),
      worst: Math.max(0, ...Array.from(dicts.values(), (c) => c.worst))
    }
  }
  // anything else (plain strings, lists, booleans): its text, measured per cell
  return { text: (row) => csvCell(column.get(row)) }
}

/** A dictionary's entries as CSV cells, by code. */
interface DictionaryCells {
  readonly write: (code: number, sink: CsvSink) => void
  readonly worst: number
}

const [QUOTE, COMMA, LF, CR] = [0x22, 0x2c, 0x0a, 0x0d]

/**
 * A dictionary's entries as CSV cells. A Utf8 dictionary in one buffer is copied from its
 * own UTF-8 bytes, no string decoded or encoded (DASF's keys are tuples, `('f-…', 0, 1)`:
 * every one of them is quoted, so quoting works on the bytes too).
 */
const dictionaryCells = (dict: Vector): DictionaryCells => {
  const data = dict.data
  if (DataType.isUtf8(dict.type) && data.length === 1 && data[0]!.nullCount === 0) {
    const offsets = data[0]!.valueOffsets as Int32Array
    const bytes = data[0]!.values as Uint8Array
    const base = data[0]!.offset
    const kinds = new Int8Array(dict.length) // 0 not looked at yet, 1 plain, 2 to be quoted
    let widest = 0
    for (let j = 0; j < dict.length; j++) widest = Math.max(widest, offsets[base + j + 1]! - offsets[base + j]!)
    return {
      // quoting doubles quotes at most, plus the two around
      worst: widest * 2 + 2,
      write: (code, sink) => {
        const from = offsets[base + code]!
        const to = offsets[base + code + 1]!
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
      }
    }
  }
  const cells = Array.from({ length: dict.length }, (_, j) => utf8.encode(csvCell(dict.get(j))))
  return { worst: cells.reduce((n, c) => Math.max(n, c.length), 0), write: (code, sink) => sink.bytes(cells[code]!) }
}

/** A row reader over a column's batches, for rows read in increasing order (it remembers the batch). */
const chunked = <P extends { readonly length: number }>(parts: ReadonlyArray<P>, read: (p: P, i: number, sink: CsvSink) => void) => {
  let part = 0
  let base = 0
  return (row: number, sink: CsvSink): void => {
    if (row < base) {
      part = 0
      base = 0
    }
    while (row - base >= parts[part]!.length) base += parts[part++]!.length
    read(parts[part]!, row - base, sink)
  }
}

/**
 * The table as CSV, UTF-8 bytes a block at a time (header first, about `blockBytes`
 * each), for writing large tables without building one string of them.
 *
 * @since 0.1.0
 * @category formatting
 */
export const csvBlocks = function*(table: Table, blockBytes = 1 << 20): Generator<Uint8Array> {
  const names = table.schema.fields.map((f) => f.name)
  const cells = names.map((n) => cellWriter(table.getChild(n)!))
  const sink = new CsvSink(blockBytes)
  const out: Array<Uint8Array> = []
  const header = utf8.encode(names.map(csvCell).join(",") + "\n")
  sink.reserve(header.length, out)
  sink.bytes(header)
  // bytes a row takes at most: columns of unknown width reserve their own
  const rowWorst = cells.reduce((n, c) => n + ("worst" in c ? c.worst : 0) + 1, 1)
  for (let i = 0; i < table.numRows; i++) {
    sink.reserve(rowWorst, out)
    for (let c = 0; c < cells.length; c++) {
      if (c > 0) sink.byte(0x2c)
      const cell = cells[c]!
      if ("write" in cell) cell.write(i, sink)
      else {
        const text = cell.text(i)
        sink.reserve(text.length * 3 + rowWorst, out)
        sink.text(text)
      }
    }
    sink.byte(0x0a)
    while (out.length > 0) yield out.shift()!
  }
  yield sink.take()
}

/**
 * The table as CSV text with a header row.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toCsv = (table: Table): string => Buffer.concat(Array.from(csvBlocks(table))).toString("utf8")

/** Formats one float column's shown values for people (see the module header). */
const floatFormatter = (values: ReadonlyArray<number>): ((x: number) => string) => {
  let max = 0
  let integral = true
  for (const x of values) {
    if (!Number.isFinite(x)) continue
    if (Math.abs(x) > max) max = Math.abs(x)
    if (!Number.isInteger(x)) integral = false
  }
  const grouped = (x: number, decimals: number) =>
    x.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals })
  if (integral) return (x) => (Number.isFinite(x) ? grouped(x, 0) : String(x))
  const decimals = max === 0 ? 0 : Math.min(6, Math.max(0, 3 - Math.floor(Math.log10(max))))
  return (x) => {
    if (!Number.isFinite(x)) return String(x)
    // nonzero but shown as zero at this column's precision: say how small it is
    if (x !== 0 && Math.abs(x) < 0.5 * 10 ** -decimals) return x.toExponential(2)
    return grouped(x, decimals)
  }
}

/**
 * The first `head` rows as aligned text: strings left-aligned, numbers right-aligned and
 * formatted for people (see the module header), nulls as `-`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toText = (table: Table, head = 30): string => {
  const fields = table.schema.fields
  const n = Math.min(head, table.numRows)
  const cells = fields.map((f) => {
    const col = table.getChild(f.name)!
    const isFloat = DataType.isFloat(f.type)
    const isNum = isFloat || DataType.isInt(f.type)
    const raw: Array<unknown> = []
    for (let i = 0; i < n; i++) raw.push(col.get(i))
    const missing = (x: unknown) => x === null || x === undefined || (typeof x === "number" && Number.isNaN(x))
    const float = isFloat ? floatFormatter(raw.filter((x): x is number => !missing(x))) : undefined
    const out = raw.map((x) =>
      missing(x) ? "-" : float !== undefined ? float(x as number) : typeof x === "number" ? x.toLocaleString("en-US") : String(x)
    )
    return { name: f.name, out, right: isNum }
  })
  const widths = cells.map((c) => Math.max(c.name.length, ...c.out.map((s) => s.length)))
  const pad = (s: string, w: number, right: boolean) => (right ? s.padStart(w) : s.padEnd(w))
  const lines = [cells.map((c, j) => pad(c.name, widths[j], c.right)).join("  ")]
  for (let i = 0; i < n; i++) lines.push(cells.map((c, j) => pad(c.out[i], widths[j], c.right)).join("  "))
  if (table.numRows > n) lines.push(`... ${table.numRows - n} more row(s)`)
  return lines.map((l) => l.trimEnd()).join("\n")
}

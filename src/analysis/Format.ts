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
import { utf8Strings } from "./internal/access.ts"
import { type CsvColumn, csvRowBlocks, type NumberArray } from "./internal/csvWriter.ts"

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

const utf8 = new TextEncoder()

/**
 * A table's columns as plain CSV column data (`internal/csvWriter.ts`): numbers as a
 * float64 array (nulls NaN; a single batch without nulls is a view), a Utf8 dictionary in
 * one buffer as its codes (-1 null; a single batch without nulls: a view) and UTF-8
 * entries (no string decoded), anything else (bigints,
 * lists, booleans, other dictionaries) as finished cell texts.
 *
 * @since 0.1.0
 * @category formatting
 */
export const csvColumns = (table: Table): Array<CsvColumn> => table.schema.fields.map((f) => csvColumn(table.getChild(f.name)!))

const csvColumn = (column: Vector): CsvColumn => {
  const type = column.type
  const n = column.length
  const bigints = column.data.some((d) => d.values instanceof BigInt64Array || d.values instanceof BigUint64Array)
  if ((DataType.isFloat(type) || DataType.isInt(type)) && !bigints) {
    const only = column.data[0]
    if (column.data.length === 1 && column.nullCount === 0 && only !== undefined) {
      return { kind: "numbers", values: (only.values as NumberArray).subarray(only.offset, only.offset + n) }
    }
    const values = new Float64Array(n)
    let at = 0
    for (const d of column.data) {
      const v = d.values as ArrayLike<number>
      const all = d.nullCount === 0 // a getter: read once per batch, not per row
      for (let i = 0; i < d.length; i++) values[at++] = all || d.getValid(i) ? v[d.offset + i]! : NaN
    }
    return { kind: "numbers", values }
  }
  if (DataType.isDictionary(type)) {
    const dicts = new Set(column.data.map((d) => d.dictionary))
    const strings = dicts.size === 1 ? utf8Strings(column.data[0]?.dictionary) : undefined
    if (strings !== undefined) {
      const only = column.data[0]
      if (column.data.length === 1 && column.nullCount === 0 && only !== undefined && only.values instanceof Int32Array) {
        return { kind: "dictionary", codes: only.values.subarray(only.offset, only.offset + n), ...strings }
      }
      const codes = new Int32Array(n)
      let at = 0
      for (const d of column.data) {
        const c = d.values as ArrayLike<number>
        const all = d.nullCount === 0
        for (let i = 0; i < d.length; i++) codes[at++] = all || d.getValid(i) ? c[d.offset + i]! : -1
      }
      return { kind: "dictionary", codes, ...strings }
    }
  }
  const cells: Array<string> = new Array(n)
  for (let i = 0; i < n; i++) cells[i] = csvCell(column.get(i))
  return { kind: "text", cells }
}

/**
 * The table as CSV, UTF-8 bytes a block at a time (header first, about `blockBytes`
 * each), for writing large tables without building one string of them.
 *
 * @since 0.1.0
 * @category formatting
 */
export const csvBlocks = function*(table: Table, blockBytes = 1 << 20): Generator<Uint8Array> {
  yield csvHeader(table)
  yield* csvRowBlocks(csvColumns(table), 0, table.numRows, { blockBytes })
}

/**
 * The table's CSV header line (its column names), as UTF-8 bytes.
 *
 * @since 0.1.0
 * @category formatting
 */
export const csvHeader = (table: Table): Uint8Array => utf8.encode(table.schema.fields.map((f) => csvCell(f.name)).join(",") + "\n")

/**
 * The table as CSV text with a header row.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toCsv = (table: Table): string => Buffer.concat(Array.from(csvBlocks(table))).toString("utf8")

/**
 * Thousands separated, with exactly `decimals` decimals (undefined: as `toLocaleString`
 * chooses): `toLocaleString`'s format, made once per number of decimals (`toLocaleString` with options builds a formatter per call,
 * ~20 µs each).
 */
const groupedFormats = new Map<number, Intl.NumberFormat>()
const groupedFormat = (decimals: number | undefined): Intl.NumberFormat => {
  let f = groupedFormats.get(decimals ?? -1)
  if (f === undefined) {
    f = new Intl.NumberFormat("en-US", decimals === undefined ? {} : { minimumFractionDigits: decimals, maximumFractionDigits: decimals })
    groupedFormats.set(decimals ?? -1, f)
  }
  return f
}

/** Formats one float column's shown values for people (see the module header). */
const floatFormatter = (values: ReadonlyArray<number>): ((x: number) => string) => {
  let max = 0
  let integral = true
  for (const x of values) {
    if (!Number.isFinite(x)) continue
    if (Math.abs(x) > max) max = Math.abs(x)
    if (!Number.isInteger(x)) integral = false
  }
  if (integral) {
    const whole = groupedFormat(0)
    return (x) => (Number.isFinite(x) ? whole.format(x) : String(x))
  }
  const decimals = max === 0 ? 0 : Math.min(6, Math.max(0, 3 - Math.floor(Math.log10(max))))
  const grouped = groupedFormat(decimals)
  return (x) => {
    if (!Number.isFinite(x)) return String(x)
    // nonzero but shown as zero at this column's precision: say how small it is
    if (x !== 0 && Math.abs(x) < 0.5 * 10 ** -decimals) return x.toExponential(2)
    return grouped.format(x)
  }
}

/**
 * The widest a cell (or a column's name) is shown in terminal text: a longer one is cut
 * to this many characters, its last one `…` (issue 32 item 11: a 20 MB key padded into
 * every row made a string too long to build, and nothing was printed). CSV, JSON and
 * Arrow outputs keep every value whole.
 *
 * @since 0.1.0
 * @category formatting
 */
export const maxCellWidth = 80

// a cell for one line of a table: line breaks and tabs shown as spaces (a value keeps its
// row), cut to `width` characters with an ellipsis; counts the cells it cut
const fitCell = (s: string, width: number, cut: { n: number }): string => {
  const long = s.length > width
  // never half a surrogate pair at the cut
  const keep = long && (s.charCodeAt(width - 2) & 0xfc00) === 0xd800 ? width - 2 : width - 1
  const t = long ? s.slice(0, keep) : s
  const flat = /[\n\r\t]/.test(t) ? t.replace(/[\n\r\t]/g, " ") : t
  if (!long) return flat
  cut.n++
  return flat + "…"
}

/**
 * The first `head` rows as aligned text: strings left-aligned, numbers right-aligned and
 * formatted for people (see the module header), nulls as `-`. A cell longer than
 * `width` characters (`maxCellWidth` unless given) is cut, ending in `…`, and a line
 * under the table says how many were (the CSV, JSON and Arrow outputs keep them whole):
 * column widths, and so the text, stay bounded whatever the values.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toText = (table: Table, head = 30, width = maxCellWidth): string => {
  const cut = { n: 0 }
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
      fitCell(missing(x) ? "-" : float !== undefined ? float(x as number) : typeof x === "number" ? groupedFormat(undefined).format(x) : String(x), width, cut)
    )
    return { name: fitCell(f.name, width, cut), out, right: isNum }
  })
  const widths = cells.map((c) => c.name.length)
  cells.forEach((c, j) => {
    for (const s of c.out) if (s.length > widths[j]) widths[j] = s.length
  })
  const pad = (s: string, w: number, right: boolean) => (right ? s.padStart(w) : s.padEnd(w))
  const lines = [cells.map((c, j) => pad(c.name, widths[j], c.right)).join("  ")]
  for (let i = 0; i < n; i++) lines.push(cells.map((c, j) => pad(c.out[i], widths[j], c.right)).join("  "))
  if (table.numRows > n) lines.push(`... ${table.numRows - n} more row(s)`)
  if (cut.n > 0) lines.push(`(${cut.n} cell(s) longer than ${width} characters cut, ending in …; the CSV, JSON and Arrow outputs keep them whole)`)
  return lines.map((l) => l.trimEnd()).join("\n")
}

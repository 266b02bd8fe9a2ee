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
import { DataType, type Table } from "apache-arrow"

const csvCell = (x: unknown): string => {
  if (x === null || x === undefined) return ""
  const s = typeof x === "number" ? (Number.isNaN(x) ? "" : String(x)) : String(x)
  return /[",\n\r]/.test(s) ? `"${s.replaceAll("\"", "\"\"")}"` : s
}

/**
 * The table as CSV text with a header row.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toCsv = (table: Table): string => {
  const names = table.schema.fields.map((f) => f.name)
  const cols = names.map((n) => table.getChild(n)!.toArray() as ArrayLike<unknown>)
  const lines = [names.map(csvCell).join(",")]
  for (let i = 0; i < table.numRows; i++) lines.push(cols.map((c) => csvCell(c[i])).join(","))
  return lines.join("\n") + "\n"
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

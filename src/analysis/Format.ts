/**
 * Views of analysis tables: CSV (RFC 4180 quoting, nulls empty, numbers in JS's
 * shortest round-trip form, which equals Python's `repr` for floats) and aligned
 * terminal text (floats with 5 decimals, as DASF's analysis command prints them).
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

/**
 * The first `head` rows as aligned text: strings left-aligned, numbers right-aligned,
 * floats with 5 decimals, nulls as `-`.
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
    const out: Array<string> = []
    for (let i = 0; i < n; i++) {
      const x = col.get(i)
      out.push(x === null || x === undefined || (typeof x === "number" && Number.isNaN(x))
        ? "-"
        : isFloat ? (x as number).toFixed(5) : String(x))
    }
    return { name: f.name, out, right: isNum }
  })
  const widths = cells.map((c) => Math.max(c.name.length, ...c.out.map((s) => s.length)))
  const pad = (s: string, w: number, right: boolean) => (right ? s.padStart(w) : s.padEnd(w))
  const lines = [cells.map((c, j) => pad(c.name, widths[j], c.right)).join("  ")]
  for (let i = 0; i < n; i++) lines.push(cells.map((c, j) => pad(c.out[i], widths[j], c.right)).join("  "))
  if (table.numRows > n) lines.push(`... ${table.numRows - n} more row(s)`)
  return lines.map((l) => l.trimEnd()).join("\n")
}

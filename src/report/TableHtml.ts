/**
 * HTML pieces the report's sections share: escaping (every string from a trace goes
 * through `esc`), numbers formatted for people (seconds, bytes, percentages with units
 * and four significant digits), and sortable tables with a one-line caption.
 *
 * A table cell keeps its raw number in `data-v` (sorting is numeric); what is shown is
 * formatted by the column's unit: given in `ReportTable.units`, else read from the
 * column's name (`… (s)` seconds, `… (%)` percent, a name with the word `bytes` and no
 * other unit in parentheses bytes).
 *
 * @since 0.1.0
 */

/**
 * A table for the report: column names, rows of cells (numbers sort numerically), a
 * one-line `description` of its columns, and optional units per column.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReportTable {
  readonly title: string
  readonly description?: string
  /** a warning shown under the caption (the analysis found its input wrong: a dependency cycle) */
  readonly warning?: string
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string | number | null>>
  readonly units?: ReadonlyArray<Unit | undefined>
}

/**
 * How a numeric column is shown.
 *
 * @since 0.1.0
 * @category models
 */
export type Unit = "s" | "bytes" | "%" | "share" | "count" | "number"

/**
 * Escape text for HTML content and attribute values.
 *
 * @since 0.1.0
 * @category formatting
 */
export const esc = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const sig = (x: number, digits = 4): string => {
  if (x === 0) return "0"
  const a = Math.abs(x)
  if (a >= 1e15 || a < 1e-4) return x.toExponential(digits - 1)
  if (a >= 10 ** digits) return Math.round(x).toLocaleString("en-US")
  return String(Number(x.toPrecision(digits)))
}

/**
 * Seconds for people: `1.23 s`, `45.6 ms`, `12.0 µs`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const fmtSeconds = (s: number): string => {
  if (!Number.isFinite(s)) return "—"
  const a = Math.abs(s)
  return a >= 1 || a === 0 ? `${sig(s, 3)} s` : a >= 1e-3 ? `${sig(s * 1e3, 3)} ms` : `${sig(s * 1e6, 3)} µs`
}

/**
 * Bytes for people, binary units: `1.53 MiB`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const fmtBytes = (b: number): string => {
  if (!Number.isFinite(b)) return "—"
  const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
  let i = 0
  let x = b
  while (i < u.length - 1 && Math.abs(x) >= 1024) (x /= 1024, i++)
  return i === 0 ? `${x} B` : `${sig(x, 3)} ${u[i]}`
}

/**
 * A number shown with its unit (see the module header).
 *
 * @since 0.1.0
 * @category formatting
 */
export const fmtNumber = (x: number, unit: Unit | undefined): string => {
  if (!Number.isFinite(x)) return "—"
  switch (unit) {
    case "s":
      return fmtSeconds(x)
    case "bytes":
      return fmtBytes(x)
    case "%":
      return `${sig(x, 3)} %`
    case "share":
      return `${sig(x * 100, 3)} %`
    default:
      return Number.isInteger(x) ? x.toLocaleString("en-US") : sig(x)
  }
}

/**
 * The unit a column's name implies (see the module header), undefined for none.
 *
 * @since 0.1.0
 * @category formatting
 */
export const unitOfColumn = (name: string): Unit | undefined =>
  /\((s|seconds)\)\s*$/i.test(name)
    ? "s"
    : /\(%\)\s*$/.test(name)
    ? "%"
    // another unit named in parentheses (MB, GB, Mb, chunks): the numbers stay as they are
    : /\([^)]*\)\s*$/.test(name)
    ? undefined
    : /\bbytes\b/i.test(name)
    ? "bytes"
    : undefined

/**
 * A sortable table with its title and caption; `id` makes element ids unique.
 *
 * @since 0.1.0
 * @category formatting
 */
export const renderTable = (t: ReportTable, max: number, id: string | number): string => {
  const caption = `${t.description ? `<p class="note">${esc(t.description)}</p>` : ""}${t.warning ? `<p class="warning">${esc(t.warning)}</p>` : ""}`
  if (t.columns.length === 0) return `<h3>${esc(t.title)}</h3>${caption}`
  const units = t.columns.map((c, j) => t.units?.[j] ?? unitOfColumn(c))
  const shown = t.rows.slice(0, max)
  const head = t.columns.map((c, i) => `<th data-col="${i}" title="click to sort">${esc(c)}</th>`).join("")
  const body = shown
    .map(
      (r) =>
        `<tr>${r
          .map((c, j) =>
            typeof c === "number"
              ? `<td class="n" data-v="${Number.isFinite(c) ? c : ""}">${esc(fmtNumber(c, units[j]))}</td>`
              : `<td>${esc(String(c ?? ""))}</td>`
          )
          .join("")}</tr>`
    )
    .join("\n")
  const more = t.rows.length > shown.length ? `<p class="note">showing ${shown.length} of ${t.rows.length} rows</p>` : ""
  return `<h3>${esc(t.title)}</h3>${caption}
<div class="tablewrap"><table class="sortable" id="table-${esc(String(id))}"><thead><tr>${head}</tr></thead><tbody>
${body}
</tbody></table></div>${more}`
}

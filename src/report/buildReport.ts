/**
 * One call from trace database files to the report model and the HTML report, shared
 * by `tessera report`, `tessera export`, `tessera plot` and the `--report` option of
 * `tessera demo` / `tessera run`.
 *
 * @since 0.1.0
 */
import { writeFile } from "node:fs/promises"
import { renderHtml } from "./Html.ts"
import type { ReportTable } from "./Html.ts"
import { loadEvents, runName } from "./loadEvents.ts"
import { fromEvents } from "./ReportData.ts"
import type { ReportData } from "./ReportData.ts"
import { analysisTables, defaultTables } from "./tables.ts"

/**
 * Load databases into the report model.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadReportData = async (files: ReadonlyArray<string>, title?: string): Promise<ReportData> => {
  const loaded = await loadEvents(files)
  return fromEvents(loaded.events, { title: title ?? runName(files), sources: files })
}

/**
 * Write the HTML report of `files` to `out`; returns the report's size in bytes.
 * Tables are `src/analysis`'s analyses unless `tables` is given (falling back to the
 * report's own per-function / per-worker summaries if the analyses cannot load).
 *
 * @since 0.1.0
 * @category rendering
 */
export const writeReport = async (
  files: ReadonlyArray<string>,
  out: string,
  options: { readonly title?: string; readonly tables?: ReadonlyArray<ReportTable> } = {}
): Promise<{ readonly bytes: number; readonly data: ReportData }> => {
  const data = await loadReportData(files, options.title)
  const tables = options.tables ?? (await analysisTables(files).catch(() => defaultTables(data)))
  const html = await renderHtml(data, { tables })
  await writeFile(out, html)
  return { bytes: Buffer.byteLength(html), data }
}

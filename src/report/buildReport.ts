/**
 * One call from trace database files to the report model and the HTML report, shared
 * by `tessera report`, `tessera export`, `tessera plot` and the `--report` option of
 * `tessera demo` / `tessera run`.
 *
 * @since 0.1.0
 */
import { writeFile } from "node:fs/promises"
import { loadPromise } from "../analysis/Load.ts"
import type { TraceTables } from "../analysis/Load.ts"
import { isTraceFormatError } from "../trace/TraceFormat.ts"
import { fromTables } from "./fromTables.ts"
import { renderHtml } from "./Html.ts"
import type { ReportTable } from "./Html.ts"
import { ReportInputError, runName } from "./loadEvents.ts"
import type { ReportData } from "./ReportData.ts"
import { analysisTables } from "./tables.ts"

/**
 * Load databases into the report model and `src/analysis`'s tables, decoding once with
 * the analysis loader. The stage graph comes from the loaded metadata events (see
 * `fromTables`): the first `Pipeline Graph` event's `dot` arg, an instant event as
 * written now or a metadata `M` event as Tessera 0.1 wrote it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadReportInput = async (
  files: ReadonlyArray<string>,
  title?: string
): Promise<{ readonly data: ReportData; readonly tables: TraceTables }> => {
  let tables: TraceTables
  try {
    tables = await loadPromise(files)
  } catch (e) {
    throw isTraceFormatError(e)
      ? new ReportInputError({ file: e.file, offset: e.offset, reason: `${e.reason._tag}: ${e.reason.message}` })
      : new ReportInputError({ file: files.join(", "), offset: 0, reason: String(e) })
  }
  return { data: fromTables(tables, { title: title ?? runName(files), sources: files }), tables }
}

/**
 * Load databases into the report model.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadReportData = async (files: ReadonlyArray<string>, title?: string): Promise<ReportData> =>
  (await loadReportInput(files, title)).data

/**
 * Write the HTML report of `files` to `out`; returns the report's size in bytes.
 * Tables are `src/analysis`'s analyses unless `tables` is given.
 *
 * @since 0.1.0
 * @category rendering
 */
export const writeReport = async (
  files: ReadonlyArray<string>,
  out: string,
  options: { readonly title?: string; readonly tables?: ReadonlyArray<ReportTable> } = {}
): Promise<{ readonly bytes: number; readonly data: ReportData }> => {
  const input = await loadReportInput(files, options.title)
  const html = await renderHtml(input.data, { tables: options.tables ?? analysisTables(input.tables) })
  await writeFile(out, html)
  return { bytes: Buffer.byteLength(html), data: input.data }
}

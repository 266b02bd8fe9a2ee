/**
 * One analysis run on the helper worker thread (`csvWorker.ts`), for `Analyze.ts`: the
 * tables built from the decoded databases it is sent (cloned: `Decoding.decodedParts`),
 * with the analysis's own column projection; the analysis computed; its Arrow file
 * written (`--format arrow`); its aligned text, summary line and CSV columns sent back for
 * the main thread to print in order and to write (both threads format the CSV's rows: the
 * main thread is free by then). The same code as on the main thread, so the same bytes.
 *
 * Loaded by the worker on its first `prepare` or `analysis` message only: it loads Arrow
 * and the analyses (~0.2 s), which a worker that only formats CSV does not need.
 *
 * @since 0.1.0
 * @internal
 */
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { analyses } from "../Analysis.ts"
import { columnsOfNames } from "../AnalysisNames.ts"
import { type DecodedParts, decodedOfParts } from "../Decoding.ts"
import { csvColumns, csvHeader, summaryOf, toText } from "../Format.ts"
import { type CsvColumn, quotedEntries } from "./csvWriter.ts"
import { tablesOf } from "../Load.ts"

/**
 * What to run.
 *
 * @since 0.1.0
 * @internal
 */
export interface AnalysisJob {
  readonly type: "analysis"
  readonly name: string
  readonly decoded: DecodedParts
  readonly files: ReadonlyArray<string>
  /** folder for `<name>.csv` (and `.arrow`); none: nothing written */
  readonly output?: string
  readonly format: "csv" | "arrow"
  readonly head: number
}

/**
 * What it gave: the table's first `head` rows as aligned text, its summary line, its
 * rows and (with an output folder) its CSV to write; or the file that could not be
 * written.
 *
 * @since 0.1.0
 * @internal
 */
export type AnalysisReply =
  | {
    readonly text: string
    readonly summary: string | undefined
    readonly rows: number
    /** with an output folder: the CSV to write (its header and `csvColumns`) */
    readonly csv?: { readonly header: Uint8Array; readonly columns: ReadonlyArray<CsvColumn> }
    readonly writeFailed?: undefined
  }
  | { readonly writeFailed: { readonly file: string; readonly message: string } }

const judged = (c: CsvColumn): CsvColumn => (c.kind === "dictionary" && c.quoted === undefined ? { ...c, quoted: quotedEntries(c.bytes, c.offsets) } : c)

/**
 * Run a job (other failures throw: the main thread then runs the analysis itself).
 *
 * @since 0.1.0
 * @internal
 */
export const runAnalysisJob = async (job: AnalysisJob): Promise<AnalysisReply> => {
  const analysis = analyses.find((a) => a.name === job.name)
  if (analysis === undefined) throw new Error(`no analysis named ${job.name}`)
  const tables = tablesOf(decodedOfParts(job.decoded), job.files, columnsOfNames([job.name]))
  const table = analysis.run(tables)
  if (job.output !== undefined && job.format === "arrow") {
    const arrow = join(job.output, `${job.name}.arrow`)
    const { tableToIPC } = await import("apache-arrow/ipc/serialization")
    try {
      writeFileSync(arrow, tableToIPC(table, "file"))
    } catch (e) {
      return { writeFailed: { file: arrow, message: e instanceof Error ? e.message : String(e) } }
    }
  }
  return {
    text: toText(table, job.head),
    summary: summaryOf(table),
    rows: table.numRows,
    // which entries need quotes judged here, once, for both threads that format the rows
    ...(job.output !== undefined ? { csv: { header: csvHeader(table), columns: csvColumns(table).map(judged) } } : {})
  }
}

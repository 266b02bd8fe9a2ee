/**
 * One call from trace database files to the report model and the HTML report, shared
 * by `tessera report`, `tessera export`, `tessera plot` and the `--report` option of
 * `tessera demo` / `tessera run`; and `renderDot`, which draws a DOT graph (a
 * pipeline's `visualize()`) as SVG.
 *
 * @since 0.1.0
 */
import { loadProfilePromise } from "../analysis/Profile.ts"
import { diagnoseTables } from "../analysis/Diagnose.ts"
import { findingsSection, withFindingsFirst } from "./Findings.ts"
import { flameSection } from "./FlameGraph.ts"
import { findInputAsOutput, OutputIsInput, writeOutputFile } from "../trace/OutputFile.ts"
import { Effect } from "effect"
import { loadPromise } from "../analysis/Load.ts"
import type { TraceTables } from "../analysis/Load.ts"
import { isTraceFormatError } from "../trace/TraceFormatError.ts"
import { fromTables } from "./FromTables.ts"
import { leftOutLine, renderHtml } from "./Html.ts"
import type { ReportTable } from "./TableHtml.ts"
import { isReportInputError, loadEvents, ReportInputError, runName } from "./LoadEvents.ts"
import type { ReportData } from "./ReportData.ts"
import { failureText } from "./ReportData.ts"
import { erredTasks } from "../analysis/StageSummary.ts"
import { runAll as runUserAnalyses } from "../analysis/Plugin.ts"
import type { QueryError } from "../analysis/Query.ts"
import { analysisTables, fromArrow, transferTables } from "./ReportTables.ts"

export {
  /**
   * Lay out Graphviz DOT as SVG (report/Graphviz.ts): `Report.renderDot(pipeline.visualize())`
   * draws a pipeline's stage DAG.
   *
   * @since 0.1.0
   * @category formatting
   */
  renderDot,
  /**
   * {@link renderDot} as a Promise.
   *
   * @since 0.1.0
   * @category formatting
   */
  renderDotPromise
} from "./Graphviz.ts"

/**
 * The report model and the analysis tables it was built from.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReportInput {
  readonly data: ReportData
  readonly tables: TraceTables
}

/** A Promise of the trace readers: their TraceFormatError / ReportInputError fails, the rest dies. */
const fromPromise = <A>(f: () => Promise<A>): Effect.Effect<A, ReportInputError> =>
  Effect.catch(
    Effect.tryPromise({ try: f, catch: (e) => e }),
    (e) =>
      isTraceFormatError(e)
        ? Effect.fail(ReportInputError.traceUnreadable(e))
        : isReportInputError(e)
        ? Effect.fail(e)
        : Effect.die(e)
  )

/**
 * Load databases into the report model and `src/analysis`'s tables, decoding once with
 * the analysis loader. The stage graph comes from the loaded metadata events (see
 * `fromTables`): the first `Pipeline Graph` event's `dot` arg, an instant event as
 * written now or a metadata `M` event as Tessera 0.1 wrote it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadReportInput = (
  files: ReadonlyArray<string>,
  title?: string
): Effect.Effect<ReportInput, ReportInputError> =>
  fromPromise(async () => {
    const tables = await loadPromise(files)
    const failures = await failureTexts(tables, files)
    return { data: fromTables(tables, { title: title ?? runName(files), sources: files, ...(failures === undefined ? {} : { failures }) }), tables }
  })

/**
 * The erred tasks' error and traceback by key, for a run that failed (the loaded tables
 * keep only a task's state): the files' `Compute` events with state `erred`, decoded
 * whole in a second pass that only a trace with an erred task pays for.
 */
const failureTexts = async (
  tables: TraceTables,
  files: ReadonlyArray<string>
): Promise<Map<string, { readonly error: string; readonly traceback: string }> | undefined> => {
  if (!erredTasks(tables.tasks).includes(1)) return undefined
  const out = new Map<string, { readonly error: string; readonly traceback: string }>()
  for (const e of (await loadEvents(files)).events) {
    if (e.name !== "Compute" || e.phase !== "X") continue
    const a = (e.args ?? {}) as Record<string, unknown>
    if (a["state"] === "erred") out.set(String(a["key"] ?? ""), failureText(a))
  }
  return out
}

/**
 * `loadReportInput` as a Promise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadReportInputPromise = (files: ReadonlyArray<string>, title?: string): Promise<ReportInput> =>
  Effect.runPromise(loadReportInput(files, title))

/**
 * Load databases into the report model.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadReportData = (files: ReadonlyArray<string>, title?: string): Effect.Effect<ReportData, ReportInputError> =>
  Effect.map(loadReportInput(files, title), (input) => input.data)

/**
 * `loadReportData` as a Promise.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadReportDataPromise = (files: ReadonlyArray<string>, title?: string): Promise<ReportData> =>
  Effect.runPromise(loadReportData(files, title))

/**
 * Options of `writeReport`.
 *
 * @since 0.1.0
 * @category models
 */
export interface WriteReportOptions {
  readonly title?: string
  readonly tables?: ReadonlyArray<ReportTable>
  /** user analyses (`.sql` files or modules, analysis/Plugin.ts): one table each, after the others */
  readonly analyses?: ReadonlyArray<string>
  /** run `.sql` user analyses with file access and extensions (default: safe mode, Plugin.ts) */
  readonly unsafeSql?: boolean
  /** the baseline's databases or saved bench results: a section comparing `files` against them (Baseline.ts) */
  readonly baseline?: ReadonlyArray<string>
}

/**
 * Write the HTML report of `files` to `out`; returns the report's size in bytes.
 * Tables are `src/analysis`'s analyses unless `tables` is given; `warnings` are the
 * loader's (`TraceTables.warnings`: recomputations, clocks) and the page's (tasks left
 * out for absurd durations, `Html.leftOutLine`). `out`'s folder is created
 * when missing; the page is written beside `out` and renamed over it once whole, so a
 * failure leaves the previous `out` or none (trace/OutputFile.ts). Fails with
 * `ReportInputError` (an unreadable database, or the output cannot be written), and with
 * `OutputIsInput` when `out` is one of `files` (a hard link to one included).
 *
 * @since 0.1.0
 * @category formatting
 */
export const writeReport = (
  files: ReadonlyArray<string>,
  out: string,
  options: WriteReportOptions = {}
): Effect.Effect<
  { readonly bytes: number; readonly data: ReportData; readonly warnings: ReadonlyArray<string> },
  ReportInputError | QueryError | OutputIsInput
> =>
  Effect.gen(function*() {
    // the output is none of the inputs (a hard link to one included): refused before the load
    const clash = findInputAsOutput([out], files)
    if (clash !== undefined) return yield* clash
    const input = yield* loadReportInput(files, options.title)
    const user = yield* runUserAnalyses(options.analyses ?? [], input.tables, { unsafeSql: options.unsafeSql === true })
    const profile = yield* fromPromise(() => loadProfilePromise(files))
    // `--baseline`: what `tessera diff` shows, as a section (issue 36); sides that cannot be compared say why
    const baseline = options.baseline === undefined || options.baseline.length === 0 ? [] : [
      yield* Effect.tryPromise({
        try: () => import("./Baseline.ts").then((B) => B.baselineSectionPromise(files, options.baseline!)),
        catch: (e) => (e as { _tag?: unknown })._tag === "DiffRefused" ? ReportInputError.invalidArgument("--baseline", (e as Error).message) : ReportInputError.unexpected(e)
      })
    ]
    // the diagnosis's findings, first (Findings.ts); its script after the page's
    const findings = findingsSection(diagnoseTables(input.tables, profile.samples.time.length > 0 ? { profile } : {}), input.data.t0)
    const html = withFindingsFirst(
      yield* Effect.promise(() =>
        renderHtml(input.data, {
          tables: [...(options.tables ?? analysisTables(input.tables)), ...user.map((u) => fromArrow(u.title, u.table))],
          transferTables: transferTables(input.tables),
          sections: [flameSection(profile, input.data.t0), ...baseline, { html: "", script: findings.script }]
        })
      ),
      findings.html
    )
    // `-o runs/today/report.html`: the folder is made, as `plot -o` makes its own; the
    // page goes to a file beside it, renamed over it once whole (trace/OutputFile.ts)
    yield* Effect.tryPromise({
      try: () => writeOutputFile(out, html, { inputs: files, makeFolder: true }),
      catch: (e) => (e instanceof OutputIsInput ? e : ReportInputError.unexpected(e, out))
    })
    const leftOut = input.data.leftOutTasks ?? 0
    return { bytes: Buffer.byteLength(html), data: input.data, warnings: [...input.tables.warnings, ...(leftOut > 0 ? [leftOutLine(leftOut)] : [])] }
  })

/**
 * `writeReport` as a Promise.
 *
 * @since 0.1.0
 * @category formatting
 */
export const writeReportPromise = (
  files: ReadonlyArray<string>,
  out: string,
  options: WriteReportOptions = {}
): Promise<{ readonly bytes: number; readonly data: ReportData; readonly warnings: ReadonlyArray<string> }> =>
  Effect.runPromise(writeReport(files, out, options))

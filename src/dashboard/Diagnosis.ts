/**
 * The dashboard's Findings tab: `tessera diagnose`'s findings (analysis/Diagnose.ts,
 * the same as the HTML report's first section, report/Findings.ts) for the run the
 * dashboard shows, computed once when the run is over, from trace databases:
 *
 * - `tessera dashboard -d DB…`: the databases it replays;
 * - `tessera demo|run --dashboard … --profile NAME`: the databases the profiler wrote,
 *   read after the run (the profiler's layer closed, its files flushed), never during it.
 *
 * Without trace databases (`--dashboard` alone, or `--report` without `--profile`, whose
 * databases are temporary) the tab says so: the live state holds no dependencies and
 * sheds detail, so a diagnosis from it would not be `tessera diagnose`'s.
 *
 * Each finding carries its evidence's time range on the page's axis (seconds since the
 * state's `t0`), so a click zooms the task stream to it as the report's does.
 *
 * @since 0.1.0
 */
import type { Diagnosis, Finding } from "../analysis/Diagnose.ts"
import { pageRange } from "../report/Findings.ts"
import type { LiveState } from "./LiveState.ts"

/**
 * One finding as the page shows it: the diagnosis's finding and `from`/`to`, its
 * evidence's time range in seconds since the page's `t0`.
 *
 * @since 0.1.0
 * @category models
 */
export interface FindingView extends Finding {
  readonly from: number
  readonly to: number
}

/**
 * What the Findings tab shows: nothing to diagnose (and why), a diagnosis under way, the
 * findings, or why the diagnosis failed. `source` says where the findings come from.
 *
 * @since 0.1.0
 * @category models
 */
export type FindingsPanel =
  | { readonly status: "none"; readonly reason: string }
  | { readonly status: "pending"; readonly source: string }
  | {
    readonly status: "ready"
    readonly source: string
    readonly headline: string
    readonly clean: boolean
    readonly wall: number
    readonly tasks: number
    readonly workers: number
    readonly criticalPath: Diagnosis["criticalPath"]
    readonly findings: ReadonlyArray<FindingView>
  }
  | { readonly status: "error"; readonly source: string; readonly message: string }

/**
 * The panel of a live run before anything is known.
 *
 * @since 0.1.0
 * @category constants
 */
export const noTraces: FindingsPanel = {
  status: "none",
  reason: "no trace databases: run with --profile NAME to get tessera diagnose's findings here when the run is over (the live state alone holds no task dependencies)"
}

/**
 * The summary line, as the report's section says it.
 *
 * @since 0.1.0
 * @category formatting
 */
export const headlineOf = (d: Diagnosis): string => {
  const high = d.findings.filter((f) => f.severity === "high").length
  return d.findings.length === 0
    ? "No findings: nothing in this run stands out."
    : d.clean
    ? `A clean run: no finding of high severity (${d.findings.length} of lower severity).`
    : `${high} finding${high === 1 ? "" : "s"} of high severity, ${d.findings.length} in all, by estimated saving.`
}

/**
 * The panel of a diagnosis; `t0`: the page's time origin (epoch seconds).
 *
 * @since 0.1.0
 * @category constructors
 */
export const panelOf = (d: Diagnosis, t0: number, source: string): FindingsPanel => ({
  status: "ready",
  source,
  headline: headlineOf(d),
  clean: d.clean,
  wall: d.wall,
  tasks: d.tasks,
  workers: d.workers,
  criticalPath: d.criticalPath,
  findings: d.findings.map((f) => {
    const [from, to] = pageRange(f, d.runStart, t0)
    return { ...f, from, to }
  })
})

const sourceOf = (files: ReadonlyArray<string>): string =>
  `tessera diagnose -d ${files.join(" ")}`

/**
 * Diagnoses `files` in a worker thread (`AfterRunWorker.ts`) and puts the findings on
 * `state`'s Findings tab (pending meanwhile; a failure is shown as the error's message). `t0`: the page's time origin in epoch
 * seconds (the live state's `t0`; a replay's trace start, `ReportData.t0`). Never
 * rejects.
 *
 * @since 0.1.0
 * @category constructors
 */
export const diagnoseInto = async (state: LiveState, files: ReadonlyArray<string>, t0: number): Promise<FindingsPanel> => {
  const source = sourceOf(files)
  if (files.length === 0) return (state.findings = noTraces)
  state.findings = { status: "pending", source }
  try {
    // in a worker thread of its own: the server keeps answering meanwhile
    const { runAfterRun } = await import("./AfterRunWorker.ts")
    state.findings = await runAfterRun<FindingsPanel>({ kind: "findings", files: [...files], t0 })
  } catch (e) {
    state.findings = { status: "error", source, message: e instanceof Error ? e.message : String(e) }
  }
  return state.findings
}

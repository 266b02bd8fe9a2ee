/**
 * The report page's sections, in order: a list of `ReportSection`s (id, heading, HTML,
 * the Vega views it holds), so a new section (a flame graph, transfers) is one more
 * builder in `reportSections`. The page answers the first question first:
 *
 * 0. `failure` — only for a run that failed: the erred task (key, function, stage,
 *    worker, error message, its stack folded).
 * 1. `time` — where did the time go: the run's worker time per stage and per function
 *    as stacked bars (compute, transfer, driver, idle), the one-line summary "tasks X s,
 *    driver Y s, idle Z s" for the run and per worker, and what the trace lacks.
 * 2. `stream` — the task stream (phases, the driver's row).
 * 3. `stages` — the stage DAG annotated with each stage's time and tasks, and the
 *    per-stage table (`analysis/StageSummary.ts`' rows: `stage_summary`'s numbers).
 * 4. `resources` — resource usage, managed memory and chunks held (aligned timelines),
 *    and GPU workers' device memory.
 * 4b. `transfers` — only where the run moved data or measured clocks: bandwidth tables
 *    (by worker pair, by data type), transfer time per function, compute vs transfer,
 *    and the cluster workers' clock offsets.
 * 5. `histograms` — Work Queue style histograms per function, then over all tasks.
 * 6. `analyses` — the analysis tables.
 *
 * Leaves out: the page's frame, data payload and script (Html.ts, PageScript.ts).
 *
 * @since 0.1.0
 */
import type { TopLevelSpec } from "vega-lite"
import { byteUnit, taskHistograms } from "../analysis/Histograms.ts"
import { histogramSpec, resourceSpecs, taskStreamVega, timelineSpec, timelinesSpec, toVega } from "./Charts.ts"
import { renderDotPromise } from "./Graphviz.ts"
import type { PageView } from "./PageScript.ts"
import type { ReportData } from "./ReportData.ts"
import { sanitize } from "./SafeSvg.ts"
import { esc, fmtNumber, fmtSeconds, renderTable } from "./TableHtml.ts"
import type { ReportTable } from "./TableHtml.ts"
import type { StageTime, TimeBreakdown } from "./TimeBreakdown.ts"
import { functionHistogramsSpec, functionTimeSpec, stageTimeSpec } from "./TimeCharts.ts"

/**
 * One section of the page: `<section id="{id}"><h2>{title}</h2>{html}</section>`;
 * `views` are the Vega views whose containers `html` holds.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReportSection {
  readonly id: string
  readonly title: string
  readonly html: string
  readonly views: ReadonlyArray<PageView>
}

/**
 * What the section builders read.
 *
 * @since 0.1.0
 * @category models
 */
export interface SectionInput {
  readonly data: ReportData
  readonly breakdown: TimeBreakdown
  readonly tables: ReadonlyArray<ReportTable>
  readonly maxTableRows: number
  /** the transfer analyses' tables (ReportTables.ts `transferTables`), shown in `transfers` */
  readonly transferTables?: ReadonlyArray<ReportTable>
}

const div = (id: string, cls = "chart") => `<div class="${cls}" id="${id}"></div>`
const note = (s: string) => `<p class="note">${s}</p>`
const pct = (x: number, of: number) => (of > 0 ? `${((100 * x) / of).toFixed(0)} %` : "—")

/**
 * "tasks X s, driver Y s, idle Z s" (a wall-time split); "driver not measured" where the
 * trace has no driver segments.
 *
 * @since 0.1.0
 * @category formatting
 */
export const summaryLine = (x: { readonly tasks: number; readonly driver: number; readonly idle: number }, measured = true): string =>
  `tasks ${fmtSeconds(x.tasks)}, driver ${measured ? fmtSeconds(x.driver) : "not measured"}, idle ${fmtSeconds(x.idle)}`

const timeSection = ({ breakdown: b, data }: SectionInput): ReportSection => {
  const top = [...b.stages].sort((x, y) => y.split.compute + y.split.transfer - (x.split.compute + x.split.transfer))[0]
  const absent = [
    b.hasDriver ? "" : "no Driver events in these databases (DASF traces have none): driver time is not measured and counts as idle",
    b.hasStages ? "" : "tasks carry no stage: their time is one row, (no stage)",
    b.hasPhases || data.tasks.start.length === 0 ? "" : "tasks carry no gather / transfer phases: all task time counts as compute"
  ].filter((s) => s !== "")
  const workers = b.perWorker.map((w) => `<li><b>${esc(w.name)}</b>: ${summaryLine(w, b.hasDriver)}</li>`).join("")
  const html = `<p class="summary" id="run-summary"><b>Run</b> (${fmtSeconds(b.wall)} wall, ${b.workers} worker${b.workers === 1 ? "" : "s"}): ${summaryLine(b.runLine, b.hasDriver)}${
    top !== undefined && b.hasStages ? ` · most task time in <b>${esc(top.name)}</b> (${pct(top.split.compute + top.split.transfer, b.run.compute + b.run.transfer)} of it)` : ""}</p>
${note("Run: tasks = time at least one task ran; driver = time no task ran while the main thread worked or a worker started; idle = neither. Per worker the same, for that worker:")}
<ul class="workers">${workers}</ul>
${absent.map((s) => note(esc(s))).join("\n")}
${div("time-stages", "chart wide")}${div("time-functions", "chart wide")}`
  return {
    id: "time",
    title: "Where did the time go",
    html,
    views: [
      { id: "time-stages", spec: toVega(stageTimeSpec(b)), sources: [] },
      ...(b.functions.length > 0 ? [{ id: "time-functions", spec: toVega(functionTimeSpec(b)), sources: [] }] : [])
    ]
  }
}

const streamSection = ({ breakdown: b, data }: SectionInput): ReportSection => ({
  id: "stream",
  title: "Task stream",
  html: `${note(`one row per worker${data.gpuWorkers.length > 0 ? ` (GPU workers: ${esc(data.gpuWorkers.join(", "))})` : ""}${b.hasDriver ? " and one for the driver (the main thread)" : ""}${
    b.hasPhases ? "; a task's gather and transfer phases are drawn at its ends in red" : ""}${
    data.failures.length > 0 ? `; the erred task${data.failures.length === 1 ? "" : "s"} (the run failed) in black, outlined` : ""}${
    data.transfers.start.length > 0 ? `; ${data.transfers.start.length.toLocaleString("en-US")} data transfers (peer fetches, device copies) in pink on the receiving worker's row` : ""}${
    b.hasDriver ? "; the driver's segments in browns and greys (light grey: waiting for the workers)" : "; no Driver events: the time between tasks is not explained"}`)}${div("task-stream", "chart wide")}`,
  views: [{ id: "task-stream", spec: taskStreamVega(data), sources: [{ source: "tasks", rows: "stream" }], fit: true }]
})

// DOT string literal
const dotString = (s: string): string => `"${s.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")}"`

/**
 * The stage DAG's DOT with each stage's time: every stage of `stages` whose node the
 * graph has (`"name"`) gets a label with its wall time, share of the run, tasks and task
 * time, and a fill whose darkness is its share; a stage with erred tasks is outlined in
 * red and says so. Every node and edge label is drawn in one font (Helvetica, as
 * Graphviz measures it), also nodes no stage row names.
 *
 * @since 0.1.0
 * @category formatting
 */
export const annotateDot = (dot: string, stages: ReadonlyArray<StageTime>, wall: number): string => {
  const close = dot.lastIndexOf("}")
  const open = dot.indexOf("{")
  if (close < 0 || open < 0 || open > close) return dot
  // a font the browser has, sized as Graphviz measures it, for every node and edge
  const defaults = `\n  node [fontname="Helvetica", fontsize=11, margin="0.25,0.1"]; edge [fontname="Helvetica", fontsize=10];`
  const lines: Array<string> = []
  for (const s of stages) {
    if (s.row.kind !== "stage") continue
    const node = dotString(s.name)
    if (!dot.includes(node)) continue
    const share = wall > 0 ? s.wall / wall : 0
    const busy = s.row.taskTime
    const failed = s.row.erred > 0
    // the label is a DOT string: escape the name, then join lines with DOT's \n escape
    const label = `${dotString(s.name).slice(1, -1)}\\n${fmtSeconds(s.wall)} (${(share * 100).toFixed(0)} % of wall)\\n${s.tasks.toLocaleString("en-US")} tasks, ${fmtSeconds(busy)} task time${
      failed ? `\\nFAILED: ${s.row.erred.toLocaleString("en-US")} erred task${s.row.erred === 1 ? "" : "s"}` : ""}`
    const light = Math.round(255 - 120 * Math.min(1, share))
    const fill = `#${light.toString(16).padStart(2, "0")}${Math.round(255 - 60 * Math.min(1, share)).toString(16).padStart(2, "0")}ff`
    lines.push(`  ${node} [label="${label}", style="rounded,filled", fillcolor="${fill}"${failed ? `, color="#c00000", penwidth=2.5, fontcolor="#8b0000"` : ""}];`)
  }
  return `${dot.slice(0, open + 1)}${defaults}${dot.slice(open + 1, close)}${lines.join("\n")}\n${dot.slice(close)}`
}

/**
 * The per-stage table: one row per stage of `analysis/StageSummary.ts`' definition (the
 * numbers of `tessera analyze -a stage_summary`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const stageTable = (b: TimeBreakdown): ReportTable => {
  const failed = b.stages.some((s) => s.row.erred > 0)
  return {
    title: "Per stage",
    description:
      "as tessera analyze -a stage_summary: (start-up): from the run's start to its first task (driver setup, the pool's and the workers' start-up); wall: the stage's windows — its computes, from each one's first driver step to the next's, driver work included; tasks and task time: the tasks that carry the stage's name (a stage no task names shows 0); compute / transfer: the task time split by the tasks' phases; driver: the main thread's own work in its windows; bytes in / out: read from dependencies / produced by its tasks; share: wall ÷ the run's wall time" +
      (failed ? "; erred: tasks that failed (the run failed)" : ""),
    columns: ["stage", "tasks", ...(failed ? ["erred"] : []), "wall (s)", "share of wall time", "task time (s)", "compute (s)", "transfer (s)", "driver (s)", "bytes in", "bytes out"],
    units: [undefined, "count", ...(failed ? ["count" as const] : []), "s", "share", "s", "s", "s", "s", "bytes", "bytes"],
    rows: b.stages.map(({ row: s }) => [
      s.stage,
      s.tasks,
      ...(failed ? [s.erred] : []),
      s.wall,
      Number.isFinite(s.share) ? s.share : null,
      s.taskTime,
      s.compute,
      s.transfer,
      s.driver,
      s.bytesIn,
      s.bytesOut
    ])
  }
}

const stagesSection = async ({ breakdown: b, data, maxTableRows }: SectionInput): Promise<ReportSection> => {
  let dag = ""
  if (data.dot !== undefined) {
    try {
      dag = `<div class="dag">${sanitize(await renderDotPromise(annotateDot(data.dot, b.stages, b.wall)))}</div>`
    } catch (e) {
      dag = note(`the trace's graph could not be drawn: ${esc(String(e))}`)
    }
  } else dag = note("no Pipeline Graph event in these databases: no stage DAG to draw")
  return { id: "stages", title: "Pipeline stages", html: `${dag}${renderTable(stageTable(b), maxTableRows, "stages")}`, views: [] }
}

/**
 * The failure section, first on the page of a run that failed: which task erred (key,
 * function, stage, worker, when) and its error message, then the stack on the thread
 * that ran it, folded. Every string is the trace's, shown as text.
 *
 * @since 0.1.0
 * @category formatting
 */
export const failureSection = (data: ReportData): ReportSection => {
  const f = data.failures
  const first = f[0]!
  const more = f.length > 1 ? ` (and ${(f.length - 1).toLocaleString("en-US")} more erred task${f.length === 2 ? "" : "s"}, below)` : ""
  const msg = (s: string) => (s === "" ? "<i>the trace records no error message</i>" : `<code>${esc(s.length > 2000 ? `${s.slice(0, 2000)}…` : s)}</code>`)
  const rows = f.slice(0, 50).map((x) =>
    `<tr><td><code>${esc(x.key)}</code></td><td>${esc(x.function)}</td><td>${x.stage === undefined ? "—" : esc(x.stage)}</td><td>${esc(x.worker)}</td><td class="n">${esc(fmtSeconds(x.start))}</td><td class="n">${
      esc(fmtSeconds(Math.max(0, x.end - x.start)))}</td><td>${msg(x.error)}</td></tr>`).join("")
  const stacks = f.filter((x) => x.traceback !== "").slice(0, 10).map((x) =>
    `<details><summary>stack of <code>${esc(x.key)}</code> (on ${esc(x.worker)})</summary><pre>${esc(x.traceback)}</pre></details>`).join("")
  const html = `<div class="failure" id="failure-banner"><p class="summary"><b>The run failed.</b> Task <code>${esc(first.key)}</code> (function <b>${esc(first.function)}</b>${
    first.stage === undefined ? "" : `, stage <b>${esc(first.stage)}</b>`}, on ${esc(first.worker)}) erred ${esc(fmtSeconds(first.end))} into the run${more}:</p>
<p class="error">${msg(first.error)}</p>
${note("this report shows what ran up to the failure; the erred task is drawn in the task stream in its own colour (black, outlined) and its stage is outlined in red in the stage graph")}
<div class="tablewrap"><table><thead><tr><th>key</th><th>function</th><th>stage</th><th>worker</th><th>start</th><th>ran for</th><th>error</th></tr></thead><tbody>${rows}</tbody></table></div>
${f.length > 50 ? note(`${(f.length - 50).toLocaleString("en-US")} more erred tasks not listed`) : ""}${stacks}</div>`
  return { id: "failure", title: "Failure", html, views: [] }
}

const resourcesSection = ({ data }: SectionInput): ReportSection => {
  const m = data.memory
  const resources = resourceSpecs(data)
  const memUnit = byteUnit(m.bytes.reduce((a, x) => (x > a ? x : a), 0))
  const devUnit = byteUnit(m.device.reduce((a, x) => (x > a ? x : a), 0))
  const timelines: Array<{ readonly spec: TopLevelSpec; readonly source: string; readonly rows: string }> = [
    ...resources.charts.map((x) => ({ spec: x.spec, source: `res_${x.column}`, rows: `resources:${x.column}` })),
    ...(m.time.length > 0
      ? [
          { spec: timelineSpec("memory_bytes", "bytes", "Managed memory per worker", memUnit.unit, "worker", data.wall, undefined, data.workers), source: "memory_bytes", rows: "memory:bytes" },
          { spec: timelineSpec("memory_chunks", "chunks", "Chunks held per worker", "chunks", "worker", data.wall, undefined, data.workers), source: "memory_chunks", rows: "memory:chunks" }
        ]
      : []),
    ...(m.device.some(Number.isFinite)
      ? [{ spec: timelineSpec("memory_device", "device", "Device memory per GPU worker", devUnit.unit, "worker", data.wall, undefined, data.gpuWorkers, data.workers), source: "memory_device", rows: "memory:device" }]
      : [])
  ]
  const html = `${note("aligned with the task stream and following its zoom")}${timelines.length > 0 ? div("timelines", "chart wide") : ""}${
    resources.charts.length + resources.constant.length === 0 ? note("no Resource Usage events in these databases") : ""}${
    resources.constant.length > 0 ? note(`constant over the whole run (not drawn): ${resources.constant.map((c) => `${esc(c.title)} ${esc(c.value)}`).join(" · ")}`) : ""}${
    m.time.length === 0 ? note("no Managed Memory events in these databases") : ""}`
  return {
    id: "resources",
    title: "Resource usage and managed memory",
    html,
    views: timelines.length > 0
      ? [{ id: "timelines", spec: toVega(timelinesSpec(timelines.map((x) => x.spec)), { wall: data.wall }), sources: timelines.map((x) => ({ source: x.source, rows: x.rows })), fit: true }]
      : []
  }
}

/**
 * The clock offsets table: per cluster worker, the last measured offset to the
 * scheduler's clock ± its uncertainty, the range seen and the samples.
 *
 * @since 0.1.0
 * @category formatting
 */
export const clockTable = (data: ReportData): ReportTable => ({
  title: "Clock offsets",
  description:
    "each worker's clock minus the scheduler's, measured by round trips (NTP-style, the fastest kept); every time in this report is already on the scheduler's clock. ± = half the fastest round trip",
  columns: ["worker", "name", "offset (s)", "± uncertainty (s)", "min offset (s)", "max offset (s)", "samples"],
  units: [undefined, undefined, "s", "s", "s", "s", "count"],
  rows: data.clocks.map((c) => [c.worker, c.name, c.offset, c.uncertainty, c.minOffset, c.maxOffset, c.samples])
})

const transfersSection = ({ data, maxTableRows, transferTables }: SectionInput): ReportSection => {
  const x = data.transfers
  let bytes = 0
  for (let i = 0; i < x.bytes.length; i++) if (Number.isFinite(x.bytes[i]!)) bytes += x.bytes[i]!
  const line = x.start.length > 0
    ? `<p class="summary">${x.start.length.toLocaleString("en-US")} transfers moved ${esc(fmtNumber(bytes, "bytes"))} (peer fetches: ${
      x.direction.filter((d) => d === "peer").length.toLocaleString("en-US")}, device copies: ${x.direction.filter((d) => d !== "peer").length.toLocaleString("en-US")})</p>`
    : note("no Transfer events: no data moved between workers or to a device")
  const tables = [...(transferTables ?? []), ...(data.clocks.length > 0 ? [clockTable(data)] : [])]
  return {
    id: "transfers",
    title: "Transfers and clocks",
    html: `${line}${tables.map((t, i) => renderTable(t, maxTableRows, `transfers-${i}`)).join("\n")}`,
    views: []
  }
}

const histogramsSection = ({ data }: SectionInput): ReportSection => {
  const perFn = functionHistogramsSpec(data)
  const hist = taskHistograms(data).filter((h) => h.n > 0)
  const missing = [
    data.tasks.peakMemory.some(Number.isFinite) ? "" : "peak memory",
    data.tasks.ioBytes.some(Number.isFinite) ? "" : "I/O bytes"
  ].filter((s) => s !== "")
  const html = `${note("per function (rows; the functions with the most task time), one histogram per resource (columns): task count per bin; cores = CPU time ÷ wall time; bytes in = its dependencies' output sizes")}${
    missing.length > 0 ? note(`not in these databases: ${missing.join(", ")} per task`) : ""}${
    perFn.omitted.length > 0 ? note(`not drawn: ${perFn.omitted.length} more function${perFn.omitted.length === 1 ? "" : "s"} (${esc(perFn.omitted.slice(0, 8).join(", "))}${perFn.omitted.length > 8 ? ", …" : ""})`) : ""}${
    perFn.spec !== undefined ? div("hist-functions", "chart scroll") : ""}
<h3>All tasks</h3><div class="hists">${hist.map((h) => div(`hist-${h.resource}`)).join("\n")}</div>`
  return {
    id: "histograms",
    title: "Per-task resources",
    html,
    views: [
      ...(perFn.spec !== undefined ? [{ id: "hist-functions", spec: toVega(perFn.spec), sources: [] }] : []),
      ...hist.map((h) => ({ id: `hist-${h.resource}`, spec: toVega(histogramSpec(h, 420, 200)), sources: [] }))
    ]
  }
}

const analysesSection = ({ data, tables, maxTableRows }: SectionInput): ReportSection => ({
  id: "analyses",
  title: "Analyses",
  // the charts leave out tasks with absurd durations; the analyses read the databases whole
  html: `${(data.leftOutTasks ?? 0) > 0 ? note(`these tables are over every task of the databases: the ${data.leftOutTasks!.toLocaleString("en-US")} left out of the charts above (absurd durations) included`) : ""}${
    tables.map((x, i) => renderTable(x, maxTableRows, i)).join("\n")}`,
  views: []
})

/**
 * The page's sections, in order (see the module header); empty ones are left out.
 *
 * @since 0.1.0
 * @category formatting
 */
export const reportSections = async (input: SectionInput): Promise<Array<ReportSection>> => [
  ...(input.data.failures.length > 0 ? [failureSection(input.data)] : []),
  timeSection(input),
  streamSection(input),
  await stagesSection(input),
  resourcesSection(input),
  ...(input.data.transfers.start.length > 0 || input.data.clocks.length > 0 ? [transfersSection(input)] : []),
  histogramsSection(input),
  ...(input.tables.length > 0 ? [analysesSection(input)] : [])
]

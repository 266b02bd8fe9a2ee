/**
 * The report page's sections, in order: a list of `ReportSection`s (id, heading, HTML,
 * the Vega views it holds), so a new section (a flame graph, transfers) is one more
 * builder in `reportSections`. The page answers the first question first:
 *
 * 1. `time` — where did the time go: the run's worker time per stage and per function
 *    as stacked bars (compute, transfer, driver, idle), the one-line summary "tasks X s,
 *    driver Y s, idle Z s" for the run and per worker, and what the trace lacks.
 * 2. `stream` — the task stream (phases, the driver's row).
 * 3. `stages` — the stage DAG annotated with each stage's time and tasks, and the
 *    per-stage table.
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
 * @category rendering
 */
export const summaryLine = (x: { readonly tasks: number; readonly driver: number; readonly idle: number }, measured = true): string =>
  `tasks ${fmtSeconds(x.tasks)}, driver ${measured ? fmtSeconds(x.driver) : "not measured"}, idle ${fmtSeconds(x.idle)}`

const timeSection = ({ breakdown: b, data }: SectionInput): ReportSection => {
  const top = [...b.stages].sort((x, y) => y.split.compute + y.split.transfer - (x.split.compute + x.split.transfer))[0]
  const absent = [
    b.hasDriver ? "" : "no Driver events in these databases (DASF traces have none): driver time is not measured and counts as idle",
    b.hasStages ? "" : "tasks carry no stage: one row for the whole run",
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
    data.transfers.start.length > 0 ? `; ${data.transfers.start.length.toLocaleString("en-US")} data transfers (peer fetches, device copies) in pink on the receiving worker's row` : ""}${
    b.hasDriver ? "; the driver's segments in browns and greys (light grey: waiting for the workers)" : "; no Driver events: the time between tasks is not explained"}`)}${div("task-stream", "chart wide")}`,
  views: [{ id: "task-stream", spec: taskStreamVega(data), sources: [{ source: "tasks", rows: "stream" }], fit: true }]
})

// DOT string literal
const dotString = (s: string): string => `"${s.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")}"`

/**
 * The stage DAG's DOT with each stage's time: every stage of `stages` whose node the
 * graph has (`"name"`) gets a label with its wall time, share of the run, tasks and task
 * time, and a fill whose darkness is its share.
 *
 * @since 0.1.0
 * @category rendering
 */
export const annotateDot = (dot: string, stages: ReadonlyArray<StageTime>, wall: number): string => {
  const close = dot.lastIndexOf("}")
  if (close < 0) return dot
  const lines: Array<string> = []
  for (const s of stages) {
    const node = dotString(s.name)
    if (!dot.includes(node)) continue
    const share = wall > 0 ? s.wall / wall : 0
    const busy = s.split.compute + s.split.transfer
    // the label is a DOT string: escape the name, then join lines with DOT's \n escape
    const label = `${dotString(s.name).slice(1, -1)}\\n${fmtSeconds(s.wall)} (${(share * 100).toFixed(0)} % of wall)\\n${s.tasks.toLocaleString("en-US")} tasks, ${fmtSeconds(busy)} task time`
    const light = Math.round(255 - 120 * Math.min(1, share))
    const fill = `#${light.toString(16).padStart(2, "0")}${Math.round(255 - 60 * Math.min(1, share)).toString(16).padStart(2, "0")}ff`
    // a font the browser has, sized as Graphviz measures it, and room around the text
    lines.push(`  ${node} [label="${label}", style="rounded,filled", fillcolor="${fill}", fontname="Helvetica", fontsize=11, margin="0.25,0.1"];`)
  }
  return `${dot.slice(0, close)}${lines.join("\n")}\n${dot.slice(close)}`
}

/**
 * The per-stage table: one row per stage (see TimeBreakdown.ts).
 *
 * @since 0.1.0
 * @category rendering
 */
export const stageTable = (b: TimeBreakdown): ReportTable => ({
  title: "Per stage",
  description:
    "wall: the stage's share of the run (its computes, driver work included; (no stage): tasks without a stage and the start-up around them); task time: its tasks' durations; driver: the main thread's own work in it; bytes in / out: read from dependencies / produced by its tasks; share: wall ÷ the run's wall time",
  columns: ["stage", "tasks", "wall (s)", "share of wall time", "task time (s)", "compute (s)", "transfer (s)", "driver (s)", "bytes in", "bytes out"],
  units: [undefined, "count", "s", "share", "s", "s", "s", "s", "bytes", "bytes"],
  rows: b.stages.map((s) => [
    s.name,
    s.tasks,
    s.wall,
    b.wall > 0 ? s.wall / b.wall : null,
    s.split.compute + s.split.transfer,
    s.split.compute,
    s.split.transfer,
    s.driverOwn,
    s.bytesIn,
    s.bytesOut
  ])
})

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
 * @category rendering
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

const analysesSection = ({ tables, maxTableRows }: SectionInput): ReportSection => ({
  id: "analyses",
  title: "Analyses",
  html: tables.map((x, i) => renderTable(x, maxTableRows, i)).join("\n"),
  views: []
})

/**
 * The page's sections, in order (see the module header); empty ones are left out.
 *
 * @since 0.1.0
 * @category rendering
 */
export const reportSections = async (input: SectionInput): Promise<Array<ReportSection>> => [
  timeSection(input),
  streamSection(input),
  await stagesSection(input),
  resourcesSection(input),
  ...(input.data.transfers.start.length > 0 || input.data.clocks.length > 0 ? [transfersSection(input)] : []),
  histogramsSection(input),
  ...(input.tables.length > 0 ? [analysesSection(input)] : [])
]

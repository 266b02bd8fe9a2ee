/**
 * The report's "where did the time go" charts (horizontal stacked bars of worker time
 * per stage and per function, from `TimeBreakdown.ts`) and its Work Queue style
 * histograms per function (duration, cores, bytes out, bytes in, peak memory, I/O
 * bytes), as Vega-Lite specs whose width follows the page (`width: "container"`).
 *
 * Leaves out: computing the numbers (TimeBreakdown.ts, analysis/Histograms.ts).
 *
 * @since 0.1.0
 */
import type { TopLevelSpec } from "vega-lite"
import { byteUnit, coresMinWall, histogram } from "../analysis/Histograms.ts"
import { histogramLayer, unitKind } from "./HistogramChart.ts"
import type { ReportData } from "./ReportData.ts"
import type { TimeBreakdown } from "./TimeBreakdown.ts"

/**
 * The four parts, in stacking order, with their colours.
 *
 * @since 0.1.0
 * @category formatting
 */
export const parts = [
  { field: "compute", title: "compute", colour: "#4c78a8" },
  { field: "transfer", title: "transfer (gather + send)", colour: "#d62728" },
  { field: "driver", title: "driver", colour: "#8c6d31" },
  { field: "idle", title: "idle", colour: "#d9d9d9" }
] as const

const stackedBars = (
  rows: ReadonlyArray<{ readonly row: string; readonly part: string; readonly seconds: number; readonly share: number }>,
  order: ReadonlyArray<string>,
  title: string,
  subtitle: string,
  shown: ReadonlyArray<(typeof parts)[number]>,
  rank = new Map(order.map((r, i) => [r, i]))
): TopLevelSpec => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: { text: title, subtitle, anchor: "start" },
  width: "container",
  // a fixed height (22 px a row): a step height would make Vega-Lite warn on stderr
  // that it drops fit-y
  height: 22 * order.length,
  autosize: { type: "fit-x", contains: "padding" },
  background: "white",
  // `o`: the row's place in `order`; sorting by a field (not by an explicit list, which
  // Vega-Lite compiles to one nested expression per row: 10,000 rows overflow its parser's stack)
  data: { values: rows.map((r) => ({ ...r, k: shown.findIndex((p) => p.title === r.part), o: rank.get(r.row) ?? order.length })) },
  mark: { type: "bar", tooltip: true },
  encoding: {
    y: { field: "row", type: "nominal", title: null, sort: { field: "o", op: "min" }, axis: { labelLimit: 220 } },
    x: { field: "seconds", type: "quantitative", stack: "zero", title: "worker-seconds (s)" },
    color: {
      field: "part",
      type: "nominal",
      title: null,
      scale: { domain: shown.map((p) => p.title), range: shown.map((p) => p.colour) },
      legend: { orient: "top", direction: "horizontal" }
    },
    order: { field: "k", type: "quantitative" },
    tooltip: [
      { field: "row", type: "nominal", title: "row" },
      { field: "part", type: "nominal", title: "part" },
      { field: "seconds", type: "quantitative", title: "worker-seconds", format: ".3~s" },
      { field: "share", type: "quantitative", title: "share of the row", format: ".1%" }
    ]
  }
}) as TopLevelSpec

/**
 * Most bars in a "where did the time go" chart (stages, functions): beyond, the rest are
 * one bar, "others (K functions, X s)" (a chart of 20,000 bars, 22 px each, says nothing).
 *
 * @since 0.1.0
 * @category formatting
 */
export const maxTimeBars = 40

const othersLabel = (k: number, what: string, seconds: number): string =>
  `others (${k.toLocaleString("en-US")} ${what}${k === 1 ? "" : "s"}, ${seconds.toPrecision(3)} s)`

/**
 * Stacked bars per stage (and a first bar for the whole run; only that one where tasks
 * carry no stage): compute, transfer, driver, idle in worker-seconds. Above
 * `maxBars` stages, the stages with the most task time keep their bars (in pipeline
 * order) and the rest are one "others" bar, last.
 *
 * @since 0.1.0
 * @category formatting
 */
export const stageTimeSpec = (b: TimeBreakdown, maxBars = maxTimeBars): TopLevelSpec => {
  const runRow = "whole run"
  const taskTime = (s: { readonly split: { readonly compute: number; readonly transfer: number } }) => s.split.compute + s.split.transfer
  let stages: Array<{ readonly name: string; readonly split: TimeBreakdown["run"] }> = b.hasStages ? [...b.stages] : []
  if (stages.length > maxBars) {
    const keep = new Set([...stages].sort((x, y) => taskTime(y) - taskTime(x)).slice(0, maxBars - 1))
    const rest = stages.filter((s) => !keep.has(s))
    const split = { compute: 0, transfer: 0, driver: 0, idle: 0 }
    for (const s of rest) for (const p of parts) split[p.field] += s.split[p.field]
    const seconds = split.compute + split.transfer + split.driver + split.idle
    stages = [...stages.filter((s) => keep.has(s)), { name: othersLabel(rest.length, "stage", seconds), split }]
  }
  // without stages the one stage row would repeat the run's
  const list = [{ name: runRow, split: b.run }, ...stages]
  const rows = list.flatMap(({ name, split }) => {
    const total = split.compute + split.transfer + split.driver + split.idle
    return parts.map((p) => ({ row: name, part: p.title, seconds: split[p.field], share: total > 0 ? split[p.field] / total : 0 }))
  })
  return stackedBars(
    rows,
    list.map((x) => x.name),
    "Where did the time go: per stage",
    `${b.workers} worker${b.workers === 1 ? "" : "s"} × ${b.wall.toPrecision(3)} s wall time; each bar is a stage's wall time × workers`,
    parts
  )
}

/**
 * Stacked bars per function: the worker-seconds of its tasks' compute and transfer.
 * Above `maxBars` functions, the ones with the most task time keep their bars and the
 * rest are one bar, "others (K functions, X s)".
 *
 * @since 0.1.0
 * @category formatting
 */
export const functionTimeSpec = (b: TimeBreakdown, maxBars = maxTimeBars): TopLevelSpec => {
  const shown = parts.slice(0, 2)
  // b.functions: most task time first
  let fns: ReadonlyArray<{ readonly name: string; readonly compute: number; readonly transfer: number }> = b.functions
  if (fns.length > maxBars) {
    const rest = fns.slice(maxBars - 1)
    let compute = 0
    let transfer = 0
    for (const f of rest) (compute += f.compute, transfer += f.transfer)
    fns = [...fns.slice(0, maxBars - 1), { name: othersLabel(rest.length, "function", compute + transfer), compute, transfer }]
  }
  const rows = fns.flatMap((f) => {
    const total = f.compute + f.transfer
    return [
      { row: f.name, part: shown[0].title, seconds: f.compute, share: total > 0 ? f.compute / total : 0 },
      { row: f.name, part: shown[1].title, seconds: f.transfer, share: total > 0 ? f.transfer / total : 0 }
    ]
  })
  return stackedBars(rows, fns.map((f) => f.name), "Per function", "task time only: driver and idle time belong to no function", shown)
}

/**
 * The per-function histograms' resources: what each is, its unit and its values.
 */
const resources = (data: ReportData): Array<{ readonly name: string; readonly unit: string; readonly values: Float64Array }> => {
  const t = data.tasks
  const n = t.start.length
  const dur = new Float64Array(n)
  const cores = new Float64Array(n)
  let maxDur = 0
  for (let i = 0; i < n; i++) {
    dur[i] = t.end[i]! - t.start[i]!
    if (dur[i]! > maxDur) maxDur = dur[i]!
    cores[i] = dur[i]! >= coresMinWall ? t.cpuTime[i]! / dur[i]! : NaN
  }
  const ms = maxDur < 1
  if (ms) for (let i = 0; i < n; i++) dur[i] = dur[i]! * 1000
  const bytes = (name: string, col: Float64Array) => {
    let max = 0
    let any = false
    for (let i = 0; i < n; i++) if (Number.isFinite(col[i]!)) (any = true, col[i]! > max && (max = col[i]!))
    if (!any) return []
    const u = byteUnit(max)
    return [{ name, unit: u.unit, values: col.map((v) => v / u.scale) }]
  }
  let anyCores = false
  for (let i = 0; i < n && !anyCores; i++) anyCores = Number.isFinite(cores[i]!)
  return [
    { name: "duration", unit: ms ? "ms" : "s", values: dur },
    ...(anyCores ? [{ name: `cores, tasks ≥ ${coresMinWall * 1000} ms`, unit: "CPU ÷ wall", values: cores }] : []),
    ...bytes("bytes out", t.size),
    ...bytes("bytes in", t.bytesIn),
    ...bytes("peak memory", t.peakMemory),
    ...bytes("I/O bytes", t.ioBytes)
  ]
}

/**
 * Work Queue style histograms per function: a grid with one row per function (the
 * `maxFunctions` with the most task time) and one column per resource the trace has
 * (duration, CPU cores, bytes out, bytes in; peak memory and I/O bytes where tasks carry
 * them); each cell bins that function's tasks, with its own axes. Returns the spec and
 * the names of the functions left out.
 *
 * @since 0.1.0
 * @category formatting
 */
export const functionHistogramsSpec = (
  data: ReportData,
  maxFunctions = 8
): { readonly spec: TopLevelSpec | undefined; readonly omitted: ReadonlyArray<string>; readonly resources: ReadonlyArray<string> } => {
  const t = data.tasks
  const n = t.start.length
  const nf = data.functions.length
  const total = new Float64Array(nf)
  for (let i = 0; i < n; i++) total[t.fn[i]!]! += t.end[i]! - t.start[i]!
  const order = Array.from({ length: nf }, (_, f) => f).sort((a, b) => total[b]! - total[a]!)
  const shown = order.slice(0, maxFunctions)
  const omitted = order.slice(maxFunctions).map((f) => data.functions[f]!)
  if (n === 0) return { spec: undefined, omitted, resources: [] }
  const res = resources(data)
  // per function: its tasks
  const members = shown.map(() => [] as Array<number>)
  const slot = new Int32Array(nf).fill(-1)
  shown.forEach((f, k) => (slot[f] = k))
  for (let i = 0; i < n; i++) if (slot[t.fn[i]!]! >= 0) members[slot[t.fn[i]!]!]!.push(i)
  // one small chart per (function, resource), each with its own data and axes: rows of
  // functions (vconcat) of resources (hconcat)
  const cell = (fn: string, k: number, r: (typeof res)[number], first: boolean, last: boolean) => {
    const idx = members[k]!
    const vals = new Float64Array(idx.length)
    for (let q = 0; q < idx.length; q++) vals[q] = r.values[idx[q]!]!
    const h = histogram(r.name, r.name, r.unit, vals, 12)
    // log axes, constant and empty cells, SI ticks: HistogramChart.ts
    const { spec } = histogramLayer(h, "tasks", { tickCount: 3, axisTitle: last, countAxis: false, barLabel: false, label: fn })
    return {
      width: 150,
      height: 55,
      title: first ? { text: `${r.name}${unitKind(r.unit).kind === "plain" ? ` (${r.unit})` : ""}`, fontSize: 11 } : undefined,
      ...spec
    }
  }
  const spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    background: "white",
    config: { aria: false, concat: { spacing: 12 } },
    vconcat: shown.map((f, k) => ({
      title: { text: data.functions[f]!, anchor: "start", fontSize: 12 },
      hconcat: res.map((r, j) => cell(data.functions[f]!, k, r, k === 0, k === shown.length - 1 && j >= 0))
    }))
  } as TopLevelSpec
  return { spec, omitted, resources: res.map((r) => r.name) }
}

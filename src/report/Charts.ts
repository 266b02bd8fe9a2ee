/**
 * Vega-Lite specifications for every chart Tessera draws (task stream, resource
 * timelines, managed memory, Work Queue style histograms — their bins are computed by
 * `analysis/Histograms.ts`), compiled to Vega in Node
 * with `vega-lite`'s `compile()`. The HTML report inlines only the Vega runtime and the
 * compiled specs; figures are rendered to SVG with Vega's headless `View`.
 *
 * Data sources are named (`tasks`, `resources`, `memory`, `bins`) so a page can feed
 * them with `view.data(name, rows)` after decoding compact columnar arrays.
 *
 * @since 0.1.0
 */
import * as vega from "vega"
import { compile } from "vega-lite"
import type { TopLevelSpec } from "vega-lite"
import { byteUnit } from "../analysis/Histograms.ts"
import type { ReportData } from "./ReportData.ts"
import { resourceMetrics } from "./ReportData.ts"

/**
 * Vega-Lite spec of one histogram, data inline (histograms are small); drawn by
 * `HistogramChart.ts` (log axes, constant and empty histograms, SI ticks).
 *
 * @since 0.1.0
 * @category formatting
 */
export { histogramSpec } from "./HistogramChart.ts"

// "worker-vm-10" after "worker-vm-9"
const natural = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true })

// Every chart on the report's time axis reserves the same width for its y axis, so the
// plots of the task stream and of every timeline start at the same x and line up.
const Y_AXIS_EXTENT = 110
const timeAxis = { title: "time since start (s)", labelOverlap: true, labelFlush: false, tickCount: 12, grid: true } as const

// Colours of the task stream: functions from a palette without the reds and greys that
// mark transfers and the driver (as dask's task stream draws transfers in red).
const functionPalette = [
  "#4c78a8", "#f58518", "#54a24b", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d", "#ff9da6",
  "#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#bcbd22", "#e377c2", "#8c564b", "#aec7e8",
  "#98df8a", "#c5b0d5", "#ffbb78", "#9edae5"
]

/**
 * Colour-legend label of the gather / transfer phases in the task stream.
 *
 * @since 0.1.0
 * @category formatting
 */
export const transferLabel = "(transfer: gather / send)"

/**
 * Colour-legend label of the data transfers in the task stream (`Transfer` events: a
 * cluster worker's fetch from a peer, a GPU worker's copy to or from its device), drawn
 * on the receiving worker's row as dask draws them.
 *
 * @since 0.1.0
 * @category formatting
 */
export const dataTransferLabel = "data transfer"

/**
 * Colour of {@link dataTransferLabel}'s bars.
 *
 * @since 0.1.0
 * @category formatting
 */
export const dataTransferColour = "#e7298a"

/**
 * Colour-legend label of an erred task in the task stream (a task that failed the run).
 *
 * @since 0.1.0
 * @category formatting
 */
export const erredLabel = "(erred task)"

/**
 * Colour of {@link erredLabel}'s bars (black: no function's colour, not a transfer's red).
 *
 * @since 0.1.0
 * @category formatting
 */
export const erredColour = "#111111"

/**
 * Colour-legend label of a driver activity in the task stream.
 *
 * @since 0.1.0
 * @category formatting
 */
export const driverLabel = (activity: string): string => `driver: ${activity}`

const driverColour = (activity: string): string =>
  activity === "wait" ? "#e3e3e3" : activity === "worker start" ? "#8c6d31" : activity === "pool start" ? "#5a4a2a" : "#6f6f6f"

/**
 * The task stream's rows, top to bottom: driver threads that are not workers (the main
 * thread), then the workers.
 *
 * @since 0.1.0
 * @category formatting
 */
export const streamRows = (data: ReportData): Array<string> => [
  ...data.driverThreads.filter((t) => !data.workers.includes(t)),
  ...[...data.workers].sort(natural)
]

/**
 * Most functions the task stream gives a colour (and a legend entry) of their own;
 * beyond, the others share {@link otherFunctionsLabel}'s colour (a tooltip still names
 * each task's function). One scale entry per function of a 20,000-function trace would
 * only repeat the palette's 20 colours.
 *
 * @since 0.1.0
 * @category formatting
 */
export const maxStreamColours = 60

/**
 * Colour-legend label of the functions past {@link maxStreamColours}.
 *
 * @since 0.1.0
 * @category formatting
 */
export const otherFunctionsLabel = "(other functions)"

const otherFunctionsColour = "#bab0ac"

/**
 * The functions with a colour of their own in the task stream when there are more than
 * {@link maxStreamColours}: the `maxStreamColours - 1` with the most task time, in the
 * order of `data.functions`; `undefined` when every function has its own.
 *
 * @since 0.1.0
 * @category formatting
 */
export const streamColourFunctions = (data: ReportData): Int32Array | undefined => {
  const nf = data.functions.length
  if (nf <= maxStreamColours) return undefined
  const t = data.tasks
  const total = new Float64Array(nf)
  for (let i = 0; i < t.start.length; i++) {
    const d = t.end[i]! - t.start[i]!
    if (Number.isFinite(d)) total[t.fn[i]!]! += d
  }
  const order = Int32Array.from({ length: nf }, (_, f) => f).sort((a, b) => total[b]! - total[a]! || a - b)
  return order.slice(0, maxStreamColours - 1).sort()
}

/**
 * What the task stream's spec depends on, whatever the data's source: the report's
 * `ReportData` (`streamShape`), or the live dashboard's running state
 * (`src/dashboard/`), so one spec draws both.
 *
 * @since 0.1.0
 * @category formatting
 */
export interface StreamShape {
  /** every function, in colour order */
  readonly functions: ReadonlyArray<string>
  /** driver activities that occur */
  readonly activities: ReadonlyArray<string>
  /** the rows, top to bottom (`streamRows`) */
  readonly rows: ReadonlyArray<string>
  /** the time axis: [0, wall] seconds */
  readonly wall: number
  /** whether data transfers occur (their legend entry) */
  readonly moved: boolean
  /** whether a task erred (its legend entry) */
  readonly failed: boolean
  /** the functions with a colour of their own when there are too many (`streamColourFunctions`) */
  readonly top: Int32Array | undefined
}

/**
 * The report's {@link StreamShape}.
 *
 * @since 0.1.0
 * @category formatting
 */
export const streamShape = (data: ReportData): StreamShape => ({
  functions: data.functions,
  activities: data.activities,
  rows: streamRows(data),
  wall: data.wall,
  moved: data.transfers.start.length > 0,
  failed: data.failures.length > 0,
  top: streamColourFunctions(data)
})

/**
 * The task stream's colours: each function (or the top ones and "other functions"), the
 * transfer phases, data transfers and erred tasks where they occur, driver activities.
 *
 * @since 0.1.0
 * @category formatting
 */
export const streamColours = (data: StreamShape): { readonly domain: Array<string>; readonly range: Array<string> } => {
  const { moved, failed, top } = data
  const coloured = top === undefined ? data.functions : [...Array.from(top, (f) => data.functions[f]!), otherFunctionsLabel]
  const domain = [...coloured, transferLabel, ...(moved ? [dataTransferLabel] : []), ...(failed ? [erredLabel] : []), ...data.activities.map(driverLabel)]
  const range = [
    ...coloured.map((c, i) => (top !== undefined && c === otherFunctionsLabel && i === coloured.length - 1 ? otherFunctionsColour : functionPalette[i % functionPalette.length]!)),
    "#d62728",
    ...(moved ? [dataTransferColour] : []),
    ...(failed ? [erredColour] : []),
    ...data.activities.map(driverColour)
  ]
  return { domain, range }
}

/**
 * The task stream's height for `rows` rows, px.
 *
 * @since 0.1.0
 * @category formatting
 */
export const streamHeight = (rows: number): number => Math.min(600, Math.max(60, 22 * rows))

/**
 * Vega-Lite spec of the task stream: one row per worker (and one for the driver, the
 * main thread), one bar per task coloured by function, its gather and transfer phases
 * drawn in their own colour at its ends, data transfers (`Transfer` events) in theirs
 * on the receiving worker's row (as dask's task stream draws transfers), the
 * driver's segments in greys; zoomable in time (the `zoom` interval selection is bound
 * to the x scale). The page feeds the `tasks` source per visible window
 * (`src/report/PageScript.ts`): single tasks, or per-bucket aggregates whose opacity
 * (`_o`) is the busy share; the colour field is `c`. Hover shows the task (key,
 * function, stage, worker, times, bytes) or the driver segment.
 *
 * @since 0.1.0
 * @category formatting
 */
export const taskStreamSpec = (data: ReportData, width = 940): TopLevelSpec => taskStreamSpecOf(streamShape(data), width)

/**
 * The task stream's spec for any {@link StreamShape} (the report's, the dashboard's).
 *
 * @since 0.1.0
 * @category formatting
 */
export const taskStreamSpecOf = (data: StreamShape, width = 940): TopLevelSpec => {
  const color = streamColours(data)
  const rows = [...data.rows]
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: "Task stream", subtitle: "scroll to zoom, drag to pan, double-click to reset; faded bars: several tasks per pixel, opacity = busy share" },
    width,
    height: streamHeight(rows.length),
    background: "white",
    data: { name: "tasks" },
    // The tooltip is the row itself; the page's handler formats it (a per-item tooltip
    // expression and ARIA descriptions would format strings for every bar on each step).
    mark: { type: "rect", tooltip: { content: "data" }, aria: false },
    config: { aria: false },
    params: [{ name: "zoom", select: { type: "interval", encodings: ["x"] }, bind: "scales" }],
    encoding: {
      x: { field: "start", type: "quantitative", axis: timeAxis, scale: { domain: [0, data.wall] } },
      x2: { field: "end" },
      // an explicit domain: a worker with nothing in the window keeps its row
      y: {
        field: "worker",
        type: "nominal",
        title: null,
        scale: { domain: rows },
        axis: { minExtent: Y_AXIS_EXTENT, maxExtent: Y_AXIS_EXTENT, labelLimit: Y_AXIS_EXTENT - 10 }
      },
      color: { field: "c", type: "nominal", title: null, scale: color, legend: { orient: "bottom", direction: "horizontal", columns: 5, symbolLimit: 80, labelLimit: 160 } },
      // a thin outline in the same colour keeps sub-pixel single tasks visible (Vega-Lite
      // merges its legend into the colour legend); aggregated bars have none (`_sw` 0)
      stroke: { field: "c", type: "nominal", scale: color },
      strokeWidth: { field: "_sw", type: "quantitative", scale: null, legend: null },
      opacity: { field: "_o", type: "quantitative", scale: null, legend: null }
    }
  }
}

/** Vega's `tableau10`, Vega-Lite's default colours for nominal series. */
const TABLEAU10 = ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"]

/** The colour scale of a series chart: its domain sorted, and with `palette` (a larger
 * domain another chart draws) each series in the colour it has there. */
const seriesScale = (domain: ReadonlyArray<string>, palette: ReadonlyArray<string> | undefined) => {
  const sorted = [...domain].sort(natural)
  if (palette === undefined) return { domain: sorted }
  const order = [...palette].sort(natural)
  return { domain: sorted, range: sorted.map((s) => TABLEAU10[Math.max(0, order.indexOf(s)) % TABLEAU10.length]!) }
}

/**
 * Vega-Lite spec of one time series chart over a shared time axis `[0, wall]`. With
 * `palette`, the series take the colours they have in a chart over that larger domain
 * (the GPU workers' device memory in their managed-memory colours).
 *
 * @since 0.1.0
 * @category formatting
 */
export const timelineSpec = (
  source: string,
  field: string,
  title: string,
  unit: string,
  series: string,
  wall: number,
  width = 940,
  seriesDomain?: ReadonlyArray<string>,
  palette?: ReadonlyArray<string>
): TopLevelSpec => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: `${title} (${unit})`,
  width,
  height: 90,
  background: "white",
  data: { name: source },
  mark: { type: "line", interpolate: "step-after", strokeWidth: 1.2, aria: false, clip: true },
  config: { aria: false },
  encoding: {
    x: { field: "t", type: "quantitative", axis: timeAxis, scale: { domain: [0, wall] } },
    y: {
      field: field,
      type: "quantitative",
      // the unit goes into the chart's title: an axis title would widen the y axis
      // beyond the shared extent and shift the plot against the task stream
      title: null,
      scale: { zero: true, nice: true },
      axis: { minExtent: Y_AXIS_EXTENT, maxExtent: Y_AXIS_EXTENT, tickCount: 4 }
    },
    // an explicit domain keeps colours and legend stable while the zoom window changes
    color: {
      field: series,
      type: "nominal",
      title: series,
      // above the plot, not beside it: every time-axis chart's plot takes the page's width
      legend: { orient: "top", direction: "horizontal", columns: 8, labelLimit: 200 },
      ...(seriesDomain === undefined ? {} : { scale: seriesScale(seriesDomain, palette) })
    }
  }
})

/**
 * Time series charts stacked into one Vega-Lite spec (`vconcat`) sharing one x scale:
 * the page draws all of them in one Vega view, so a zoom step runs one dataflow and
 * paints one canvas for every timeline. Each chart keeps its own data source, y scale,
 * colours and legend.
 *
 * @since 0.1.0
 * @category formatting
 */
export const timelinesSpec = (charts: ReadonlyArray<TopLevelSpec>): TopLevelSpec => {
  // only the bottom chart labels its time axis: fewer labels to measure and draw on each
  // zoom step (the grid still marks the ticks)
  const units = charts.map((c, i) => {
    if (i < charts.length - 1) c = hideTimeLabels(c)
    const { $schema: _s, background: _b, config: _c, ...unit } = c as TopLevelSpec & { $schema?: string; background?: unknown; config?: unknown }
    return unit
  })
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    background: "white",
    config: { aria: false },
    spacing: 26,
    vconcat: units,
    resolve: { scale: { x: "shared", y: "independent", color: "independent" }, legend: { color: "independent" } }
  } as TopLevelSpec
}

const hideTimeLabels = (c: TopLevelSpec): TopLevelSpec => {
  const u = c as TopLevelSpec & { encoding?: { x?: { axis?: object } } }
  if (u.encoding?.x === undefined) return c
  return { ...u, encoding: { ...u.encoding, x: { ...u.encoding.x, axis: { ...u.encoding.x.axis, labels: false, title: null, ticks: false } } } } as TopLevelSpec
}

/**
 * The resource usage charts of this trace: one per metric that varies, with byte
 * metrics scaled to a readable unit; metrics that stay constant over the whole run
 * (e.g. GPU fields on a machine without a GPU, idle disks) are listed with their value
 * instead of drawn as flat lines.
 *
 * @since 0.1.0
 * @category formatting
 */
export const resourceSpecs = (
  data: ReportData,
  width = 940
): {
  readonly charts: ReadonlyArray<{ readonly field: string; readonly column: string; readonly scale: number; readonly spec: TopLevelSpec }>
  readonly constant: ReadonlyArray<{ readonly field: string; readonly title: string; readonly value: string }>
} => {
  const charts: Array<{ field: string; column: string; scale: number; spec: TopLevelSpec }> = []
  const constant: Array<{ field: string; title: string; value: string }> = []
  for (const m of resourceMetrics) {
    const col = data.resources.values[m.field]
    if (col === undefined) continue
    let max = -Infinity
    let min = Infinity
    for (const v of col) {
      if (!Number.isFinite(v)) continue
      if (v > max) max = v
      if (v < min) min = v
    }
    if (!(max >= min)) continue
    const u = m.unit === "%" ? { unit: "%", scale: 1 } : byteUnit(max)
    const unit = m.unit === "bytes/s" ? `${u.unit}/s` : u.unit
    if (max === min) {
      const v = max / u.scale
      constant.push({ field: m.field, title: m.title, value: `${Number.isInteger(v) ? v : v.toPrecision(4)} ${unit}` })
      continue
    }
    // Vega-Lite reads "a.b" as a nested path, so page rows use "a_b" for "a.b".
    const column = m.field.replace(/\W/g, "_")
    charts.push({ field: m.field, column, scale: u.scale, spec: timelineSpec(`res_${column}`, column, m.title, unit, "host", data.wall, width, data.hosts) })
  }
  return { charts, constant }
}

/**
 * Compile a Vega-Lite spec to Vega. Where `shareX` is set, the x scale's domain is
 * driven by a `xdom` signal so the page can keep every timeline aligned with the task
 * stream's zoom.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toVega = (spec: TopLevelSpec, shareX?: { readonly wall: number }): vega.Spec => {
  const v = compile(spec).spec as vega.Spec & { signals?: Array<vega.Signal>; scales?: Array<vega.Scale> }
  if (shareX !== undefined) {
    v.signals = [...(v.signals ?? []), { name: "xdom", value: [0, shareX.wall] }]
    for (const s of v.scales ?? []) {
      if (s.name === "x") Object.assign(s, { domain: { signal: "xdom" }, zero: false, nice: false })
    }
  }
  return v
}

/**
 * The task stream compiled to Vega, its x scale driven by the `xdom` signal like every
 * timeline's. Vega-Lite's `zoom` selection (bound to the scale) still turns wheel and
 * drag into a new window — it reads the scale's current domain — but no longer sets
 * the scale itself: the page sets `xdom` together with the new window's rows, so a zoom
 * step encodes and paints the bars once, for the new window, instead of once for the
 * old rows at the new scale and again for the new rows.
 *
 * @since 0.1.0
 * @category formatting
 */
export const taskStreamVega = (data: ReportData, width?: number): vega.Spec => taskStreamVegaOf(streamShape(data), width)

/**
 * {@link taskStreamVega} for any {@link StreamShape} (the live dashboard's).
 *
 * @since 0.1.0
 * @category formatting
 */
export const taskStreamVegaOf = (data: StreamShape, width?: number): vega.Spec => {
  const v = toVega(taskStreamSpecOf(data, width), { wall: data.wall }) as vega.Spec & { scales?: Array<Record<string, unknown>> }
  for (const s of v.scales ?? []) if (s["name"] === "x") delete s["domainRaw"]
  return v
}

/**
 * The compiled task stream (`taskStreamVegaOf` of any shape) made for another shape: its
 * rows, colours, legend and height replaced, so a page whose functions and workers
 * appear one by one (the live dashboard) needs no new Vega-Lite compile for each (tens
 * to hundreds of ms). Equal to `taskStreamVegaOf(shape, width)` (tested).
 *
 * @since 0.1.0
 * @category formatting
 */
export const reshapeStreamVega = (compiled: vega.Spec, shape: StreamShape): vega.Spec => {
  const v = structuredClone(compiled) as vega.Spec & { height?: number; scales?: Array<Record<string, unknown>>; legends?: Array<Record<string, unknown>> }
  const { domain, range } = streamColours(shape)
  v.height = streamHeight(shape.rows.length)
  for (const s of v.scales ?? []) {
    if (s["name"] === "y") s["domain"] = [...shape.rows]
    if (s["name"] === "color" || s["name"] === "stroke") (s["domain"] = [...domain]), (s["range"] = [...range])
  }
  for (const l of v.legends ?? []) if (Array.isArray(l["values"])) l["values"] = [...domain]
  return v
}

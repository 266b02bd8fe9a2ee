/**
 * Vega-Lite specifications for every chart Tessera draws (task stream, resource
 * timelines, managed memory, Work Queue style histograms), compiled to Vega in Node
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
import type { ReportData } from "./ReportData.ts"
import { resourceMetrics } from "./ReportData.ts"

// vega re-exports vega-statistics' `bin` at runtime but its typings omit it.
const vegaBin = (vega as unknown as {
  readonly bin: (o: { extent: [number, number]; maxbins: number }) => { start: number; stop: number; step: number }
}).bin

/**
 * A binned histogram: `bins[i] = { x0, x1, count }` in display units.
 *
 * @since 0.1.0
 * @category models
 */
export interface Histogram {
  readonly resource: string
  readonly title: string
  readonly unit: string
  readonly bins: ReadonlyArray<{ readonly x0: number; readonly x1: number; readonly count: number }>
  readonly n: number
}

/**
 * Choose a byte unit (B, KiB, MiB, GiB) for values up to `max`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const byteUnit = (max: number): { readonly unit: string; readonly scale: number } => {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"]
  let i = 0
  while (i < units.length - 1 && max >= 1024 ** (i + 1)) i++
  return { unit: units[i]!, scale: 1024 ** i }
}

/**
 * Bin finite values into about `maxbins` nice bins (Vega's binning rule for the step
 * and start). Bins are half-open `[x0, x1)` except the last, which is closed; edges are
 * shared (`bins[k].x1 === bins[k + 1].x0`), the first edge is at most the smallest value
 * and the last at least the largest, so every finite value is counted in exactly one
 * bin — denormals, equal values, -0 and extents whose width overflows a double included.
 * NaN and ±Infinity are not counted.
 *
 * Plain loop: runs over every task of large traces.
 *
 * @since 0.1.0
 * @category constructors
 */
export const histogram = (
  resource: string,
  title: string,
  unit: string,
  values: ArrayLike<number>,
  maxbins = 40
): Histogram => {
  let lo = Infinity
  let hi = -Infinity
  let n = 0
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!
    if (!Number.isFinite(v)) continue
    n++
    if (v < lo) lo = v
    if (v > hi) hi = v
  }
  if (n === 0) return { resource, title, unit, bins: [], n }
  const edges = binEdges(lo, hi, maxbins)
  const count = edges.length - 1
  const start = edges[0]!
  const step = (edges[count]! - start) / count
  const counts = new Float64Array(count)
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!
    if (!Number.isFinite(v)) continue
    // arithmetic guess, then corrected against the stored edges (rounding can put the
    // guess one bin off, and the outer edges may have been moved to lo / hi)
    let k = Math.floor((v - start) / step)
    k = k >= 0 ? (k < count ? k : count - 1) : 0
    while (k > 0 && v < edges[k]!) k--
    while (k < count - 1 && v >= edges[k + 1]!) k++
    counts[k]!++
  }
  const bins = Array.from(counts, (c, k) => ({ x0: edges[k]!, x1: edges[k + 1]!, count: c }))
  return { resource, title, unit, bins, n }
}

/**
 * Strictly increasing bin edges covering `[lo, hi]` (finite, lo <= hi): Vega's nice step
 * and start, with the degenerate cases made safe — an empty or denormal-width extent is
 * widened (Vega's binning loops forever on it) without leaving the doubles, an extent
 * whose width overflows is binned at half scale (exact: a power of two), and the outer
 * edges are the nearest nice edges enclosing `lo` and `hi`, or `lo` / `hi` themselves
 * where no finite nice edge does (rounding, overflow near ±Number.MAX_VALUE).
 */
const binEdges = (lo: number, hi: number, maxbins: number): Array<number> => {
  let a = lo
  let b = hi
  if (!(b - a > Math.max(Math.abs(a), Math.abs(b)) * 1e-9 + 1e-12)) {
    const w = Math.max(Math.abs(a) * 0.01, 1e-6)
    a = Math.max(a - w / 2, -Number.MAX_VALUE)
    b = Math.min(b + w / 2, Number.MAX_VALUE)
  }
  const scale = Number.isFinite(b - a) ? 1 : 2
  const bin = vegaBin({ extent: [a / scale, b / scale], maxbins })
  // stop / step - start / step: the width itself can overflow even at half scale;
  // the cap keeps a pathological step from allocating without bound
  const count = Math.min(4 * maxbins, Math.max(1, Math.ceil(bin.stop / bin.step - bin.start / bin.step)))
  // nice edges increase with k: keep the last one <= lo, those strictly inside, and the
  // first one >= hi (which is > lo: an edge equal to lo == hi is taken as `first`)
  let first = NaN
  let last = NaN
  const inner: Array<number> = []
  for (let k = -1; k <= count + 1; k++) {
    const e = (bin.start + k * bin.step) * scale
    if (!Number.isFinite(e)) continue
    if (e <= lo) first = e
    else if (e < hi) {
      if (inner.length === 0 || e > inner[inner.length - 1]!) inner.push(e)
    } else if (Number.isNaN(last)) last = e
  }
  if (Number.isNaN(first)) first = lo
  if (Number.isNaN(last)) last = hi
  // one value at ±Number.MAX_VALUE with no finite nice edge beyond it: the widened extent
  if (first === last) first = a < lo ? a : first
  if (first === last) last = b
  return [first, ...inner, last]
}

/**
 * Shortest task (s) whose CPU cores (cpu_time / wall) a histogram shows. Thread CPU time
 * is kernel-tick granular (4 ms ticks measured here, docs/profiler.md): a 0.2 ms task reads
 * 0 or a whole tick, i.e. 0 or 20 "cores", so shorter tasks would only draw the tick.
 *
 * @since 0.1.0
 * @category constructors
 */
export const coresMinWall = 0.01

/**
 * The four Work Queue style per-task histograms available in a trace: duration,
 * output size, CPU cores used (cpu_time / wall, only where the trace has cpu_time, and
 * only for tasks of at least {@link coresMinWall} seconds) and worker memory after each task.
 *
 * @since 0.1.0
 * @category constructors
 */
export const taskHistograms = (data: ReportData, which?: ReadonlyArray<string>): Array<Histogram> => {
  const want = (r: string) => which === undefined || which.includes(r)
  const t = data.tasks
  const out: Array<Histogram> = []
  const n = t.start.length
  if (want("duration")) {
    const d = new Float64Array(n)
    for (let i = 0; i < n; i++) d[i] = t.end[i]! - t.start[i]!
    let max = 0
    for (let i = 0; i < n; i++) if (d[i]! > max) max = d[i]!
    const ms = max < 1
    if (ms) for (let i = 0; i < n; i++) d[i] = d[i]! * 1000
    out.push(histogram("duration", "Task duration", ms ? "ms" : "s", d))
  }
  if (want("size")) {
    let max = 0
    for (let i = 0; i < n; i++) if (t.size[i]! > max) max = t.size[i]!
    const u = byteUnit(max)
    out.push(histogram("size", "Task output size", u.unit, t.size.map((v) => v / u.scale)))
  }
  if (want("cores")) {
    const c = new Float64Array(n)
    for (let i = 0; i < n; i++) {
      const wall = t.end[i]! - t.start[i]!
      c[i] = wall >= coresMinWall ? t.cpuTime[i]! / wall : NaN
    }
    out.push(histogram("cores", `CPU cores used (cpu time / wall time, tasks ≥ ${coresMinWall * 1000} ms)`, "cores", c))
  }
  if (want("memory")) {
    let max = 0
    for (const v of data.memory.bytes) if (v > max) max = v
    const u = byteUnit(max)
    out.push(histogram("memory", "Worker managed memory after each task", u.unit, data.memory.bytes.map((v) => v / u.scale)))
  }
  return out
}

/**
 * Vega-Lite spec of one histogram, data inline (histograms are small).
 *
 * @since 0.1.0
 * @category specs
 */
export const histogramSpec = (h: Histogram, width = 360, height = 200): TopLevelSpec => {
  // memory is sampled per Managed Memory event (after each task, per worker)
  const what = h.resource === "memory" ? "samples" : "tasks"
  return histogramSpecOf(h, what, width, height)
}

// 0, 1, 10, 100, ... up to max: symlog's own ticks crowd at the top
const decades = (max: number): Array<number> => {
  const out = [0]
  for (let v = 1; v <= max; v *= 10) out.push(v)
  return out
}

const histogramSpecOf = (h: Histogram, what: string, width: number, height: number): TopLevelSpec => {
  // Per-task resources are usually heavily skewed (most tasks tiny, a few large): past a
  // 30x spread between the fullest and the emptiest non-empty bin the count axis is
  // symlog, so the tail's bins stay visible (symlog, unlike log, draws counts of 0 and 1).
  let top = 0
  let low = Infinity
  for (const b of h.bins) {
    if (b.count > top) top = b.count
    if (b.count > 0 && b.count < low) low = b.count
  }
  const skewed = top / low > 30
  return {
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: { text: h.title, subtitle: `${h.n} ${what}${h.n === 0 ? " (none in this trace)" : ""}` },
  width,
  height,
  background: "white",
  data: { values: h.bins.map((b) => ({ ...b })) },
  mark: { type: "bar", color: "#4c78a8", stroke: "white", strokeWidth: 0.5 },
  encoding: {
    x: { field: "x0", type: "quantitative", title: `${h.resource} (${h.unit})`, bin: { binned: true } },
    x2: { field: "x1" },
    y: skewed
      ? { field: "count", type: "quantitative", title: `${what} (symlog scale)`, scale: { type: "symlog" }, axis: { values: decades(top) } }
      : { field: "count", type: "quantitative", title: what },
    tooltip: [
      { field: "x0", type: "quantitative", title: "from", format: ".4~g" },
      { field: "x1", type: "quantitative", title: "to", format: ".4~g" },
      { field: "count", type: "quantitative", title: what }
    ]
  }
  }
}

// "worker-vm-10" after "worker-vm-9"
const natural = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true })

// Every chart on the report's time axis reserves the same width for its y axis, so the
// plots of the task stream and of every timeline start at the same x and line up.
const Y_AXIS_EXTENT = 110
const timeAxis = { title: "time since start (s)", labelOverlap: true, labelFlush: false, tickCount: 12, grid: true } as const

/**
 * Vega-Lite spec of the task stream: one row per worker, one bar per task coloured by
 * function, zoomable in time (the `zoom` interval selection is bound to the x scale).
 * The page feeds the `tasks` source per visible window (`src/report/PageScript.ts`):
 * single tasks, or per-bucket aggregates whose opacity (`_o`) is the busy share.
 * Hover shows the task's key, function, worker, start, duration and size.
 *
 * @since 0.1.0
 * @category specs
 */
export const taskStreamSpec = (data: ReportData, width = 940): TopLevelSpec => {
  const scheme: "category20" | "tableau10" = data.functions.length > 10 ? "category20" : "tableau10"
  const color = { scheme, domain: [...data.functions] }
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: "Task stream", subtitle: "scroll to zoom, drag to pan, double-click to reset; faded bars: several tasks per pixel, opacity = busy share" },
    width,
    height: Math.min(600, Math.max(60, 22 * data.workers.length)),
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
        scale: { domain: [...data.workers].sort(natural) },
        axis: { minExtent: Y_AXIS_EXTENT, maxExtent: Y_AXIS_EXTENT, labelLimit: Y_AXIS_EXTENT - 10 }
      },
      color: { field: "function", type: "nominal", title: "function", scale: color, legend: { orient: "bottom", direction: "horizontal", columns: 6, symbolLimit: 60, labelLimit: 140 } },
      // a thin outline in the same colour keeps sub-pixel single tasks visible (Vega-Lite
      // merges its legend into the colour legend); aggregated bars have none (`_sw` 0)
      stroke: { field: "function", type: "nominal", scale: color },
      strokeWidth: { field: "_sw", type: "quantitative", scale: null, legend: null },
      opacity: { field: "_o", type: "quantitative", scale: null, legend: null }
    }
  }
}

/**
 * Vega-Lite spec of one time series chart over a shared time axis `[0, wall]`.
 *
 * @since 0.1.0
 * @category specs
 */
export const timelineSpec = (
  source: string,
  field: string,
  title: string,
  unit: string,
  series: string,
  wall: number,
  width = 940,
  seriesDomain?: ReadonlyArray<string>
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
      legend: { labelLimit: 200 },
      ...(seriesDomain === undefined ? {} : { scale: { domain: [...seriesDomain].sort(natural) } })
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
 * @category specs
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
 * @category specs
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
 * @category specs
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
 * @category specs
 */
export const taskStreamVega = (data: ReportData, width?: number): vega.Spec => {
  const v = toVega(taskStreamSpec(data, width), { wall: data.wall }) as vega.Spec & { scales?: Array<Record<string, unknown>> }
  for (const s of v.scales ?? []) if (s["name"] === "x") delete s["domainRaw"]
  return v
}

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
 * The four Work Queue style per-task histograms available in a trace: duration,
 * output size, CPU cores used (cpu_time / wall, only where the trace has cpu_time)
 * and worker memory after each task.
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
      c[i] = wall > 0 ? t.cpuTime[i]! / wall : NaN
    }
    out.push(histogram("cores", "CPU cores used (cpu time / wall time)", "cores", c))
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

const histogramSpecOf = (h: Histogram, what: string, width: number, height: number): TopLevelSpec => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: { text: h.title, subtitle: `${h.n} ${what}${h.n === 0 ? " (not recorded in this trace)" : ""}` },
  width,
  height,
  background: "white",
  data: { values: h.bins.map((b) => ({ ...b })) },
  mark: { type: "bar", color: "#4c78a8", stroke: "white", strokeWidth: 0.5 },
  encoding: {
    x: { field: "x0", type: "quantitative", title: `${h.resource} (${h.unit})`, bin: { binned: true } },
    x2: { field: "x1" },
    y: { field: "count", type: "quantitative", title: what },
    tooltip: [
      { field: "x0", type: "quantitative", title: "from", format: ".4~g" },
      { field: "x1", type: "quantitative", title: "to", format: ".4~g" },
      { field: "count", type: "quantitative", title: what }
    ]
  }
})

// "worker-vm-10" after "worker-vm-9"
const natural = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true })

/**
 * Vega-Lite spec of the task stream: one row per worker, one bar per task coloured by
 * function, tooltip with key / function / duration / size, zoomable in time (the `zoom`
 * interval selection is bound to the x scale).
 *
 * @since 0.1.0
 * @category specs
 */
export const taskStreamSpec = (data: ReportData, width = 1000): TopLevelSpec => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: { text: "Task stream", subtitle: "scroll to zoom, drag to pan, double-click to reset" },
  width,
  height: Math.min(600, Math.max(60, 22 * data.workers.length)),
  background: "white",
  data: { name: "tasks" },
  // The tooltip is the row itself (key, function, worker, duration, size): a per-item
  // tooltip expression (and ARIA descriptions) would format strings for every one of
  // 100,000 bars on each zoom step.
  mark: { type: "rect", tooltip: { content: "data" }, aria: false },
  config: { aria: false },
  params: [{ name: "zoom", select: { type: "interval", encodings: ["x"] }, bind: "scales" }],
  encoding: {
    x: { field: "start", type: "quantitative", title: "time since start (s)", scale: { domain: [0, data.wall] } },
    x2: { field: "end" },
    y: { field: "worker", type: "nominal", title: null, sort: [...data.workers].sort(natural) },
    color: {
      field: "function",
      type: "nominal",
      title: "function",
      scale: { scheme: data.functions.length > 10 ? "category20" : "tableau10", domain: [...data.functions] }
    },
    // a thin outline in the same colour keeps sub-pixel tasks visible (Vega-Lite merges
    // its legend into the colour legend)
    stroke: {
      field: "function",
      type: "nominal",
      scale: { scheme: data.functions.length > 10 ? "category20" : "tableau10", domain: [...data.functions] }
    },
    strokeWidth: { value: 0.6 }
  }
})

/**
 * Vega-Lite spec of one time series chart over a shared time axis `[0, wall]`.
 *
 * @since 0.1.0
 * @category specs
 */
export const timelineSpec = (
  source: "resources" | "memory",
  field: string,
  title: string,
  unit: string,
  series: string,
  wall: number,
  width = 1000
): TopLevelSpec => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title,
  width,
  height: 110,
  background: "white",
  data: { name: source },
  mark: { type: "line", interpolate: "step-after", strokeWidth: 1.2, aria: false, clip: true },
  config: { aria: false },
  encoding: {
    x: { field: "t", type: "quantitative", title: "time since start (s)", scale: { domain: [0, wall] } },
    y: { field: field, type: "quantitative", title: unit },
    color: { field: series, type: "nominal", title: series }
  }
})

/**
 * The resource usage charts available in this trace (one per metric present),
 * with byte metrics scaled to a readable unit.
 *
 * @since 0.1.0
 * @category specs
 */
export const resourceSpecs = (
  data: ReportData,
  width = 1000
): Array<{ readonly field: string; readonly column: string; readonly scale: number; readonly spec: TopLevelSpec }> => {
  const out: Array<{ field: string; column: string; scale: number; spec: TopLevelSpec }> = []
  for (const m of resourceMetrics) {
    const col = data.resources.values[m.field]
    if (col === undefined) continue
    let max = 0
    for (const v of col) if (v > max) max = v
    const u = m.unit === "%" ? { unit: "%", scale: 1 } : byteUnit(max)
    const unit = m.unit === "bytes/s" ? `${u.unit}/s` : u.unit
    // Vega-Lite reads "a.b" as a nested path, so page rows use "a_b" for "a.b".
    const column = m.field.replace(/\W/g, "_")
    out.push({ field: m.field, column, scale: u.scale, spec: timelineSpec("resources", column, m.title, unit, "host", data.wall, width) })
  }
  return out
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


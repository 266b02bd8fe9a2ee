/**
 * Per-task resource histograms (Work Queue style): duration, output size, CPU cores used,
 * worker memory, and where the trace has them (Tessera's engine records them) each
 * task's peak memory, bytes read from files and bytes in (its inputs' sizes); for the
 * whole run or one per function (Work Queue's blog draws them per category). An
 * analysis: the report draws these bins (`report/HistogramChart.ts`), `tessera plot hist`
 * writes them as figures.
 *
 * How values are binned (`histogram`):
 * - **Log-spaced bins where the values span decades**: every value at least 0, and the
 *   largest positive at least {@link logSpan} times the smallest (task durations from
 *   1 µs to 30 ms, sizes from 32 B to 80 KiB). Edges follow 1-2-5 style series per
 *   decade (`1, 2, 5`; `1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8`; …), or one edge every
 *   few decades, so that there are at most about `maxbins` bins. Zeros (a task that
 *   read no bytes) get a bin of their own, `[0, first edge)`, which a log axis cannot
 *   draw: the charts say how many values it holds. In linear bins, most such values
 *   fell in the first bin (issue 31: ~2,500 of 2,676 task durations in 0–1 ms).
 * - **Linear nice bins otherwise**, with Vega's nice-bin rule for the step.
 * - **One bin for constant values** (`constant`: the value), which the charts draw as one
 *   labelled bar, where a widened extent once drew ticks like "78.1 78.1 78.2".
 * - **No bins without values** (`n` 0), which the charts leave undrawn.
 *
 * Values are in base units (seconds, bytes) where they have one: the charts format
 * every tick in SI units (`20 µs`, `1.5 ms`, `78.1 KiB`).
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import * as vega from "vega"
import { floatsOf } from "./internal/access.ts"
import { inputBytes, type Tables, taskView } from "./internal/taskView.ts"

/**
 * The task columns the histograms read (the report model, `report/ReportData.ts`, has
 * them): times in seconds, `cpuTime` NaN where the trace has none, worker memory in bytes
 * after each task.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskSamples {
  readonly tasks: {
    readonly start: Float64Array
    readonly end: Float64Array
    readonly size: Float64Array
    readonly cpuTime: Float64Array
    /** bytes, NaN where not recorded (absent: none recorded) */
    readonly peakMemory?: Float64Array
    /** bytes read from files, NaN where not recorded */
    readonly ioBytes?: Float64Array
    /** bytes of the task's inputs (its dependencies' sizes) */
    readonly bytesIn?: Float64Array
    /** each task's function, as codes into `names` (-1: none); needed per function */
    readonly functions?: { readonly codes: Int32Array; readonly names: ReadonlyArray<string> }
  }
  readonly memory: { readonly bytes: Float64Array }
}

/**
 * The samples of loaded tables (`Load.ts`): every per-task column the histograms read,
 * functions included, and the memory table's held bytes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const taskSamplesOf = (tables: Tables): TaskSamples => {
  const v = taskView(tables.tasks)
  const col = (name: string) => floatsOf(tables.tasks.getChild(name), v.n)
  const mem = tables.memory as Table | undefined
  return {
    tasks: {
      start: v.start,
      end: v.end,
      size: v.size,
      cpuTime: col("cpu_time"),
      peakMemory: col("peak_memory"),
      ioBytes: col("io_bytes"),
      bytesIn: inputBytes(v),
      functions: { codes: v.fn.codes, names: v.fn.dict }
    },
    memory: { bytes: mem === undefined ? new Float64Array(0) : floatsOf(mem.getChild("size"), mem.numRows) }
  }
}

// vega re-exports vega-statistics' `bin` at runtime but its typings omit it.
const vegaBin = (vega as unknown as {
  readonly bin: (o: { extent: [number, number]; maxbins: number }) => { start: number; stop: number; step: number }
}).bin

/**
 * A binned histogram: `bins[i] = { x0, x1, count }` in `unit` (`s`, `B`, …: base units
 * for the resources of {@link taskHistograms}).
 *
 * @since 0.1.0
 * @category models
 */
export interface Histogram {
  readonly resource: string
  readonly title: string
  readonly unit: string
  readonly bins: ReadonlyArray<{ readonly x0: number; readonly x1: number; readonly count: number }>
  /** values counted (finite ones) */
  readonly n: number
  /** how the edges are spaced; absent: linear. Log bins may start with a bin `[0, e)` of the zeros. */
  readonly scale?: "linear" | "log"
  /** every counted value equals this one (then there is one bin, around it) */
  readonly constant?: number
}

/**
 * How many times the smallest positive value the largest must be for log-spaced bins
 * (two decades).
 *
 * @since 0.1.0
 * @category constructors
 */
export const logSpan = 100

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
 * Bin finite values into at most about `maxbins` bins: log-spaced where every value is
 * at least 0 and the positive ones span {@link logSpan} or more (`scale: "log"`, zeros
 * in a first bin `[0, e)` of their own), one bin around a constant (`constant`), nice
 * linear bins otherwise (Vega's binning rule for the step and start); `scale` forces
 * linear or log (log falls back to linear where a value is negative or none is
 * positive). Bins are half-open `[x0, x1)` except the last, which is closed; edges are
 * shared (`bins[k].x1 === bins[k + 1].x0`) and strictly increase, the first edge is at
 * most the smallest value and the last at least the largest, so every finite value is
 * counted in exactly one bin — denormals, equal values, -0 and extents whose width
 * overflows a double included. NaN and ±Infinity are not counted.
 *
 * Plain loops: runs over every task of large traces.
 *
 * @since 0.1.0
 * @category constructors
 */
export const histogram = (
  resource: string,
  title: string,
  unit: string,
  values: ArrayLike<number>,
  maxbins = 40,
  scale: "auto" | "linear" | "log" = "auto"
): Histogram => {
  let lo = Infinity
  let hi = -Infinity
  let loPositive = Infinity
  let zeros = 0
  let n = 0
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!
    if (!Number.isFinite(v)) continue
    n++
    if (v < lo) lo = v
    if (v > hi) hi = v
    if (v > 0 && v < loPositive) loPositive = v
    else if (v === 0) zeros++
  }
  if (n === 0) return { resource, title, unit, bins: [], n }
  if (lo === hi) {
    const [x0, x1] = widened(lo, hi)
    return { resource, title, unit, bins: [{ x0, x1, count: n }], n, scale: "linear", constant: lo }
  }
  const log = scale !== "linear" && lo >= 0 && hi > 0 && (scale === "log" || hi / loPositive >= logSpan)
  const edges = log ? logEdges(loPositive, hi, zeros > 0 ? maxbins - 1 : maxbins) : binEdges(lo, hi, maxbins)
  if (log && zeros > 0) edges.unshift(0)
  const counts = new Float64Array(edges.length - 1)
  if (log) for (let i = 0; i < values.length; i++) countSearch(values[i]!, edges, counts)
  else countLinear(values, edges, counts)
  const bins = Array.from(counts, (c, k) => ({ x0: edges[k]!, x1: edges[k + 1]!, count: c }))
  return { resource, title, unit, bins, n, scale: log ? "log" : "linear" }
}

/** Linear edges: an arithmetic guess, corrected against the stored edges. */
const countLinear = (values: ArrayLike<number>, edges: ReadonlyArray<number>, counts: Float64Array): void => {
  const count = counts.length
  const start = edges[0]!
  const step = (edges[count]! - start) / count
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!
    if (!Number.isFinite(v)) continue
    // rounding can put the guess one bin off, and the outer edges may have been moved
    // to lo / hi
    let k = Math.floor((v - start) / step)
    k = k >= 0 ? (k < count ? k : count - 1) : 0
    while (k > 0 && v < edges[k]!) k--
    while (k < count - 1 && v >= edges[k + 1]!) k++
    counts[k]!++
  }
}

/** One value into its bin by binary search over the edges (the last bin closed). */
const countSearch = (v: number, edges: ReadonlyArray<number>, counts: Float64Array): void => {
  if (!Number.isFinite(v)) return
  // the last k with edges[k] <= v, at most counts.length - 1
  let a = 0
  let b = counts.length - 1
  while (a < b) {
    const m = (a + b + 1) >> 1
    if (edges[m]! <= v) a = m
    else b = m - 1
  }
  counts[a]!++
}

/** An extent around `[lo, hi]` wide enough to bin (an empty or denormal-width one is widened), within the doubles. */
const widened = (lo: number, hi: number): [number, number] => {
  if (hi - lo > Math.max(Math.abs(lo), Math.abs(hi)) * 1e-9 + 1e-12) return [lo, hi]
  const w = Math.max(Math.abs(lo) * 0.01, 1e-6)
  return [Math.max(lo - w / 2, -Number.MAX_VALUE), Math.min(hi + w / 2, Number.MAX_VALUE)]
}

/**
 * The mantissas of log bin edges within one decade, finest first: 1-2-5 style series
 * (the last two are Renard's R10 and R5, rounded as the E-series are).
 */
const decadeSeries: ReadonlyArray<ReadonlyArray<string>> = [
  ["1", "1.25", "1.6", "2", "2.5", "3.15", "4", "5", "6.3", "8"],
  ["1", "1.6", "2.5", "4", "6.3"],
  ["1", "2", "5"],
  ["1", "3"],
  ["1"]
]

/**
 * Strictly increasing log-spaced edges covering `[lo, hi]` (0 < lo < hi, finite): the
 * finest series of {@link decadeSeries} giving at most `maxbins` bins, else one edge every
 * few decades. Edges are parsed from decimal text (`2.5e-3`), the nearest double to
 * each; the outer ones are the nearest enclosing `lo` and `hi`, or `lo` / `hi`
 * themselves where none is a positive finite double (below the denormals, above
 * `Number.MAX_VALUE`).
 */
const logEdges = (lo: number, hi: number, maxbins: number): Array<number> => {
  const d0 = Math.floor(Math.log10(lo))
  const d1 = Math.ceil(Math.log10(hi))
  const decades = Math.max(1, d1 - d0)
  const series = decadeSeries.find((s) => s.length * decades <= maxbins)
  const every = series === undefined ? Math.ceil(decades / Math.max(1, maxbins)) : 1
  const candidates: Array<number> = []
  for (let d = Math.floor(d0 / every) * every - every; d <= d1 + every; d += every) {
    for (const m of series ?? ["1"]) candidates.push(Number(`${m}e${d}`))
  }
  return enclose(candidates.filter((e) => e > 0), lo, hi)
}

/**
 * Of increasing candidate edges (non-finite ones skipped), the last one <= lo, those
 * strictly inside, and the first one >= hi (which is > lo: an edge equal to lo == hi is
 * taken as the first), the outer ones `lo` / `hi` themselves where no candidate encloses.
 */
const enclose = (candidates: Iterable<number>, lo: number, hi: number): Array<number> => {
  let first = NaN
  let last = NaN
  const inner: Array<number> = []
  for (const e of candidates) {
    if (!Number.isFinite(e)) continue
    if (e <= lo) first = e
    else if (e < hi) {
      if (inner.length === 0 || e > inner[inner.length - 1]!) inner.push(e)
    } else if (Number.isNaN(last)) last = e
  }
  return [Number.isNaN(first) ? lo : first, ...inner, Number.isNaN(last) ? hi : last]
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
  const [a, b] = widened(lo, hi)
  const scale = Number.isFinite(b - a) ? 1 : 2
  const bin = vegaBin({ extent: [a / scale, b / scale], maxbins })
  // stop / step - start / step: the width itself can overflow even at half scale;
  // the cap keeps a pathological step from allocating without bound
  const count = Math.min(4 * maxbins, Math.max(1, Math.ceil(bin.stop / bin.step - bin.start / bin.step)))
  // nice edges increase with k
  const edges = enclose(Array.from({ length: count + 3 }, (_, j) => (bin.start + (j - 1) * bin.step) * scale), lo, hi)
  let first = edges[0]!
  let last = edges[edges.length - 1]!
  const inner = edges.slice(1, -1)
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

/** A resource's values per task (memory: per sample), in base units (s, B), with its title. */
interface ResourceValues {
  readonly resource: string
  readonly title: string
  readonly unit: string
  readonly values: Float64Array
  /** one value per task (false: per memory sample, no function) */
  readonly perTask: boolean
}

const bytesValues = (resource: string, title: string, xs: Float64Array | undefined, n: number): ResourceValues =>
  ({ resource, title, unit: "B", values: xs ?? new Float64Array(n).fill(NaN), perTask: true })

const resourceValues = (data: TaskSamples, resource: string): ResourceValues | undefined => {
  const t = data.tasks
  const n = t.start.length
  switch (resource) {
    case "duration": {
      const d = new Float64Array(n)
      for (let i = 0; i < n; i++) d[i] = t.end[i]! - t.start[i]!
      return { resource, title: "Task duration", unit: "s", values: d, perTask: true }
    }
    case "size":
      return bytesValues(resource, "Task output size", t.size, n)
    case "cores": {
      const c = new Float64Array(n)
      for (let i = 0; i < n; i++) {
        const wall = t.end[i]! - t.start[i]!
        c[i] = wall >= coresMinWall ? t.cpuTime[i]! / wall : NaN
      }
      return { resource, title: `CPU cores used (cpu time / wall time, tasks ≥ ${coresMinWall * 1000} ms)`, unit: "cores", values: c, perTask: true }
    }
    case "memory": {
      const m = bytesValues(resource, "Worker managed memory after each task", data.memory.bytes, 0)
      return { ...m, perTask: false }
    }
    case "peak_memory":
      return bytesValues(resource, "Task peak memory (worker heap + external)", t.peakMemory, n)
    case "io_bytes":
      return bytesValues(resource, "Bytes read from files per task", t.ioBytes, n)
    case "bytes_in":
      return bytesValues(resource, "Task input size (bytes in)", t.bytesIn, n)
  }
  return undefined
}

/**
 * The Work Queue style per-task histograms available in a trace (`which`: their names,
 * `HistogramNames.histogramResources`; default all): duration (s), output size (B), CPU
 * cores used (cpu_time / wall, only where the trace has cpu_time, and only for tasks of
 * at least {@link coresMinWall} seconds), worker memory after each task (B), and each
 * task's peak memory, bytes read from files and bytes in (B). A resource the trace lacks
 * gives a histogram of 0 values (`n` 0, no bins).
 *
 * @since 0.1.0
 * @category constructors
 */
export const taskHistograms = (data: TaskSamples, which?: ReadonlyArray<string>): Array<Histogram> => {
  const out: Array<Histogram> = []
  for (const r of which ?? allResources) {
    const rv = resourceValues(data, r)
    if (rv !== undefined) out.push(histogram(rv.resource, rv.title, rv.unit, rv.values))
  }
  return out
}

const allResources = ["duration", "size", "cores", "memory", "peak_memory", "io_bytes", "bytes_in"]

/**
 * A histogram of one function's tasks.
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionHistogram extends Histogram {
  readonly function: string
}

/**
 * The per-task histograms per function (as Work Queue's blog draws them per category):
 * for each resource, one histogram per function that has tasks, functions in name order,
 * each binned on its own values (log or linear, each as its values call for), in the
 * resource's base unit. `memory` (sampled per worker, not per task) has no
 * function and is left out. Needs `data.tasks.functions`; without it, none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const taskHistogramsByFunction = (data: TaskSamples, which?: ReadonlyArray<string>): Array<FunctionHistogram> => {
  const fn = data.tasks.functions
  if (fn === undefined) return []
  const n = data.tasks.start.length
  // rows per function, functions by name
  const count = new Int32Array(fn.names.length)
  for (let i = 0; i < n; i++) if (fn.codes[i]! >= 0) count[fn.codes[i]!]!++
  const order = fn.names.map((_, c) => c).filter((c) => count[c]! > 0).sort((a, b) => (fn.names[a]! < fn.names[b]! ? -1 : fn.names[a]! > fn.names[b]! ? 1 : 0))
  const out: Array<FunctionHistogram> = []
  for (const r of which ?? allResources) {
    const rv = resourceValues(data, r)
    if (rv === undefined || !rv.perTask) continue
    const parts = order.map((c) => ({ c, values: new Float64Array(count[c]!), k: 0 }))
    const at = new Int32Array(fn.names.length).fill(-1)
    parts.forEach((p, j) => (at[p.c] = j))
    for (let i = 0; i < n; i++) {
      const c = fn.codes[i]!
      if (c < 0) continue
      const p = parts[at[c]!]!
      p.values[p.k++] = rv.values[i]!
    }
    for (const p of parts) out.push({ ...histogram(rv.resource, `${rv.title}: ${fn.names[p.c]}`, rv.unit, p.values), function: fn.names[p.c]! })
  }
  return out
}

/**
 * Per-task resource histograms (Work Queue style): duration, output size, CPU cores used
 * and worker memory, binned with Vega's nice-bin rule. An analysis: the report draws
 * these bins (`report/Charts.ts` `histogramSpec`), `tessera plot hist` writes them as
 * figures.
 *
 * @since 0.1.0
 */
import * as vega from "vega"

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
  }
  readonly memory: { readonly bytes: Float64Array }
}

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
export const taskHistograms = (data: TaskSamples, which?: ReadonlyArray<string>): Array<Histogram> => {
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

/**
 * How a histogram (`analysis/Histograms.ts`) is drawn, in `tessera plot hist`'s figures,
 * the report's all-tasks histograms and its per-function grid:
 *
 * - log-spaced bins on a log axis, titled "(log scale)", the zeros' bin (which a log axis
 *   cannot draw) counted in the subtitle;
 * - constant values as one labelled bar (`all 2,676 tasks: 0 B`), never a full-width bar
 *   with ticks around a widened extent;
 * - no values: nothing drawn, a sentence instead (`hasFigure` false; `emptySentence`);
 * - every tick in SI units (`20 ns`, `1.5 ms`, `78.1 KiB`, `2 GiB`), with enough digits
 *   that neighbouring ticks differ, the tooltips likewise.
 *
 * Values arrive in their histogram's `unit`: time units (`s`, `ms`, `µs`, `ns`) and
 * byte units (`B`, `KiB`, `MiB`, `GiB`, `TiB`) are relabelled per tick, any other unit
 * (`cores`) is printed as a number. Labels are Vega expressions, so the report's page
 * and the headless renderer print the same text.
 *
 * Leaves out: binning (Histograms.ts), writing files (Figure.ts).
 *
 * @since 0.1.0
 */
import type { TopLevelSpec } from "vega-lite"
import type { Histogram } from "../analysis/Histograms.ts"

/**
 * How a unit is labelled: `time` (SI seconds), `bytes` (binary multiples) or `plain`,
 * and its size in the base unit (seconds, bytes).
 *
 * @since 0.1.0
 * @category models
 */
export interface UnitKind {
  readonly kind: "time" | "bytes" | "plain"
  readonly factor: number
}

const timeUnits: Record<string, number> = { s: 1, ms: 1e-3, "µs": 1e-6, us: 1e-6, ns: 1e-9 }
const byteUnits: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 }

/**
 * The kind and size of a unit name.
 *
 * @since 0.1.0
 * @category constructors
 */
export const unitKind = (unit: string): UnitKind =>
  unit in timeUnits ? { kind: "time", factor: timeUnits[unit]! }
  : unit in byteUnits ? { kind: "bytes", factor: byteUnits[unit]! }
  : { kind: "plain", factor: 1 }

// the prefixes, largest first: [threshold in base units, divisor, suffix]
const timeSteps: ReadonlyArray<readonly [number, number, string]> = [[1, 1, "s"], [1e-3, 1e-3, "ms"], [1e-6, 1e-6, "µs"], [0, 1e-9, "ns"]]
const byteSteps: ReadonlyArray<readonly [number, number, string]> = [4, 3, 2, 1, 0].map((k) => [k === 0 ? 0 : 1024 ** k, 1024 ** k, ["B", "KiB", "MiB", "GiB", "TiB"][k]!] as const)

/** `digits` significant digits, trailing zeros dropped, never in exponent notation where avoidable (d3's `.{digits}~r`). */
const sig = (v: number, digits: number): string => {
  if (v === 0) return "0"
  const r = Number(v.toPrecision(digits))
  const text = Math.abs(r) >= 1e21 || Math.abs(r) < 1e-6 ? String(r) : r.toFixed(Math.max(0, digits - 1 - Math.floor(Math.log10(Math.abs(r)))))
  return text.includes(".") && !text.includes("e") ? text.replace(/\.?0+$/, "") : text
}

/**
 * A value in `unit` as text in SI units, `digits` significant digits: `2e-8` s reads
 * `20 ns`, `0.0015` s `1.5 ms`, `80000` B `78.1 KiB`; a plain unit is appended
 * (`1.5 cores`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatValue = (value: number, unit: string, digits = 3): string => {
  const u = unitKind(unit)
  if (u.kind === "plain") return `${sig(value, digits)}${unit === "" ? "" : ` ${unit}`}`
  const x = value * u.factor
  const steps = u.kind === "time" ? timeSteps : byteSteps
  if (u.kind === "time" && Math.abs(x) >= 1000) return `${Math.round(x).toLocaleString("en-US")} s`
  const [, div, suffix] = steps.find(([t]) => Math.abs(x) >= t) ?? steps[steps.length - 1]!
  return `${x === 0 ? "0" : sig(x / div, digits)} ${x === 0 ? (u.kind === "time" ? "s" : "B") : suffix}`
}

/**
 * {@link formatValue} as a Vega expression over `datum.value` (an axis's `labelExpr`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const labelExpr = (unit: string, digits = 3): string => {
  const u = unitKind(unit)
  const f = `'.${digits}~r'`
  if (u.kind === "plain") return `format(datum.value, ${f})`
  const x = `(datum.value * ${u.factor})`
  const steps = u.kind === "time" ? timeSteps : byteSteps
  const zero = u.kind === "time" ? "0 s" : "0 B"
  const branches = steps.slice(0, -1).map(([t, div, suffix]) => `abs(${x}) >= ${t} ? format(${x} / ${div}, ${f}) + ' ${suffix}' : `).join("")
  const [, lastDiv, lastSuffix] = steps[steps.length - 1]!
  const big = u.kind === "time" ? `abs(${x}) >= 1000 ? format(${x}, ',.0f') + ' s' : ` : ""
  return `${x} == 0 ? '${zero}' : ${big}${branches}format(${x} / ${lastDiv}, ${f}) + ' ${lastSuffix}'`
}

const niceStep = (raw: number): number => {
  const p = 10 ** Math.floor(Math.log10(raw))
  const m = raw / p
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p
}

/** The display divisor of the prefix `max` (in base units) takes. */
const displayDivisor = (u: UnitKind, max: number): number => {
  if (u.kind === "plain") return 1
  const steps = u.kind === "time" ? timeSteps : byteSteps
  return (steps.find(([t]) => max >= t) ?? steps[steps.length - 1]!)[1]
}

/**
 * Tick values (in the histogram's unit) for an axis over `[lo, hi]`, and the significant
 * digits their labels need: about 5 nice ticks in the prefix the largest value takes
 * (so byte ticks are round in KiB or MiB), or on a log axis the powers of ten (of two for
 * bytes) with 2 and 5 between them where the axis spans few.
 *
 * @since 0.1.0
 * @category formatting
 */
export const axisTicks = (lo: number, hi: number, unit: string, log: boolean): { readonly values: Array<number>; readonly digits: number } => {
  const u = unitKind(unit)
  if (log) {
    const values: Array<number> = []
    if (u.kind === "bytes") {
      const [a, b] = [Math.ceil(Math.log2(lo * u.factor) - 1e-9), Math.floor(Math.log2(hi * u.factor) + 1e-9)]
      const every = [1, 2, 5, 10, 20, 30].find((e) => (b - a) / e <= 6) ?? 40
      for (let e = Math.ceil(a / every) * every; e <= b; e += every) values.push(2 ** e / u.factor)
    } else {
      const [a, b] = [Math.ceil(Math.log10(lo * u.factor) - 1e-9), Math.floor(Math.log10(hi * u.factor) + 1e-9)]
      const every = Math.max(1, Math.ceil((b - a + 1) / 7))
      const mantissas = b - a < 2 ? ["1", "2", "5"] : ["1"]
      for (let d = a - 1; d <= b; d++) {
        if (((d % every) + every) % every !== 0) continue
        for (const m of mantissas) {
          const v = Number(`${m}e${d}`) / u.factor
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) values.push(v)
        }
      }
    }
    return { values, digits: 3 }
  }
  const div = displayDivisor(u, Math.max(Math.abs(lo), Math.abs(hi)) * u.factor) / u.factor
  const step = niceStep(Math.max((hi - lo) / div / 5, Number.MIN_VALUE))
  const values: Array<number> = []
  for (let k = Math.ceil(lo / div / step - 1e-9); k * step <= hi / div + step * 1e-9 && values.length < 50; k++) values.push(Number((k * step).toPrecision(12)) * div)
  const biggest = Math.max(Math.abs(lo), Math.abs(hi)) / div
  const digits = Math.min(10, Math.max(3, Math.ceil(Math.log10(biggest / step) - 1e-9) + 1))
  return { values, digits }
}

/**
 * Whether a histogram has anything to draw (`n` > 0); where not, {@link emptySentence}
 * says so.
 *
 * @since 0.1.0
 * @category guards
 */
export const hasFigure = (h: Histogram): boolean => h.n > 0 && h.bins.length > 0

/**
 * The sentence shown instead of a histogram without values.
 *
 * @since 0.1.0
 * @category formatting
 */
export const emptySentence = (h: Histogram, what = "tasks"): string =>
  `${h.title}: nothing to draw, no ${what} with a value in these databases`

const count = (n: number) => n.toLocaleString("en-US")
/** `1 task`, `2,676 tasks` (`what` a plural in s) */
const counted = (n: number, what: string) => `${count(n)} ${n === 1 && what.endsWith("s") ? what.slice(0, -1) : what}`

/** The zeros' bin of log bins: `[0, e)`, which a log axis cannot draw. */
const zerosOf = (h: Histogram): number => (h.scale === "log" && h.bins[0]?.x0 === 0 ? h.bins[0].count : 0)

/**
 * The bars, axes and tooltips of one histogram as a Vega-Lite unit (or layer) spec, with
 * its one-line summary: what the subtitle of a figure and a grid cell's tooltip say.
 * `axisTitle` false leaves the x axis untitled (the grid titles its columns).
 *
 * @since 0.1.0
 * @category formatting
 */
export const histogramLayer = (
  h: Histogram,
  what: string,
  options: {
    /** about this many ticks per axis (a small grid cell) */
    readonly tickCount?: number
    /** false: no x axis title */
    readonly axisTitle?: boolean
    /** false: no count axis title */
    readonly countAxis?: boolean
    /** false: a constant's bar without its count written above it */
    readonly barLabel?: boolean
    readonly color?: string
    /** the function the histogram is of, in the tooltips */
    readonly label?: string
  } = {}
): { readonly spec: Record<string, unknown>; readonly summary: string } => {
  const color = options.color ?? "#4c78a8"
  const fn = options.label === undefined ? [] : [{ field: "function", type: "nominal", title: "function" }]
  const fnValue = options.label === undefined ? {} : { function: options.label }
  const plain = unitKind(h.unit).kind === "plain" && h.unit !== "" && h.unit !== h.resource
  const axisName = `${h.resource}${plain ? ` (${h.unit})` : ""}`
  if (!hasFigure(h)) {
    return {
      summary: `no ${what}`,
      spec: { data: { values: [{ text: `no ${what} with ${h.resource}` }] }, mark: { type: "text", color: "#666", fontSize: 11 }, encoding: { text: { field: "text" } } }
    }
  }
  if (h.constant !== undefined) {
    const value = formatValue(h.constant, h.unit)
    const summary = `${h.n === 1 ? "" : "all "}${counted(h.n, what)}: ${value}`
    const base = { data: { values: [{ value, count: h.n, summary, label: counted(h.n, what), ...fnValue }] } }
    const x = { field: "value", type: "nominal", title: options.axisTitle === false ? null : axisName, axis: { labelAngle: 0 } }
    return {
      summary,
      spec: {
        ...base,
        layer: [
          {
            mark: { type: "bar", color, width: { band: 0.25 } },
            encoding: {
              x,
              y: {
                field: "count",
                type: "quantitative",
                title: options.countAxis === false ? null : what,
                // room above the bar for its count
                ...(options.barLabel === false ? {} : { scale: { domainMax: h.n * 1.12 } }),
                axis: { tickMinStep: 1, ...(options.tickCount === undefined ? {} : { tickCount: options.tickCount }) }
              },
              tooltip: [...fn, { field: "summary", type: "nominal", title: h.resource }]
            }
          },
          ...(options.barLabel === false ? [] : [{ mark: { type: "text", dy: -4, baseline: "bottom", fontSize: 11 }, encoding: { x, y: { field: "count", type: "quantitative" }, text: { field: "label" } } }])
        ]
      }
    }
  }
  const log = h.scale === "log"
  const zeros = zerosOf(h)
  const drawn = zeros > 0 ? h.bins.slice(1) : h.bins
  const lo = drawn[0]!.x0
  const hi = drawn[drawn.length - 1]!.x1
  const ticks = axisTicks(lo, hi, h.unit, log)
  const summary = `${counted(h.n, what)}${zeros > 0 ? `, ${count(zeros)} of them at 0 (left of the log axis)` : ""}`
  let top = 0
  let low = Infinity
  for (const b of drawn) {
    if (b.count > top) top = b.count
    if (b.count > 0 && b.count < low) low = b.count
  }
  // Per-task resources are usually skewed (most tasks tiny, a few large): past a 30x
  // spread between the fullest and the emptiest non-empty bin the count axis is symlog,
  // so the tail's bins stay visible (symlog, unlike log, draws counts of 0 and 1).
  const skewed = top / low > 30
  const countTitle = options.countAxis === false ? null : `${what}${skewed ? " (symlog scale)" : ""}`
  // counts are whole numbers: no tick between 0 and 1
  const tickAxis = { tickMinStep: 1, ...(options.tickCount === undefined ? {} : { tickCount: options.tickCount }) }
  return {
    summary,
    spec: {
      data: { values: drawn.map((b) => ({ ...b, from: formatValue(b.x0, h.unit, ticks.digits + 1), to: formatValue(b.x1, h.unit, ticks.digits + 1), ...fnValue })) },
      mark: { type: "bar", color, stroke: "white", strokeWidth: 0.5 },
      encoding: {
        x: {
          field: "x0",
          type: "quantitative",
          title: options.axisTitle === false ? null : `${axisName}${log ? " (log scale)" : ""}`,
          scale: log ? { type: "log", domain: [lo, hi] } : { domain: [lo, hi], nice: false, zero: false },
          axis: { values: options.tickCount === undefined ? ticks.values : thin(ticks.values, options.tickCount), labelExpr: labelExpr(h.unit, ticks.digits), labelOverlap: true, labelFlush: true }
        },
        x2: { field: "x1" },
        // bars from 0 (x and x2 alone would make them horizontal ranges)
        y2: { datum: 0 },
        y: skewed
          ? { field: "count", type: "quantitative", title: countTitle, scale: { type: "symlog" }, axis: { values: decades(top), ...tickAxis } }
          : { field: "count", type: "quantitative", title: countTitle, axis: tickAxis },
        tooltip: [
          ...fn,
          { field: "from", type: "nominal", title: "from" },
          { field: "to", type: "nominal", title: "to" },
          { field: "count", type: "quantitative", title: what }
        ]
      }
    }
  }
}

/** At most about `n` of `values`, evenly picked, the ends kept. */
const thin = (values: Array<number>, n: number): Array<number> => {
  if (values.length <= n + 1) return values
  const every = Math.ceil((values.length - 1) / n)
  return values.filter((_, k) => k % every === 0)
}

// 0, 1, 10, 100, ... up to max: symlog's own ticks crowd at the top
const decades = (max: number): Array<number> => {
  const out = [0]
  for (let v = 1; v <= max; v *= 10) out.push(v)
  return out
}

/**
 * Vega-Lite spec of one histogram as a figure, data inline (histograms are small): its
 * title, a subtitle with what it counts, and the bars (or one labelled bar, or the
 * sentence that nothing was recorded).
 *
 * @since 0.1.0
 * @category formatting
 */
export const histogramSpec = (h: Histogram, width = 360, height = 200): TopLevelSpec => {
  // memory is sampled per Managed Memory event (after each task, per worker)
  const what = h.resource === "memory" ? "samples" : "tasks"
  const { spec, summary } = histogramLayer(h, what)
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: h.title, subtitle: hasFigure(h) ? summary : emptySentence(h, what) },
    width,
    height: hasFigure(h) ? height : 20,
    background: "white",
    ...(hasFigure(h) ? spec : { data: { values: [] }, mark: "text" }),
    ...(hasFigure(h) ? {} : { encoding: {} })
  } as TopLevelSpec
}

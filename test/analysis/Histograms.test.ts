/**
 * Histograms (issue 31 item 12): log-spaced bins where values span decades, one bin for
 * a constant, none for no values; and how they are drawn (report/HistogramChart.ts):
 * SI ticks, one labelled bar, a sentence instead of an empty figure.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import * as vega from "vega"
import { histogram, logSpan, taskHistograms, type TaskSamples } from "../../src/analysis/Histograms.ts"
import { renderSvg } from "../../src/report/Figure.ts"
import { axisTicks, emptySentence, formatValue, hasFigure, histogramSpec, labelExpr } from "../../src/report/HistogramChart.ts"

const inBin = (b: { x0: number; x1: number }, last: boolean, v: number) => b.x0 <= v && (v < b.x1 || (last && v === b.x1))
const sum = (xs: ReadonlyArray<{ count: number }>) => xs.reduce((s, b) => s + b.count, 0)

/** The text of every `<text>` element of an SVG. */
const texts = (svg: string): Array<string> =>
  [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!.replace(/&amp;/g, "&").replace(/&#(\d+);/g, (_, c) => String.fromCharCode(Number(c))))

/** Task samples with the given per-task columns (the rest NaN), all tasks of one function. */
const samples = (n: number, columns: { duration?: ArrayLike<number>; size?: ArrayLike<number>; ioBytes?: ArrayLike<number>; peakMemory?: ArrayLike<number> }): TaskSamples => {
  const start = new Float64Array(n)
  const end = new Float64Array(n)
  for (let i = 0; i < n; i++) (start[i] = i, end[i] = i + (columns.duration?.[i] ?? 0.001))
  const col = (xs: ArrayLike<number> | undefined) => Float64Array.from({ length: n }, (_, i) => xs?.[i] ?? NaN)
  return {
    tasks: { start, end, size: col(columns.size), cpuTime: col(undefined), peakMemory: col(columns.peakMemory), ioBytes: col(columns.ioBytes), bytesIn: col(undefined) },
    memory: { bytes: new Float64Array(0) }
  }
}

/** A Vega expression's value where `datum.value` is `v`. */
const evaluate = async (expr: string, v: number): Promise<unknown> => {
  const view = new vega.View(vega.parse({ signals: [{ name: "out", update: expr.replaceAll("datum.value", `(${v})`) }] }), { renderer: "none" })
  await view.runAsync()
  return view.signal("out")
}

describe("Histograms", () => {
  // positive values over many decades, with zeros and repeats
  const positive = fc.oneof(
    fc.double({ min: 1e-12, max: 1e12, noNaN: true }),
    fc.integer({ min: 1, max: 1_000_000 }),
    fc.constantFrom(5e-324, Number.MAX_VALUE, 1e-9, 0.001, 1, 1000, 2.5e-3, 1.6)
  )
  const nonNegative = fc.oneof({ weight: 5, arbitrary: positive }, { weight: 1, arbitrary: fc.constantFrom(0, -0) })

  it("issue 31 item 12: log bins (property): every value in exactly one bin, counts sum to n, edges increasing", () => {
    fc.assert(
      fc.property(fc.array(nonNegative, { minLength: 1, maxLength: 300 }), fc.integer({ min: 4, max: 60 }), (xs, maxbins) => {
        const h = histogram("x", "x", "s", xs, maxbins, "log")
        assert.equal(h.n, xs.length)
        assert.equal(sum(h.bins), xs.length)
        for (let k = 0; k < h.bins.length; k++) {
          const b = h.bins[k]!
          assert.ok(Number.isFinite(b.x0) && Number.isFinite(b.x1) && b.x0 < b.x1, `bin ${k} [${b.x0}, ${b.x1}]`)
          if (k > 0) assert.equal(b.x0, h.bins[k - 1]!.x1, "bins share their edges")
          assert.equal(b.count, xs.filter((v) => inBin(b, k === h.bins.length - 1, v)).length, `count of bin ${k}`)
        }
        for (const v of xs) assert.equal(h.bins.filter((b, k) => inBin(b, k === h.bins.length - 1, v)).length, 1, `${v} in one bin`)
        assert.ok(h.bins.length <= maxbins + 2, `${h.bins.length} bins for maxbins ${maxbins}`)
        if (h.constant !== undefined) return assert.equal(h.bins.length, 1)
        assert.equal(h.scale, xs.some((v) => v > 0) ? "log" : "linear")
        if (h.scale !== "log") return
        // monotone in ratio: after the zeros' bin [0, e), every edge is positive and no
        // bin is more than one series step wider (in ratio) than the next-coarser series
        const logBins = h.bins[0]!.x0 === 0 ? h.bins.slice(1) : h.bins
        assert.equal(h.bins[0]!.x0 === 0, xs.some((v) => v === 0), "a zeros' bin exactly where there are zeros")
        if (h.bins[0]!.x0 === 0) assert.equal(h.bins[0]!.count, xs.filter((v) => v === 0).length)
        for (const b of logBins) assert.ok(b.x0 > 0 && b.x1 / b.x0 > 1, `[${b.x0}, ${b.x1}]`)
      }),
      { numRuns: 200 }
    )
  })

  it("issue 31 item 12: picks log bins exactly where non-negative values span two decades or more", () => {
    fc.assert(
      fc.property(fc.array(positive, { minLength: 2, maxLength: 100 }), (xs) => {
        const h = histogram("x", "x", "s", xs)
        const lo = Math.min(...xs)
        const hi = Math.max(...xs)
        if (lo === hi) assert.equal(h.constant, lo)
        else assert.equal(h.scale, hi / lo >= logSpan ? "log" : "linear", `${lo}..${hi}`)
      }),
      { numRuns: 200 }
    )
    assert.equal(histogram("x", "x", "s", [-1, 1, 1000]).scale, "linear", "a negative value: linear")
  })

  it("issue 31 item 12: task durations over decades get log bins, not one first bin holding most tasks", async () => {
    // the shape: 2,676 tasks, most ~0.1-0.3 ms, some 1-10 µs, a tail to 30 ms
    const d: Array<number> = []
    for (let i = 0; i < 2500; i++) d.push(1e-4 * (1 + 2 * ((i * 7919) % 1000) / 1000))
    for (let i = 0; i < 100; i++) d.push(1e-6 * (1 + i / 10))
    for (let i = 0; i < 76; i++) d.push(1e-3 * (1 + (i * 29) / 76))
    const [h] = taskHistograms(samples(d.length, { duration: d }), ["duration"])
    assert.equal(h!.unit, "s")
    assert.equal(h!.scale, "log")
    assert.equal(sum(h!.bins), 2676)
    assert.ok(h!.bins[0]!.count < 100, `first bin holds ${h!.bins[0]!.count}`)
    assert.ok(Math.max(...h!.bins.map((b) => b.count)) < 1500, "no bin holds most of the tasks")
    const shown = texts(await renderSvg(histogramSpec(h!, 480, 260)))
    assert.ok(shown.includes("duration (log scale)"), shown.join(" | "))
    for (const tick of ["1 µs", "10 µs", "100 µs", "1 ms", "10 ms"]) assert.ok(shown.includes(tick), `${tick} in ${shown.join(" | ")}`)
  })

  it("issue 31 item 12: all-zero io_bytes is one labelled bar at 0 B, not ticks like 0.000000020 B", async () => {
    const [h] = taskHistograms(samples(2676, { ioBytes: new Float64Array(2676) }), ["io_bytes"])
    assert.equal(h!.constant, 0)
    assert.equal(h!.bins.length, 1)
    assert.equal(h!.bins[0]!.count, 2676)
    const shown = texts(await renderSvg(histogramSpec(h!, 480, 260)))
    assert.ok(shown.includes("all 2,676 tasks: 0 B"), shown.join(" | "))
    assert.ok(shown.includes("0 B") && shown.includes("2,676 tasks"), shown.join(" | "))
    assert.ok(!shown.some((t) => /0\.0000/.test(t)), shown.join(" | "))
  })

  it("issue 31 item 12: constant sizes are one bar labelled 78.1 KiB, not ticks 78.1 78.1 78.2", async () => {
    const [h] = taskHistograms(samples(40, { size: new Float64Array(40).fill(80_000) }), ["size"])
    assert.equal(h!.constant, 80_000)
    const shown = texts(await renderSvg(histogramSpec(h!, 480, 260)))
    assert.equal(shown.filter((t) => t === "78.1 KiB").length, 1, shown.join(" | "))
    assert.ok(shown.includes("all 40 tasks: 78.1 KiB"), shown.join(" | "))
    assert.ok(!shown.some((t) => t === "78.1" || t === "78.2"), shown.join(" | "))
  })

  it("issue 31 item 12: empty histograms draw nothing, a sentence says so instead of a panel labelled 0.000000", async () => {
    const [h] = taskHistograms(samples(10, {}), ["peak_memory"])
    assert.equal(h!.n, 0)
    assert.deepEqual(h!.bins, [])
    assert.equal(hasFigure(h!), false)
    assert.match(emptySentence(h!), /nothing to draw, no tasks with a value/)
    const svg = await renderSvg(histogramSpec(h!, 480, 260))
    assert.ok(!/<path[^>]*class="mark-rect/.test(svg) && !texts(svg).some((t) => /^0\.0+$/.test(t)), "no bars, no 0.000000 ticks")
  })

  it("issue 31 item 12: ticks in SI units, with labels that tell neighbouring ticks apart", async () => {
    assert.equal(formatValue(2e-8, "s"), "20 ns")
    assert.equal(formatValue(0.0015, "s"), "1.5 ms")
    assert.equal(formatValue(80_000, "B"), "78.1 KiB")
    assert.equal(formatValue(3 * 1024 ** 3, "B"), "3 GiB")
    assert.equal(formatValue(1.5, "ms"), "1.5 ms")
    assert.equal(formatValue(0.25, "cores"), "0.25 cores")
    assert.equal(formatValue(0, "B"), "0 B")
    assert.equal(formatValue(4000, "s"), "4,000 s")
    // the axis's Vega expression prints what formatValue prints
    for (const [v, unit] of [[2e-8, "s"], [0.0015, "s"], [80_000, "B"], [3 * 1024 ** 3, "B"], [0, "B"], [1.5, "ms"], [0.25, "cores"], [512, "B"], [4000, "s"]] as const) {
      assert.equal(await evaluate(labelExpr(unit), v), formatValue(v, unit).replace(/ cores$/, ""), `${v} ${unit}`)
    }
    // nearly constant bytes (80,000..80,064 B): labels with enough digits to differ
    const t = axisTicks(80_000, 80_064, "B", false)
    const labels = await Promise.all(t.values.map((v) => evaluate(labelExpr("B", t.digits), v)))
    assert.ok(labels.length >= 3, JSON.stringify(labels))
    assert.equal(new Set(labels).size, labels.length, `distinct labels ${JSON.stringify(labels)}`)
    // log byte ticks at powers of two, labelled in KiB / MiB
    const lt = axisTicks(32, 1_048_576, "B", true)
    const logLabels = await Promise.all(lt.values.map((v) => evaluate(labelExpr("B", lt.digits), v)))
    assert.ok(logLabels.includes("1 KiB") && logLabels.includes("1 MiB"), JSON.stringify(logLabels))
  })
})

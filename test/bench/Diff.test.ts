import assert from "node:assert/strict"
import { after, describe, it } from "node:test"
import * as Diff from "../../src/analysis/Diff.ts"
import { rng } from "../../src/analysis/Stats.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"
import { measuredRuns, pool } from "../../bench/diff/measuredRuns.ts"
import slowable from "./fixtures/slowable.ts"

/** A synthetic run: per function (stage/function → seconds of task time), parts and wall. */
const run = (label: string, fns: Record<string, number>, pipeline = "p"): Diff.RunMeasures => {
  const groups: Record<string, Diff.GroupRun> = {}
  const add = (k: string, t: number) => {
    const g = groups[k]
    groups[k] = { taskTime: (g?.taskTime ?? 0) + t, cpuTime: NaN, tasks: (g?.tasks ?? 0) + 1, onPath: (g?.onPath ?? 0) + t, bytes: 0, peakMemory: NaN, wall: NaN, items: NaN }
  }
  let total = 0
  for (const [sf, t] of Object.entries(fns)) {
    const [stage, fn] = sf.split("/")
    add(Diff.groupKey("function", stage!, fn!), t)
    add(Diff.groupKey("stage", stage!), t)
    total += t
  }
  const parts = { tasks: total, transfers: 0.01, driver: 0.05, latency: 0.02, other: 0.03 }
  return { label, pipeline, wall: total + 0.11, parts, groups, peakMemory: 1e8, transfers: 0, transferBytes: 0, transferSeconds: 0 }
}

/** `n` runs with log-normal noise `sigma` around the given times, `slow` multiplying some functions. */
const runs = (seed: number, n: number, sigma: number, slow: Record<string, number> = {}) => {
  const next = rng(seed)
  const z = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())
  const base = { "load/read": 0.2, "work/smooth": 0.3, "work/sharpen": 0.25, "save/write": 0.1 }
  return Array.from({ length: n }, (_, i) =>
    run(`r${i}`, Object.fromEntries(Object.entries(base).map(([k, v]) => [k, v * (slow[k] ?? 1) * Math.exp(sigma * z())]))))
}

const flagged = (d: Diff.DiffResult) => d.groups.filter((g) => g.verdict === "slower" || g.verdict === "faster").map(Diff.groupName).sort()

describe("Diff on synthetic runs", () => {
  it("issue 36: runs of the same distribution flag nothing (50 seeded comparisons of 10 against 10)", () => {
    let any = 0
    for (let s = 0; s < 50; s++) if (flagged(Diff.compare(runs(2 * s + 1, 10, 0.03), runs(2 * s + 2, 10, 0.03))).length > 0) any++
    // BH at 5% bounds the chance that a comparison flags anything at 5%; the minimum effect lowers it further
    assert.ok(any <= 2, `${any} of 50 comparisons flagged something`)
  })

  it("issue 36: a function slowed by 20% is flagged, in that function and its stage only", () => {
    const d = Diff.compare(runs(11, 10, 0.03), runs(12, 10, 0.03, { "work/sharpen": 1.2 }))
    const groups = flagged(d).filter((g) => g !== "(pipeline)")
    assert.deepEqual(groups, ["sharpen (stage work)", "stage work"])
    const sharpen = d.groups.find((g) => g.fn === "sharpen")!
    assert.equal(sharpen.verdict, "slower")
    assert.ok(sharpen.ratio > 1.1 && sharpen.ratio < 1.3 && sharpen.lo > 1, `ratio ${sharpen.ratio} [${sharpen.lo}, ${sharpen.hi}]`)
    assert.equal(d.mode, "runs")
    // sorted by the effect on the wall time: the pipeline first, then the slowed function's groups
    assert.equal(d.groups[0]!.kind, "pipeline")
    assert.deepEqual(d.groups.slice(1, 3).map(Diff.groupName).sort(), ["sharpen (stage work)", "stage work"])
    assert.ok(Diff.hasRegression(d))
  })

  it("issue 36: the parts of the wall-time change add up to the whole", () => {
    const d = Diff.compare(runs(21, 5, 0.05), runs(22, 7, 0.05, { "load/read": 1.5 }))
    const wall = d.parts.find((p) => p.part === "wall")!
    const sum = d.parts.filter((p) => p.part !== "wall").reduce((s, p) => s + p.change, 0)
    assert.ok(Math.abs(sum - wall.change) < 1e-9, `${sum} vs ${wall.change}`)
  })

  it("issue 36: the minimum effect keeps a significant but tiny change from being called one", () => {
    const d = Diff.compare(runs(31, 30, 0.002), runs(32, 30, 0.002, { "work/smooth": 1.02 }))
    const smooth = d.groups.find((g) => g.fn === "smooth")!
    assert.ok(smooth.q < 0.05, "the test itself finds it")
    assert.equal(smooth.verdict, "same", "2% is below the 5% minimum effect")
    assert.equal(Diff.compare(runs(31, 30, 0.002), runs(32, 30, 0.002, { "work/smooth": 1.02 }), { minEffect: 0.01 }).groups.find((g) => g.fn === "smooth")!.verdict, "slower")
  })

  it("issue 36: runs of different pipelines, or with nothing in common, are refused with a sentence", () => {
    assert.throws(() => Diff.compare([run("a", { "x/f": 1 }, "one")], [run("b", { "x/f": 1 }, "two")]), (e: Diff.DiffRefused) =>
      e._tag === "DiffRefused" && /NEW runs pipeline "two" but the baseline runs "one"/.test(e.message))
    assert.throws(() => Diff.compare([run("a", { "x/f": 1 }, "p"), run("a2", { "x/f": 1 }, "q")], [run("b", { "x/f": 1 }, "p")]), /different pipelines \(p, q\)/)
    assert.throws(() => Diff.compare([run("a", { "x/f": 1 }, "")], [run("b", { "y/g": 1 }, "")]), /no stage or function in common/)
    assert.throws(() => Diff.compare([], [run("b", { "y/g": 1 })]), /baseline \(OLD\) holds no run/)
  })

  it("issue 36: one run a side is tested over task durations, indicatively, the pipeline's wall time not at all", () => {
    const a = { ...run("a", { "x/f": 1 }), durations: { [Diff.groupKey("function", "x", "f")]: Float64Array.from({ length: 40 }, (_, i) => 0.01 + i * 1e-5), [Diff.groupKey("stage", "x")]: Float64Array.from({ length: 40 }, (_, i) => 0.01 + i * 1e-5) } }
    const b = { ...run("b", { "x/f": 1.5 }), durations: { [Diff.groupKey("function", "x", "f")]: Float64Array.from({ length: 40 }, (_, i) => 0.015 + i * 1e-5), [Diff.groupKey("stage", "x")]: Float64Array.from({ length: 40 }, (_, i) => 0.015 + i * 1e-5) } }
    const d = Diff.compare([a], [b])
    assert.equal(d.mode, "tasks")
    assert.equal(d.groups[0]!.verdict, "untested")
    // indicative only: one run a side never fails CI
    assert.equal(d.groups.find((g) => g.fn === "f")!.verdict, "slower?")
    assert.ok(!Diff.hasRegression(d))
    assert.match(Diff.verdictLine(d), /^no significant change; indicative only \(one run a side, not a change --fail-on fails on\): 2 slower\? \(/)
    assert.match(d.warnings[0]!, /tested over their task durations/)
  })

  it("issue 36: files of one --profile name are one run; saved bench results are read, and several series refused", () => {
    const g = Diff.runFileGroups(["r/a-TracePlugin-h1.msgpack", "r/a-ResourceMonitor-h1.msgpack", "r/a-StatisticalProfiler-h1.msgpack", "r/a-TracePlugin-h2.msgpack", "r/b-TracePlugin-h1.msgpack", "other.msgpack", "d/small-TracePlugin.msgpack", "d/small-ResourceMonitor.msgpack"])
    assert.deepEqual(g.map((x) => [x.label, x.traces.length, x.samples.length]), [["r/a-*", 3, 1], ["r/b-*", 1, 0], ["other.msgpack", 1, 0], ["d/small-*", 2, 0]])
    const saved = (series: number) => JSON.stringify({ format: "tessera-bench", version: 1, created: "", machine: {}, settings: {}, series: Array.from({ length: series }, (_, i) => ({ name: `s${i}`, file: "f.ts", runs: [run("r", { "x/f": 1 })] })) })
    assert.equal(Diff.benchRuns("one.json", saved(1)).length, 1)
    assert.throws(() => Diff.benchRuns("two.json", saved(2)), /two.json: holds 2 series \(s0, s1\)/)
    assert.throws(() => Diff.benchRuns("x.json", "{\"a\": 1}"), /not a saved tessera bench result/)
    assert.throws(() => Diff.benchRuns("x.json", "{nope"), /not a trace database, nor a saved bench result/)
    assert.ok(Diff.isBenchJson(new TextEncoder().encode("  {\"format\"")))
    assert.ok(!Diff.isBenchJson(Uint8Array.of(0, 0, 0, 0, 0, 0, 1, 2)))
  })
})

describe("Diff on real runs (in-process, one warm pool)", () => {
  const rt = pool(2)
  after(() => rt.dispose())

  it("issue 36: a test kernel slowed by 20% is flagged in that function and its stage only (CPU time, 8 runs a side)", async () => {
    const build = () => {
      const p = slowable()
      return { program: p.run(), pipeline: p }
    }
    const [old, neu] = await measuredRuns(rt, [{ env: { TESSERA_TEST_SLOWDOWN: "" }, build }, { env: { TESSERA_TEST_SLOWDOWN: "sharpen:1.2" }, build }], 8)
    const d = Diff.compare(old!, neu!, { measure: "cpu" })
    const report = Diff.formatDiff(d)
    const groups = flagged(d).filter((g) => g !== "(pipeline)")
    assert.deepEqual(groups, ["sharpen (stage refine)", "stage refine"], report)
    // the parts of a real run's wall-time change add up too
    const wall = d.parts.find((p) => p.part === "wall")!
    assert.ok(Math.abs(d.parts.filter((p) => p.part !== "wall").reduce((s, p) => s + p.change, 0) - wall.change) < 1e-9)
    for (const r of [...old!, ...neu!]) {
      const p = r.parts!
      assert.ok(Math.abs(p.tasks + p.transfers + p.driver + p.latency + p.other - r.wall) < 1e-9, "a run's parts add up to its wall time")
      // stage by stage: the driver's segments are on the path; the stages' hand-overs and the driver's make its latency
      const s = r.path!
      assert.ok(p.driver > 0 && s.stages.length > 0)
      assert.ok(Math.abs(s.stages.reduce((t, x) => t + x.handOver, 0) + s.driverHandOver - p.latency) < 1e-9)
      assert.ok(Math.abs(s.stages.reduce((t, x) => t + x.tasks + x.transfers, 0) - p.tasks - p.transfers) < 1e-9)
    }
    // and so do the path's rows, stage by stage
    const rows = d.path.filter((r) => r.step !== "wall")
    assert.ok(rows.some((r) => r.step === "stage" && r.stage === "refine"), report)
    assert.ok(Math.abs(rows.reduce((t, r) => t + r.change, 0) - wall.change) < 1e-9, report)
  })

  it("issue 36: diff of two demo runs of the same code flags nothing significant", async () => {
    const build = () => {
      const t = Tutorial5.make({ samples: 60_000, chunkRows: 5_000, log: () => {} })
      return { program: Tutorial5.run({ samples: 60_000, chunkRows: 5_000, log: () => {} }, t), pipeline: t.pipeline }
    }
    const [a, b] = await measuredRuns(rt, [{ build }, { build }], 1)
    const d = Diff.compare(a!, b!)
    assert.equal(d.pipeline, "tutorial5")
    assert.equal(d.mode, "tasks")
    // nothing significant (one run a side calls nothing a change: the calibration's same-code pairs flagged too often)
    assert.deepEqual(flagged(d), [], Diff.formatDiff(d))
    assert.ok(!Diff.hasRegression(d))
    assert.equal(d.groups[0]!.verdict, "untested", "the pipeline's wall time, one value a side")
    // every stage of the pipeline was compared
    for (const s of ["Normalize.transform", "KMeans.fitPredict", "SOM.fitPredict"]) assert.ok(d.groups.some((g) => g.kind === "stage" && g.stage === s), s)
  })
})

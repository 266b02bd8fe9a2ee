/**
 * `tessera diff`'s critical path of A against B, stage by stage (issue 36): on generated
 * traces with known ground truth (src/testing), a run's rows (each stage's tasks,
 * transfers and hand-overs on the path, the driver, the rest) add up to its wall time,
 * the stages' task seconds are the generator's longest chain's length, and cut by stage
 * the path's tasks' durations and the gaps before them as the generator scheduled them; the rows' changes add up
 * to the change of the wall time, and a trace compared with itself changes nothing.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { criticalPathSteps } from "../../src/analysis/CriticalPath.ts"
import * as Diff from "../../src/analysis/Diff.ts"
import { type GeneratedTrace, tablesOf, traceArb } from "../../src/testing/index.ts"

const close = (a: number, b: number, eps = 1e-9) => Math.abs(a - b) <= eps * Math.max(1, Math.abs(a), Math.abs(b))
const runs = { numRuns: 25 }
const measure = (t: GeneratedTrace, label: string) => Diff.measureRun(tablesOf(t), label)
const sum = (xs: ReadonlyArray<number>) => xs.reduce((s, x) => s + x, 0)
const rowsBut = (d: Diff.DiffResult, f: (r: Diff.PathRowDiff) => number) => sum(d.path.filter((r) => r.step !== "wall").map(f))
const wallRow = (d: Diff.DiffResult) => d.path.find((r) => r.step === "wall")!

describe("Diff: the critical path stage by stage", () => {
  it("issue 36: a run's path by stage is the generator's longest chain, cut by stage, with the gaps between its tasks as hand-overs", () => {
    fc.assert(fc.property(traceArb({ format: "tessera", maxHosts: 2 }), (t) => {
      const tables = tablesOf(t)
      const m = Diff.measureRun(tables, "run")
      const p = m.path!
      const parts = m.parts!
      // the stages' rows add up to the run's parts, and with the driver and the rest to its wall time
      assert.ok(close(sum(p.stages.map((s) => s.tasks)), parts.tasks), "stages' tasks = the path's tasks")
      assert.ok(close(sum(p.stages.map((s) => s.transfers)), parts.transfers))
      assert.ok(close(sum(p.stages.map((s) => s.handOver)) + p.driverHandOver, parts.latency), "hand-overs = the path's latency")
      const all = sum(p.stages.map((s) => s.tasks + s.transfers + s.handOver)) + p.driverHandOver + parts.driver + parts.other
      assert.ok(close(all, m.wall, 1e-6), `${all} vs ${m.wall}`)
      // against the ground truth (computed from the schedule, not the events)
      assert.ok(close(m.wall, t.truth.wall, 1e-6), `wall ${m.wall} vs ${t.truth.wall}`)
      assert.ok(close(sum(p.stages.map((s) => s.tasks + s.transfers)), t.truth.criticalPath, 1e-6), "the path's task seconds = the longest chain")
      // stage by stage against the schedule: the path's tasks (the chain the analysis chose:
      // of equal length, it may be another than the truth's), their durations and the gaps
      // before each (the first has none: no driver events in a generated trace), as scheduled
      const keyCol = tables.tasks.getChild("key")!
      const byKey = new Map(t.tasks.map((x) => [x.key, x]))
      const chain = criticalPathSteps(tables).steps.flatMap((s) => (s._tag === "Task" ? [byKey.get(String(keyCol.get(s.row)))!] : []))
      const expected = new Map<string, { tasks: number; gaps: number }>()
      chain.forEach((x, i) => {
        const e = expected.get(x.stage) ?? { tasks: 0, gaps: 0 }
        expected.set(x.stage, { tasks: e.tasks + x.duration, gaps: e.gaps + (i === 0 ? 0 : Math.max(0, x.start - chain[i - 1]!.end)) })
      })
      assert.deepEqual(p.stages.map((s) => s.stage), [...expected.keys()], "the stages in the order the path meets them")
      for (const s of p.stages) {
        assert.ok(close(s.tasks + s.transfers, expected.get(s.stage)!.tasks, 1e-6), `stage ${s.stage}: tasks ${s.tasks}`)
        assert.ok(close(s.handOver, expected.get(s.stage)!.gaps, 1e-6), `stage ${s.stage}: hand-over ${s.handOver} vs ${expected.get(s.stage)!.gaps}`)
      }
      for (let i = 1; i < p.stages.length; i++) assert.ok(p.stages[i]!.at >= p.stages[i - 1]!.at, "stages in path order")
    }), runs)
  })

  it("issue 36: the rows' changes add up to the wall time's change, for any two sides of generated runs", () => {
    const side = fc.array(traceArb({ format: "tessera", maxTasks: 25 }), { minLength: 1, maxLength: 4 })
    fc.assert(fc.property(side, side, (a, b) => {
      const d = Diff.compare(a.map((t, i) => measure(t, `a${i}`)), b.map((t, i) => measure(t, `b${i}`)), { resamples: 50 })
      assert.ok(d.path.length > 0)
      const wall = wallRow(d)
      assert.ok(close(rowsBut(d, (r) => r.change), wall.change, 1e-6), `${rowsBut(d, (r) => r.change)} vs ${wall.change}`)
      assert.ok(close(rowsBut(d, (r) => r.old), wall.old, 1e-6) && close(rowsBut(d, (r) => r.new), wall.new, 1e-6), "each side's rows add up to its wall time")
      for (const r of d.path) assert.ok(close(r.change, r.new - r.old))
      // the wall row is the parts table's wall; the driver and the rest are its rows too
      const part = (k: string) => d.parts.find((p) => p.part === k)!
      assert.equal(wall.change, part("wall").change)
      assert.equal(d.path.find((r) => r.step === "driver" && r.part === "segments")!.change, part("driver").change)
      assert.equal(d.path.find((r) => r.step === "off path")!.change, part("other").change)
      // every stage on either side's path is a row
      const onPaths = new Set([...a, ...b].flatMap((t) => measure(t, "x").path!.stages.map((s) => s.stage)))
      assert.deepEqual(new Set(d.path.filter((r) => r.step === "stage").map((r) => r.stage)), onPaths)
    }), { numRuns: 15 })
  })

  it("issue 36: a trace compared with itself shows no change on any row", () => {
    fc.assert(fc.property(traceArb({ format: "tessera" }), fc.integer({ min: 1, max: 3 }), (t, n) => {
      const m = measure(t, "run")
      const d = Diff.compare(Array.from({ length: n }, () => m), Array.from({ length: n }, () => m), { resamples: 50 })
      assert.ok(d.path.length >= 4, "a stage, the driver, the rest, the wall")
      for (const r of d.path) assert.equal(r.change, 0, `${r.step} ${r.stage} ${r.part}`)
    }), runs)
  })

  it("issue 36: the text and the JSON show the path stage by stage; runs without one (older saved results) show none", () => {
    const [a, b] = fc.sample(traceArb({ format: "tessera", minTasks: 12 }), { numRuns: 2, seed: 36 })
    const d = Diff.compare([measure(a!, "a")], [measure(b!, "b")])
    const text = Diff.formatDiff(d)
    assert.match(text, /The critical path stage by stage, in path order \(means over runs; the rows' changes add up to the wall's\):\nStep: part +OLD \(s\) +NEW \(s\) +Change \(s\)\nstage /)
    for (const r of d.path.filter((r) => r.step === "stage")) assert.match(text, new RegExp(`\\nstage ${r.stage}: ${r.part} `))
    assert.match(text, /\ndriver: segments +[\d.]+ +[\d.]+ +[+-][\d.]+\noff path: other .*\nwall time /)
    const json = Diff.diffJson(d) as { readonly path: ReadonlyArray<Record<string, unknown>> }
    assert.deepEqual(json.path.map((r) => Object.keys(r).sort()), d.path.map(() => ["change", "new", "old", "part", "stage", "step"]))
    assert.equal(json.path.at(-1)!.step, "wall")
    // a saved result without "path" (saved before it existed): no rows, nothing refused
    const { path: _p, ...older } = measure(a!, "old")
    const d2 = Diff.compare([older], [measure(b!, "b")])
    assert.deepEqual(d2.path, [])
    assert.doesNotMatch(Diff.formatDiff(d2), /stage by stage/)
  })

  it("issue 36: a saved result's malformed path is refused with a sentence naming the file and the run", () => {
    const [a] = fc.sample(traceArb({ format: "tessera" }), { numRuns: 1, seed: 7 })
    const m = measure(a!, "r")
    const { durations: _d, cpuDurations: _c, ...run } = m
    const saved = (runs: ReadonlyArray<unknown>) => JSON.stringify({ format: "tessera-bench", version: 1, created: "", machine: {}, settings: {}, series: [{ name: "s", file: "f.ts", runs }] })
    const back = Diff.benchRuns("ok.json", saved([run]))
    assert.deepEqual(back[0]!.path, m.path)
    assert.throws(() => Diff.benchRuns("bad.json", saved([run, { ...run, path: { stages: [{ stage: "x", at: "0" }] } }])), (e: Diff.DiffRefused) =>
      e._tag === "DiffRefused" && /^bad\.json: run 2's "path" is not a critical path by stage/.test(e.message))
  })
})

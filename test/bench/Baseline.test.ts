import assert from "node:assert/strict"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { writeReportPromise } from "../../src/report/Report.ts"
import * as Diff from "../../src/analysis/Diff.ts"
import { type FlameDiffNode, topSelfChanges } from "../../src/analysis/FlameDiff.ts"
import { baselineHtml, flameDiffSvg } from "../../src/report/Baseline.ts"

const evil = `<script>alert("x")</script>`
const node = (name: string, oldShare: number, newShare: number, children: Array<FlameDiffNode> = [], self = 0): FlameDiffNode => ({
  name,
  location: `${name}.ts:1:1`,
  oldShare,
  newShare,
  oldSelf: self === 0 ? 0 : oldShare,
  newSelf: self === 0 ? 0 : newShare,
  children
})

const run = (label: string, t: number): Diff.RunMeasures => {
  const g: Diff.GroupRun = { taskTime: t, cpuTime: NaN, tasks: 4, onPath: t, bytes: 0, peakMemory: NaN, wall: NaN, items: NaN }
  return {
    label,
    pipeline: evil,
    wall: t + 0.1,
    parts: { tasks: t, transfers: 0, driver: 0.05, latency: 0.03, other: 0.02 },
    path: { stages: [{ stage: evil, at: 0, tasks: t, transfers: 0, handOver: 0.03 }], driverHandOver: 0 },
    groups: { [Diff.groupKey("stage", evil)]: g, [Diff.groupKey("function", evil, evil)]: g },
    peakMemory: 1e8,
    transfers: 0,
    transferBytes: 0,
    transferSeconds: 0
  }
}

describe("Baseline section", () => {
  it("issue 36: strings from traces are escaped in the section and its flame graph (data, never markup)", () => {
    const d = Diff.compare([1, 2, 3, 4, 5].map((i) => run(`o${i}`, 1 + i / 100)), [1, 2, 3, 4, 5].map((i) => run(`n${i}`, 1.5 + i / 100)))
    const tree = node("all", 1, 1, [node(evil, 0.5, 0.8, [node("leaf", 0.5, 0.8, [], 1)]), node("other", 0.5, 0.2, [], 1)])
    const html = baselineHtml(d, tree)
    assert.ok(!html.includes("<script>"), "no raw markup from the trace")
    assert.ok(html.includes("&lt;script&gt;"))
    assert.match(html, /<tr class="slower"><td>&lt;script&gt;/)
    // the path stage by stage: the hostile stage name as text, in its own rows
    assert.match(html, /<tr><td>stage<\/td><td>&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt;<\/td><td>tasks<\/td>/)
    const svg = flameDiffSvg(tree, 500)
    assert.ok(!svg.includes("<script>"))
    // widths are NEW's share; the grown box is red, the shrunk one blue
    assert.match(svg, /<rect x="0\.0" y="16" width="400\.0" height="15" fill="rgb\(255,/)
    assert.match(svg, /<rect x="400\.0" y="16" width="100\.0" height="15" fill="rgb\(\d+,\d+,255\)"/)
  })

  it("issue 36: the frames whose self share moved most come first", () => {
    const tree = node("all", 1, 1, [node("fn", 1, 1, [node("a", 0.6, 0.3, [], 1), node("b", 0.3, 0.65, [], 1), node("c", 0.1, 0.05, [], 1)])])
    const top = topSelfChanges(tree, 2)
    assert.deepEqual(top.map((t) => t.name), ["b", "a"])
    assert.ok(Math.abs(top[0]!.newSelf - 0.65) < 1e-12)
  })
})

describe("tessera report --baseline", () => {
  const dir = mkdtempSync(join(tmpdir(), "tessera-baseline-"))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const dasf = ["small-TracePlugin.msgpack", "small-ResourceMonitor.msgpack"].map((f) => new URL(`../fixtures/dasf-small/${f}`, import.meta.url).pathname)

  it("issue 36: the report of a run against itself holds the comparison section, nothing called a change", async () => {
    const out = join(dir, "r.html")
    await writeReportPromise(dasf, out, { baseline: dasf })
    const html = readFileSync(out, "utf8")
    assert.match(html, /<section id="baseline"><h2>Against the baseline<\/h2>/)
    assert.match(html, /no significant change/)
    assert.match(html, /<h3>Wall time of the critical path, explained<\/h3>/)
    // the path stage by stage: one row per row of the comparison, each with no change
    const side = await Diff.loadSidePromise(dasf)
    const d = Diff.compare(side, side)
    assert.ok(d.path.length > 2, "stages, driver, off path and wall rows")
    const section = html.slice(html.indexOf("<h3>The critical path of OLD against NEW, stage by stage</h3>"), html.indexOf("<h3>Memory and transfers</h3>"))
    const rows = [...section.matchAll(/<tr( class="total")?><td>/g)]
    assert.equal(rows.length, d.path.length)
    for (const r of d.path) assert.equal(r.change, 0)
    assert.equal(rows.filter((r) => r[1] !== undefined).length, 1, "one total row: the wall time")
  })

  it("issue 36: a baseline with nothing in common is refused with a sentence naming --baseline", async () => {
    const saved = join(dir, "other.json")
    writeFileSync(saved, JSON.stringify({ format: "tessera-bench", version: 1, created: "", machine: {}, settings: {}, series: [{ name: "s", file: "f.ts", runs: [run("r", 1)] }] }))
    await assert.rejects(writeReportPromise(dasf, join(dir, "x.html"), { baseline: [saved] }), (e: Error) =>
      /^--baseline: NEW and the baseline have no stage or function in common/.test(e.message))
  })
})

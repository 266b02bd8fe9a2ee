import assert from "node:assert/strict"
import { readFile } from "node:fs/promises"
import { mkdtemp } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { visualize, visualizeSpec } from "../../src/report/visualize.ts"

const profiler = {
  results: [
    { key: "load-0", task: "load", startTime: 100, endTime: 100.5, workerId: 0 },
    { key: "load-1", task: "load", startTime: 100.1, endTime: 100.7, workerId: 1 },
    { key: "sum-0", task: "sum", startTime: 100.7, endTime: 101, workerId: 0 }
  ]
}
const resources = { results: [{ time: 100, mem: 50e6, cpu: 10 }, { time: 100.5, mem: 80e6, cpu: 190 }, { time: 101, mem: 60e6, cpu: 80 }] }
const cache = { metricName: "nbytes", results: [{ key: "load-0", task: "load", metric: 800, cacheTime: 100.5, freeTime: 101 }] }

describe("visualize", () => {
  it("stacks one time-aligned plot per profiler, all on seconds since the earliest time", () => {
    const spec = visualizeSpec([profiler, resources, cache]) as any
    assert.equal(spec.vconcat.length, 3)
    assert.deepEqual(spec.vconcat[0].data.values[0], { key: "load-0", task: "load", worker: 0, start: 0, end: 0.5, duration: 0.5 })
    const cacheRows = spec.vconcat[2].data.values
    assert.deepEqual(cacheRows.map((r: any) => [r.t, r.total]), [[0, 0], [0.5, 800], [1, 0]])
    for (const p of spec.vconcat) {
      const x = p.encoding?.x ?? p.layer[0].encoding.x
      assert.deepEqual(x.scale.domain, [0, 1])
    }
  })

  it("writes an SVG and a self-contained HTML page", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-vis-"))
    const files = await visualize([profiler, resources, cache, { results: [] }], { html: join(dir, "p.html"), svg: join(dir, "p.svg") })
    assert.equal(files.length, 2)
    const svg = await readFile(join(dir, "p.svg"), "utf8")
    assert.ok(svg.startsWith("<svg") && svg.includes("Profile Results") && svg.includes("Cache"))
    const html = await readFile(join(dir, "p.html"), "utf8")
    assert.ok(!/src=["']?https?:/.test(html))
  })
})

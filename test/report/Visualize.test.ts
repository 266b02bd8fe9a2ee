import assert from "node:assert/strict"
import { readFile } from "node:fs/promises"
import { mkdtemp } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { visualize, visualizeSpec } from "../../src/report/Visualize.ts"

const profiler = {
  results: [
    { key: "load-0", task: "load", startTime: 100, endTime: 100.5, workerId: 0 },
    { key: "load-1", task: "load", startTime: 100.1, endTime: 100.7, workerId: 1 },
    { key: "sum-0", task: "sum", startTime: 100.7, endTime: 101, workerId: 0 }
  ]
}
// ResourceProfiler records mem in MB
const resources = { results: [{ time: 100, mem: 50, cpu: 10 }, { time: 100.5, mem: 80, cpu: 190 }, { time: 101, mem: 60, cpu: 80 }] }
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

  it("labels memory in MB, scales the CPU axis to the data but never past cores x 100%, and keys both lines", () => {
    const layersOf = (spec: any) => spec.vconcat[0].layer
    const spec = visualizeSpec([resources], 800, 2) as any
    const [cpu, mem] = layersOf(spec)
    assert.equal(mem.encoding.y.title, "memory (MB)")
    assert.equal(mem.encoding.y.axis.orient, "right")
    assert.deepEqual(spec.vconcat[0].data.values.map((r: any) => r.mem), [50, 80, 60])
    assert.deepEqual(cpu.encoding.y.scale.domain, [0, 190])
    const idle = { results: [{ time: 0, mem: 50, cpu: 3 }, { time: 1, mem: 50, cpu: 5 }] }
    assert.deepEqual(layersOf(visualizeSpec([idle], 800, 2))[0].encoding.y.scale.domain, [0, 100])
    const wild = { results: [{ time: 0, mem: 50, cpu: 30_000 }, { time: 1, mem: 50, cpu: 150 }] }
    assert.deepEqual(layersOf(visualizeSpec([wild], 800, 2))[0].encoding.y.scale.domain, [0, 200])
    assert.deepEqual([cpu.encoding.color.datum, mem.encoding.color.datum], ["% CPU", "memory (MB)"])
  })

  it("draws one cache line per function, each from 0 to the end of the time axis, and colours tasks by function", () => {
    const two = {
      metricName: "nbytes",
      results: [
        { key: "load-0", task: "load", metric: 800, cacheTime: 100.5, freeTime: 101 },
        { key: "load-1", task: "load", metric: 800, cacheTime: 100.7, freeTime: 101 },
        { key: "sum-0", task: "sum", metric: 8, cacheTime: 101, freeTime: 101.5 }
      ]
    }
    const spec = visualizeSpec([profiler, two]) as any
    assert.equal(spec.vconcat[0].encoding.color.title, "function")
    const cacheSpec = spec.vconcat[1]
    assert.equal(cacheSpec.encoding.color.field, "task")
    assert.equal(cacheSpec.encoding.y.title, "cache size (nbytes)")
    const series = (task: string) => cacheSpec.data.values.filter((r: any) => r.task === task).map((r: any) => [Math.round(r.t * 1e6) / 1e6, r.total])
    assert.deepEqual(series("load"), [[0, 0], [0.5, 800], [0.7, 1600], [1, 0], [1.5, 0]])
    assert.deepEqual(series("sum"), [[0, 0], [1, 8], [1.5, 0]])
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

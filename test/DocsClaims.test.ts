/**
 * What the docs say about a run's numbers, checked against a run. Each test reads the
 * sentence the docs hold and the behaviour it describes (issue 31 item 4: docs that
 * said NULL where the table holds 0).
 */
import assert from "node:assert/strict"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect } from "effect"
import { loadPromise } from "../src/analysis/Load.ts"
import * as Query from "../src/analysis/Query.ts"
import * as Executor from "../src/engine/Executor.ts"
import * as ResourceMonitor from "../src/profiler/ResourceMonitor.ts"

const doc = (name: string): string => readFileSync(new URL(`../docs/${name}`, import.meta.url), "utf8")
/** The text of a `## title` section, up to the next heading of that level. */
const section = (text: string, title: string): string => {
  const start = text.indexOf(`\n## ${title}\n`)
  assert.ok(start >= 0, `no section "${title}"`)
  const end = text.indexOf("\n## ", start + 1)
  return text.slice(start, end < 0 ? undefined : end)
}
const dir = mkdtempSync(join(tmpdir(), "tessera-docs-claims-"))
after(() => rmSync(dir, { recursive: true, force: true }))

describe("docs say what runs do", () => {
  it("issue 31 item 4: docs/queries.md says gpu_utilization is 0 without a GPU, and a run without one writes 0, not NULL", async () => {
    const row = doc("queries.md").split("\n").find((l) => l.startsWith("| `resources` |"))
    assert.ok(row !== undefined, "docs/queries.md has a row for the resources table")
    assert.match(row, /`gpu_utilization` \(%\), `gpu_memory_used` \(bytes\) — 0 where Tessera's ResourceMonitor saw no GPU/)
    assert.doesNotMatch(row, /NULL without a GPU/)

    const file = join(dir, "r-ResourceMonitor-h.msgpack")
    await Effect.runPromise(Effect.sleep("50 millis").pipe(Effect.provide(ResourceMonitor.layer({ file, interval: 10, host: "h", gpu: null }))))
    const tables = await loadPromise([file])
    const t = await Query.sqlPromise(
      tables,
      "SELECT count(*)::INT AS n, count(gpu_utilization)::INT AS util, count(gpu_memory_used)::INT AS mem, max(gpu_utilization) AS top, max(gpu_memory_used) AS used FROM resources"
    )
    const r = t.get(0)!.toJSON() as { n: number; util: number; mem: number; top: number; used: number }
    assert.ok(r.n >= 2, `${r.n} samples`)
    assert.deepEqual({ util: r.util, mem: r.mem, top: Number(r.top), used: Number(r.used) }, { util: r.n, mem: r.n, top: 0, used: 0 })

    // and NULL where the trace has no GPU fields: DASF's own ResourceMonitor on a host without one
    const dasf = await loadPromise([new URL("fixtures/dasf-small/small-ResourceMonitor.msgpack", import.meta.url).pathname])
    const d = (await Query.sqlPromise(dasf, "SELECT count(*)::INT AS n, count(gpu_utilization)::INT AS util FROM resources")).get(0)!.toJSON()
    assert.ok(Number(d.n) > 0)
    assert.equal(Number(d.util), 0)
  })

  it("issue 31 item 4: docs/engine.md's Leaves out lists none of the executors it documents, which exist", () => {
    const engine = doc("engine.md")
    const leaves = section(engine, "Leaves out")
    for (const [layer, word] of [["layerGpu", /GPU/], ["layerCluster", /cluster/i]] as const) {
      assert.equal(typeof Executor[layer], "function", `Executor.${layer} exists`)
      assert.ok(engine.includes(`\`${layer}(`), `docs/engine.md documents ${layer}`)
      assert.doesNotMatch(leaves, word, `docs/engine.md's Leaves out still names what ${layer} does`)
    }
  })

  it("issue 31 item 4: docs/profiler.md says cluster workers sample themselves (test/engine/ClusterHosts.test.ts runs it), not that it is unwired", () => {
    const profiler = doc("profiler.md")
    assert.doesNotMatch(profiler, /not wired/)
    assert.match(profiler, /On a cluster\*\* each worker process samples its own threads/)
  })
})

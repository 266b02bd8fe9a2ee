/**
 * Issue 34: a hook's shorter flush (`SamplingRequest.flushSeconds`) and the sampler
 * several hooks share (`Sampling.share` via `Hooks.collect`) on a real worker pool: while
 * a compute is held open by a gated task, both hooks receive the same records of the
 * CPU work before it (the default flush would hand them over only after 10 s or at the
 * end); the records carry the smallest interval asked. No timing is asserted: the test
 * waits (up to a minute) for what must come.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import type * as Sampling from "../../src/engine/Sampling.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-flush-"))
after(() => rmSync(dir, { recursive: true, force: true }))

const spinModule = new URL("../fixtures/kernels/spin.ts", import.meta.url).href
const gateModule = new URL("../fixtures/kernels/gate.ts", import.meta.url).href

describe("Sampling: a shorter flush, shared between hooks", () => {
  it("while a gated compute runs, both hooks get the same records of the work before the gate, at the smallest interval", { timeout: 300_000 }, async () => {
    const a: Array<Sampling.SampleRecord> = []
    const b: Array<Sampling.SampleRecord> = []
    const short: Hooks.Callbacks = { sampling: { interval: 5, flushSeconds: 0.25 }, samples: (r) => void a.push(r) }
    const plain: Hooks.Callbacks = { sampling: { interval: 2 }, samples: (r) => void b.push(r) }
    const gate = join(dir, "gate")
    const specs: Array<TaskGraph.TaskSpec> = Array.from({ length: 4 }, (_, i) => ({ key: `spin-${i}`, kernel: Kernel.ref(spinModule, "task"), args: [2_000_000] }))
    specs.push({ key: "gate", kernel: Kernel.ref(gateModule, "waitForFile"), args: [gate, TaskGraph.refs(specs.map((s) => s.key))] })
    let finished = false
    const running = Effect.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs), { keys: ["gate"] }).pipe(
      Hooks.provide(short, plain),
      Effect.provide(Executor.layerWorkers({ workers: 2 }))
    )).finally(() => (finished = true))
    try {
      // the spin tasks' samples arrive while the gate holds the compute
      const until = Date.now() + 60_000
      const spun = () => a.some((r) => Array.from(r.samples).some((id) => r.nodes.find((n) => n.id === id)?.functionName === "spin"))
      while (!spun() && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
      assert.ok(spun(), `no record with spin's samples while the compute ran (${a.length} records)`)
      assert.equal(finished, false, "the compute still runs")
    } finally {
      writeFileSync(gate, "")
      await running
    }
    assert.ok(a.length > 0)
    assert.equal(a.length, b.length, "every record to each hook")
    a.forEach((r, i) => assert.equal(r, b[i], "the same record"))
    assert.ok(a.every((r) => r.interval === 0.002), "the smallest interval asked")
  })
})

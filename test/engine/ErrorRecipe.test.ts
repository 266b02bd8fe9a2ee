/**
 * The engine's error recipe at its edges: the exported guards (`isComputeError`,
 * `isGraphError`), the GPU worker's device-memory error built by its constructor (one
 * `GpuOutOfMemory` left: EngineError's), and a worker reply that cannot be deserialized
 * (`messageerror`) failing the compute with a typed error, the pool still usable.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { Effect } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import * as EngineError from "../../src/engine/EngineError.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Gpu from "../../src/engine/Gpu.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as State from "../../src/engine/State.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { makeJob } from "../../src/engine/internal/job.ts"
import { Pool } from "../../src/engine/internal/pool.ts"
import { k } from "./graphs.ts"

const gate = Kernel.ref(new URL("../fixtures/kernels/gate.ts", import.meta.url).href, "waitForFile")

describe("ErrorRecipe", () => {
  it("issue 37: isComputeError and isGraphError tell the engine's two errors from anything else", async () => {
    const bad = TaskGraph.makeUnsafe([{ key: "bad", kernel: k("boom"), args: ["no"] }])
    const exit = await Effect.runPromiseExit(Engine.compute(bad).pipe(Effect.provide(Executor.layerSync)))
    assert.ok(exit._tag === "Failure")
    const f = exit.cause.reasons.find((r) => r._tag === "Fail")
    const e = f?._tag === "Fail" ? f.error : undefined
    assert.ok(EngineError.isComputeError(e) && e.reason._tag === "KernelFailed", "a kernel's failure is a ComputeError")
    assert.ok(!EngineError.isGraphError(e))
    const cycle = TaskGraph.make([
      { key: "a", kernel: k("mix"), args: [0, TaskGraph.refs(["b"])] },
      { key: "b", kernel: k("mix"), args: [0, TaskGraph.refs(["a"])] }
    ])
    const g = await Effect.runPromise(Effect.flip(cycle))
    assert.ok(EngineError.isGraphError(g) && !EngineError.isComputeError(g))
    for (const x of [null, undefined, 3, "ComputeError", new Error("x"), { _tag: "Other" }]) {
      assert.ok(!EngineError.isComputeError(x) && !EngineError.isGraphError(x), String(x))
    }
  })

  it("issue 37: a GPU worker's device-memory error is tagged and its message comes from its constructor", () => {
    const e = Gpu.deviceMemoryExceeded(1024, 4096, 4608)
    assert.equal(e._tag, "DeviceMemoryExceeded")
    assert.ok(e instanceof Gpu.DeviceMemoryExceeded && e instanceof Error)
    assert.equal(e.message, "GPU out of memory: asked for 1024 bytes with 4096 held of a 4608-byte limit")
    assert.deepEqual([e.bytes, e.held, e.limit], [1024, 4096, 4608])
    assert.match(Gpu.deviceMemoryExceeded(0, 1, 2, "device refused").message, /\(device refused\)$/)
    assert.ok(!("GpuOutOfMemory" in Gpu), "one GpuOutOfMemory: EngineError's")
  })

  it("issue 37: a worker reply that cannot be deserialized (messageerror) fails the compute with WorkerCrashed; the pool goes on", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-messageerror-"))
    const pool = new Pool({ workers: 1 })
    try {
      const open = join(dir, "open")
      const g = TaskGraph.makeUnsafe([{ key: "held", kernel: gate, args: [open, 1] }])
      const job = makeJob(g, State.init(g, Int32Array.of(0)), [])
      const settled = new Promise<EngineError.ComputeError | null>((resolve) => pool.start(job, (e) => resolve(e)))
      // the batch is out (the worker waits on the gate): its reply is "lost"
      pool.slots[0]!.worker.emit("messageerror", new Error("could not deserialize"))
      const e = await settled
      assert.ok(e !== null && e.reason._tag === "WorkerCrashed", `settled with ${e?.reason._tag}`)
      assert.equal((e.reason as EngineError.WorkerCrashed).key, "held")
      assert.match(e.message, /messageerror: could not deserialize/)
      writeFileSync(open, "")
      // the replacement worker computes the next one
      const g2 = TaskGraph.makeUnsafe([{ key: "x", kernel: k("mix"), args: [7, []] }])
      const job2 = makeJob(g2, State.init(g2, Int32Array.of(0)), [])
      const e2 = await new Promise<EngineError.ComputeError | null>((resolve) => pool.start(job2, (x) => resolve(x)))
      assert.equal(e2, null)
      assert.equal(job2.state.cache[0], 7)
    } finally {
      await pool.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

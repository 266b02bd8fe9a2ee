/**
 * A cluster run's failures as the worker-thread pool reports them (issue 31 items 3 and
 * 9 on `local:2`): a kernel's output checked on the worker (BadOutput naming the task),
 * a kernel that throws leaves its erred task in the trace (the driver's records and the
 * workers' plugins) and names the kernel's file:line; an argument the wire cannot carry
 * is ArgumentNotSendable; the driver's rows are named as the worker plugins name them.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { Effect, Exit, ManagedRuntime } from "effect"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import type * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"

type Rt = ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never>

const outputs = new URL("../fixtures/kernels/outputs.ts", import.meta.url).href
const rows = (n: number, c: number, from: number) => Chunk.make("float64", [n, c], Float64Array.from({ length: n * c }, (_, i) => from + i))
const X = CA.fromChunks("float64", [rows(4, 2, 0), rows(4, 2, 100), rows(2, 2, 200)])

const reasonOf = (exit: Exit.Exit<unknown, unknown>): EngineError.ComputeError["reason"] => {
  assert.ok(Exit.isFailure(exit), "the compute fails")
  const e = exit.cause.reasons.find((r) => r._tag === "Fail")
  assert.ok(e !== undefined && e._tag === "Fail", `a typed failure, not a defect: ${String(exit.cause)}`)
  return (e.error as EngineError.ComputeError).reason
}

describe("failures on a cluster (local:2)", () => {
  let rt: Rt
  let dir: string
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tessera-cluster-failures-"))
    rt = ManagedRuntime.make(Cluster.layerLocal({
      local: 2,
      preload: [new URL("../../src/profiler/WorkerPlugins.ts", import.meta.url).href]
    }))
    await rt.runPromise(Effect.void)
  })
  after(async () => {
    await rt.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it("issue 31 item 3: a kernel returning half the rows fails the run with BadOutput naming the task key", async () => {
    const half = CA.mapBlocks(X, { name: "half", kernel: Kernel.ref(outputs, "halfRows"), dtype: "float64", columns: 2, stage: "halving" })
    const exit = await rt.runPromiseExit(CA.compute(half))
    const reason = reasonOf(exit)
    assert.equal(reason._tag, "BadOutput", reason.message)
    const r = reason as EngineError.BadOutput
    assert.match(r.key, /half/)
    assert.ok(reason.message.includes(`task "${r.key}"`), reason.message)
    assert.equal(r.stage, "halving")
    assert.match(r.declared, /float64 \[\d, 2\]/)
    assert.match(r.actual, /float64 \[\d, 2\]/)
    // a number instead of a chunk: BadOutput too, not "Interrupted"
    const num = CA.mapBlocks(X, { name: "num", kernel: Kernel.ref(outputs, "aNumber"), dtype: "float64", columns: 2 })
    assert.equal(reasonOf(await rt.runPromiseExit(CA.compute(num)))._tag, "BadOutput")
    // the cluster still runs a correct stage after it
    const ok = await rt.runPromise(CA.compute(CA.mapBlocks(X, { name: "double", kernel: Kernel.ref(outputs, "double"), dtype: "float64", columns: 2 })))
    assert.deepEqual([...ok.shape], [10, 2])
  })

  it("issue 31 item 9: cluster: a kernel that throws leaves its erred task in the trace (driver records), and KernelFailed names the kernel's file:line", async () => {
    const db = MemoryDatabase.make()
    const boom = CA.mapBlocks(X, { name: "boom", kernel: Kernel.ref(outputs, "explode"), dtype: "float64", columns: 2, stage: "exploding" })
    const exit = await rt.runPromiseExit(CA.compute(boom).pipe(Effect.provide(Trace.layer({ database: db }))))
    const reason = reasonOf(exit)
    assert.equal(reason._tag, "KernelFailed", reason.message)
    assert.match(reason.message, /outputs\.ts:\d+:\d+/, "the message names the kernel's file:line")
    assert.match((reason as EngineError.KernelFailed).at ?? "", /fixtures\/kernels\/outputs\.ts:\d+:\d+$/)
    const erred = db.list.filter((e) => e.name === "Compute" && e.args.state === "erred")
    assert.equal(erred.length, 1, JSON.stringify(db.list.filter((e) => e.name === "Compute").map((e) => e.args)))
    const ev = erred[0]!
    assert.match(String(ev.args.error), /kernel exploded on purpose/)
    assert.match(String(ev.args.traceback), /outputs\.ts/)
    assert.equal(ev.args.stage, "exploding")
    // the driver's rows are the worker plugins' (issue 31 item 14): process and address
    assert.match(String(ev.thread_id), new RegExp(`^worker-.+-127\\.0\\.0\\.1:\\d+-pid\\d+-\\d+$`), String(ev.thread_id))
  })

  it("issue 31 item 9: cluster: the workers' trace files (worker plugins) carry the erred task with its error and traceback", async () => {
    const name = "fail"
    const boom = CA.mapBlocks(X, { name: "boom", kernel: Kernel.ref(outputs, "explode"), dtype: "float64", columns: 2 })
    const exit = await rt.runPromiseExit(CA.compute(boom).pipe(
      Effect.provide(DefaultProfiler.layer({ name, directory: dir, interval: 50, overwrite: true, log: () => {}, warn: () => {} }))
    ))
    assert.equal(reasonOf(exit)._tag, "KernelFailed")
    const { events } = await FileDatabase.readPromise(join(dir, `${name}-TracePlugin-${hostname()}.msgpack`))
    const erred = events.filter((e) => e.name === "Compute" && e.args.state === "erred")
    assert.ok(erred.length >= 1, JSON.stringify(events.filter((e) => e.name === "Compute").map((e) => e.args)))
    assert.match(String(erred[0]!.args.error), /kernel exploded on purpose/)
    assert.match(String(erred[0]!.args.traceback), /outputs\.ts/)
  })

  it("issue 31 item 9: cluster: an argument the wire cannot carry is ArgumentNotSendable naming the argument, not a kernel failure", async () => {
    const g = TaskGraph.makeUnsafe([{ key: "f", kernel: Kernel.ref(outputs, "withExtra"), args: [rows(1, 1, 0), () => 1], stage: "extra" }])
    const exit = await rt.runPromiseExit(Engine.compute(g, { keys: ["f"] }))
    const reason = reasonOf(exit)
    assert.equal(reason._tag, "ArgumentNotSendable", reason.message)
    assert.equal((reason as EngineError.ArgumentNotSendable).argument, 1)
    assert.match(reason.message, /stage "extra": task "f": argument 2 .*a function/)
  })
})

describe("a worker's bound on what it holds (maxHeldBytes, tessera worker --max-held-bytes)", () => {
  it("issue 32 item 5: a task whose result would take a worker past its limit fails with HeldBytesExceeded naming the limit; nothing of it stays; the worker serves the next compute", async () => {
    const rt: Rt = ManagedRuntime.make(Cluster.layerLocal({ local: 1, maxHeldBytes: 5_000_000 }))
    try {
      const basic = new URL("../fixtures/kernels/basic.ts", import.meta.url).href
      const k = (name: string) => Kernel.ref(basic, name)
      // three 4 MB chunks, each wanted by a task that also takes its neighbour: held together
      const specs: Array<TaskGraph.TaskSpec> = []
      for (let i = 0; i < 3; i++) specs.push({ key: `arange-${i}`, kernel: k("arange"), args: [i, 500_000] })
      for (let i = 0; i < 3; i++) specs.push({ key: `sum-${i}`, kernel: k("chunkSum"), args: [TaskGraph.ref(`arange-${i}`), TaskGraph.ref(`arange-${(i + 1) % 3}`)] })
      specs.push({ key: "total", kernel: k("sum"), args: [TaskGraph.refs(["sum-0", "sum-1", "sum-2"])] })
      const exit = await rt.runPromiseExit(Engine.compute(TaskGraph.makeUnsafe(specs), { keys: ["total"] }))
      const reason = reasonOf(exit)
      assert.equal(reason._tag, "HeldBytesExceeded", reason.message)
      const r = reason as EngineError.HeldBytesExceeded
      assert.equal(r.limit, 5_000_000)
      assert.ok(r.held > r.limit, `${r.held}`)
      assert.match(r.key, /^arange-\d$/)
      assert.match(reason.message, /worker tessera-worker@127\.0\.0\.1:\d+ would hold 8\.00 MB of results with its result, over its limit of 5\.00 MB \(tessera worker --max-held-bytes 5000000\)/)
      const stats = await rt.runPromise(Effect.flatMap(Cluster.Cluster, (c) => c.stats))
      assert.equal(stats[0]!.maxHeldBytes, 5_000_000)
      assert.ok(stats[0]!.refused >= 1)
      // the failed compute's results are dropped (Cancel); a small compute runs after it
      const small = TaskGraph.makeUnsafe([{ key: "a", kernel: k("arange"), args: [0, 1000] }, { key: "s", kernel: k("chunkSum"), args: [TaskGraph.ref("a")] }])
      const out = await rt.runPromise(Engine.compute(small, { keys: ["s"] }))
      assert.equal(out.get("s"), 999 * 1000 / 2)
      for (let t = 0; t < 100; t++) {
        const st = await rt.runPromise(Effect.flatMap(Cluster.Cluster, (c) => c.stats))
        if (st[0]!.heldBytes === 0) break
        await new Promise((r) => setTimeout(r, 100))
      }
      const st = await rt.runPromise(Effect.flatMap(Cluster.Cluster, (c) => c.stats))
      assert.equal(st[0]!.heldBytes, 0)
    } finally {
      await rt.dispose()
    }
  })
})

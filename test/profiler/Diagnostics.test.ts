import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, Layer } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as CacheProfiler from "../../src/profiler/CacheProfiler.ts"
import * as Callback from "../../src/profiler/Callback.ts"
import * as Profiler from "../../src/profiler/Profiler.ts"
import * as ProgressBar from "../../src/profiler/ProgressBar.ts"
import * as ResourceProfiler from "../../src/profiler/ResourceProfiler.ts"

const mod = new URL("../fixtures/kernels/basic.ts", import.meta.url).href
const slow = new URL("./fixtures/slow.ts", import.meta.url).href

/** a -> (b, c) -> d */
const diamond = () =>
  TaskGraph.makeUnsafe([
    { key: "a", kernel: { module: mod, name: "constant" }, args: [1] },
    { key: "b", kernel: { module: mod, name: "sum" }, args: [TaskGraph.ref("a"), 1] },
    { key: "c", kernel: { module: mod, name: "sum" }, args: [TaskGraph.ref("a"), 2] },
    { key: "d", kernel: { module: mod, name: "sum" }, args: [TaskGraph.ref("b"), TaskGraph.ref("c")] }
  ])

describe("Diagnostics", () => {
  it("Profiler records key, task (the function name), start, end and worker of every completed task", async () => {
    const p = Profiler.make()
    await Engine.computePromise(diamond(), { workers: 2, callbacks: [p.callbacks] })
    assert.deepEqual(p.results.map((r) => r.key).sort(), ["a", "b", "c", "d"])
    for (const r of p.results) {
      assert.ok(r.endTime >= r.startTime)
      assert.ok(r.workerId === 0 || r.workerId === 1)
      // the group name (dask's key_split of the key), never the kernel's module URL
      assert.equal(r.task, r.key)
    }
    p.clear()
    assert.equal(p.results.length, 0)
  })

  it("CacheProfiler reports each result's lifetime from the scheduler's releases", async () => {
    const c = CacheProfiler.make({ metric: (v) => (typeof v === "number" ? v : 0), metricName: "value" })
    await Engine.computePromise(diamond(), { workers: 0, callbacks: [c.callbacks] })
    const byKey = new Map(c.results.map((r) => [r.key, r]))
    assert.deepEqual([...byKey.keys()].sort(), ["a", "b", "c", "d"])
    assert.equal(byKey.get("a")!.metric, 1)
    assert.equal(byKey.get("d")!.metric, 5)
    // a is freed once both b and c ran: not before c was cached
    assert.ok(byKey.get("a")!.freeTime >= byKey.get("c")!.cacheTime)
    assert.ok(byKey.get("a")!.freeTime <= byKey.get("d")!.cacheTime)
    for (const r of c.results) assert.ok(r.freeTime >= r.cacheTime)
    for (const r of c.results) assert.equal(r.task, r.key) // group names, not kernel URLs
    assert.equal(c.metricName, "value")
    assert.equal(CacheProfiler.make().metricName, "count")
  })

  it("ResourceProfiler samples time, mem and cpu from start to finish, first sample immediately", async () => {
    const r = ResourceProfiler.make({ dt: 0.02 })
    const specs = Array.from({ length: 20 }, (_, i) => ({ key: `s-${i}`, kernel: { module: slow, name: "slow" }, args: [i, 10] }))
    await Engine.computePromise(TaskGraph.makeUnsafe(specs), { workers: 2, callbacks: [r.callbacks] })
    assert.ok(r.results.length >= 3, `${r.results.length} samples`)
    for (const s of r.results) {
      assert.ok(s.mem > 1)
      assert.ok(s.cpu >= 0)
    }
    const n = r.results.length
    await new Promise((res) => setTimeout(res, 60))
    assert.equal(r.results.length, n)
    assert.throws(() => ResourceProfiler.make({ dt: 0 }), RangeError)
  })

  it("ProgressBar writes one final line when the output is not a terminal", async () => {
    const out: Array<string> = []
    const bar = ProgressBar.make({ out: { write: (s) => out.push(s), isTTY: false }, dt: 0.001 })
    const specs = Array.from({ length: 10 }, (_, i) => ({ key: `s-${i}`, kernel: { module: slow, name: "slow" }, args: [i, 5] }))
    await Engine.computePromise(TaskGraph.makeUnsafe(specs), { workers: 0, callbacks: [bar.callbacks] })
    assert.equal(out.length, 1)
    assert.match(out[0]!, /^\[#{40}\] \| 100% Completed \| +\d+\.\ds\n$/)
  })

  it("ProgressBar redraws in place on a terminal and ends the line", async () => {
    const out: Array<string> = []
    const bar = ProgressBar.make({ out: { write: (s) => out.push(s), isTTY: true }, dt: 0.005 })
    const specs = Array.from({ length: 20 }, (_, i) => ({ key: `s-${i}`, kernel: { module: slow, name: "slow" }, args: [i, 5] }))
    await Engine.computePromise(TaskGraph.makeUnsafe(specs), { workers: 1, callbacks: [bar.callbacks] })
    assert.ok(out.length >= 2, `${out.length} writes`)
    for (const w of out) assert.ok(w.startsWith("\r"))
    assert.ok(out.at(-1)!.endsWith("| 100% Completed | " + out.at(-1)!.split("| ").at(-1)))
    assert.ok(out.at(-1)!.endsWith("\n"))
  })

  it("ProgressBar renders dask's line format", () => {
    assert.equal(ProgressBar.render(0.5, 1.24, 10), "[#####     ] |  50% Completed |  1.2s")
    assert.equal(ProgressBar.render(2, 0, 4), "[####] | 100% Completed |  0.0s")
    assert.equal(ProgressBar.formatTime(125.5), "2min  5.5s")
    assert.throws(() => ProgressBar.make({ dt: -1 }), RangeError)
  })

  it("user callbacks with any subset of the five hooks run in dask's order, globally or per scope", async () => {
    const seen: Array<string> = []
    const cb = Callback.makeUnsafe({
      start: () => seen.push("start"),
      pretask: (k) => seen.push(`pre:${k}`),
      finish: (_g, _s, failed) => seen.push(`finish:${failed}`)
    })
    const unregister = Callback.register(cb)
    await Engine.computePromise(diamond(), { workers: 0 })
    unregister()
    assert.equal(seen[0], "start")
    assert.equal(seen.at(-1), "finish:false")
    assert.deepEqual(seen.filter((s) => s.startsWith("pre:")).length, 4)
    seen.length = 0
    await Engine.computePromise(diamond(), { workers: 0 })
    assert.equal(seen.length, 0)
    const posts: Array<string> = []
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      yield* Callback.scoped(Callback.makeUnsafe({ posttask: (k) => posts.push(k) }))
      yield* Engine.compute(diamond())
    })).pipe(Effect.provide(Layer.mergeAll(Executor.layerSync))))
    assert.deepEqual([...posts].sort(), ["a", "b", "c", "d"])
  })

  it("rejects unknown hook names and non-function hooks with CallbackError", async () => {
    assert.throws(() => Callback.makeUnsafe({ pretsk: () => {} } as never), (e: unknown) =>
      e instanceof Callback.CallbackError && e.hook === "pretsk" && e.message.includes("not a hook name"))
    const exit = await Effect.runPromiseExit(Callback.make({ start: 3 } as never))
    assert.equal(exit._tag, "Failure")
  })

  it("finish runs with failed=true when a task fails", async () => {
    const seen: Array<boolean> = []
    const bar = ProgressBar.make({ out: { write: () => {}, isTTY: false } })
    const g = TaskGraph.makeUnsafe([{ key: "x", kernel: { module: mod, name: "noSuchKernel" }, args: [] }])
    await assert.rejects(Engine.computePromise(g, {
      workers: 0,
      callbacks: [bar.callbacks, Callback.makeUnsafe({ finish: (_g, _s, failed) => seen.push(failed) }).callbacks]
    }))
    assert.deepEqual(seen, [true])
    assert.match(bar.last, /\|   0% Completed/)
  })
})

import assert from "node:assert/strict"
import { availableParallelism } from "node:os"
import { describe, it } from "node:test"
import { Effect } from "effect"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as Callback from "../../src/profiler/Callback.ts"
import * as Profiler from "../../src/profiler/Profiler.ts"
import * as ProgressBar from "../../src/profiler/ProgressBar.ts"
import * as ResourceProfiler from "../../src/profiler/ResourceProfiler.ts"

// dask.diagnostics equivalents on real workers and real pipeline runs (issue 15)
const slow = new URL("./fixtures/slow.ts", import.meta.url).href
const busy = (n: number, ms: number) =>
  TaskGraph.makeUnsafe(Array.from({ length: n }, (_, i) => ({ key: `busy-${i}`, kernel: { module: slow, name: "slow" }, args: [i, ms] })))
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms))

describe("Diagnostics on worker threads", () => {
  it("Profiler times tasks in the worker: forty 25 ms tasks on 2 workers are disjoint per worker and each about 25 ms", async () => {
    const p = Profiler.make()
    await Engine.computePromise(busy(40, 25), { workers: 2, callbacks: [p.callbacks] })
    assert.equal(p.results.length, 40)
    const ms = p.results.map((r) => (r.endTime - r.startTime) * 1000).sort((a, b) => a - b)
    for (const r of p.results) assert.equal(r.task, "busy") // the function, not file:///…#slow
    // the kernel spins until 25 ms of wall time have passed, so no task is shorter; on a
    // loaded machine a preempted worker overruns, so only the typical task is held to ~25 ms
    assert.ok(ms[0]! >= 24.9, `shortest ${ms[0]!.toFixed(2)} ms`)
    assert.ok(ms[20]! < 40, `median ${ms[20]!.toFixed(2)} ms`)
    for (const w of [0, 1]) {
      const mine = p.results.filter((r) => r.workerId === w).sort((a, b) => a.startTime - b.startTime)
      assert.ok(mine.length > 0, `worker ${w} ran tasks`)
      for (let i = 1; i < mine.length; i++) {
        assert.ok(mine[i]!.startTime >= mine[i - 1]!.endTime, `worker ${w}: ${mine[i]!.key} starts before ${mine[i - 1]!.key} ends`)
      }
    }
    // the run is about 20 tasks x 25 ms per worker, not one bar from 0 to the end
    const t0 = Math.min(...p.results.map((r) => r.startTime))
    const first = p.results.filter((r) => r.startTime - t0 < 0.02)
    assert.ok(first.length <= 2, `${first.length} tasks start in the first 20 ms`)
  })

  it("ResourceProfiler never reads above 100% x cores: first sample 0, busy on 2 threads, then idle", async () => {
    const r = ResourceProfiler.make({ dt: 0.02 })
    const cap = 100 * availableParallelism()
    const before = process.cpuUsage()
    await Engine.computePromise(busy(16, 25), { workers: 2, callbacks: [r.callbacks] })
    const used = process.cpuUsage(before)
    const busyCount = r.results.length
    // an idle period sampled the same way (the hooks only need to be called)
    const g = busy(0, 0)
    r.callbacks.start!(g)
    await sleep(200)
    r.callbacks.finish!(g, undefined as never, false)
    assert.equal(r.results[0]!.cpu, 0, "the first sample has no interval behind it and reads 0, as dask's")
    for (const s of r.results) assert.ok(s.cpu >= 0 && s.cpu <= cap + 1, `cpu ${s.cpu}% on ${availableParallelism()} cores`)
    // the samples account for the CPU time the process used: sum of cpu% x interval
    let area = 0
    for (let i = 1; i < busyCount; i++) area += (r.results[i]!.cpu / 100) * (r.results[i]!.time - r.results[i - 1]!.time)
    const cpuSeconds = (used.user + used.system) / 1e6
    assert.ok(area > 0.5 * cpuSeconds && area < 1.2 * cpuSeconds, `samples ${area.toFixed(3)} s, process ${cpuSeconds.toFixed(3)} s`)
    const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[xs.length >> 1]!
    const busyCpu = median(r.results.slice(1, busyCount).map((s) => s.cpu))
    const idleCpu = median(r.results.slice(busyCount + 1).map((s) => s.cpu))
    assert.ok(idleCpu < busyCpu, `idle median ${idleCpu}% < busy median ${busyCpu}%`)
  })

  it("ProgressBar draws one bar for a whole pipeline run (a 20,000-sample demo: dozens of computes)", async () => {
    const out: Array<string> = []
    let computes = 0
    const counter = Callback.makeUnsafe({ start: () => void computes++ })
    const bar = ProgressBar.layer({ out: { write: (s) => out.push(s), isTTY: false } })
    await Effect.runPromise(
      Tutorial5.run({ samples: 20_000, chunkRows: 5_000, log: () => {} }).pipe(
        Effect.provide(bar),
        Effect.provide(Callback.layer(counter)),
        Effect.provide(Executor.layerWorkers({ workers: 2 }))
      )
    )
    assert.ok(computes > 10, `${computes} computes`)
    assert.equal(out.length, 1, out.join(""))
    assert.match(out[0]!, /^\[#{40}\] \| 100% Completed \| +\d+\.\ds\n$/)
  })

  it("ProgressBar as Callback.layer or Callback.scoped spans the scope; on failure it shows the fraction reached", async () => {
    const out: Array<string> = []
    const bar = ProgressBar.make({ out: { write: (s) => out.push(s), isTTY: false } })
    const twice = Effect.gen(function*() {
      yield* Engine.compute(busy(4, 1))
      yield* Engine.compute(busy(4, 1))
    })
    await Effect.runPromise(twice.pipe(Effect.provide(Callback.layer(bar)), Effect.provide(Executor.layerSync)))
    assert.equal(out.length, 1)
    assert.match(bar.last, /100% Completed/)
    out.length = 0
    const bad = TaskGraph.makeUnsafe([{ key: "x", kernel: { module: slow, name: "noSuchKernel" }, args: [] }])
    const exit = await Effect.runPromiseExit(Effect.scoped(Effect.gen(function*() {
      yield* Callback.scoped(bar)
      yield* Engine.compute(busy(4, 1))
      yield* Engine.compute(bad)
    })).pipe(Effect.provide(Executor.layerSync)))
    assert.equal(exit._tag, "Failure")
    assert.equal(out.length, 1)
    assert.match(bar.last, /^\[#{32} {8}\] \|  80% Completed/) // 4 of 5 tasks
  })

  it("ProgressBar on a terminal redraws one line for the run and ends it once", async () => {
    const out: Array<string> = []
    const bar = ProgressBar.layer({ out: { write: (s) => out.push(s), isTTY: true }, dt: 0.005 })
    const three = Effect.gen(function*() {
      for (let i = 0; i < 3; i++) yield* Engine.compute(busy(4, 5))
    })
    await Effect.runPromise(three.pipe(Effect.provide(bar), Effect.provide(Executor.layerWorkers({ workers: 1 }))))
    assert.ok(out.length >= 2, `${out.length} writes`)
    for (const w of out) assert.ok(w.startsWith("\r"))
    assert.equal(out.filter((w) => w.endsWith("\n")).length, 1)
    assert.match(out.at(-1)!, /100% Completed/)
  })
})

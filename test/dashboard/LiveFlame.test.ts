/**
 * Issue 34: the Profile tab's flame graph during a run (`LiveFlame.ts`) — the engine's
 * samples shared between hooks that ask for them (`Sampling.share`), a shorter flush
 * (`SamplingRequest.flushSeconds`), and the live structure's totals for the whole run,
 * a window and a function equal to the samples a second hook counted from the same
 * SampleRecords; bounded bins whose merges keep the totals (fast-check).
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect } from "effect"
import fc from "fast-check"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as Sampling from "../../src/engine/Sampling.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { LiveFlame } from "../../src/dashboard/LiveFlame.ts"
import { LiveState } from "../../src/dashboard/LiveState.ts"
import { startServer } from "../../src/dashboard/Server.ts"
import { maxSampleSeconds } from "../../src/trace/SampleEvents.ts"

const spinModule = new URL("../fixtures/kernels/spin.ts", import.meta.url).href

/** the frames of a sample's stack, innermost first */
const stackOf = (r: Sampling.SampleRecord, q: number): Array<Sampling.SampleNode> => {
  const byId = new Map(r.nodes.map((n) => [n.id, n]))
  const out: Array<Sampling.SampleNode> = []
  for (let n = byId.get(r.samples[q]!); n !== undefined; n = n.parent === 0 ? undefined : byId.get(n.parent)) out.push(n)
  return out
}

/** the sample's kernel, counted here on its own: the frame the worker's runBatch called */
const kernelOf = (r: Sampling.SampleRecord, q: number): string => {
  const s = stackOf(r, q)
  for (let i = s.length - 1; i > 0; i--) {
    if (s[i]!.functionName === "runBatch" && s[i]!.url.endsWith("worker.ts")) return s[i - 1]!.functionName
  }
  return "idle"
}

const sumRows = (p: { samples: { c?: Array<number>; w: Array<number> } }) => ({
  samples: p.samples.c!.reduce((a, b) => a + b, 0),
  us: Math.round(p.samples.w.reduce((a, b) => a + b, 0) * 1e6)
})

describe("live flame: sampling shared between hooks", () => {
  it("Hooks.collect puts one shared sampler before several that ask, the same one for the same hooks; one alone is left as is", () => {
    const a: Hooks.Callbacks = { sampling: { interval: 10 }, samples: () => {} }
    const b: Hooks.Callbacks = { sampling: { interval: 2, flushSeconds: 1 }, samples: () => {}, task: () => {} }
    const c: Hooks.Callbacks = { task: () => {} }
    assert.deepEqual(Hooks.collect([c, a], undefined), [c, a])
    const list = Hooks.collect([c, a, b], undefined)
    assert.equal(list.length, 4)
    const shared = list[1]!
    assert.deepEqual([list[0], list[2], list[3]], [c, a, b])
    assert.deepEqual(shared.sampling, { interval: 2, flushSeconds: 1 }, "the smallest interval, the shortest flush")
    assert.equal(Hooks.collect([c, a, b], undefined)[1], shared, "the same hooks, the same sampler")
    assert.notEqual(Hooks.collect([b, a], undefined)[0], shared, "another order, another list")
  })

  it("flushOf bounds the asked flush", () => {
    assert.equal(Sampling.flushOf(undefined), Sampling.flushSeconds)
    assert.equal(Sampling.flushOf({ interval: 1, flushSeconds: 0 }), Sampling.minFlushSeconds)
    assert.equal(Sampling.flushOf({ interval: 1, flushSeconds: 1e9 }), Sampling.flushSeconds)
    assert.equal(Sampling.flushOf({ interval: 1, flushSeconds: Number.NaN }), Sampling.flushSeconds)
    assert.equal(Sampling.flushOf({ interval: 1, flushSeconds: 2 }), 2)
  })

  it("stopping one member stops the shared sampler's sources, whose last records reach every member", async () => {
    const got: Array<string> = []
    const a: Hooks.Callbacks = { sampling: { interval: 10 }, samples: () => void got.push("a") }
    const b: Hooks.Callbacks = { sampling: { interval: 10 }, samples: () => void got.push("b") }
    const shared = Sampling.share([a, b])
    let stopped = 0
    const detach = Sampling.attach(shared, {
      stop: async () => {
        stopped++
        shared.samples!({ nodes: [], samples: new Int32Array(0), times: new Float64Array(0), deltas: new Float64Array(0), host: "h", workerId: 0, threadId: "worker-h-0", interval: 0.01 })
      }
    })
    await Sampling.stop(a)
    detach()
    assert.equal(stopped, 1)
    assert.deepEqual(got, ["a", "b"])
  })
})

describe("live flame: a real compute", () => {
  it("the live structure's totals (whole run, a window, a function) are the samples a second hook counted from the same records; bins stay bounded", { timeout: 300_000 }, async () => {
    const state = new LiveState({ host: "h" })
    // few, narrow bins: the run outgrows them, so they merge during it
    const dash = state.callbacks({ records: true, sample: { interval: 2, flushSeconds: 0.25, bounds: { nBins: 8, binWidth: 0.01 } } })
    const records: Array<Sampling.SampleRecord> = []
    const counter: Hooks.Callbacks = { sampling: { interval: 5 }, samples: (r) => void records.push(r) }
    const g = TaskGraph.makeUnsafe(Array.from({ length: 8 }, (_, i): TaskGraph.TaskSpec => ({
      key: `spin-${i}`,
      kernel: Kernel.ref(spinModule, i % 2 === 0 ? "task" : "otherTask"),
      args: [3_000_000],
      stage: i % 2 === 0 ? "even" : "odd"
    })))
    await Effect.runPromise(Engine.compute(g).pipe(
      Effect.provide(Executor.layerWorkers({ workers: 2 })),
      Hooks.provide(dash, counter)
    ))
    const flame = state.liveFlame!
    flame.fold()
    let n = 0, us = 0
    const byKernel = new Map<string, number>()
    for (const r of records) {
      for (let q = 0; q < r.samples.length; q++) {
        n++
        us += Math.round(Math.min(r.deltas[q]!, maxSampleSeconds(r.interval)) * 1e6)
        const k = kernelOf(r, q)
        byKernel.set(k, (byKernel.get(k) ?? 0) + 1)
      }
    }
    assert.ok(n >= 20, `only ${n} samples`)
    assert.equal(records[0]!.interval, 0.002, "the smallest interval asked")
    assert.equal(flame.samples, n, "every sample the other hook got")
    assert.equal(flame.records, records.length, "the same records")
    const whole = sumRows(flame.payload())
    assert.deepEqual(whole, { samples: n, us }, "whole run: samples and µs")
    assert.ok(flame.binTotals().length <= 8, "at most nBins bins")
    assert.ok(flame.binWidth > 0.01, "the bins merged as the run outgrew them")
    // a window of whole bins: the samples whose bin's middle is in it, counted here
    const w = flame.binWidth
    const from = 1.5 * w, to = 3.5 * w
    let inWindow = 0
    for (const r of records) {
      for (let q = 0; q < r.samples.length; q++) {
        const b = Math.min(7, Math.max(0, Math.floor((r.times[q]! - state.t0) / w)))
        const mid = (b + 0.5) * w
        if (mid >= from && mid <= to) inWindow++
      }
    }
    assert.equal(sumRows(flame.payload({ from, to })).samples, inWindow, "a window")
    // per function: the kernels the workers' batch loop called
    assert.ok((byKernel.get("task") ?? 0) > 0 && (byKernel.get("otherTask") ?? 0) > 0, JSON.stringify([...byKernel]))
    for (const [fn, count] of byKernel) assert.equal(sumRows(flame.payload({ fn })).samples, count, `function ${fn}`)
    // per stage: its kernel's samples (the stage of a sample is its kernel's)
    assert.deepEqual([...flame.payload().stages].sort(), ["", "even", "odd"])
    assert.equal(sumRows(flame.payload({ stage: "even" })).samples, byKernel.get("task"))
    assert.equal(sumRows(flame.payload({ stage: "odd" })).samples, byKernel.get("otherTask"))
    // the server answers the tab from it, the query's window and function, as JSON
    const server = await startServer(state, { port: 0, sampleHost: false }, () => Promise.resolve({}))
    try {
      const res = await fetch(`${server.url}api/flame?fn=task`)
      const body = await res.json() as { status: string; live: boolean; samples: number; payload: { fns: Array<string>; samples: { c: Array<number>; w: Array<number>; fn: Array<number> } } }
      assert.equal(body.status, "ready")
      assert.equal(body.live, true)
      assert.equal(body.samples, n)
      assert.equal(sumRows(body.payload).samples, byKernel.get("task"))
      assert.ok(body.payload.samples.fn.every((f) => body.payload.fns[f] === "task"))
    } finally {
      await server.close()
    }
  })
})

// ---- the folding, on generated records ----------------------------------------------

const nodes: ReadonlyArray<Sampling.SampleNode> = [
  { id: 1, parent: 0, functionName: "(root)", url: "", line: -1, column: -1 },
  { id: 2, parent: 1, functionName: "runBatch", url: "file:///x/src/engine/internal/worker.ts", line: 1, column: 1 },
  { id: 3, parent: 2, functionName: "kA", url: "file:///k.ts", line: 1, column: 1 },
  { id: 4, parent: 2, functionName: "kB", url: "file:///k.ts", line: 5, column: 1 },
  { id: 5, parent: 3, functionName: "leaf", url: "file:///k.ts", line: 9, column: 1 },
  { id: 6, parent: 1, functionName: "(idle)", url: "", line: -1, column: -1 }
]

const recordArb = fc.array(fc.record({ node: fc.integer({ min: 1, max: 6 }), t: fc.double({ min: 0, max: 500, noNaN: true }), d: fc.double({ min: 0, max: 0.05, noNaN: true }) }), { maxLength: 60 })
  .map((ss): Sampling.SampleRecord => {
    const sorted = [...ss].sort((a, b) => a.t - b.t)
    return {
      nodes,
      samples: Int32Array.from(sorted.map((s) => s.node)),
      times: Float64Array.from(sorted.map((s) => 1000 + s.t)),
      deltas: Float64Array.from(sorted.map((s) => s.d)),
      host: "h",
      workerId: 0,
      threadId: "worker-h-0",
      interval: 0.01
    }
  })

describe("live flame: folding (fast-check)", () => {
  it("totals are preserved whatever the merges; bins stay at most nBins; a function's rows are its samples", () => {
    fc.assert(fc.property(fc.array(recordArb, { maxLength: 6 }), fc.integer({ min: 2, max: 16 }), (recs, nBins) => {
      const f = new LiveFlame(1000, { nBins, binWidth: 0.05 })
      f.kernelStage("kA", "s1")
      f.kernelStage("kA", "s2")
      f.kernelStage("kB", "s2")
      let n = 0, us = 0, inA = 0
      for (const r of recs) {
        f.push(r)
        for (let q = 0; q < r.samples.length; q++) {
          n++
          us += Math.round(Math.min(r.deltas[q]!, maxSampleSeconds(0.01)) * 1e6)
          if (r.samples[q] === 3 || r.samples[q] === 5) inA++
        }
        // folding as records come (on the tick) or all at the end: the same totals
        if (r.samples.length % 2 === 0) f.fold()
      }
      const whole = sumRows(f.payload())
      assert.deepEqual(whole, { samples: n, us })
      assert.equal(f.samples, n)
      assert.ok(f.binTotals().length <= nBins)
      // an answer: one row per (stack, function) at most, whatever the bins
      const keys = f.payload().samples
      assert.equal(new Set(keys.node.map((v, k) => `${v},${keys.fn[k]}`)).size, keys.node.length)
      assert.equal(sumRows(f.payload({ fn: "kA" })).samples, inA)
      assert.equal(sumRows(f.payload({ fn: "nothing" })).samples, 0)
      // a kernel of two stages is their own entry; stages partition the samples
      const p = f.payload()
      const ofStage = (st: string) => sumRows(f.payload({ stage: st })).samples
      if (inA > 0) assert.ok(p.stages.includes("s1 | s2"))
      assert.equal(p.stages.reduce((a, st) => a + ofStage(st), 0), n)
      if (inA > 0) assert.equal(ofStage("s1 | s2"), inA)
      // two halves of the run's bins make the whole
      const mid = (nBins / 2) * f.binWidth
      assert.equal(sumRows(f.payload({ to: mid })).samples + sumRows(f.payload({ from: mid + 1e-9 })).samples, n)
    }))
  })

  it("a call tree past maxNodes cuts new stacks at their deepest kept frame and counts them", () => {
    // (root) is no node: runBatch and kA fit, leaf and kB are cut
    const f = new LiveFlame(1000, { maxNodes: 2 })
    f.push({ nodes, samples: Int32Array.from([5, 4, 3]), times: Float64Array.from([1000.1, 1000.2, 1000.3]), deltas: Float64Array.from([0.01, 0.01, 0.01]), host: "h", workerId: 0, threadId: "w", interval: 0.01 })
    f.fold()
    assert.equal(f.samples, 3)
    assert.equal(f.parent.length, 2)
    assert.equal(f.cutSamples, 2)
    assert.equal(sumRows(f.payload({ fn: "kA" })).samples, 2, "leaf stands on kA")
  })
})

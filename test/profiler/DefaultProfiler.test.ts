/**
 * DefaultProfiler: `registerDefaultProfiler` runs the same layers as
 * `DefaultProfiler.layer`, so both forms write the same records for one pipeline run;
 * it samples stacks too (the statistical profiler) unless `sample: false`.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Layer } from "effect"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import { Normalize, Persist } from "../../src/dsl/Estimators.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import { selectSamples } from "../../src/analysis/Profile.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as StatisticalProfiler from "../../src/profiler/StatisticalProfiler.ts"
import { readProfilePromise } from "../../src/trace/SampleEvents.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-default-profiler-"))
after(() => rmSync(dir, { recursive: true, force: true }))
const quiet = { log: () => {}, warn: () => {} }

const pipeline = () => {
  const data = makeBlobs({ nSamples: 200, centers: [[-6, -6], [9, 1]], chunks: 50, randomState: 3 })
  const p = Pipeline.make("same", quiet)
  const scaled = p.add(new Normalize().transform, { X: data.X })
  p.add(Persist<"float64">("Persist.scaled"), { X: scaled })
  return p
}

/** Event name -> count, plus the Compute events' task names (sorted). */
const shape = (events: ReadonlyArray<TraceEvent>) => {
  const counts: Record<string, number> = {}
  for (const e of events) counts[e.name] = (counts[e.name] ?? 0) + 1
  const computes = events.filter((e) => e.name === "Compute").map((e) => `${e.args.name}`).sort()
  return { counts, computes }
}

describe("DefaultProfiler", () => {
  it("keeps a name that is an absolute path where it points; a relative one goes under the directory", () => {
    const abs = DefaultProfiler.files({ name: "/tmp/somewhere/run", host: "h" }, 0)
    assert.equal(abs.traceFile, "/tmp/somewhere/run-TracePlugin-h.msgpack")
    assert.equal(abs.resourceFile, "/tmp/somewhere/run-ResourceMonitor-h.msgpack")
    assert.equal(StatisticalProfiler.fileFor("/tmp/somewhere/run", "h"), "/tmp/somewhere/run-StatisticalProfiler-h.msgpack")
    const rel = DefaultProfiler.files({ name: "out/run", host: "h", directory: "d" }, 0)
    assert.equal(rel.traceFile, join("d", "out", "run-TracePlugin-h.msgpack"))
    assert.equal(StatisticalProfiler.fileFor("out/run", "h", "d"), join("d", "out", "run-StatisticalProfiler-h.msgpack"))
  })

  it("registerDefaultProfiler writes the same records as the layer form on one small pipeline", async () => {
    const p = pipeline()
    const options = { directory: dir, host: "hS", pipeline: p, interval: 10_000, sampleInterval: 1, ...quiet }
    await Effect.runPromise(p.run().pipe(Effect.provide(Layer.mergeAll(
      Executor.layerSync,
      DefaultProfiler.layer({ name: "layered", sample: true, ...options })
    ))))
    assert.deepEqual(Hooks.registered(), [], "the layer registers nothing globally")
    const h = DefaultProfiler.registerDefaultProfiler(p, { name: "registered", ...options })
    assert.equal(Hooks.registered().length, 3, "trace, pipeline-graph and sampler callbacks")
    await Effect.runPromise(p.run().pipe(Effect.provide(Executor.layerSync)))
    await h.close()
    assert.deepEqual(Hooks.registered(), [])
    const layered = {
      trace: (await FileDatabase.readPromise(join(dir, "layered-TracePlugin-hS.msgpack"))).events,
      resources: (await FileDatabase.readPromise(join(dir, "layered-ResourceMonitor-hS.msgpack"))).events
    }
    const registered = {
      trace: (await FileDatabase.readPromise(h.traceFile)).events,
      resources: (await FileDatabase.readPromise(h.resourceFile)).events
    }
    assert.ok(layered.trace.length > 0)
    assert.deepEqual(shape(registered.trace), shape(layered.trace))
    // one sample when the profiler starts and one when it closes (the interval is long)
    assert.deepEqual(shape(registered.resources), shape(layered.resources))
    assert.deepEqual(shape(layered.resources).counts, { "Resource Usage": 2 })
    // both sampled the main thread, where the in-process executor ran the tasks
    for (const file of [join(dir, "layered-StatisticalProfiler-hS.msgpack"), h.sampleFile]) {
      const names = new Set((await FileDatabase.readPromise(file)).events.map((e) => e.name))
      assert.ok(names.has("Profile Samples") && names.has("Profile Stacks"), `${file}: ${[...names].join(", ")}`)
    }
  })

  it("registerDefaultProfiler samples the workers' stacks into a third file, attributed to tasks; sample: false writes none", async () => {
    const spin = new URL("../fixtures/kernels/spin.ts", import.meta.url).href
    const graph = () => TaskGraph.makeUnsafe([0, 1, 2, 3].map((i) => ({ key: `spinning-${i}`, kernel: Kernel.ref(spin, "task"), args: [4_000_000] })))
    const h = DefaultProfiler.registerDefaultProfiler({ name: "sampled", directory: dir, host: "hR", sampleInterval: 2, ...quiet })
    await Engine.computePromise(graph(), { workers: 2 })
    await h.close()
    assert.deepEqual(Hooks.registered(), [])
    const data = await readProfilePromise([h.sampleFile])
    const mine = selectSamples(data, { function: "spinning" })
    assert.ok(mine.length >= 10, `only ${mine.length} samples of spinning`)
    assert.ok(mine.every((q) => data.samples.thread[q]!.startsWith("worker-")))
    const off = DefaultProfiler.registerDefaultProfiler({ name: "unsampled", directory: dir, host: "hR", sample: false, ...quiet })
    await Engine.computePromise(graph(), { workers: 2 })
    await off.close()
    assert.ok(existsSync(off.traceFile) && !existsSync(off.sampleFile), "sample: false wrote a sampler file")
  })
})

import assert from "node:assert/strict"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Layer } from "effect"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import { Normalize, Persist } from "../../src/dsl/Estimators.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as PipelineGraph from "../../src/profiler/PipelineGraph.ts"
import { writeReportPromise } from "../../src/report/Report.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-graph-"))
after(() => rmSync(dir, { recursive: true, force: true }))
const mod = new URL("../fixtures/kernels/basic.ts", import.meta.url).href
const quiet = { log: () => {} }

const tiny = () => TaskGraph.makeUnsafe([{ key: "a", kernel: { module: mod, name: "constant" }, args: [1] }])

/** A pipeline stand-in: the profiler only needs a name and visualize(). */
const fake = (dot: string) => ({ name: "fake", visualize: () => dot })

const graphEvents = (events: ReadonlyArray<TraceEvent>) => events.filter((e) => e.name === "Pipeline Graph")

/** A real DSL pipeline with three stages and two edges. */
const dslPipeline = () => {
  const data = makeBlobs({ nSamples: 300, centers: [[-6, -6], [9, 1]], chunks: 100, randomState: 3 })
  const p = Pipeline.make("graphed", quiet)
  const scaled = p.add(new Normalize().transform, { X: data.X })
  const kept = p.add(Persist<"float64">("Persist.scaled"), { X: scaled })
  p.add(Persist<"float64">("Persist.again"), { X: kept })
  return p
}

describe("PipelineGraph", () => {
  it("recognises pipelines structurally", () => {
    assert.ok(PipelineGraph.isPipelineLike(fake("digraph {}")))
    assert.ok(PipelineGraph.isPipelineLike(dslPipeline()))
    assert.ok(!PipelineGraph.isPipelineLike({ name: "x" }))
    assert.ok(!PipelineGraph.isPipelineLike({ visualize: () => "" }))
    assert.ok(!PipelineGraph.isPipelineLike(null))
  })

  it("a recorder writes the event once, at the first compute start, with the contract's fields", async () => {
    const db = MemoryDatabase.make()
    const r = PipelineGraph.recorder(db, fake("digraph \"fake\" { a; }"), "hostG")
    await Engine.computePromise(tiny(), { workers: 0, callbacks: [r.callbacks] })
    await Engine.computePromise(tiny(), { workers: 0, callbacks: [r.callbacks] })
    r.recordUnsafe()
    assert.equal(db.list.length, 1)
    const e = db.list[0]!
    assert.deepEqual({ ...e, timestamp: 0 }, {
      name: "Pipeline Graph",
      timestamp: 0,
      phase: "I",
      scope: "g",
      process_id: "hostG",
      thread_id: "main",
      args: { pipeline: "fake", dot: "digraph \"fake\" { a; }" }
    })
    assert.ok(Math.abs(e.timestamp - Date.now() / 1000) < 60)
  })

  it("a pipeline whose visualize() throws is warned about and never fails the compute", async () => {
    const db = MemoryDatabase.make()
    const warnings: Array<string> = []
    const onWarning = (w: Error) => warnings.push(w.message)
    process.on("warning", onWarning)
    const r = PipelineGraph.recorder(db, { name: "bad", visualize: () => { throw new Error("no dot") } }, "h")
    const out = await Engine.computePromise(tiny(), { workers: 0, callbacks: [r.callbacks] })
    await new Promise((res) => setImmediate(res))
    process.off("warning", onWarning)
    assert.equal(out.get("a"), 1)
    assert.equal(db.list.length, 0)
    assert.ok(warnings.some((w) => /Pipeline Graph of "bad" not recorded: visualize\(\) threw: Error: no dot/.test(w)), warnings.join("|"))
  })

  it("registerDefaultProfiler(pipeline, ...) writes exactly one Pipeline Graph event however many computes run", async () => {
    const h = DefaultProfiler.registerDefaultProfiler(fake("digraph { x -> y; }"), { name: "reg", directory: dir, host: "hR", ...quiet })
    await Engine.computePromise(tiny(), { workers: 0 })
    await Engine.computePromise(tiny(), { workers: 0 })
    h.close()
    const events = (await FileDatabase.readPromise(h.traceFile)).events
    assert.equal(events.filter((e) => e.name === "Compute").length, 2)
    const g = graphEvents(events)
    assert.equal(g.length, 1)
    assert.deepEqual(g[0]!.args, { pipeline: "fake", dot: "digraph { x -> y; }" })
    assert.equal(g[0]!.process_id, "hR")
    // written when the first compute started: before every task
    for (const e of events.filter((e) => e.name === "Compute")) assert.ok(g[0]!.timestamp <= e.timestamp - e.duration!)
  })

  it("the layer with a pipeline but no compute still writes the event when it closes", async () => {
    await Effect.runPromise(Effect.scoped(Layer.build(
      DefaultProfiler.layer({ name: "idle", directory: dir, host: "hI", pipeline: fake("digraph { z; }"), ...quiet })
    )))
    const events = (await FileDatabase.readPromise(join(dir, "idle-TracePlugin-hI.msgpack"))).events
    assert.deepEqual(graphEvents(events).map((e) => e.args.dot), ["digraph { z; }"])
  })

  it("without a pipeline no graph event is written", async () => {
    const h = DefaultProfiler.registerDefaultProfiler({ name: "nog", directory: dir, host: "hN", ...quiet })
    await Engine.computePromise(tiny(), { workers: 0 })
    h.close()
    assert.equal(graphEvents((await FileDatabase.readPromise(h.traceFile)).events).length, 0)
  })

  it("a profiled DSL pipeline run carries its visualize() DOT, and the report draws the stage DAG", async () => {
    const p = dslPipeline()
    await Effect.runPromise(p.run().pipe(Effect.provide(Layer.mergeAll(
      Executor.layerWorkers({ workers: 2 }),
      DefaultProfiler.layer({ name: "dsl", directory: dir, host: "hD", pipeline: p, interval: 20, ...quiet })
    ))))
    const trace = join(dir, "dsl-TracePlugin-hD.msgpack")
    const resources = join(dir, "dsl-ResourceMonitor-hD.msgpack")
    const events = (await FileDatabase.readPromise(trace)).events
    const g = graphEvents(events)
    assert.equal(g.length, 1)
    assert.equal(g[0]!.args.pipeline, "graphed")
    assert.equal(g[0]!.args.dot, p.visualize())
    assert.ok(events.some((e) => e.name === "Compute"))
    const out = join(dir, "dsl.html")
    const written = await writeReportPromise([trace, resources], out)
    assert.equal(written.data.dot, p.visualize())
    const html = readFileSync(out, "utf8")
    const dag = /<h2>Pipeline stages<\/h2><div class="dag">([\s\S]*?)<\/div><\/section>/.exec(html)
    assert.ok(dag, "the report has a Pipeline stages section")
    assert.match(dag![1]!, /<svg/)
    for (const stage of ["Normalize.transform", "Persist.scaled", "Persist.again"]) assert.ok(dag![1]!.includes(`>${stage}</text>`), stage)
  })
})

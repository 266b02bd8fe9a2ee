/**
 * DASF interop both ways: every record Tessera's profiler writes is one DASF's reader
 * accepts (`FileDatabase.get_traces` builds `event_classes[phase](**record)`, so only
 * phases X, I, B, E, and only the keys of that phase's dataclass), and Tessera still
 * reads the `Pipeline Graph` event of older files, written with phase "M".
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Layer } from "effect"
import { loadPromise } from "../../src/analysis/Load.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import { Normalize, Persist } from "../../src/dsl/Estimators.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as EventProfiler from "../../src/profiler/EventProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as PipelineGraph from "../../src/profiler/PipelineGraph.ts"
import * as StatisticalProfiler from "../../src/profiler/StatisticalProfiler.ts"
import { loadReportInputPromise } from "../../src/report/Report.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { assertDasfReadable, rawRecords } from "./dasf.ts"
import * as TraceFormat from "../../src/trace/TraceFormat.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-dasf-phases-"))
after(() => rmSync(dir, { recursive: true, force: true }))
const quiet = { log: () => {}, warn: () => {} }

describe("DASF phases", () => {
  it("every record of both files a profiled pipeline run writes has phase X, I, B or E and DASF's keys", async () => {
    const data = makeBlobs({ nSamples: 300, centers: [[-6, -6], [9, 1]], chunks: 100, randomState: 5 })
    const p = Pipeline.make("phases", { log: () => {} })
    const scaled = p.add(new Normalize().transform, { X: data.X })
    p.add(Persist<"float64">("Persist.scaled"), { X: scaled })
    await Effect.runPromise(p.run().pipe(Effect.provide(Layer.mergeAll(
      Executor.layerWorkers({ workers: 2 }),
      DefaultProfiler.layer({ name: "phases", directory: dir, host: "hP", pipeline: p, interval: 20, ...quiet })
    ))))
    const h = DefaultProfiler.registerDefaultProfiler(p, { name: "phases-reg", directory: dir, host: "hP", ...quiet })
    await Effect.runPromise(p.run().pipe(Effect.provide(Executor.layerSync)))
    h.close()
    for (
      const file of [
        join(dir, "phases-TracePlugin-hP.msgpack"),
        join(dir, "phases-ResourceMonitor-hP.msgpack"),
        h.traceFile,
        h.resourceFile
      ]
    ) {
      const records = rawRecords(file)
      assert.ok(records.length > 0, file)
      for (const r of records) assertDasfReadable(r, file)
    }
    const trace = rawRecords(h.traceFile)
    const graph = trace.filter((r) => r.name === "Pipeline Graph")
    assert.equal(graph.length, 1)
    assert.equal(graph[0]!.phase, "I")
    assert.equal(graph[0]!.scope, "g")
    assert.ok(trace.some((r) => r.name === "Compute" && r.phase === "X"))
    assert.ok(trace.some((r) => r.name === "Managed Memory" && r.phase === "I"))
  })

  it("the statistical profiler's file holds only records DASF can read, and loads beside the trace", async () => {
    const data = makeBlobs({ nSamples: 3000, centers: [[-6, -6], [9, 1]], chunks: 10, randomState: 5 })
    const p = Pipeline.make("sampled", { log: () => {} })
    p.add(Persist<"float64">("Persist.scaled"), { X: p.add(new Normalize().transform, { X: data.X }) })
    const file = StatisticalProfiler.fileFor("sampled", "hP", dir)
    await Effect.runPromise(p.run().pipe(
      Effect.provide(Executor.layerWorkers({ workers: 2 })),
      Effect.provide(DefaultProfiler.layer({ name: "sampled", directory: dir, host: "hP", ...quiet })),
      Effect.provide(StatisticalProfiler.layer({ file, interval: 1, host: "hP" }))
    ))
    const records = rawRecords(file)
    assert.ok(records.some((r) => r.name === "Profile Samples") && records.some((r) => r.name === "Profile Stacks"))
    for (const r of records) assertDasfReadable(r, file)
    const tables = await loadPromise([join(dir, "sampled-TracePlugin-hP.msgpack"), file])
    assert.ok(tables.tasks.numRows > 0)
  })

  it("EventProfiler writes counters and metadata as instant events DASF can read", async () => {
    const file = join(dir, "profiler.msgpack")
    const p = EventProfiler.make(file)
    p.recordComplete("c", 2, 1, "h", "t", { a: 1 })
    p.recordInstant("i", 2, "h", "t", { a: 1 })
    p.recordDurationBegin("d", 1, "h", "t")
    p.recordDurationEnd("d", 2, "h", "t")
    p.recordCounter("queue", 3, "h", "t", { depth: 4 })
    p.recordMetadata("process_name", 0, "h", null, { name: "driver" })
    p.close()
    const records = rawRecords(file)
    for (const r of records) assertDasfReadable(r, file)
    assert.deepEqual(records.map((r) => [r.phase, r.scope ?? null]), [
      ["X", null],
      ["I", "g"],
      ["B", null],
      ["E", null],
      ["I", "p"],
      ["I", "g"]
    ])
    assert.deepEqual(records[4]!.args, { depth: 4 })
  })

  it("reads a Pipeline Graph written by older Tessera with phase M: the trace reader, the loader and the report", async () => {
    const dot = "digraph \"old\" { \"Normalize.transform\" -> \"KMeans.fitPredict\"; }"
    const old: Array<TraceEvent> = [
      { name: "Pipeline Graph", timestamp: 10, phase: "M", process_id: "hO", thread_id: "main", args: { pipeline: "old", dot } },
      {
        name: "Compute",
        timestamp: 11,
        duration: 0.5,
        phase: "X",
        process_id: "hO",
        thread_id: "worker-hO-0",
        args: { key: "('a-1', 0)", name: "a", state: "memory", size: 8, shape: [1], dtype: "float64", type: "x", dependencies: [], dependents: [] }
      },
      {
        name: "Managed Memory",
        timestamp: 11,
        phase: "I",
        scope: "g",
        process_id: "hO",
        thread_id: "worker-hO-0",
        args: { key: "('a-1', 0)", state: "memory", size: 8, tasks: 1 }
      }
    ]
    const file = join(dir, "old-TracePlugin-hO.msgpack")
    writeFileSync(file, TraceFormat.encodeRecords(old))
    assert.equal(rawRecords(file)[0]!.phase, "M")
    const events = (await FileDatabase.readPromise(file)).events
    const g = events.filter(PipelineGraph.isGraphEvent)
    assert.equal(g.length, 1)
    assert.equal(g[0]!.args.dot, dot)
    const tables = await loadPromise([file])
    assert.equal(tables.tasks.numRows, 1)
    assert.equal(tables.eventCounts["Pipeline Graph"], 1)
    const input = await loadReportInputPromise([file])
    assert.equal(input.data.dot, dot)
  })
})

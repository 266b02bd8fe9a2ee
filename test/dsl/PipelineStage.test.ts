import assert from "node:assert/strict"
import { after, describe, it } from "node:test"
import { Effect, ManagedRuntime } from "effect"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as Reductions from "../../src/dsl/Reductions.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"

const outputs = new URL("../fixtures/kernels/outputs.ts", import.meta.url).href
const sync = ManagedRuntime.make(Executor.layerSync)
const workers = ManagedRuntime.make(Executor.layerWorkers({ workers: 2 }))
after(async () => {
  await workers.dispose()
  await sync.dispose()
})

const X = CA.fromChunks("float64", [Chunk.make("float64", [2, 2], Float64Array.of(1, 2, 3, 4)), Chunk.make("float64", [1, 2], Float64Array.of(5, 6))])

/** A pipeline whose stages use mapBlocks / treeReduce without `stage:`, plus one task that names its own stage. */
const pipeline = () => {
  const p = Pipeline.make("stages", { log: () => {} })
  const doubled = p.add(Pipeline.stage("myDouble", ({ X }: { X: CA.ChunkedArray }) =>
    CA.persist(CA.mapBlocks(X, { name: "double", kernel: Kernel.ref(outputs, "double"), dtype: "float64", columns: 2 }))), { X })
  p.add(Pipeline.stage("myCount", ({ Y }: { Y: CA.ChunkedArray }) =>
    Effect.all([
      CA.computeDelayed(Reductions.count(Y)),
      CA.compute(CA.mapBlocks(Y, { name: "own", kernel: Kernel.ref(outputs, "double"), dtype: "float64", columns: 2, stage: "explicit" }))
    ])), { Y: doubled })
  return p
}

describe("Pipeline stage names", () => {
  for (const [label, rt] of [["sync runner", sync], ["worker threads", workers]] as const) {
    it(`issue 31 item 10: tasks of a pipeline stage without \`stage:\` get the stage's name in task specs and trace events (${label})`, async () => {
      const db = MemoryDatabase.make()
      const seen: Array<[string, string | undefined]> = []
      const specs: Hooks.Callbacks = { start: (g) => void seen.push(...g.specs.map((s) => [s.name ?? s.key, s.stage] as [string, string | undefined])) }
      await rt.runPromise(pipeline().run().pipe(Hooks.provide(specs), Effect.provide(Trace.layer({ database: db }))))
      const computes = db.list.filter((e) => e.name === "Compute")
      const stageOf = (name: string) => new Set(computes.filter((e) => e.args.name === name).map((e) => e.args.stage))
      assert.deepEqual(stageOf("double"), new Set(["myDouble"]))
      // Reductions leave the stage unset unless given one: the running stage's name applies
      assert.deepEqual(stageOf("moments"), new Set(["myCount"]))
      assert.deepEqual(stageOf("count"), new Set(["myCount"]))
      assert.deepEqual(stageOf("own"), new Set(["explicit"]))
      assert.ok(!computes.some((e) => e.args.stage === undefined), "no task in \"(no stage)\"")
      assert.ok(seen.some(([n, s]) => n === "double" && s === "myDouble"), "the graph's specs carry the stage")
    })
  }

  it("issue 31 item 10: outside a pipeline, tasks keep no stage; withStage leaves a graph whose tasks all have one unchanged", async () => {
    const db = MemoryDatabase.make()
    await sync.runPromise(CA.compute(CA.mapBlocks(X, { name: "double", kernel: Kernel.ref(outputs, "double"), dtype: "float64", columns: 2 })).pipe(Effect.provide(Trace.layer({ database: db }))))
    assert.ok(db.list.filter((e) => e.name === "Compute").every((e) => e.args.stage === undefined))
    const g = TaskGraph.makeUnsafe([{ key: "a", kernel: Kernel.ref(outputs, "double"), args: [], stage: "s" }])
    assert.equal(TaskGraph.withStage(g, "other"), g)
    assert.equal(TaskGraph.withStage(g, undefined), g)
    const h = TaskGraph.makeUnsafe([{ key: "a", kernel: Kernel.ref(outputs, "double"), args: [] }])
    const filled = TaskGraph.withStage(h, "other")
    assert.equal(filled.specs[0]!.stage, "other")
    assert.equal(h.specs[0]!.stage, undefined, "the graph given is not changed")
    assert.deepEqual(TaskGraph.buildSpan(filled), TaskGraph.buildSpan(h))
  })
})

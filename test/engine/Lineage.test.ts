/**
 * Lineage in the engine's records: the worker pool builds a task's record after it has
 * sent the workers their next batches (`PendingTask`), and marks only the requested
 * results of a compute with their execution keys, when it ends (`markOutputs`). These
 * tests check that both give the records the in-process executor gives, which builds
 * each record at once.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { after, describe, it } from "node:test"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as Engine from "../../src/engine/Engine.ts"
import type { Executor } from "../../src/engine/Executor.ts"
import type { DriverRecord, TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Lineage from "../../src/engine/Lineage.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { dagArb, disposeAll, k, mixGraph, runtime } from "./graphs.ts"

after(disposeAll)

/** Each task record's key, dependencies and dependents (sorted), over computes run under one lineage run. */
const lineageOf = async (workers: number, computes: ReadonlyArray<Effect.Effect<unknown, unknown, Executor>>): Promise<Map<string, string>> => {
  const records: Array<TaskRecord> = []
  const hook = Hooks.layer({ lineage: Lineage.makeRun(), task: (r) => void records.push(r), memory: () => {} })
  await runtime(workers).runPromise(Effect.gen(function*() {
    for (const c of computes) yield* c
  }).pipe(Effect.provide(hook)))
  const out = new Map<string, string>()
  for (const r of records) {
    assert.ok(!out.has(r.key), `${r.key} recorded once`)
    out.set(r.key, JSON.stringify([[...r.dependencies].sort(), [...r.dependents].sort()]))
  }
  return out
}

describe("Lineage in the engine's records", () => {
  it("the worker pool (records built after dispatch) names the same execution keys as the in-process executor, over two computes of a random DAG", async () => {
    await fc.assert(
      fc.asyncProperty(dagArb(30), async (dag) => {
        const graph = mixGraph(dag)
        const keys = dag.requested.map((i) => `t-${i}`)
        const twice = [Engine.compute(graph, { keys }), Engine.compute(graph, { keys })]
        const sync = await lineageOf(0, twice)
        const pool = await lineageOf(2, twice)
        assert.deepEqual(pool, sync)
        // the second compute's tasks are second executions, and so are their dependencies
        // and the dependents that ran (one that never ran keeps the key it would get)
        for (const [key, lists] of sync) {
          const [deps, dents] = JSON.parse(lists) as [Array<string>, Array<string>]
          const again = key.endsWith("#2")
          for (const d of deps) assert.equal(d.endsWith("#2"), again, `${key} depends on ${d}`)
          for (const d of dents) if (sync.has(d) && again) assert.ok(d.endsWith("#2"), `${key} lists ${d}`)
        }
      }),
      { numRuns: 25 }
    )
  })

  it("a requested result remembers its task when the compute ends; a later task taking it depends on that task, on both executors", async () => {
    for (const workers of [0, 2]) {
      const first = TaskGraph.makeUnsafe([
        { key: "made", kernel: k("arange"), args: [0, 4] },
        { key: "kept", kernel: k("identity"), args: [TaskGraph.ref("made")] }
      ])
      const records: Array<TaskRecord> = []
      const run = Lineage.makeRun()
      await runtime(workers).runPromise(Effect.gen(function*() {
        const out = yield* Engine.compute(first, { keys: ["kept"] })
        const kept = out.get("kept")
        assert.deepEqual(Lineage.originOf(run, kept), ["kept"])
        const second = TaskGraph.makeUnsafe([{ key: "sum", kernel: k("chunkSum"), args: [kept] }])
        yield* Engine.compute(second)
      }).pipe(Effect.provide(Hooks.layer({ lineage: run, task: (r) => void records.push(r) }))))
      const sum = records.find((r) => r.key === "sum")
      assert.deepEqual(sum?.dependencies, ["kept"], `workers ${workers}`)
    }
  })

  it("the driver's segments of each compute are keyed driver-{compute}-{i}-{activity}, tile the driver's row, and the first after a compute depends on its requested tasks", async () => {
    await fc.assert(
      fc.asyncProperty(dagArb(20), fc.integer({ min: 1, max: 3 }), async (dag, computes) => {
        const graph = mixGraph(dag)
        const keys = dag.requested.map((i) => `t-${i}`)
        const drivers: Array<DriverRecord> = []
        const tasks: Array<TaskRecord> = []
        const run = Lineage.makeRun()
        await runtime(0).runPromise(Effect.gen(function*() {
          for (let c = 0; c < computes; c++) yield* Engine.compute(graph, { keys })
        }).pipe(Effect.provide(Hooks.layer({ lineage: run, task: (r) => void tasks.push(r), driver: (d) => void drivers.push(d) }))))
        const onDriver = drivers.filter((d) => d.threadId === "driver")
        assert.equal(new Set(drivers.map((d) => d.key)).size, drivers.length, "keys unique in the run")
        let prev: DriverRecord | undefined
        for (const d of drivers) {
          assert.match(d.key, new RegExp(`^driver-${d.compute}-\\d+-${d.activity.replaceAll(" ", "_")}$`))
        }
        for (const d of onDriver) {
          if (prev !== undefined) {
            assert.equal(d.start, prev.end, `${d.key} starts where ${prev.key} ended`)
            const outputs = prev.activity === "wait"
              ? keys.map((key) => (prev!.compute === 1 ? key : `${key}#${prev!.compute}`))
              : []
            assert.deepEqual(d.dependencies, [prev.key, ...outputs], d.key)
          }
          prev = d
        }
        const waits = onDriver.filter((d) => d.activity === "wait")
        assert.equal(waits.length, computes)
        assert.equal(waits.reduce((n, d) => n + d.tasks, 0), tasks.length, "wait counts the tasks each compute ran")
      }),
      { numRuns: 25 }
    )
  })
})

/**
 * Transient records (`Callbacks.transientRecords`): when every task and memory callback
 * of a compute reads records only during the call, the engine passes one TaskRecord and
 * one MemoryRecord, refilled for each task. These tests check that what such callbacks
 * read is what new records carry, on both executors, over computes of random DAGs under
 * one lineage run, and that the engine only refills when every callback allows it.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { after, describe, it } from "node:test"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as Engine from "../../src/engine/Engine.ts"
import type { Executor } from "../../src/engine/Executor.ts"
import type { MemoryRecord, TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Lineage from "../../src/engine/Lineage.ts"
import { dagArb, disposeAll, mixGraph, runtime } from "./graphs.ts"

after(disposeAll)

/** What a record says, timings left out (they differ from run to run), absent and undefined alike. */
const taskFacts = (r: TaskRecord): string =>
  JSON.stringify([r.key, r.name, r.stage ?? null, r.host, r.threadId, r.workerId, r.nbytes, [...r.shape], r.dtype, r.type, [...r.dependencies], [...r.dependents], r.state, r.gpuTime ?? null, r.mainThread ?? null, typeof r.cpuTime, typeof r.peakMemory, typeof r.ioBytes])
const memoryFacts = (m: MemoryRecord): string =>
  JSON.stringify([m.key, m.state, m.host, m.threadId, m.workerId, m.bytes, m.chunks, m.device ?? null, typeof m.timestamp])

interface Seen {
  readonly tasks: Array<string>
  readonly memory: Array<string>
  readonly taskObjects: Set<TaskRecord>
  readonly memoryObjects: Set<MemoryRecord>
}

/** Runs `computes` under one lineage run with a callback that copies what it reads, `transientRecords` or not. */
const seen = async (
  workers: number,
  transient: boolean,
  computes: ReadonlyArray<Effect.Effect<unknown, unknown, Executor>>,
  also: ReadonlyArray<Hooks.Callbacks> = []
): Promise<Seen> => {
  const s: Seen = { tasks: [], memory: [], taskObjects: new Set(), memoryObjects: new Set() }
  const cb: Hooks.Callbacks = {
    lineage: Lineage.makeRun(),
    transientRecords: transient,
    task: (r) => {
      s.tasks.push(taskFacts(r))
      s.taskObjects.add(r)
    },
    memory: (m) => {
      s.memory.push(memoryFacts(m))
      s.memoryObjects.add(m)
    }
  }
  await runtime(workers).runPromise(Effect.gen(function*() {
    for (const c of computes) yield* c
  }).pipe(Effect.provide(Hooks.layer(cb, ...also))))
  return s
}

describe("Transient records", () => {
  it("a transientRecords callback reads, in order, what new records carry (in-process executor, two computes of a random DAG)", async () => {
    await fc.assert(
      fc.asyncProperty(dagArb(30), async (dag) => {
        const graph = mixGraph(dag)
        const keys = dag.requested.map((i) => `t-${i}`)
        const twice = [Engine.compute(graph, { keys }), Engine.compute(graph, { keys })]
        const fresh = await seen(0, false, twice)
        const refilled = await seen(0, true, twice)
        assert.deepEqual(refilled.tasks, fresh.tasks)
        assert.deepEqual(refilled.memory, fresh.memory)
        // the mechanism: one object of each kind a compute, against one a record
        assert.ok(refilled.taskObjects.size <= 2 && refilled.memoryObjects.size <= 2)
        assert.equal(fresh.taskObjects.size, fresh.tasks.length)
      }),
      { numRuns: 30 }
    )
  })

  it("on the worker pool (records queued while a batch is handled) the same tasks are recorded with the same keys and lists", async () => {
    await fc.assert(
      fc.asyncProperty(dagArb(30), async (dag) => {
        const graph = mixGraph(dag)
        const keys = dag.requested.map((i) => `t-${i}`)
        const twice = [Engine.compute(graph, { keys }), Engine.compute(graph, { keys })]
        // which worker runs a task varies from run to run: compare what does not depend on it
        const lists = (xs: Array<string>) => xs.map((x) => { const a = JSON.parse(x) as Array<unknown>; return JSON.stringify([a[0], a[1], a[6], a[10], a[11], a[12]]) }).sort()
        const byKey = (xs: Array<string>) => xs.map((x) => { const a = JSON.parse(x) as Array<unknown>; return JSON.stringify([a[0], a[1]]) }).sort()
        const fresh = await seen(2, false, twice)
        const refilled = await seen(2, true, twice)
        assert.deepEqual(lists(refilled.tasks), lists(fresh.tasks))
        assert.deepEqual(byKey(refilled.memory), byKey(fresh.memory))
        assert.ok(refilled.taskObjects.size <= 2)
      }),
      { numRuns: 15 }
    )
  })

  it("records are new objects as soon as one task or memory callback of the compute does not say transientRecords", async () => {
    const dag = { deps: [[], [0], [0, 1]], async: [false, true, false], requested: [2] }
    const graph = mixGraph(dag)
    const keeper: Array<TaskRecord> = []
    const s = await seen(0, true, [Engine.compute(graph, { keys: ["t-2"] })], [{ task: (r) => void keeper.push(r) }])
    assert.equal(s.taskObjects.size, 3)
    assert.deepEqual(keeper.map((r) => r.key), ["t-0", "t-1", "t-2"])
    assert.deepEqual(keeper.map((r) => [...r.dependencies]), [[], ["t-0"], ["t-0", "t-1"]])
  })
})

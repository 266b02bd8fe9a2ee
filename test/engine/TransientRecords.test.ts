/**
 * Records a hook may keep: every TaskRecord and MemoryRecord a `task` or `memory` hook
 * receives is a new object with arrays of its own, also when the hook (or every hook of
 * the compute) sets the deprecated `Callbacks.transientRecords`, which once let the engine
 * refill one record per compute and so silently changed the records a hook had kept.
 * These tests keep every record, read them after the computes, and compare with what a
 * second hook copied during each call, over random DAGs, on both executors.
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

/** What a record says, absent and undefined alike (timings included: both hooks see one run). */
const taskFacts = (r: TaskRecord): string =>
  JSON.stringify([r.key, r.name, r.stage ?? null, r.host, r.threadId, r.workerId, r.nbytes, [...r.shape], r.dtype, r.type, [...r.dependencies], [...r.dependents], r.state, r.gpuTime ?? null, r.mainThread ?? null, r.cpuTime, r.peakMemory ?? null, r.ioBytes ?? null, r.phases])
const memoryFacts = (m: MemoryRecord): string =>
  JSON.stringify([m.key, m.state, m.host, m.threadId, m.workerId, m.bytes, m.chunks, m.device ?? null, m.timestamp])

interface Seen {
  /** what the copying hook read during each call */
  readonly copied: { readonly tasks: Array<string>; readonly memory: Array<string> }
  /** the records the keeping hook kept, as they read after the computes */
  readonly kept: { readonly tasks: Array<TaskRecord>; readonly memory: Array<MemoryRecord> }
}

/**
 * Runs `computes` under one lineage run with two hooks: one that keeps every record it is
 * given (saying `transientRecords: true`, as a careless hook would), one that copies what
 * it reads during the call; `transient` sets the flag on the copying hook too.
 */
const seen = async (
  workers: number,
  transient: boolean,
  computes: ReadonlyArray<Effect.Effect<unknown, unknown, Executor>>
): Promise<Seen> => {
  const s: Seen = { copied: { tasks: [], memory: [] }, kept: { tasks: [], memory: [] } }
  const keeper: Hooks.Callbacks = {
    lineage: Lineage.makeRun(),
    transientRecords: true,
    task: (r) => void s.kept.tasks.push(r),
    memory: (m) => void s.kept.memory.push(m)
  }
  const copier: Hooks.Callbacks = {
    transientRecords: transient,
    task: (r) => void s.copied.tasks.push(taskFacts(r)),
    memory: (m) => void s.copied.memory.push(memoryFacts(m))
  }
  await runtime(workers).runPromise(Effect.gen(function*() {
    for (const c of computes) yield* c
  }).pipe(Effect.provide(Hooks.layer(keeper, copier))))
  return s
}

/** The kept records read now are what was read in the calls, and no two share an object. */
const assertKeptIntact = (s: Seen): void => {
  assert.deepEqual(s.kept.tasks.map(taskFacts), s.copied.tasks)
  assert.deepEqual(s.kept.memory.map(memoryFacts), s.copied.memory)
  const distinct = <A>(xs: ReadonlyArray<A>) => new Set(xs).size === xs.length
  assert.ok(distinct(s.kept.tasks), "a TaskRecord object was given twice")
  assert.ok(distinct(s.kept.memory), "a MemoryRecord object was given twice")
  assert.ok(distinct(s.kept.tasks.map((r) => r.phases)), "two TaskRecords share their phases")
  assert.ok(distinct(s.kept.tasks.map((r) => r.dependencies)), "two TaskRecords share a dependency list")
  assert.ok(distinct(s.kept.tasks.map((r) => r.dependents)), "two TaskRecords share a dependent list")
}

describe("Records a hook may keep", () => {
  for (const transient of [true, false]) {
    it(`in-process executor: kept records read after two computes of a random DAG what was read in each call (the other hook's transientRecords ${transient})`, async () => {
      await fc.assert(
        fc.asyncProperty(dagArb(30), async (dag) => {
          const graph = mixGraph(dag)
          const keys = dag.requested.map((i) => `t-${i}`)
          const s = await seen(0, transient, [Engine.compute(graph, { keys }), Engine.compute(graph, { keys })])
          assert.ok(s.kept.tasks.length > 0)
          assertKeptIntact(s)
        }),
        { numRuns: 20 }
      )
    })
  }

  it("worker pool (records queued while a batch is handled): kept records read after the computes what was read in each call", async () => {
    await fc.assert(
      fc.asyncProperty(dagArb(30), async (dag) => {
        const graph = mixGraph(dag)
        const keys = dag.requested.map((i) => `t-${i}`)
        const s = await seen(2, true, [Engine.compute(graph, { keys }), Engine.compute(graph, { keys })])
        assertKeptIntact(s)
        // every needed task recorded once a compute, under its own execution key
        assert.equal(new Set(s.kept.tasks.map((r) => r.key)).size, s.kept.tasks.length)
      }),
      { numRuns: 10 }
    )
  })

  it("a kept record of a small DAG names its own task, dependencies and dependents after the compute", async () => {
    const dag = { deps: [[], [0], [0, 1]], async: [false, true, false], requested: [2] }
    const s = await seen(0, true, [Engine.compute(mixGraph(dag), { keys: ["t-2"] })])
    assert.deepEqual(s.kept.tasks.map((r) => r.key), ["t-0", "t-1", "t-2"])
    assert.deepEqual(s.kept.tasks.map((r) => [...r.dependencies]), [[], ["t-0"], ["t-0", "t-1"]])
    assert.deepEqual(s.kept.tasks.map((r) => [...r.dependents]), [["t-1", "t-2"], ["t-2"], []])
  })
})

/**
 * A cluster worker's plugin runner (src/engine/internal/cluster/pluginRunner.ts), without
 * processes: a batch's records (the pool's, kept as timing rows: batchTimings.ts) reach the
 * worker plugins as the scheduler would have made them — rows, clock, execution keys,
 * lineage, stage — and a plugin that reads records only during the call
 * (`transientRecords`) reads the same records as one that keeps them, which gets new
 * objects with unset optional fields absent.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import { describeResult } from "../../src/engine/internal/kernels.ts"
import type { RunTrace } from "../../src/engine/internal/cluster/protocol.ts"
import { BatchTimings } from "../../src/engine/internal/cluster/batchTimings.ts"
import { PluginRunner } from "../../src/engine/internal/cluster/pluginRunner.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { seen } from "../fixtures/plugins/recording.ts"

const mod = new URL("../fixtures/plugins/recording.ts", import.meta.url).href
let ids = 0

interface Task {
  readonly thread: number
  readonly t: number
  readonly cpu: number
  readonly peak: number | undefined
  readonly stage: string
  readonly size: number
  readonly dents: number
}

const taskArb: fc.Arbitrary<Task> = fc.record({
  thread: fc.integer({ min: 0, max: 3 }),
  t: fc.double({ min: 1e9, max: 2e9, noNaN: true }),
  cpu: fc.double({ min: 0, max: 1, noNaN: true }),
  peak: fc.option(fc.nat(), { nil: undefined }),
  stage: fc.constantFrom("", "Stage.one"),
  size: fc.integer({ min: 0, max: 64 }),
  dents: fc.integer({ min: 0, max: 2 })
})

/** Runs one batch of `tasks` through a runner with the plugins `factories` (then releases `released`); what each plugin saw. */
const runBatch = async (factories: ReadonlyArray<"copying" | "keeping">, tasks: ReadonlyArray<Task>, released: ReadonlyArray<number>) => {
  const runner = new PluginRunner("tessera-worker@127.0.0.1:1", 0.25, "hostA")
  const pluginIds = factories.map((name) => ({ id: `p${ids++}`, name }))
  await runner.apply({
    start: pluginIds.map(({ id, name }) => ({ plugin: { id, module: mod, name, options: { id } }, monitor: false, truncate: false })),
    close: [],
    offset: 0.5
  })
  const graph = TaskGraph.makeUnsafe(tasks.map((_, i) => ({ key: `t-${i}`, kernel: { module: mod, name: "none" }, args: [] })))
  const trace: RunTrace = {
    plugins: pluginIds.map((p) => p.id),
    index: 2,
    offset: 0.5,
    tasks: tasks.map((t, i) => [`t-${i}#2`, i > 0 ? [`t-${i - 1}#2`] : [], Array.from({ length: t.dents }, (_, d) => `u-${i}-${d}`), t.stage] as const),
    inputs: [],
    rows: [],
    peers: []
  }
  const cols = new BatchTimings(graph)
  runner.begin(trace)
  tasks.forEach((t, i) => {
    const r: TaskRecord = {
      key: `t-${i}`,
      name: graph.names[i]!,
      host: "hostA",
      workerId: t.thread,
      threadId: `worker-hostA-${t.thread}`,
      phases: { gather: [t.t, t.t + 1], compute: [t.t + 1, t.t + 2], transfer: [t.t + 2, t.t + 3] },
      cpuTime: t.cpu,
      ...(t.peak !== undefined ? { peakMemory: t.peak } : {}),
      ioBytes: 0,
      nbytes: t.size * 8,
      shape: [t.size],
      dtype: "float64",
      type: "Float64Array",
      dependencies: [],
      dependents: [],
      state: "memory"
    }
    cols.callbacks.task!(r)
  })
  runner.batch(trace, cols, tasks.map((t) => describeResult(new Float64Array(t.size))))
  // the records reach the plugins later, but before anything the runner is asked next
  assert.equal(pluginIds.every(({ id }) => seen.get(id)!.tasks.length === 0), true)
  runner.release(released.filter((i) => i < tasks.length).map((i) => `t-${i}`))
  await runner.closeAll()
  return pluginIds.map(({ id }) => seen.get(id)!)
}

describe("PluginRunner", () => {
  it("gives a transient plugin the records a keeping plugin gets; the keeping one new objects, unset fields absent", async () => {
    await fc.assert(fc.asyncProperty(fc.array(taskArb, { minLength: 1, maxLength: 10 }), fc.array(fc.nat({ max: 9 })), async (tasks, released) => {
      const [transient] = await runBatch(["copying"], tasks, released)
      const [kept] = await runBatch(["keeping"], tasks, released)
      const both = await runBatch(["copying", "keeping"], tasks, released)
      assert.deepEqual(transient!.tasks, kept!.tasks)
      assert.deepEqual(transient!.memory, kept!.memory)
      for (const s of both) {
        assert.deepEqual(s.tasks, kept!.tasks)
        assert.deepEqual(s.memory, kept!.memory)
      }
      const objects = kept!.objects
      assert.equal(new Set(objects).size, objects.length)
      const taskObjects = objects.filter((o): o is TaskRecord => "phases" in o)
      taskObjects.forEach((r, i) => {
        assert.equal("stage" in r, tasks[i]!.stage !== "")
        assert.equal("peakMemory" in r, tasks[i]!.peak !== undefined)
        assert.equal("gpuTime" in r, false)
        assert.equal("mainThread" in r, false)
      })
    }), { numRuns: 25 })
  })

  it("puts each record on the worker's row, the scheduler's clock and the run's keys", async () => {
    const t: Task = { thread: 1, t: 1.5e9, cpu: 0.125, peak: 1024, stage: "Stage.one", size: 4, dents: 1 }
    const [s] = await runBatch(["keeping"], [t, { ...t, thread: 0, stage: "" }], [0])
    const [r0, r1] = s!.objects.filter((o): o is TaskRecord => "phases" in o)
    // row = index × 16 + thread; times + clockShift (0.25) − offset (0.5)
    assert.equal(r0!.workerId, 33)
    // issue 31 item 14: the row names the process and the address it is reached at
    assert.equal(r0!.threadId, `worker-hostA-127.0.0.1:1-pid${process.pid}-33`)
    assert.equal(r0!.key, "t-0#2")
    assert.equal(r0!.phases.gather[0], 1.5e9 - 0.25)
    assert.equal(r0!.phases.transfer[1], 1.5e9 + 3 - 0.25)
    assert.equal(r0!.cpuTime, 0.125)
    assert.equal(r0!.stage, "Stage.one")
    assert.deepEqual(r0!.dependents, ["u-0-0"])
    assert.deepEqual(r1!.dependencies, ["t-0#2"])
    assert.equal(r1!.workerId, 32)
    // held: t-0 (32 bytes) on row 33, t-1 on row 32; t-0 released
    assert.deepEqual(s!.memory.map((m) => JSON.parse(m).slice(0, 2).concat(JSON.parse(m)[5])), [
      ["t-0#2", "memory", 32],
      ["t-1#2", "memory", 32],
      ["t-0#2", "released", 0]
    ])
  })

  it("gives a batch's records on the next turn of the event loop, or first thing when asked anything else", async () => {
    const runner = new PluginRunner("tessera-worker@127.0.0.1:1", 0, "hostA")
    const id = `p${ids++}`
    await runner.apply({ start: [{ plugin: { id, module: mod, name: "copying", options: { id } }, monitor: false, truncate: false }], close: [], offset: 0 })
    const graph = TaskGraph.makeUnsafe([{ key: "a", kernel: { module: mod, name: "none" }, args: [] }])
    const trace: RunTrace = { plugins: [id], index: 0, offset: 0, tasks: [["a", [], [], ""]], inputs: [], rows: [], peers: [] }
    const batch = () => {
      const cols = new BatchTimings(graph)
      cols.callbacks.task!({
        key: "a", name: "a", host: "hostA", workerId: 0, threadId: "worker-hostA-0",
        phases: { gather: [1, 2], compute: [2, 3], transfer: [3, 4] }, cpuTime: 0,
        nbytes: 8, shape: [1], dtype: "float64", type: "Float64Array", dependencies: [], dependents: [], state: "memory"
      })
      runner.batch(trace, cols, [describeResult(new Float64Array(1))])
    }
    batch()
    const s = seen.get(id)!
    assert.equal(s.tasks.length, 0)
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(s.tasks.length, 1)
    // queued, then released before the event loop turns: the memory record comes first
    batch()
    runner.release(["a"])
    assert.deepEqual(s.memory.map((m) => JSON.parse(m)[1]), ["memory", "memory", "released"])
    await runner.closeAll()
  })
})

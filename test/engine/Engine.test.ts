import assert from "node:assert/strict"
import { after, describe, it } from "node:test"
import { Cause, Effect, Exit, Fiber } from "effect"
import * as fc from "fast-check"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import type { MemoryRecord, TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import type { SchedulerState } from "../../src/engine/State.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { dagArb, disposeAll, k, neededOf, reference, runtime, toGraph } from "./graphs.ts"

after(disposeAll)

const computeError = (workers: number, g: TaskGraph.TaskGraph, keys?: ReadonlyArray<string>) =>
  runtime(workers).runPromise(Effect.flip(Engine.compute(g, keys ? { keys } : {})))

/** A callback that checks hook order and that released results are never read. */
const orderChecker = () => {
  const events: Array<string> = []
  const problems: Array<string> = []
  const pending = new Set<string>()
  const cb: Hooks.Callbacks = {
    start: () => void events.push("start"),
    startState: () => void events.push("startState"),
    pretask: (key, graph, state) => {
      events.push(`pre:${key}`)
      if (pending.has(key)) problems.push(`pretask twice: ${key}`)
      pending.add(key)
      // every input of `key` must still be held (not released) when it is dispatched
      for (const d of TaskGraph.dependenciesOf(graph, key)) {
        const i = graph.index.get(d)!
        if (state.released[i]) problems.push(`${key} dispatched after its input ${d} was released`)
        if (!state.finished[i]) problems.push(`${key} dispatched before its input ${d} finished`)
      }
    },
    posttask: (key) => {
      events.push(`post:${key}`)
      if (!pending.delete(key)) problems.push(`posttask without pretask: ${key}`)
    },
    finish: (_g, _s, failed) => void events.push(failed ? "finish:failed" : "finish")
  }
  return { cb, events, problems, pending }
}

const executors = [["sync executor", 0], ["worker executor", -1]] as const

for (const [label, kind] of executors) {
  describe(`Engine (${label})`, () => {
    const workersArb = kind === 0 ? fc.constant(0) : fc.integer({ min: 1, max: 3 })

    it("computes the same results as a sequential reference, running each task exactly once", async () => {
      await fc.assert(
        fc.asyncProperty(dagArb(), workersArb, async (dag, workers) => {
          const counter = new Int32Array(new SharedArrayBuffer(4 * dag.deps.length))
          const g = toGraph(dag, counter)
          const keys = dag.requested.map((i) => `t-${i}`)
          const out = await runtime(workers).runPromise(Engine.compute(g, { keys }))
          const ref = reference(dag)
          assert.deepEqual([...out.keys()], keys)
          for (const i of dag.requested) assert.equal(out.get(`t-${i}`), ref[i])
          const need = neededOf(dag)
          for (let i = 0; i < dag.deps.length; i++) assert.equal(counter[i], need.has(i) ? 1 : 0, `runs of t-${i}`)
        }),
        { numRuns: kind === 0 ? 100 : 40 }
      )
    })

    it("fires hooks in order and never reads a released result", async () => {
      await fc.assert(
        fc.asyncProperty(dagArb(30), workersArb, async (dag, workers) => {
          const counter = new Int32Array(new SharedArrayBuffer(4 * dag.deps.length))
          const g = toGraph(dag, counter)
          const { cb, events, problems, pending } = orderChecker()
          let final: SchedulerState | undefined
          const keys = dag.requested.map((i) => `t-${i}`)
          await runtime(workers).runPromise(Engine.compute(g, { keys, callbacks: [{ ...cb, finish: (gr, s, f) => { final = s; cb.finish!(gr, s, f) } }] }))
          assert.deepEqual(problems, [])
          assert.equal(pending.size, 0)
          assert.deepEqual(events.slice(0, 2), ["start", "startState"])
          assert.equal(events.at(-1), "finish")
          assert.equal(events.filter((e) => e.startsWith("pre:")).length, neededOf(dag).size)
          // only requested results remain held at the end
          const held = g.keys.filter((_, i) => final!.finished[i] && !final!.released[i])
          assert.deepEqual(held.sort(), [...new Set(keys)].sort())
        }),
        { numRuns: kind === 0 ? 60 : 25 }
      )
    })

    it("delivers task and memory records in a consistent order, all before finish", async () => {
      // The pool holds a batch's records back until it has sent the next batches; this
      // checks what a consumer sees: every needed task's record once, after its inputs',
      // before finish; per worker, each memory record's bytes and chunks are the running
      // sums of the results it holds, and a result is released only after it was held.
      await fc.assert(
        fc.asyncProperty(dagArb(30), workersArb, async (dag, workers) => {
          const counter = new Int32Array(new SharedArrayBuffer(4 * dag.deps.length))
          const g = toGraph(dag, counter)
          const seen: Array<string> = []
          const tasks = new Map<string, TaskRecord>()
          const held = new Map<number, Map<string, number>>()
          const problems: Array<string> = []
          const keys = dag.requested.map((i) => `t-${i}`)
          await runtime(workers).runPromise(Engine.compute(g, {
            keys,
            callbacks: [{
              task: (r) => {
                seen.push(`task:${r.key}`)
                for (const d of r.dependencies) if (!tasks.has(d)) problems.push(`${r.key} before its input ${d}`)
                if (tasks.has(r.key)) problems.push(`${r.key} recorded twice`)
                tasks.set(r.key, r)
              },
              memory: (m) => {
                seen.push(`memory:${m.key}`)
                const mine = held.get(m.workerId) ?? new Map<string, number>()
                held.set(m.workerId, mine)
                if (m.state === "memory") {
                  const t = tasks.get(m.key)
                  if (t === undefined) problems.push(`${m.key} held before its task record`)
                  mine.set(m.key, t?.nbytes ?? 0)
                } else if (!mine.delete(m.key)) problems.push(`${m.key} released by worker ${m.workerId} without being held there`)
                let bytes = 0
                for (const b of mine.values()) bytes += b
                if (m.bytes !== bytes) problems.push(`${m.key}: bytes ${m.bytes}, running sum ${bytes}`)
                if (m.chunks !== 0) problems.push(`${m.key}: ${m.chunks} chunks held, none expected (numbers only)`)
              },
              finish: () => void seen.push("finish")
            }]
          }))
          assert.deepEqual(problems, [])
          assert.equal(seen.at(-1), "finish")
          assert.equal(seen.filter((e) => e === "finish").length, 1)
          assert.deepEqual([...tasks.keys()].sort(), [...neededOf(dag)].map((i) => `t-${i}`).sort())
        }),
        { numRuns: kind === 0 ? 40 : 25 }
      )
    })

    const W = kind === 0 ? 0 : 2

    it("fails with KernelFailed carrying the key, kernel name and stack, and stays usable", async () => {
      const g = TaskGraph.makeUnsafe([
        { key: "a", kernel: k("constant"), args: [1] },
        { key: "bad", kernel: k("boom"), args: ["xyz", TaskGraph.ref("a")] }
      ])
      const e = await computeError(W, g)
      assert.equal(e._tag, "ComputeError")
      const r = e.reason as EngineError.KernelFailed
      assert.equal(r._tag, "KernelFailed")
      assert.equal(r.key, "bad")
      assert.match(r.kernel, /^boom /)
      assert.match(r.stack, /boom: xyz/)
      assert.match(r.stack, /basic\.ts/)
      assert.match(e.message, /task "bad".*boom.*xyz/)
      const ok = TaskGraph.makeUnsafe([{ key: "x", kernel: k("constant"), args: [7] }])
      assert.equal((await runtime(W).runPromise(Engine.compute(ok))).get("x"), 7)
    })

    it("fails with KernelNotFound naming module and kernel for an unknown export", async () => {
      const g = TaskGraph.makeUnsafe([{ key: "t", kernel: k("nope"), args: [] }])
      const e = await computeError(W, g)
      const r = e.reason as EngineError.KernelNotFound
      assert.equal(r._tag, "KernelNotFound")
      assert.equal(r.name, "nope")
      assert.equal(r.module, k("nope").module)
      assert.equal(r.key, "t")
      assert.match(e.message, /"nope".*basic\.ts.*no such export/)
      const g2 = TaskGraph.makeUnsafe([{ key: "t2", kernel: k("notAFunction"), args: [] }])
      assert.match((await computeError(W, g2)).message, /not a function/)
    })

    it("fails with KernelNotFound when the module fails to import", async () => {
      const broken = Kernel.ref(new URL("../fixtures/kernels/broken.ts", import.meta.url).href, "x")
      const missing = Kernel.ref(new URL("../fixtures/kernels/does-not-exist.ts", import.meta.url).href, "y")
      for (const kernel of [broken, missing]) {
        const e = await computeError(W, TaskGraph.makeUnsafe([{ key: "t", kernel, args: [] }]))
        const r = e.reason as EngineError.KernelNotFound
        assert.equal(r._tag, "KernelNotFound")
        assert.equal(r.module, kernel.module)
        assert.equal(r.name, kernel.name)
        assert.match(e.message, /failed to import/)
      }
    })

    it("fails with a GraphError for a requested key that is not in the graph", async () => {
      const g = TaskGraph.makeUnsafe([{ key: "a", kernel: k("constant"), args: [1] }])
      const e = await computeError(W, g, ["zz"])
      assert.equal(e._tag, "GraphError")
      assert.equal(e.reason._tag, "MissingDependency")
    })

    it("runs finish with failed=true when a task fails, only for callbacks whose start ran", async () => {
      const seen: Array<string> = []
      const g = TaskGraph.makeUnsafe([{ key: "bad", kernel: k("boom"), args: ["f"] }])
      await runtime(W).runPromise(Effect.flip(Engine.compute(g, {
        callbacks: [{ start: () => void seen.push("start"), finish: (_g, _s, failed) => void seen.push(`finish:${failed}`) }]
      })))
      assert.deepEqual(seen, ["start", "finish:true"])
    })

    it("calls globally registered callbacks until unregistered", async () => {
      const seen: Array<string> = []
      const unregister = Hooks.register({ posttask: (key) => void seen.push(key) })
      const g = TaskGraph.makeUnsafe([{ key: "a", kernel: k("constant"), args: [1] }])
      await runtime(W).runPromise(Engine.compute(g))
      unregister()
      await runtime(W).runPromise(Engine.compute(g))
      assert.deepEqual(seen, ["a"])
    })

    it("moves chunk results into shared memory and passes them on without copies", async () => {
      const g = TaskGraph.makeUnsafe([
        { key: "c", kernel: k("arange"), args: [1, 1000] },
        { key: "shared", kernel: k("isSharedChunk"), args: [TaskGraph.ref("c")] },
        { key: "s", kernel: k("chunkSum"), args: [TaskGraph.ref("c")] }
      ])
      const out = await runtime(W).runPromise(Engine.compute(g, { keys: ["c", "shared", "s"] }))
      const c = out.get("c") as Chunk.Chunk
      assert.ok(Chunk.isChunk(c) && Chunk.isShared(c.data))
      assert.equal(out.get("shared"), true)
      assert.equal(out.get("s"), 500500)
    })

    it("emits task and memory records with phases on one epoch clock", async () => {
      const tasks: Array<TaskRecord> = []
      const mem: Array<MemoryRecord> = []
      const t0 = Date.now() / 1000
      const g = TaskGraph.makeUnsafe([
        { key: "c-1", kernel: k("arange"), args: [0, 100] },
        { key: "s-1", kernel: k("chunkSum"), args: [TaskGraph.ref("c-1")], stage: "reduce" }
      ])
      await runtime(W).runPromise(Engine.compute(g, { callbacks: [{ task: (r) => void tasks.push(r), memory: (r) => void mem.push(r) }] }))
      const t1 = Date.now() / 1000
      assert.deepEqual(tasks.map((r) => r.key), ["c-1", "s-1"])
      const [c, s] = tasks as [TaskRecord, TaskRecord]
      assert.equal(c.type, "Chunk")
      assert.equal(c.nbytes, 800)
      assert.equal(c.dtype, "float64")
      assert.deepEqual(c.shape, [100])
      assert.deepEqual(c.dependents, ["s-1"])
      assert.deepEqual(s.dependencies, ["c-1"])
      assert.equal(s.stage, "reduce")
      assert.equal(s.name, "s")
      assert.match(c.threadId, /^worker-.+-\d+$/)
      for (const r of tasks) {
        const ph = [r.phases.gather, r.phases.compute, r.phases.transfer]
        for (const [a, b] of ph) assert.ok(t0 - 0.01 <= a && a <= b && b <= t1 + 0.01, `${a} ${b} within [${t0}, ${t1}]`)
        assert.ok(r.phases.gather[1] <= r.phases.compute[0] && r.phases.compute[1] <= r.phases.transfer[0])
        assert.ok(r.cpuTime >= 0)
      }
      const byKey = mem.map((m) => `${m.key}:${m.state}`)
      assert.deepEqual(byKey, ["c-1:memory", "s-1:memory", "c-1:released"])
      const afterChunk = mem[0]!
      assert.equal(afterChunk.bytes, 800)
      assert.equal(afterChunk.chunks, 1)
    })

    it("accounts an object result's bytes (the sum of its values) in task and memory records", async () => {
      const tasks: Array<TaskRecord> = []
      const mem: Array<MemoryRecord> = []
      const g = TaskGraph.makeUnsafe([{ key: "p-1", kernel: k("partial"), args: [] }])
      await runtime(W).runPromise(Engine.compute(g, { callbacks: [{ task: (r) => void tasks.push(r), memory: (r) => void mem.push(r) }] }))
      assert.equal(tasks[0]!.nbytes, 88)
      assert.equal(tasks[0]!.type, "Object")
      assert.deepEqual(mem.map((m) => [m.key, m.state, m.bytes, m.chunks]), [["p-1", "memory", 88, 2]])
    })

    it("computes an empty graph to an empty map, calling start and finish", async () => {
      const seen: Array<string> = []
      const out = await runtime(W).runPromise(Engine.compute(TaskGraph.makeUnsafe([]), {
        callbacks: [{ start: () => void seen.push("start"), finish: (_g, _s, failed) => void seen.push(`finish:${failed}`) }]
      }))
      assert.equal(out.size, 0)
      assert.deepEqual(seen, ["start", "finish:false"])
    })

    it("dies with the hook's error when a posttask hook throws, and stays usable", async () => {
      const g = TaskGraph.makeUnsafe([{ key: "a", kernel: k("constant"), args: [1] }, { key: "b", kernel: k("sum"), args: [TaskGraph.ref("a")] }])
      const failed: Array<boolean> = []
      const exit = await runtime(W).runPromiseExit(Engine.compute(g, {
        callbacks: [{ posttask: () => { throw new Error("hook broke") }, finish: (_g, _s, f) => void failed.push(f) }]
      }))
      assert.ok(Exit.isFailure(exit))
      assert.match(String(Cause.squash(exit.cause)), /hook broke/)
      assert.deepEqual(failed, [true])
      assert.equal((await runtime(W).runPromise(Engine.compute(g))).get("b"), 1)
    })

    it("registers callbacks for the scope of Hooks.layer", async () => {
      const seen: Array<string> = []
      const g = TaskGraph.makeUnsafe([{ key: "a", kernel: k("constant"), args: [1] }])
      await runtime(W).runPromise(Engine.compute(g).pipe(Effect.provide(Hooks.layer({ pretask: (key) => void seen.push(key) }))))
      await runtime(W).runPromise(Engine.compute(g))
      assert.deepEqual(seen, ["a"])
    })

    it("interrupting a compute stops dispatch and leaves no worker busy", async () => {
      const specs: Array<TaskGraph.TaskSpec> = []
      for (let i = 0; i < 200; i++) specs.push({ key: `spin-${i}`, kernel: k("spin"), args: [5, i] })
      const g = TaskGraph.makeUnsafe(specs)
      const seen: Array<string> = []
      let posts = 0
      const rt = runtime(W)
      const busy = await rt.runPromise(Effect.gen(function*() {
        const executor = yield* Executor.Executor
        const fiber = yield* Effect.forkChild(Engine.compute(g, {
          callbacks: [{ posttask: () => void posts++, finish: (_g, _s, failed) => void seen.push(`finish:${failed}`) }]
        }))
        // interrupt mid-compute: once tasks are finishing (a fixed delay could land before
        // the compute started on a loaded machine, where nothing is left to interrupt)
        for (let waited = 0; posts === 0 && waited < 10_000; waited += 5) yield* Effect.sleep("5 millis")
        yield* Effect.sleep("20 millis")
        yield* Fiber.interrupt(fiber)
        return executor.busyWorkers()
      }))
      assert.equal(busy, 0)
      assert.deepEqual(seen, ["finish:true"])
      const postsAtInterrupt = posts
      assert.ok(postsAtInterrupt < 200, `${postsAtInterrupt} tasks finished before the interrupt`)
      await new Promise((r) => setTimeout(r, 50))
      assert.equal(posts, postsAtInterrupt)
      const ok = TaskGraph.makeUnsafe([{ key: "x", kernel: k("constant"), args: [3] }])
      assert.equal((await rt.runPromise(Engine.compute(ok))).get("x"), 3)
    })

    if (kind !== 0) {
      it("fails the task, not the pool, when an argument or a result cannot cross threads", async () => {
        const badArg = TaskGraph.makeUnsafe([{ key: "f-arg", kernel: k("callIt"), args: [() => 1] }])
        const e1 = await computeError(W, badArg)
        // its own error kind, raised before dispatch: the kernel never ran (issue 31 item 9)
        assert.equal(e1.reason._tag, "ArgumentNotSendable")
        assert.equal((e1.reason as EngineError.ArgumentNotSendable).key, "f-arg")
        assert.match(e1.message, /argument 1 of kernel callIt .*\(a function\) cannot be sent/)
        assert.doesNotMatch(e1.message, /threw/)
        const badResult = TaskGraph.makeUnsafe([
          { key: "fine", kernel: k("constant"), args: [1] },
          { key: "f-res", kernel: k("returnsFunction"), args: [] }
        ])
        const e2 = await computeError(W, badResult)
        assert.equal((e2.reason as EngineError.KernelFailed).key, "f-res")
        assert.match(e2.message, /cannot be sent/)
        const ok = TaskGraph.makeUnsafe([{ key: "x", kernel: k("sum"), args: [1, 2] }])
        assert.equal((await runtime(W).runPromise(Engine.compute(ok))).get("x"), 3)
      })

      it("interrupting terminates workers stuck in a long kernel, promptly", async () => {
        const g = TaskGraph.makeUnsafe([
          { key: "long-1", kernel: k("spin"), args: [3000, 1] },
          { key: "long-2", kernel: k("spin"), args: [3000, 2] }
        ])
        const rt = runtime(W)
        const t0 = performance.now()
        const busy = await rt.runPromise(Effect.gen(function*() {
          const executor = yield* Executor.Executor
          const fiber = yield* Effect.forkChild(Engine.compute(g))
          yield* Effect.sleep("50 millis")
          yield* Fiber.interrupt(fiber)
          return executor.busyWorkers()
        }))
        assert.equal(busy, 0)
        assert.ok(performance.now() - t0 < 1500, `interrupt took ${performance.now() - t0} ms`)
        const ok = TaskGraph.makeUnsafe([{ key: "x", kernel: k("constant"), args: [4] }])
        assert.equal((await rt.runPromise(Engine.compute(ok))).get("x"), 4)
      })
    }
  })
}

describe("Engine.computePromise", () => {
  it("computes without Effect, in-process and on workers", async () => {
    const g = TaskGraph.makeUnsafe([
      { key: "a", kernel: k("constant"), args: [2] },
      { key: "b", kernel: k("sum"), args: [TaskGraph.ref("a"), 3] }
    ])
    assert.equal((await Engine.computePromise(g, { workers: 0 })).get("b"), 5)
    assert.equal((await Engine.computePromise(g, { workers: 1 })).get("b"), 5)
  })

  it("rejects with the ComputeError", async () => {
    const g = TaskGraph.makeUnsafe([{ key: "bad", kernel: k("boom"), args: ["p"] }])
    await assert.rejects(Engine.computePromise(g, { workers: 0 }), (e: unknown) => {
      const err = e as EngineError.ComputeError
      return err._tag === "ComputeError" && err.reason._tag === "KernelFailed"
    })
  })
})

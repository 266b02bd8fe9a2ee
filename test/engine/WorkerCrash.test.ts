import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { describe, it } from "node:test"
import { Effect, ManagedRuntime } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { k } from "./graphs.ts"

const crash = (name: string): Kernel.KernelRef =>
  Kernel.ref(new URL("../fixtures/kernels/crash.ts", import.meta.url).href, name)

const withPool = async <A>(options: Executor.WorkersOptions, f: (rt: ManagedRuntime.ManagedRuntime<Executor.Executor, unknown>) => Promise<A>): Promise<A> => {
  const rt = ManagedRuntime.make(Executor.layerWorkers(options))
  try {
    return await f(rt)
  } finally {
    await rt.dispose()
  }
}

const fanOut = (n: number, extra: ReadonlyArray<TaskGraph.TaskSpec>): TaskGraph.TaskGraph => {
  const specs: Array<TaskGraph.TaskSpec> = [...extra]
  for (let i = 0; i < n; i++) specs.push({ key: `ok-${i}`, kernel: k("constant"), args: [i] })
  return TaskGraph.makeUnsafe(specs)
}

describe("WorkerCrash", () => {
  it("fails a compute with NoWorkers, naming why, when the pool's worker threads cannot start (no endless replacing)", () => {
    // started by \`node --input-type=module -e\`, worker threads inherit the flag and die
    // before they are ready (ERR_INPUT_TYPE_NOT_ALLOWED): replaced for ever, the compute hung
    const src = (f: string) => JSON.stringify(new URL(`../../src/engine/${f}`, import.meta.url).href)
    const script = `
      import { Effect } from "effect"
      import * as Engine from ${src("Engine.ts")}
      import * as Executor from ${src("Executor.ts")}
      import * as Kernel from ${src("Kernel.ts")}
      import * as TaskGraph from ${src("TaskGraph.ts")}
      const kernel = Kernel.ref(${JSON.stringify(new URL("../fixtures/kernels/basic.ts", import.meta.url).href)}, "constant")
      const g = TaskGraph.makeUnsafe([{ key: "a", kernel, args: [1] }])
      const once = () => Effect.runPromiseExit(Engine.compute(g).pipe(Effect.provide(Executor.layerWorkers({ workers: 2 }))))
      for (const exit of [await once(), await once()]) {
        const e = exit._tag === "Failure" ? exit.cause.reasons?.[0]?.error ?? exit.cause : undefined
        console.log(JSON.stringify({ tag: exit._tag, reason: e?.reason?._tag, message: e?.message }))
      }
    `
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000, cwd: new URL("../..", import.meta.url).pathname })
    assert.equal(r.signal, null, `killed (${r.signal}): the compute hung\n${r.stderr}`)
    assert.equal(r.status, 0, r.stderr)
    const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as { tag: string; reason?: string; message?: string })
    assert.equal(lines.length, 2, r.stdout)
    for (const l of lines) {
      assert.equal(l.tag, "Failure")
      assert.equal(l.reason, "NoWorkers", r.stdout)
      assert.match(l.message ?? "", /worker threads cannot start .*input-type/s)
    }
  })

  it("ends every worker when the pool's scope closes", async () => {
    const ports = () => process.getActiveResourcesInfo().filter((r) => r === "MessagePort").length
    const before = ports()
    await withPool({ workers: 2 }, async (rt) => {
      await rt.runPromise(Engine.compute(fanOut(4, [])))
      assert.equal(ports(), before + 2)
    })
    assert.equal(ports(), before)
  })

  it("replaces a worker that exits mid-task and retries the task", async () => {
    const counter = new Int32Array(new SharedArrayBuffer(4))
    const g = fanOut(50, [{ key: "flaky", kernel: crash("exitFirstTimes"), args: [counter, 2, "done"] }])
    await withPool({ workers: 2 }, async (rt) => {
      const out = await rt.runPromise(Engine.compute(g, { keys: ["flaky", "ok-49"] }))
      assert.equal(out.get("flaky"), "done")
      assert.equal(out.get("ok-49"), 49)
      assert.equal(counter[0], 3)
      const again = await rt.runPromise(Engine.compute(fanOut(3, []), { keys: ["ok-2"] }))
      assert.equal(again.get("ok-2"), 2)
    })
  })

  it("retries a chain whose tasks travel in one batch when a worker dies in its middle", async () => {
    const counter = new Int32Array(new SharedArrayBuffer(4))
    const specs: Array<TaskGraph.TaskSpec> = [{ key: "c-0", kernel: k("constant"), args: [1] }]
    for (let i = 1; i < 30; i++) {
      specs.push(i === 15
        ? { key: `c-${i}`, kernel: crash("exitFirstTimes"), args: [counter, 1, TaskGraph.ref(`c-${i - 1}`)] }
        : { key: `c-${i}`, kernel: k("sum"), args: [TaskGraph.ref(`c-${i - 1}`), 1] })
    }
    const order: Array<string> = []
    await withPool({ workers: 2 }, async (rt) => {
      const out = await rt.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs), {
        callbacks: [{ pretask: (key) => void order.push(`pre:${key}`), posttask: (key) => void order.push(`post:${key}`) }]
      }))
      assert.equal(out.get("c-29"), 29)
      assert.equal(counter[0], 2)
    })
    // every task's last pretask comes after its input's posttask
    for (let i = 1; i < 30; i++) {
      assert.ok(order.lastIndexOf(`pre:c-${i}`) > order.lastIndexOf(`post:c-${i - 1}`), `c-${i} started before c-${i - 1} finished`)
    }
  })

  it("fails with WorkerCrashed naming the task after the retries are used up", async () => {
    const g = fanOut(20, [{ key: "doomed", kernel: crash("exitWorker"), args: [] }])
    await withPool({ workers: 2, maxRetries: 2 }, async (rt) => {
      const e = await rt.runPromise(Effect.flip(Engine.compute(g)))
      const r = e.reason as EngineError.WorkerCrashed
      assert.equal(r._tag, "WorkerCrashed")
      assert.equal(r.key, "doomed")
      assert.equal(r.attempts, 3)
      assert.match(e.message, /"doomed".*3 attempts.*exited with code 3/)
      const busy = await rt.runPromise(Effect.gen(function*() {
        return (yield* Executor.Executor).busyWorkers()
      }))
      assert.equal(busy, 0)
      const ok = await rt.runPromise(Engine.compute(fanOut(2, [])))
      assert.equal(ok.get("ok-1"), 1)
    })
  })

  it("treats an uncaught error in a worker as a crash", async () => {
    const g = TaskGraph.makeUnsafe([{ key: "later", kernel: crash("uncaughtLater"), args: [] }])
    await withPool({ workers: 1, maxRetries: 0 }, async (rt) => {
      const e = await rt.runPromise(Effect.flip(Engine.compute(g)))
      assert.equal(e.reason._tag, "WorkerCrashed")
      assert.match(e.message, /uncaught in worker/)
    })
  })

  it("fails a runaway kernel in seconds with WorkerCrashed naming the heap limit, without retrying it, and keeps the pool", async () => {
    const g = fanOut(10, [{ key: "runaway", kernel: crash("exhaustHeap"), args: [] }])
    await withPool({ workers: 2, resourceLimits: { maxOldGenerationSizeMb: 64 } }, async (rt) => {
      const started = performance.now()
      const e = await rt.runPromise(Effect.flip(Engine.compute(g)))
      const seconds = (performance.now() - started) / 1000
      const r = e.reason as EngineError.WorkerCrashed
      assert.equal(r._tag, "WorkerCrashed")
      assert.equal(r.key, "runaway")
      assert.equal(r.attempts, 1)
      assert.match(e.message, /"runaway".*ran out of memory at its heap limit \(resourceLimits: maxOldGenerationSizeMb 64 MB\)/)
      assert.ok(seconds < 5, `took ${seconds.toFixed(1)} s`)
      const ok = await rt.runPromise(Engine.compute(fanOut(2, [])))
      assert.equal(ok.get("ok-1"), 1)
    })
  })

  it("gives workers a heap limit by default: the available memory shared by workers and main thread, within 256 MiB..4 GiB", () => {
    assert.equal(Executor.defaultHeapLimitMb(3, 8 * 2 ** 30), 2048)
    assert.equal(Executor.defaultHeapLimitMb(1, 64 * 2 ** 30), 4096)
    assert.equal(Executor.defaultHeapLimitMb(64, 2 ** 30), 256)
    assert.ok(Executor.availableMemory() > 0)
  })

  it("treats a worker that exceeds its heap limit as a crash", async () => {
    const g = TaskGraph.makeUnsafe([{ key: "hog", kernel: crash("exhaustHeap"), args: [] }])
    await withPool({ workers: 1, maxRetries: 0, resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 } }, async (rt) => {
      const e = await rt.runPromise(Effect.flip(Engine.compute(g)))
      const r = e.reason as EngineError.WorkerCrashed
      assert.equal(r._tag, "WorkerCrashed")
      assert.equal(r.key, "hog")
    })
  })
})

/**
 * Issue 32 item 7 from code: every count of workers an executor is given is bounded by
 * one rule (`Executor.maxWorkers()`, src/engine/WorkerCount.ts: four per core, or free
 * memory at 64 MiB each, whichever is more), which the command line uses too. Out of it
 * (too many, zero, negative, not whole) the layer fails with the typed
 * `WorkerCountRefused` at once: no worker thread or process is started (watched through
 * Node's `worker_threads` and `child_process` diagnostics channels).
 */
import assert from "node:assert/strict"
import dc from "node:diagnostics_channel"
import { describe, it } from "node:test"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Cause from "effect/Cause"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as EngineError from "../../src/engine/EngineError.ts"
import * as Executor from "../../src/engine/Executor.ts"

/** Builds `layer` (nothing else) and returns how it ended, what it started and how long it took. */
const build = async (layer: Layer.Layer<Executor.Executor, unknown>) => {
  let threads = 0
  let processes = 0
  const onThread = () => threads++
  const onProcess = () => processes++
  dc.subscribe("worker_threads", onThread)
  dc.subscribe("child_process", onProcess)
  const t0 = performance.now()
  try {
    const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(layer)))
    const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined
    return { exit, error, threads, processes, ms: performance.now() - t0 }
  } finally {
    dc.unsubscribe("worker_threads", onThread)
    dc.unsubscribe("child_process", onProcess)
  }
}

const refused = (error: unknown, option: string, asked: number): EngineError.WorkerCountRefused => {
  assert.ok(error instanceof EngineError.WorkerCountRefused, `expected WorkerCountRefused, got ${String(error)}`)
  assert.equal(error.option, option)
  assert.ok(Object.is(error.asked, asked), `asked ${error.asked}, expected ${asked}`)
  assert.ok(error.bound >= 4, `bound ${error.bound}`)
  assert.ok(error.message.startsWith(`${option}: `), error.message)
  return error
}

describe("WorkerCount", { timeout: 120_000 }, () => {
  it("issue 32 item 7: Executor.layerWorkers({ workers: 1e9 }) fails fast with WorkerCountRefused naming the bound and why; no worker thread started", async () => {
    const r = await build(Executor.layerWorkers({ workers: 1e9 }))
    const e = refused(r.error, "workers", 1e9)
    assert.match(e.why, /what this machine can host: .*GiB free at 64 MiB a thread.*4 (threads )?per core/)
    assert.match(e.message, /^workers: 1000000000 workers refused: more than \d+, what this machine can host/)
    assert.equal(r.threads, 0, "no worker thread may start")
    assert.ok(r.ms < 10_000, `took ${r.ms} ms`)
  })

  it("issue 32 item 7: zero, negative, fractional, NaN and Infinity workers are refused the same way, before any thread starts", async () => {
    for (const n of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      const r = await build(Executor.layerWorkers({ workers: n }))
      const e = refused(r.error, "workers", n)
      assert.match(e.why, /not a whole number of at least 1/)
      assert.equal(r.threads, 0)
    }
  })

  it("issue 32 item 7: the bound is four per core or free memory at 64 MiB, whichever is more; the machine's own bound is at least 4 per core", () => {
    assert.equal(Executor.maxWorkers(2 ** 30, 2).bound, 16) // 1 GiB: 16 threads; 2 cores: 8
    assert.match(Executor.maxWorkers(2 ** 30, 2).why, /1\.0 GiB free at 64 MiB a thread/)
    assert.equal(Executor.maxWorkers(2 ** 30, 8).bound, 32)
    assert.match(Executor.maxWorkers(2 ** 30, 8).why, /4 threads per core, 8 cores/)
    assert.ok(Executor.maxWorkers().bound >= 4 * (process.getBuiltinModule("node:os").availableParallelism()))
    assert.equal(Executor.checkWorkerCount("workers", 1), undefined)
    assert.equal(Executor.checkWorkerCount("workers", 4), undefined)
    assert.ok(Executor.checkWorkerCount("workers", "4" as unknown) instanceof EngineError.WorkerCountRefused)
  })

  it("issue 32 item 7: layerGpu refuses gpus: 1e9 (and workers: 0) with WorkerCountRefused before any GPU or CPU worker starts", async () => {
    const a = await build(Executor.layerGpu({ workers: 1, gpus: 1e9, kernels: [] }))
    refused(a.error, "gpus", 1e9)
    const b = await build(Executor.layerGpu({ workers: 0, kernels: [] }))
    refused(b.error, "workers", 0)
    assert.equal(a.threads + b.threads, 0)
  })

  it("issue 32 item 7: layerCluster({ local: 100000 }) (and threads: 1e9, local × threads too many) is refused; no process started", async () => {
    const a = await build(Executor.layerCluster({ local: 100_000 }))
    refused(a.error, "local", 100_000)
    const b = await build(Executor.layerCluster({ local: 1, threads: 1e9 }))
    refused(b.error, "threads", 1e9)
    const bound = Executor.maxWorkers().bound
    const c = await build(Executor.layerCluster({ local: 2, threads: bound }))
    refused(c.error, "local × threads", 2 * bound)
    assert.equal(a.processes + b.processes + c.processes, 0, "no worker process may start")
    assert.equal(a.threads + b.threads + c.threads, 0)
    assert.ok(a.ms + b.ms + c.ms < 20_000)
  })

  it("issue 32 item 7: Cluster.LocalCluster({ local: 100000 }) stops at once with WorkerCountRefused (a defect there: its signature has no error); no process started", async () => {
    let processes = 0
    const onProcess = () => processes++
    dc.subscribe("child_process", onProcess)
    try {
      const exit = await Effect.runPromiseExit(Effect.scoped(Cluster.LocalCluster({ local: 100_000 })))
      assert.ok(Exit.isFailure(exit))
      refused(Cause.squash(exit.cause), "local", 100_000)
      assert.equal(processes, 0)
    } finally {
      dc.unsubscribe("child_process", onProcess)
    }
  })

  it("issue 32 item 7: local: 0 (a scheduler that waits for workers started elsewhere) passes the local check; -1 and 1.5 do not", async () => {
    const { checkLocalCounts } = await import("../../src/engine/WorkerCount.ts")
    assert.equal(checkLocalCounts(0, 4), undefined)
    assert.equal(checkLocalCounts(0, undefined), undefined)
    assert.match(checkLocalCounts(-1, undefined)?.why ?? "", /at least 0/)
    assert.match(checkLocalCounts(1.5, undefined)?.why ?? "", /at least 0/)
    assert.match(checkLocalCounts(2, 0)?.why ?? "", /at least 1/)
  })

  it("issue 32 item 7: a count within the bound still builds a working pool (workers: 1)", async () => {
    const r = await build(Executor.layerWorkers({ workers: 1 }))
    assert.ok(Exit.isSuccess(r.exit), String(r.error))
    assert.equal(r.threads, 1)
  })
})

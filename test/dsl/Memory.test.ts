import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { Effect, Exit, Layer } from "effect"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

/** An in-process executor that reports `bytes` available and counts the computes it runs. */
const small = (bytes: number) => {
  const computes = { n: 0 }
  const sync = Executor.makeSync()
  const layer = Layer.succeed(Executor.Executor, {
    ...sync,
    availableMemory: () => bytes,
    execute: (job) => Effect.andThen(Effect.sync(() => void computes.n++), sync.execute(job))
  })
  return { layer, computes }
}

const failsOutOfMemory = async (e: Effect.Effect<unknown, unknown, Executor.Executor>, bytes: number, pattern: RegExp) => {
  const { layer, computes } = small(bytes)
  const exit = await Effect.runPromiseExit(Effect.provide(e, layer))
  assert.ok(Exit.isFailure(exit))
  const err = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
  assert.ok(isDslError(err) && err.reason._tag === "OutOfMemory", String(exit.cause))
  assert.match(err.message, pattern)
  assert.equal(computes.n, 0, "nothing ran")
}

describe("Memory", () => {
  it("persist fails before any task runs when the array needs more than the executor has, giving both", () =>
    failsOutOfMemory(
      CA.persist(makeBlobs({ nSamples: 1000, centers: [[0, 0]], chunks: 100 }).X, "Normalize.transform"),
      10_000,
      /stage "Normalize\.transform": persisting a float64 \[1000, 2\] array needs 15\.6 KiB \(16000 bytes\), 9\.8 KiB \(10000 bytes\) of memory is available/
    ))

  it("compute counts the chunks and the one chunk they are copied into", async () => {
    const { y } = makeBlobs({ nSamples: 1000, centers: [[0, 0]], chunks: 100 })
    await failsOutOfMemory(CA.compute(y), 7_999, /computing an int32 \[1000\] array into one chunk needs 7\.8 KiB \(8000 bytes\)/)
    const { layer } = small(8_000)
    const c = await Effect.runPromise(Effect.provide(CA.compute(y), layer))
    assert.equal(c.data.length, 1000)
  })

  it("counts only the rows not yet in memory", async () => {
    const { layer } = small(16_000)
    const X = await Effect.runPromise(Effect.provide(CA.persist(makeBlobs({ nSamples: 1000, centers: [[0, 0]], chunks: 100 }).X), layer))
    assert.equal(CA.pendingBytes(X), 0)
    assert.equal(CA.nbytes(X), 16_000)
  })

  it("the demo's estimate follows its shapes and dtypes: 56 bytes a sample", () => {
    assert.equal(Tutorial5.memoryNeeded({ samples: 1000 }), 56_000)
    assert.equal(Tutorial5.memoryNeeded({ samples: 1e9 }), 56e9)
  })

  it("tessera demo with more samples than memory fails at once with bytes needed and available, making nothing", () => {
    const started = performance.now()
    const r = spawnSync(process.execPath, [main, "demo", "--samples", "1000000000000", "--workers", "1"], { encoding: "utf8", timeout: 60_000 })
    assert.notEqual(r.status, 0)
    assert.equal(r.signal, null)
    assert.match(r.stdout + r.stderr, /stage "tessera demo": DASF tutorial 5 on 1000000000000 x 2 samples needs 50\.9 TiB \(56000000000000 bytes\), [\d.]+ GiB \(\d+ bytes\) of memory is available/)
    assert.doesNotMatch(r.stdout, /Starting task run/)
    assert.ok(performance.now() - started < 30_000)
  })
})

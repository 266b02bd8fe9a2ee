import assert from "node:assert/strict"
import { after, describe, it } from "node:test"
import { Effect, Exit, Layer, ManagedRuntime } from "effect"
import * as fc from "fast-check"
import * as Chunk from "../../src/engine/Chunk.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { DslError } from "../../src/dsl/DslError.ts"
import * as Reductions from "../../src/dsl/Reductions.ts"

const outputs = new URL("../fixtures/kernels/outputs.ts", import.meta.url).href
const kern = (name: string) => Kernel.ref(outputs, name)

const sync = ManagedRuntime.make(Executor.layerSync)
const workers = ManagedRuntime.make(Executor.layerWorkers({ workers: 2 }) as Layer.Layer<Executor.Executor>)
after(async () => {
  await workers.dispose()
  await sync.dispose()
})
const executors = [["sync runner", sync], ["worker threads", workers]] as const

/** `rows` x `cols` float64 values 0, 1, 2, ... in chunks of `chunk` rows. */
const input = (rows: number, cols: number, chunk: number) => {
  const chunks: Array<Chunk.Chunk> = []
  for (let r = 0; r < rows; r += chunk) {
    const n = Math.min(chunk, rows - r)
    const shape = cols === 0 ? [n] : [n, cols]
    const data = Float64Array.from({ length: n * Math.max(1, cols) }, (_, i) => r * Math.max(1, cols) + i)
    chunks.push(Chunk.make("float64", shape, data))
  }
  return CA.fromChunks("float64", chunks)
}

/** The BadOutput a compute failed with (fails the test when it succeeded or failed otherwise). */
const badOutput = async (rt: typeof sync, e: Effect.Effect<unknown, unknown, Executor.Executor>): Promise<EngineError.BadOutput> => {
  const exit = await rt.runPromiseExit(e)
  assert.ok(Exit.isFailure(exit), "the compute must fail")
  const err = (exit.cause.reasons.find((r) => r._tag === "Fail") as { error: EngineError.ComputeError } | undefined)?.error
  assert.ok(err !== undefined, `a typed failure, not a defect: ${String(exit.cause)}`)
  assert.equal(err._tag, "ComputeError")
  assert.equal(err.reason._tag, "BadOutput", err.message)
  return err.reason as EngineError.BadOutput
}

describe("ChunkedArray kernel outputs", () => {
  for (const [label, rt] of executors) {
    it(`issue 31 item 3: a kernel returning half the rows fails its task naming key, kernel, declared and returned (${label})`, async () => {
      const X = input(120, 4, 40)
      const Y = CA.mapBlocks(X, { name: "half", kernel: kern("halfRows"), dtype: "float64", columns: 4, stage: "halve" })
      const r = await badOutput(rt, CA.compute(Y))
      assert.match(r.key, /^\('half-[0-9a-f]{8}', [0-2]\)$/)
      assert.match(r.kernel, /^halfRows \(file:.*outputs\.ts\)$/)
      assert.equal(r.stage, "halve")
      assert.equal(r.declared, "a Chunk of float64 [40, 4]")
      assert.equal(r.actual, "a Chunk of float64 [20, 4]")
      assert.match(r.message, /^stage "halve": task "\('half-[0-9a-f]{8}', \d\)": kernel halfRows \(.*\) returned a Chunk of float64 \[20, 4\], but the task declared a Chunk of float64 \[40, 4\]$/)
      // persist and a reduction over the bad blocks fail the same way (no count of rows never written)
      await badOutput(rt, CA.persist(Y))
      await badOutput(rt, CA.computeDelayed(Reductions.count(Y)))
    })

    it(`issue 31 item 3: a kernel returning another dtype, or a number, fails its task (${label})`, async () => {
      const X = input(30, 2, 10)
      const f32 = await badOutput(rt, CA.compute(CA.mapBlocks(X, { name: "f32", kernel: kern("asFloat32"), dtype: "float64", columns: 2 })))
      assert.equal(f32.declared, "a Chunk of float64 [10, 2]")
      assert.equal(f32.actual, "a Chunk of float32 [10, 2]")
      const num = await badOutput(rt, CA.compute(CA.mapBlocks(X, { name: "num", kernel: kern("aNumber"), dtype: "float64", columns: 2 })))
      assert.equal(num.actual, "a number (20)")
      assert.match(num.kernel, /^aNumber /)
      // a stage that declared 2-D output from a kernel returning 1-D
      const flat = await badOutput(rt, CA.compute(CA.mapBlocks(X, { name: "flat", kernel: kern("flat"), dtype: "float64", columns: 2 })))
      assert.equal(flat.actual, "a Chunk of float64 [10]")
    })

    it(`issue 31 item 3: kernels returning what they declared pass, for any chunking (${label})`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 25 }), async (rows, cols, chunk) => {
          const X = input(rows, cols, chunk)
          const Y = CA.mapBlocks(X, { name: "double", kernel: kern("double"), dtype: "float64", ...(cols === 0 ? {} : { columns: cols }) })
          const out = await rt.runPromise(CA.compute(Y))
          assert.deepEqual(out.shape, X.shape)
          for (let i = 0; i < out.data.length; i++) assert.equal(out.data[i], 2 * i)
        }),
        { numRuns: 15 }
      )
    })
  }

  it("issue 31 item 3: columns on a 1-D input is a DslError naming the stage, at graph build (newAxis: true allows it)", () => {
    const X = input(10, 0, 5)
    assert.throws(
      () => CA.mapBlocks(X, { name: "widen", kernel: kern("double"), dtype: "float64", columns: 4, stage: "signedLog" }),
      (e: unknown) => e instanceof DslError && e.reason._tag === "ShapeMismatch" && /^stage "signedLog": .*1-D input.*newAxis: true/.test(e.message)
    )
    const Y = CA.mapBlocks(X, { name: "widen", kernel: kern("double"), dtype: "float64", columns: 4, newAxis: true })
    assert.deepEqual(Y.shape, [10, 4])
    assert.throws(
      () => CA.mapBlocks(X, { name: "bad", kernel: kern("double"), dtype: "float" as never }),
      (e: unknown) => e instanceof DslError && e.reason._tag === "InvalidOption" && /stage "bad": dtype "float"/.test(e.message)
    )
  })
})

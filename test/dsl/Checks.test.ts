import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import { KMeans as KMeansStage, Normalize as NormalizeStage } from "../../src/dsl/Estimators.ts"
import * as KMeans from "../../src/dsl/KMeans.ts"
import * as Normalize from "../../src/dsl/Normalize.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as SOM from "../../src/dsl/SOM.ts"

const sync = <A, E>(e: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromise(Effect.provide(e, Executor.layerSync))
const syncExit = <A, E>(e: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromiseExit(Effect.provide(e, Executor.layerSync))
const f64 = (shape: ReadonlyArray<number>, chunks = 2) => {
  const per = shape.length === 2 ? shape[1]! : 1
  const rows = CA.splitRows(shape[0]!, Math.ceil(shape[0]! / chunks))
  let o = 0
  return CA.fromChunks("float64", rows.map((r) => {
    const c = Chunk.make("float64", shape.length === 2 ? [r, per] : [r], Float64Array.from({ length: r * per }, (_, i) => Math.sin(o + i) * 3 + (o + i) % 5))
    o += r * per
    return c
  }))
}
const failure = async (e: Effect.Effect<unknown, unknown, Executor.Executor>, pattern: RegExp) => {
  const exit = await syncExit(e)
  assert.ok(Exit.isFailure(exit))
  const err = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
  assert.ok(isDslError(err), `a typed DslError failure, got ${String(exit.cause)}`)
  assert.match(err.message, pattern)
}
const throwsDsl = (f: () => unknown, pattern: RegExp) => assert.throws(f, (e: unknown) => isDslError(e) && pattern.test(e.message))
const model: KMeans.KMeansModel = { centers: new Float64Array([0, 0, 1, 1]), nClusters: 2, iterations: 0, inertia: 0 }

describe("Checks", () => {
  it("Normalize keeps a 1-D array 1-D and scales it", async () => {
    const X = f64([9])
    const { X: scaled } = await sync(Normalize.fitTransform(X))
    assert.deepEqual(scaled.shape, [9])
    const c = await sync(CA.compute(scaled))
    assert.deepEqual(c.shape, [9])
    const v = Array.from(c.data as Float64Array)
    const mean = v.reduce((a, b) => a + b, 0) / 9
    assert.ok(Math.abs(mean) < 1e-12)
    assert.ok(Math.abs(v.reduce((a, b) => a + (b - mean) ** 2, 0) / 9 - 1) < 1e-12)
  })
  it("Normalize rejects an empty array, naming the stage and the shape", () =>
    failure(Normalize.fitTransform(CA.fromChunks("float64", [Chunk.make("float64", [0, 2], new Float64Array(0))])), /stage "Normalize\.transform": shape mismatch: expected \[n >= 1, 2\], got \[0, 2\]/))

  it("KMeans predict with the wrong column count names the stage and both shapes", () => {
    throwsDsl(() => KMeans.predict(model, f64([10, 3])), /stage "KMeans\.predict": shape mismatch: expected \[n, 2\], got \[10, 3\]/)
    throwsDsl(() => KMeans.predict(model, f64([10])), /stage "KMeans\.predict": shape mismatch: expected \[n, 2\], got \[10\]/)
  })
  it("KMeans predict and fit reject a dtype other than float64, naming the stage", async () => {
    const ints = CA.fromChunks("int64", [Chunk.make("int64", [2, 2], new BigInt64Array(4))])
    throwsDsl(() => KMeans.predict(model, ints), /stage "KMeans\.predict": dtype mismatch: expected float64, got int64/)
    await failure(KMeans.fit(ints as unknown as CA.ChunkedArray<"float64">, { nClusters: 2 }), /stage "KMeans\.fit": dtype mismatch: expected float64, got int64/)
  })
  it("KMeans fit rejects a 1-D array and more clusters than rows as typed failures", async () => {
    await failure(KMeans.fit(f64([10]), { nClusters: 2 }), /stage "KMeans\.fit": shape mismatch: expected \[n, d\], got \[10\]/)
    await failure(KMeans.fit(f64([3, 2]), { nClusters: 5 }), /nClusters: 5 clusters but only 3 rows/)
  })
  it("SOM fit and predict check the input length, naming the stage and both shapes", async () => {
    await failure(SOM.fit(f64([10, 3]), { x: 1, y: 2, inputLen: 2, numEpochs: 1 }), /stage "SOM\.fit": shape mismatch: expected \[n, 2\], got \[10, 3\]/)
    const som: SOM.SOMModel = { weights: new Float64Array(4), x: 1, y: 2, quantizationErrors: [0] }
    throwsDsl(() => SOM.predict(som, f64([4, 3])), /stage "SOM\.predict": shape mismatch: expected \[n, 2\], got \[4, 3\]/)
  })
  it("a pipeline stage fed the wrong shape fails naming the stage and both shapes", async () => {
    const p = Pipeline.make("checks", { log: () => {} })
    p.add(new KMeansStage({ nClusters: 2 }).fitPredict, { X: f64([10]) })
    const exit = await syncExit(p.run())
    assert.ok(Exit.isFailure(exit))
    assert.match(String(exit.cause), /stage "KMeans\.fitPredict" failed: stage "KMeans\.fitPredict": shape mismatch: expected \[n, d\], got \[10\]/)
  })

  it("issue 32 item 12: a dimension of size 0 ([1000, 0]) is a typed failure naming the stage and the shape", async () => {
    const empty = CA.fromChunks("float64", [Chunk.make("float64", [1000, 0], new Float64Array(0))])
    await failure(Normalize.fitTransform(empty), /stage "Normalize\.transform": shape mismatch: expected \[n, d >= 1\], got \[1000, 0\]: a dimension of size 0/)
    await failure(KMeans.fit(empty, { nClusters: 2 }), /stage "KMeans\.fit": shape mismatch: expected \[n, d >= 1\], got \[1000, 0\]: a dimension of size 0/)
    await failure(SOM.fit(empty, { x: 2, y: 2, inputLen: 0, numEpochs: 1 }), /stage "SOM\.fit": shape mismatch: expected \[n, inputLen >= 1\], got \[1000, 0\]/)
    throwsDsl(() => KMeans.predict(model, empty), /stage "KMeans\.predict": shape mismatch: expected \[n, 2\], got \[1000, 0\]/)
    // in a pipeline: the stage's own failure, not a defect
    const p = Pipeline.make("zero-width", { log: () => {} })
    const scaled = p.add(new NormalizeStage().transform, { X: empty })
    p.add(new KMeansStage({ nClusters: 2 }).fitPredict, { X: scaled })
    const exit = await syncExit(p.run())
    assert.ok(Exit.isFailure(exit))
    assert.ok(exit.cause.reasons.every((r) => r._tag !== "Die"), String(exit.cause))
    assert.match(String(exit.cause), /stage "Normalize\.transform" failed: .*got \[1000, 0\]/)
  })

  it("issue 32 item 12: Normalize of values near ±1e308 does not overflow: the right mean and deviation, finite output, and KMeans fits it", async () => {
    // column 0: ±1e308 in equal parts (mean 0, std 1e308); column 1: 1.5e308 and 0.5e308 (mean 1e308, std 0.5e308)
    const n = 1000
    const values = Float64Array.from({ length: 2 * n }, (_, i) => {
      const r = i >> 1
      return i % 2 === 0 ? (r % 2 === 0 ? 1e308 : -1e308) : (r % 2 === 0 ? 1.5e308 : 0.5e308)
    })
    const X = CA.fromChunks("float64", [Chunk.make("float64", [n / 2, 2], values.slice(0, n)), Chunk.make("float64", [n / 2, 2], values.slice(n))])
    const { X: scaled, scaler } = await sync(Normalize.fitTransform(X))
    assert.ok(Math.abs(scaler.mean[0]!) < 1e293, String(scaler.mean[0]))
    assert.ok(Math.abs(scaler.std[0]! / 1e308 - 1) < 1e-12, String(scaler.std[0]))
    assert.ok(Math.abs(scaler.mean[1]! / 1e308 - 1) < 1e-12, String(scaler.mean[1]))
    assert.ok(Math.abs(scaler.std[1]! / 0.5e308 - 1) < 1e-12, String(scaler.std[1]))
    const out = Array.from((await sync(CA.compute(scaled))).data as Float64Array)
    assert.ok(out.every(Number.isFinite), "no NaN or Infinity out of finite input")
    for (let i = 0; i < out.length; i++) assert.ok(Math.abs(Math.abs(out[i]!) - 1) < 1e-12, `value ${i}: ${out[i]}`)
    // the inverse maps the scaled points back to the data's units
    const back = Normalize.inverse(scaler, Float64Array.from(out.slice(0, 4)))
    for (let i = 0; i < 4; i++) assert.ok(Math.abs(back[i]! / values[i]! - 1) < 1e-12, `${back[i]} vs ${values[i]}`)
    // the pipeline that used to blame KMeans' input: it now runs
    const p = Pipeline.make("huge", { log: () => {} })
    const norm = new NormalizeStage()
    const kmeans = new KMeansStage({ nClusters: 2, randomState: 0 })
    p.add(kmeans.fitPredict, { X: p.add(norm.transform, { X }) })
    const exit = await syncExit(p.run())
    assert.ok(Exit.isSuccess(exit), String(Exit.isFailure(exit) ? exit.cause : ""))
    assert.ok(Array.from(kmeans.model!.centers).every(Number.isFinite))
  })
})

import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import type { DslError } from "../../src/dsl/DslError.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import { KMeans as KMeansStage, Normalize as NormalizeStage } from "../../src/dsl/Estimators.ts"
import * as KMeans from "../../src/dsl/KMeans.ts"
import * as Normalize from "../../src/dsl/Normalize.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"

const sync = <A, E>(e: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromise(Effect.provide(e, Executor.layerSync))
const failure = async (e: Effect.Effect<unknown, unknown, Executor.Executor>): Promise<DslError> => {
  const exit = await Effect.runPromiseExit(Effect.provide(e, Executor.layerSync))
  assert.ok(Exit.isFailure(exit), "expected a failure")
  const err = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
  assert.ok(isDslError(err), `a typed DslError failure, got ${String(exit.cause)}`)
  return err
}

/** Blobs (n x 2) in chunks of 50 rows, with `bad` values written at [row, column]. */
const blobsWith = (n: number, bad: ReadonlyArray<readonly [number, number, number]>) =>
  sync(Effect.gen(function*() {
    const c = yield* CA.compute(makeBlobs({ nSamples: n, centers: Tutorial5.centers, chunks: 50, randomState: 7 }).X)
    const data = Float64Array.from(c.data as Float64Array)
    for (const [r, j, v] of bad) data[r * 2 + j] = v
    const chunks = CA.splitRows(n, 50).map((rows, i) => Chunk.make("float64", [rows, 2], data.slice(i * 100, i * 100 + rows * 2)))
    return { X: CA.fromChunks("float64", chunks), data }
  }))

describe("NonFinite", () => {
  it("Normalize fails by default on NaN, naming the stage, the first bad row, its column and the count", async () => {
    const { X } = await blobsWith(300, [[217, 0, Infinity], [117, 1, NaN], [250, 1, NaN]])
    const e = await failure(Normalize.fitTransform(X))
    assert.equal(e.reason._tag, "NonFinite")
    assert.equal(e.message, `stage "Normalize.transform": input contains NaN at row 117, column 1 (3 rows hold NaN or Infinity); clean the data, or pass nonFinite: "skip" to leave such rows out`)
  })

  it("KMeans fails by default on Infinity before iterating, naming the stage and row", async () => {
    const { X } = await blobsWith(300, [[42, 0, -Infinity]])
    const started = performance.now()
    const e = await failure(KMeans.fit(X, { nClusters: 3, maxIter: 300 }))
    assert.ok(performance.now() - started < 2000)
    assert.match(e.message, /stage "KMeans\.fit": input contains -Infinity at row 42, column 0 \(1 row holds NaN or Infinity\)/)
  })

  it("Normalize with nonFinite: \"skip\" fits on the finite rows, counts the others and keeps every row in place", async () => {
    const bad = [[3, 0, NaN], [120, 1, Infinity], [121, 0, NaN]] as const
    const { X, data } = await blobsWith(300, bad)
    const r = await sync(Effect.gen(function*() {
      const { X: scaled, scaler } = yield* Normalize.fitTransform(X, "Normalize.transform", { nonFinite: "skip" })
      return { scaler, out: (yield* CA.compute(scaled)).data as Float64Array }
    }))
    assert.equal(r.scaler.skipped, 3)
    assert.equal(r.out.length, 600)
    const finiteRows = Array.from({ length: 300 }, (_, i) => i).filter((i) => !bad.some(([row]) => row === i))
    for (const j of [0, 1]) {
      const v = finiteRows.map((i) => data[i * 2 + j]!)
      const mean = v.reduce((a, b) => a + b, 0) / v.length
      const std = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / v.length)
      assert.ok(Math.abs(r.scaler.mean[j]! - mean) < 1e-9 && Math.abs(r.scaler.std[j]! - std) < 1e-9)
      assert.ok(Math.abs(r.out[5 * 2 + j]! - (data[5 * 2 + j]! - mean) / std) < 1e-9)
    }
    assert.ok(Number.isNaN(r.out[3 * 2]!) && r.out[120 * 2 + 1] === Infinity)
  })

  it("KMeans with nonFinite: \"skip\" fits finite centers on the other rows and labels the skipped rows -1", async () => {
    const { X } = await blobsWith(600, [[10, 1, NaN], [333, 0, Infinity]])
    const clean = await blobsWith(600, [])
    const r = await sync(Effect.gen(function*() {
      const { model, labels } = yield* KMeans.fitPredict(X, { nClusters: 3, randomState: 1, nonFinite: "skip" })
      return { model, labels: (yield* CA.compute(labels)).data as Int32Array }
    }))
    const ref = await sync(KMeans.fit(clean.X, { nClusters: 3, randomState: 1 }))
    assert.equal(r.model.skipped, 2)
    assert.ok(r.model.centers.every(Number.isFinite))
    assert.equal(r.labels.length, 600)
    assert.equal(r.labels[10], -1)
    assert.equal(r.labels[333], -1)
    assert.ok(Array.from(r.labels).every((l, i) => (i === 10 || i === 333 ? l === -1 : l >= 0 && l < 3)))
    // two rows fewer move no center far: each found center is near one fitted on the clean data
    for (let c = 0; c < 3; c++) {
      const d = Math.min(...[0, 1, 2].map((q) => Math.hypot(r.model.centers[c * 2]! - ref.centers[q * 2]!, r.model.centers[c * 2 + 1]! - ref.centers[q * 2 + 1]!)))
      assert.ok(d < 0.2, `center ${c} is ${d} from the clean fit`)
    }
  })

  it("skips on worker threads too (the policy's kernels load in workers)", async () => {
    const { X } = await blobsWith(400, [[5, 0, NaN], [399, 1, Infinity]])
    const r = await Effect.runPromise(Effect.provide(Effect.gen(function*() {
      const { X: scaled, scaler } = yield* Normalize.fitTransform(X, "Normalize.transform", { nonFinite: "skip" })
      const { model, labels } = yield* KMeans.fitPredict(scaled as CA.ChunkedArray<"float64">, { nClusters: 3, nonFinite: "skip" })
      return { scaler, model, labels: (yield* CA.compute(labels)).data as Int32Array }
    }), Executor.layerWorkers({ workers: 2 })))
    assert.equal(r.scaler.skipped, 2)
    assert.equal(r.model.skipped, 2)
    assert.deepEqual([r.labels[5], r.labels[399], r.labels.filter((l) => l === -1).length], [-1, -1, 2])
  })

  it("in a pipeline, Normalize skipping and KMeans raising fails the KMeans stage at the NaN row", async () => {
    const { X } = await blobsWith(300, [[77, 1, NaN]])
    const p = Pipeline.make("nan", { log: () => {} })
    const scaled = p.add(new NormalizeStage({ nonFinite: "skip" }).transform, { X })
    p.add(new KMeansStage({ nClusters: 3 }).fitPredict, { X: scaled })
    const exit = await Effect.runPromiseExit(Effect.provide(p.run(), Executor.layerSync))
    assert.ok(Exit.isFailure(exit))
    assert.match(String(exit.cause), /stage "KMeans\.fitPredict" failed: stage "KMeans\.fitPredict": input contains NaN at row 77, column 1/)
  })

  it("rejects a policy other than raise or skip", async () => {
    const { X } = await blobsWith(100, [[1, 1, NaN]])
    const e = await failure(Normalize.fitTransform(X, "Normalize.transform", { nonFinite: "drop" as never }))
    assert.match(e.message, /invalid option nonFinite: must be "raise" or "skip", got "drop"/)
  })
})

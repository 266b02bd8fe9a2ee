import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import * as KMeans from "../../src/dsl/KMeans.ts"
import { adjustedRandIndex } from "../../src/dsl/Metrics.ts"
import * as Normalize from "../../src/dsl/Normalize.ts"
import * as SOM from "../../src/dsl/SOM.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"

const sync = <A, E>(e: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromise(Effect.provide(e, Executor.layerSync))

const scaledBlobs = (n: number) =>
  sync(
    Effect.gen(function*() {
      const { X, y } = makeBlobs({ nSamples: n, centers: Tutorial5.centers, chunks: Math.ceil(n / 20), randomState: 42 })
      const { X: scaled, scaler } = yield* Normalize.fitTransform(X)
      return { X: yield* CA.persist(scaled), y: (yield* CA.compute(y)).data as Int32Array, scaler }
    })
  )

const nearestDistance = (found: ReadonlyArray<ReadonlyArray<number>>, truth: ReadonlyArray<number>) =>
  Math.min(...found.map((c) => Math.hypot(c[0]! - truth[0]!, c[1]! - truth[1]!)))

describe("KMeans and SOM", () => {
  it("KMeans finds the three blob centers within 0.1 with ARI >= 0.99, for both inits", async () => {
    const { X, y, scaler } = await scaledBlobs(6_000)
    for (const init of ["k-means++", "random"] as const) {
      const r = await sync(KMeans.fitPredict(X, { nClusters: 3, maxIter: 100, init, randomState: 1 }))
      const c = Normalize.inverse(scaler, r.model.centers)
      const found = [0, 1, 2].map((i) => [c[2 * i]!, c[2 * i + 1]!])
      for (const t of Tutorial5.centers) assert.ok(nearestDistance(found, t) < 0.1, `${init}: ${JSON.stringify(found)} vs ${t}`)
      const labels = (await sync(CA.compute(r.labels))).data as Int32Array
      assert.ok(adjustedRandIndex(y, labels) >= 0.99)
    }
  })

  it("SOM's quantization error ends far below where it starts and ends at about the best of its second half; a 1x3 map separates the blobs", async () => {
    const { X, y } = await scaledBlobs(3_000)
    const r = await sync(SOM.fitPredict(X, { x: 1, y: 3, inputLen: 2, numEpochs: 40, sigma: 1, learningRate: 0.5, randomState: 3 }))
    const q = r.model.quantizationErrors
    assert.ok(q[q.length - 1]! < 0.75 * Math.max(...q), JSON.stringify(q))
    // Not strictly monotone: the neighbourhood shrinks each epoch, which changes the
    // objective; the trend falls and training ends at (about) the best map it visited.
    const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
    const quarter = Math.ceil(q.length / 4)
    assert.ok(mean(q.slice(-quarter)) < mean(q.slice(0, quarter)), JSON.stringify(q))
    assert.ok(q[q.length - 1]! <= Math.min(...q.slice(Math.floor(q.length / 2))) * (1 + 1e-3), JSON.stringify(q))
    const labels = (await sync(CA.compute(r.labels))).data as Int32Array
    assert.ok(adjustedRandIndex(y, labels) >= 0.99)
  })

  it("adjustedRandIndex is 1 under relabelling and about 0 for unrelated labels", () => {
    assert.equal(adjustedRandIndex([0, 0, 1, 1, 2, 2], [5, 5, 3, 3, 9, 9]), 1)
    const a = Array.from({ length: 3000 }, (_, i) => i % 3)
    const b = Array.from({ length: 3000 }, (_, i) => Math.floor(i / 1000))
    assert.ok(Math.abs(adjustedRandIndex(a, b)) < 0.01)
    assert.throws(() => adjustedRandIndex([0], [0, 1]), /differ in length/)
  })

  it("predicting on an array with the wrong number of columns fails before running, naming stage and shapes", async () => {
    const { X } = await scaledBlobs(300)
    const model = await sync(KMeans.fit(X, { nClusters: 3, maxIter: 5 }))
    const wide = makeBlobs({ nSamples: 10, centers: [[0, 0, 0]], chunks: 5 }).X
    assert.throws(() => KMeans.predict(model, wide), (e: unknown) => isDslError(e) && /KMeans.predict.*expected \[n, 2\], got \[10, 3\]/.test(e.message))
    const exit = await Effect.runPromiseExit(Effect.provide(SOM.fit(wide, { x: 1, y: 2, inputLen: 2 }), Executor.layerSync))
    assert.ok(Exit.isFailure(exit) && /SOM.fit.*expected \[n, 2\], got \[10, 3\]/.test(String(exit.cause)))
    const bad = await Effect.runPromiseExit(Effect.provide(KMeans.fit(X, { nClusters: 0 }), Executor.layerSync))
    assert.ok(Exit.isFailure(bad) && /nClusters: must be a positive integer/.test(String(bad.cause)))
  })
})

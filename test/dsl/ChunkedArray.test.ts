import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import * as Normalize from "../../src/dsl/Normalize.ts"
import { permute } from "../../src/kernels/random.ts"

const sync = <A, E>(e: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromise(Effect.provide(e, Executor.layerSync))

const split = (rows: number, d: number, values: ReadonlyArray<number>, sizes: ReadonlyArray<number>) => {
  const chunks: Array<Chunk.Chunk> = []
  let o = 0
  for (const n of sizes) {
    chunks.push(Chunk.make("float64", [n, d], Float64Array.from(values.slice(o * d, (o + n) * d))))
    o += n
  }
  assert.equal(o, rows)
  return CA.fromChunks("float64", chunks)
}

/** Random row counts summing to n. */
const cuts = (n: number, seed: number): Array<number> => {
  const out: Array<number> = []
  let left = n
  let s = seed
  while (left > 0) {
    s = (s * 1103515245 + 12345) >>> 0
    const take = Math.min(left, 1 + (s % Math.max(1, Math.ceil(n / 2))))
    out.push(take)
    left -= take
  }
  return out
}

describe("ChunkedArray", () => {
  it("reductions match a naive reference whatever the chunking", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        async (rows, d, seedA, seedB) => {
          const values = Array.from({ length: rows * d }, (_, i) => Math.sin(i * 12.9898 + seedA) * 100)
          const a = await sync(CA.computeDelayed(Normalize.moments(split(rows, d, values, cuts(rows, seedA)))))
          const b = await sync(CA.computeDelayed(Normalize.moments(split(rows, d, values, cuts(rows, seedB)))))
          for (let j = 0; j < d; j++) {
            const col = values.filter((_, i) => i % d === j)
            const mean = col.reduce((x, y) => x + y, 0) / rows
            const m2 = col.reduce((x, y) => x + (y - mean) ** 2, 0)
            for (const m of [a, b]) {
              assert.equal(m.count, rows)
              assert.ok(Math.abs(m.mean[j]! - mean) <= 1e-9 * (1 + Math.abs(mean)))
              assert.ok(Math.abs(m.m2[j]! - m2) <= 1e-7 * (1 + m2))
              assert.equal(m.min[j], Math.min(...col))
              assert.equal(m.max[j], Math.max(...col))
            }
          }
        }
      ),
      { numRuns: 60 }
    )
  })

  it("reduces over every element with axis null", async () => {
    const m = await sync(CA.computeDelayed(Normalize.moments(split(3, 2, [1, 2, 3, 4, 5, 6], [2, 1]), null)))
    assert.equal(m.count, 6)
    assert.equal(m.mean[0], 3.5)
    assert.ok(Math.abs(m.m2[0]! / 5 - 3.5) < 1e-12) // sample variance (ddof 1) of 1..6
  })

  it("makeBlobs gives the same data for any chunking, on threads or in-process", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 3, max: 300 }), fc.integer({ min: 1, max: 300 }), async (n, chunks) => {
        const opts = { nSamples: n, centers: [[0, 0], [5, 5], [-5, 5]], randomState: 7 }
        const a = await sync(CA.compute(makeBlobs({ ...opts, chunks: n }).X))
        const b = await sync(CA.compute(makeBlobs({ ...opts, chunks }).X))
        assert.deepEqual(Array.from(b.data as Float64Array), Array.from(a.data as Float64Array))
      }),
      { numRuns: 40 }
    )
    const opts = { nSamples: 2_000, centers: [[0, 0], [5, 5]], randomState: 3, chunks: 300 }
    const threads = await Effect.runPromise(
      Effect.provide(CA.compute(makeBlobs(opts).y), Executor.layerWorkers({ workers: 2 }))
    )
    const local = await sync(CA.compute(makeBlobs(opts).y))
    assert.deepEqual(Array.from(threads.data as Int32Array), Array.from(local.data as Int32Array))
  })

  it("makeBlobs gives each center an equal share of rows, in shuffled order", async () => {
    const y = (await sync(CA.compute(makeBlobs({ nSamples: 3_001, centers: [[0], [1], [2]], chunks: 500, randomState: 1 }).y))).data as Int32Array
    const counts = [0, 0, 0]
    for (const v of y) counts[v]!++
    assert.deepEqual(counts.sort(), [1000, 1000, 1001])
    assert.notDeepEqual(Array.from(y.slice(0, 9)), [0, 1, 2, 0, 1, 2, 0, 1, 2])
  })

  it("permute is a bijection for any size and seed", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3000 }), fc.integer(), (n, seed) => {
        const seen = new Uint8Array(n)
        for (let i = 0; i < n; i++) seen[permute(seed, n, i)]++
        assert.ok(seen.every((c) => c === 1))
      }),
      { numRuns: 50 }
    )
  })

  it("standard scaling gives zero mean and unit variance per column", async () => {
    const { X } = makeBlobs({ nSamples: 1_000, centers: [[-6, -6], [0, 0], [9, 1]], chunks: 128, randomState: 5 })
    const { X: scaled } = await sync(Normalize.fitTransform(X))
    const m = await sync(CA.computeDelayed(Normalize.moments(scaled)))
    for (let j = 0; j < 2; j++) {
      assert.ok(Math.abs(m.mean[j]!) < 1e-12)
      assert.ok(Math.abs(m.m2[j]! / m.count - 1) < 1e-12)
    }
  })

  it("rejects chunks of mixed shapes or dtypes, naming the stage and both shapes", () => {
    assert.throws(
      () => CA.fromChunks("float64", [Chunk.make("float64", [2, 2], new Float64Array(4)), Chunk.make("float64", [1, 3], new Float64Array(3))]),
      (e: unknown) => isDslError(e) && /fromChunks.*\[2, 2\].*\[1, 3\]/.test(e.message)
    )
    assert.throws(
      () => CA.fromChunks("float64", [Chunk.make("int32", [2], new Int32Array(2))]),
      (e: unknown) => isDslError(e) && /dtype mismatch: expected float64, got int32/.test(e.message)
    )
    assert.throws(() => CA.splitRows(10, 0), (e: unknown) => isDslError(e) && /chunk rows must be >= 1/.test(e.message))
    assert.throws(() => makeBlobs({ nSamples: 0, centers: [[0]], chunks: 1 }), /nSamples: must be a positive integer/)
    assert.throws(() => makeBlobs({ nSamples: 5, centers: [[0], [1, 2]], chunks: 1 }), /same number of coordinates/)
  })
})

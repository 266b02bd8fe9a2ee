import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import * as R from "../../src/dsl/Reductions.ts"

const sync = <A, E>(e: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromise(Effect.provide(e, Executor.layerSync))
const ctor = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array } as const
const stats = ["count", "sum", "mean", "var", "std", "min", "max"] as const

/** Naive statistic of plain numbers. */
const naive = (xs: ReadonlyArray<number>, stat: R.Stat, ddof: number): number => {
  const n = xs.length
  const mean = xs.reduce((a, b) => a + b, 0) / n
  const m2 = xs.reduce((a, b) => a + (b - mean) ** 2, 0)
  switch (stat) {
    case "count":
      return n
    case "sum":
      return xs.reduce((a, b) => a + b, 0)
    case "mean":
      return mean
    case "var":
      return n - ddof > 0 ? m2 / (n - ddof) : NaN
    case "std":
      return n - ddof > 0 ? Math.sqrt(m2 / (n - ddof)) : NaN
    case "min":
      return Math.min(...xs)
    case "max":
      return Math.max(...xs)
  }
}
const close = (a: number, b: number) => (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= 1e-9 * (1 + Math.abs(b))

describe("Reductions", () => {
  it("every statistic along axis 0 and over all elements matches a naive reference, whatever the chunking", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("float32", "float64", "int32", "int64", "uint8") as fc.Arbitrary<Chunk.DType>,
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom(...stats),
        fc.constantFrom(0, 1),
        fc.integer({ min: 0, max: 10_000 }),
        async (dtype, cuts, cols, stat, ddof, seed) => {
          const d = Math.max(1, cols)
          const rows = cuts.reduce((a, b) => a + b, 0)
          const values = Array.from({ length: rows * d }, (_, i) => {
            const v = Math.floor(Math.sin(seed + i * 7.1) * 100)
            return dtype === "uint8" ? Math.abs(v) : dtype.startsWith("float") ? Math.fround(v / 8) : v
          })
          let o = 0
          const X = CA.fromChunks(dtype, cuts.map((n) => {
            const part = values.slice(o * d, (o + n) * d)
            o += n
            return Chunk.make(dtype, cols === 0 ? [n] : [n, d], (ctor[dtype] as any).from(dtype === "int64" ? part.map(BigInt) : part))
          }))
          const all = await sync(CA.computeDelayed(R.reduce(X, stat, { ddof })))
          assert.ok(close(all, naive(values, stat, ddof)), `${stat} over all: ${all} vs ${naive(values, stat, ddof)}`)
          const perColumn = await sync(CA.computeDelayed(R.reduce(X, stat, { axis: 0, ddof })))
          assert.equal(perColumn.length, d)
          for (let j = 0; j < d; j++) {
            const col = values.filter((_, i) => i % d === j)
            assert.ok(close(perColumn[j]!, naive(col, stat, ddof)), `${stat} column ${j}: ${perColumn[j]} vs ${naive(col, stat, ddof)}`)
          }
        }
      ),
      { numRuns: 100 }
    )
  })

  it("var and std with ddof = n are NaN, as NumPy's", async () => {
    const X = CA.fromChunks("float64", [Chunk.make("float64", [2], new Float64Array([1, 3]))])
    assert.ok(Number.isNaN(await sync(CA.computeDelayed(R.std(X, { ddof: 2 })))))
    assert.equal(await sync(CA.computeDelayed(R.variance(X, { ddof: 1 }))), 2)
  })

  it("rejects a negative ddof, naming the stage", () => {
    const X = CA.fromChunks("float64", [Chunk.make("float64", [2], new Float64Array(2))])
    assert.throws(() => R.std(X, { ddof: -1, stage: "spread" }), (e: unknown) => isDslError(e) && /ddof: stage "spread": must be a non-negative integer, got -1/.test(e.message))
  })
})

describe("Reductions' stage", () => {
  const X = CA.fromChunks("float64", [Chunk.make("float64", [2, 2], Float64Array.of(1, 2, 3, 4)), Chunk.make("float64", [1, 2], Float64Array.of(5, 6))])
  /** the stages of the tasks a reduction's graph hands the engine */
  const stagesOf = async (e: Effect.Effect<unknown, unknown, Executor.Executor>) => {
    const seen = new Set<string | undefined>()
    const cb: Hooks.Callbacks = { start: (g) => { for (const s of g.specs) seen.add(s.stage) } }
    await sync(e.pipe(Hooks.provide(cb)))
    return seen
  }

  it("issue 31 item 10: Reductions inside a pipeline stage carry the stage's name; a given `stage` wins; DslErrors still name the statistic", async () => {
    for (const stat of stats) {
      const inStage = await stagesOf(Effect.provideService(CA.computeDelayed(R.reduce(X, stat)), TaskGraph.CurrentStage, "summary"))
      assert.deepEqual(inStage, new Set(["summary"]), stat)
    }
    const given = await stagesOf(Effect.provideService(CA.computeDelayed(R.mean(X, { stage: "own" })), TaskGraph.CurrentStage, "summary"))
    assert.deepEqual(given, new Set(["own"]))
    // outside a pipeline: no stage at all (not "count")
    assert.deepEqual(await stagesOf(CA.computeDelayed(R.count(X))), new Set([undefined]))
    const Y = CA.fromChunks("float64", [Chunk.make("float64", [1, 1, 1], Float64Array.of(1))])
    assert.throws(() => R.count(Y), (e: unknown) => isDslError(e) && /count/.test(e.message))
  })
})

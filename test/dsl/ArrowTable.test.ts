import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import * as fc from "fast-check"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as ArrowTable from "../../src/dsl/ArrowTable.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { isDslError } from "../../src/dsl/DslError.ts"

const sync = <A, E>(e: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromise(Effect.provide(e, Executor.layerSync))
const ctor = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array } as const

describe("ArrowTable", () => {
  it("a table has one column per array column and one record batch per chunk, values in place", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("float32", "float64", "int32", "int64", "uint8") as fc.Arbitrary<Chunk.DType>,
        fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 3 }),
        async (dtype, cuts, cols) => {
          const d = Math.max(1, cols)
          let v = 0
          const chunks = cuts.map((rows) => {
            const data = (ctor[dtype] as any).from({ length: rows * d }, () => (dtype === "int64" ? BigInt(v++) : v++ % 200))
            return Chunk.make(dtype, cols === 0 ? [rows] : [rows, d], data)
          })
          const X = CA.fromChunks(dtype, chunks)
          const t = await sync(ArrowTable.toTable(X))
          assert.equal(t.numRows, X.shape[0])
          assert.equal(t.numCols, d)
          assert.equal(t.batches.length, cuts.length)
          const all = (await sync(CA.compute(X))).data as ArrayLike<number | bigint>
          for (let j = 0; j < d; j++) {
            const col = t.getChild(String(j))!
            for (let r = 0; r < X.shape[0]!; r++) assert.equal(col.get(r), all[r * d + j])
          }
        }
      ),
      { numRuns: 40 }
    )
  })

  it("a 1-D array's chunks become the column's buffers without a copy", async () => {
    const c = Chunk.allocShared("float64", [3])
    ;(c.data as Float64Array).set([1, 2, 3])
    const t = await sync(ArrowTable.toTable(CA.fromChunks("float64", [c]), { names: ["x"] }))
    assert.equal(t.getChild("x")!.data[0]!.values.buffer, c.data.buffer)
  })

  it("rejects names that do not name every column once", async () => {
    const X = CA.fromChunks("float64", [Chunk.make("float64", [1, 2], new Float64Array(2))])
    for (const [names, pattern] of [[["a"], /names: 1 names for 2 columns/], [["a", "a"], /names: duplicate column names: a, a/]] as const) {
      const exit = await Effect.runPromiseExit(Effect.provide(ArrowTable.toTable(X, { names }), Executor.layerSync))
      assert.ok(Exit.isFailure(exit))
      const err = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
      assert.ok(isDslError(err) && pattern.test(err.message))
    }
  })
})

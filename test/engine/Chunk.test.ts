import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as Chunk from "../../src/engine/Chunk.ts"

describe("Chunk", () => {
  it("allocates zeroed chunks in shared memory", () => {
    const c = Chunk.allocShared("float32", [2, 3])
    assert.equal(c.data.length, 6)
    assert.ok(c.data.buffer instanceof SharedArrayBuffer)
    assert.equal(Chunk.nbytes(c), 24)
    assert.ok(Chunk.isChunk(c))
  })

  it("rejects a shape that does not match the data, and a wrong array type", () => {
    assert.throws(() => Chunk.make("float64", [3], new Float64Array(4)), RangeError)
    assert.throws(() => Chunk.make("int32", [4], new Float64Array(4)), RangeError)
  })

  it("moves data into shared memory without changing values", () => {
    const c = Chunk.make("int64", [2], new BigInt64Array([1n, -2n]))
    const s = Chunk.toShared(c)
    assert.ok(Chunk.isShared(s.data))
    assert.deepEqual([...s.data], [1n, -2n])
    assert.equal(Chunk.toShared(s), s)
  })

  it("recognises chunks structurally (after structured clone)", () => {
    const c = structuredClone(Chunk.allocShared("uint8", [4]))
    assert.ok(Chunk.isChunk(c))
    assert.ok(!Chunk.isChunk({ dtype: "float64", shape: [1], data: new Int32Array(1) }))
    assert.ok(!Chunk.isChunk(null))
  })
})

import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import * as Chunk from "../../src/engine/Chunk.ts"
import { describeResult } from "../../src/engine/internal/kernels.ts"

const chunkCount = (r: unknown): number => describeResult(r).chunks

describe("describeResult", () => {
  it("counts an object literal as the sum of its values, as dask's sizeof of a dict", () => {
    const r = { sums: new Float64Array(6), counts: new Float64Array(3), error: 0.5, rows: 10 }
    assert.deepEqual(describeResult(r), { nbytes: 88, chunks: 2, shape: [], dtype: "object", type: "Object" })
    assert.equal(chunkCount(r), 2)
    const nested = { a: [new Int32Array(4), { b: Chunk.make("float32", [10], new Float32Array(10)) }], n: null }
    assert.equal(describeResult(nested).nbytes, 16 + 40)
    assert.equal(chunkCount(nested), 2)
  })

  it("counts shared and cyclic parts once, and ignores class instances' fields", () => {
    const big = new Float64Array(1000)
    const o: Record<string, unknown> = { x: big, y: big, list: [big, big] }
    o.self = o
    ;(o.list as Array<unknown>).push(o.list)
    assert.equal(describeResult(o).nbytes, 8000)
    assert.equal(chunkCount(o), 1)
    class Box {
      readonly data = new Float64Array(100)
    }
    assert.deepEqual(describeResult(new Box()), { nbytes: 0, chunks: 0, shape: [], dtype: "object", type: "Box" })
    assert.equal(describeResult(new SharedArrayBuffer(64)).nbytes, 64)
  })

  it("counts each object once past the first 64 too, and keeps no reference after", () => {
    const arrays = Array.from({ length: 200 }, () => new Float64Array(2))
    const r = { all: arrays, again: [...arrays].reverse(), nested: arrays.map((a) => ({ a })) }
    assert.equal(describeResult(r).nbytes, 200 * 16)
    assert.equal(chunkCount(r), 200)
    // a second, small walk right after is not confused by the first one's objects
    assert.equal(describeResult({ x: arrays[0], y: arrays[0] }).nbytes, 16)
  })

  it("equals a naive sum over distinct typed arrays for trees without sharing", () => {
    const leaf = fc.oneof(
      fc.integer({ min: 0, max: 64 }).map((n) => new Float64Array(n) as unknown),
      fc.double().map((x) => x as unknown),
      fc.constant(null as unknown)
    )
    const tree = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, fc.array(tie("node"), { maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 3 }), tie("node"), { maxKeys: 4 }))
    })).node
    const naive = (u: unknown): number =>
      u instanceof Float64Array ? u.byteLength
      : typeof u === "number" ? 8
      : Array.isArray(u) ? u.reduce((s: number, x) => s + naive(x), 0)
      : typeof u === "object" && u !== null ? Object.values(u).reduce((s: number, x) => s + naive(x), 0)
      : 0
    fc.assert(fc.property(tree, (t) => describeResult(t).nbytes === naive(t)))
  })
})

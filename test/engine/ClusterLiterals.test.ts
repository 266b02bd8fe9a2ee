/**
 * Large literal arguments sent to each cluster worker once
 * (src/engine/internal/cluster/literals.ts), without processes: placeholders put back
 * give the original arguments, each literal travels to a worker once, an array changed
 * in place gets a new key, and a worker that lacks one says which.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { deserialize, serialize } from "node:v8"
import * as fc from "fast-check"
import { hashBytes, keepLiteral, LITERAL_MIN_BYTES, LiteralBook, restoreLiterals } from "../../src/engine/internal/cluster/literals.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

const big = (n: number, seed = 1): Float64Array => Float64Array.from({ length: n }, (_, i) => i * seed)
const BIG = LITERAL_MIN_BYTES / 8

/** Arguments: small values, refs, big arrays, chunks (plain objects holding one), nested. */
const argsArb = fc.array(
  fc.oneof(
    fc.integer(),
    fc.string(),
    fc.constant(null),
    fc.constant(TaskGraph.ref("a")),
    fc.integer({ min: 1, max: 4 }).map((s) => big(BIG + s, s)),
    fc.integer({ min: 1, max: 4 }).map((s) => ({ dtype: "float64", shape: [BIG + s], data: big(BIG + s, s) })),
    fc.integer({ min: 1, max: 3 }).map((s) => [1, [big(BIG * 2, s)], { x: new Float64Array(4) }]),
    fc.constant(new Float64Array(8)),
    // the user's own objects shaped like the wire's placeholders are data
    fc.string().map((k) => ({ "~tessera/lit": k })),
    fc.string().map((k) => ({ "~tessera/esc": { "~tessera/lit": k } }))
  ),
  { maxLength: 6 }
)

describe("cluster literals", () => {
  it("restores the arguments exactly after the wire, each literal sent once per worker", () => {
    fc.assert(fc.property(argsArb, argsArb, (a, b) => {
      const book = new LiteralBook("t")
      book.beginCompute()
      const held = new Map<string, unknown>()
      for (const args of [a, b, a]) {
        const out = new Map<string, unknown>()
        const wire = deserialize(serialize(book.prepare(args, "w1", out))) as ReadonlyArray<unknown>
        for (const [k, v] of deserialize(serialize([...out])) as Array<[string, unknown]>) {
          assert.ok(!held.has(k), `literal ${k} sent twice`)
          held.set(k, v)
        }
        const missing = new Set<string>()
        assert.deepStrictEqual(restoreLiterals(wire, held, missing), args)
        assert.equal(missing.size, 0)
      }
    }))
  })

  it("keeps small values and refs in the batch", () => {
    const book = new LiteralBook("t")
    book.beginCompute()
    const out = new Map<string, unknown>()
    const args = [1, "x", TaskGraph.ref("a"), new Float64Array(BIG - 1)]
    assert.equal(book.prepare(args, "w", out), args)
    assert.equal(out.size, 0)
  })

  it("sends an array changed in place again, under a new key, and drops the old one", () => {
    const book = new LiteralBook("t")
    const arr = big(BIG, 1)
    book.beginCompute()
    const first = new Map<string, unknown>()
    book.prepare([arr], "w", first)
    arr[7] = -1
    book.beginCompute()
    const second = new Map<string, unknown>()
    book.prepare([arr], "w", second)
    assert.equal(second.size, 1)
    assert.notDeepStrictEqual([...first.keys()], [...second.keys()])
    assert.deepStrictEqual(book.takeDropped("w"), [...first.keys()])
    // unchanged in the next compute: nothing sent
    book.beginCompute()
    const third = new Map<string, unknown>()
    book.prepare([arr], "w", third)
    assert.equal(third.size, 0)
  })

  it("says which literals a worker lacks, and sends them again once forgotten", () => {
    const book = new LiteralBook("t")
    book.beginCompute()
    const out = new Map<string, unknown>()
    const arr = big(BIG)
    const wire = book.prepare([arr], "w", out)
    const missing = new Set<string>()
    restoreLiterals(wire, new Map(), missing)
    assert.deepStrictEqual([...missing], [...out.keys()])
    book.forget("w", [...missing])
    const again = new Map<string, unknown>()
    book.prepare([arr], "w", again)
    assert.deepStrictEqual([...again.keys()], [...out.keys()])
  })

  it("hashes bytes: equal bytes equal hashes, one changed byte another", () => {
    fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.nat(), (bytes, at) => {
      const copy = bytes.slice()
      assert.equal(hashBytes(bytes), hashBytes(copy))
      copy[at % copy.length] = copy[at % copy.length]! ^ 1
      assert.notEqual(hashBytes(bytes), hashBytes(copy))
    }))
  })

  it("hashes the bytes a view shows, whatever its type or buffer (shared or not), at the same alignment", () => {
    fc.assert(fc.property(fc.uint8Array({ minLength: 8, maxLength: 300 }), fc.nat({ max: 3 }), (bytes, words) => {
      // (4-byte-aligned views hash by words, others by bytes: a view keeps its offset between computes)
      const offset = words * 4
      const shared = new Uint8Array(new SharedArrayBuffer(bytes.length + offset), offset)
      shared.set(bytes)
      assert.equal(hashBytes(shared), hashBytes(bytes))
      assert.equal(hashBytes(bytes.slice().buffer), hashBytes(bytes))
      const n = bytes.length & ~7
      const f64 = new Float64Array(bytes.slice(0, n).buffer)
      assert.equal(hashBytes(f64), hashBytes(bytes.subarray(0, n)))
    }))
  })

  it("keeps a typed array literal in shared memory (same type and values), other literals as they came", () => {
    const ctors = [Float64Array, Float32Array, Int32Array, Uint8Array, Int16Array, BigInt64Array] as const
    fc.assert(fc.property(fc.constantFrom(...ctors), fc.integer({ min: 0, max: 64 }), fc.nat({ max: 3 }), (Ctor, n, pad) => {
      const buf = new ArrayBuffer((n + pad) * Ctor.BYTES_PER_ELEMENT)
      const v = new (Ctor as unknown as new(b: ArrayBuffer, o: number, l: number) => Float64Array | BigInt64Array)(buf, pad * Ctor.BYTES_PER_ELEMENT, n)
      for (let i = 0; i < n; i++) v[i] = (typeof v[0] === "bigint" || v instanceof BigInt64Array ? BigInt(i * 3) : i * 3) as never
      const kept = keepLiteral(v) as typeof v
      assert.ok(kept.buffer instanceof SharedArrayBuffer)
      assert.equal(kept.constructor, Ctor)
      assert.deepEqual([...kept], [...v])
      // already shared: the same array
      assert.equal(keepLiteral(kept), kept)
    }))
    const ab = new ArrayBuffer(8)
    const dv = new DataView(new ArrayBuffer(8))
    assert.equal(keepLiteral(ab), ab)
    assert.equal(keepLiteral(dv), dv)
  })
})

/**
 * The data plane's framing (src/engine/internal/cluster/frames.ts), without sockets:
 * random values round-trip byte-exactly however the frame is cut into chunks.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { Decoder, encode, encodeRequest, FrameError, RequestReader } from "../../src/engine/internal/cluster/frames.ts"
import { decodeValue, encodeValue } from "../../src/engine/internal/cluster/protocol.ts"

const typed = fc.oneof(
  fc.int8Array(),
  fc.uint8Array(),
  fc.uint8ClampedArray(),
  fc.int16Array(),
  fc.uint16Array(),
  fc.int32Array(),
  fc.uint32Array(),
  fc.float32Array(),
  fc.float64Array(),
  fc.bigInt64Array(),
  fc.bigUint64Array(),
  fc.uint8Array().map((a) => new DataView(a.buffer)),
  fc.uint8Array().map((a) => a.buffer),
  // a view into the middle of a larger buffer: only the view's bytes go
  fc.tuple(fc.uint8Array({ minLength: 8 }), fc.nat(7)).map(([a, o]) => new Uint8Array(a.buffer, o, a.length - o)),
  fc.constant(new Float64Array(0))
)
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.oneof(fc.integer(), fc.double(), fc.string(), fc.boolean(), fc.constant(null), fc.constant(undefined)),
    typed,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string(), tie("value"), { maxKeys: 4 })
  )
}))

/** The value's typed arrays as byte arrays, so equality is byte-exact (NaN payloads, -0). */
const bytesOf = (v: unknown): unknown => {
  if (ArrayBuffer.isView(v)) return [v.constructor.name, Array.from(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))]
  if (v instanceof ArrayBuffer) return ["ArrayBuffer", Array.from(new Uint8Array(v))]
  if (Array.isArray(v)) return v.map(bytesOf)
  if (typeof v === "object" && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, bytesOf(x)]))
  return v
}

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => Buffer.concat(parts)

describe("data-plane frames", () => {
  it("round-trips random values byte-exactly, cut anywhere, frames back to back", () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 3 }), fc.array(fc.nat(), { maxLength: 6 }), (vs, cuts) => {
        const frames = vs.map((v) => encode(v, () => 0.25))
        for (const f of frames) assert.equal(f.bytes, concat(f.parts).byteLength)
        const all = concat(frames.flatMap((f) => f.parts))
        const at = [...new Set(cuts.map((c) => c % (all.byteLength + 1)))].sort((a, b) => a - b)
        const chunks: Array<Uint8Array> = []
        let prev = 0
        for (const c of [...at, all.byteLength]) {
          chunks.push(all.subarray(prev, c))
          prev = c
        }
        const d = new Decoder()
        const got: Array<unknown> = []
        for (const c of chunks) {
          let r = d.push(c)
          while (r !== undefined) {
            got.push(r)
            r = d.push(new Uint8Array(0))
          }
        }
        assert.equal(got.length, vs.length)
        got.forEach((g, i) => {
          const r = g as { value: unknown; bytes: number; serialize: number }
          assert.deepStrictEqual(bytesOf(r.value), bytesOf(vs[i]))
          assert.equal(r.bytes, frames[i]!.bytes)
          assert.equal(r.serialize, 0.25)
        })
        assert.equal(d.busy, false)
      }),
      // an own "__proto__" key (JSON.parse makes one) is a key like any other (found by this property)
      { numRuns: 300, examples: [[[JSON.parse('{"__proto__":0,"a":{"__proto__":[1]}}')], []]] }
    )
  })

  it("reads into the receive buffer in place (target/wrote), reads of any size, frames back to back", () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 3 }), fc.array(fc.integer({ min: 1, max: 70000 }), { minLength: 1 }), (vs, sizes) => {
        const frames = vs.map((v) => encode(v))
        const all = concat(frames.flatMap((f) => f.parts))
        const d = new Decoder()
        const got: Array<unknown> = []
        let at = 0
        for (let i = 0; at < all.byteLength; i++) {
          const into = d.target()
          const n = Math.min(into.byteLength, sizes[i % sizes.length]!, all.byteLength - at)
          into.set(all.subarray(at, at + n))
          at += n
          let r = d.wrote(into, n)
          while (r !== undefined) {
            got.push((r as { value: unknown }).value)
            r = d.push(new Uint8Array(0))
          }
        }
        assert.deepStrictEqual(got.map(bytesOf), vs.map(bytesOf))
      }),
      { numRuns: 200 }
    )
  })

  it("sends typed arrays as views of their own memory and decodes them into one buffer", () => {
    const a = new Float64Array([1, 2, 3])
    const b = new Int16Array([-1, 5])
    const f = encode({ x: a, y: [b, "s"] })
    assert.ok(f.parts.some((p) => p.buffer === a.buffer))
    const r = new Decoder().push(concat(f.parts))!
    const v = r.value as { x: Float64Array; y: [Int16Array, string] }
    assert.deepStrictEqual(Array.from(v.x), [1, 2, 3])
    assert.deepStrictEqual(Array.from(v.y[0]), [-1, 5])
    assert.equal(v.x.buffer, v.y[0].buffer)
    assert.equal(v.x.byteOffset % 8, 0)
    assert.equal(v.y[0].byteOffset % 8, 0)
  })

  it("sends shared memory without a copy and decodes it unshared; keeps an object that looks like a placeholder", () => {
    const s = new Float32Array(new SharedArrayBuffer(8))
    s[1] = 7
    const odd = { "~tessera/buf": 0 }
    const f = encode({ s, odd, t: new Uint8Array([9]) })
    assert.ok(f.parts.some((p) => p.buffer === s.buffer))
    const r = new Decoder().push(concat(f.parts))!
    const v = r.value as { s: Float32Array; odd: unknown; t: Uint8Array }
    assert.equal(v.s.buffer instanceof SharedArrayBuffer, false)
    assert.deepStrictEqual(Array.from(v.s), [0, 7])
    assert.deepStrictEqual(v.odd, odd)
    assert.deepStrictEqual(Array.from(v.t), [9])
  })

  it("reads requests split anywhere and refuses one that is not a key list", () => {
    const bytes = Buffer.concat([encodeRequest(["a", "b"]), encodeRequest([])])
    const r = new RequestReader()
    const got = [...r.push(bytes.subarray(0, 5)), ...r.push(bytes.subarray(5))]
    assert.deepStrictEqual(got, [["a", "b"], []])
    const bad = Buffer.from(JSON.stringify({ no: 1 }))
    const frame = Buffer.concat([Buffer.from([bad.length, 0, 0, 0]), bad])
    assert.throws(() => new RequestReader().push(frame), FrameError)
  })

  it("refuses a frame whose head is not a Tessera head", () => {
    const head = Buffer.from([0xff, 0x0f, 0x49, 0x02]) // v8: the number 1
    const pre = Buffer.alloc(12)
    pre.writeUInt32LE(head.length, 0)
    assert.throws(() => new Decoder().push(Buffer.concat([pre, head])), FrameError)
  })

  it("sends RPC values (encodeValue) with shared memory copied and every own key kept, \"__proto__\" included", () => {
    fc.assert(
      fc.property(value, (v) => {
        const shared = new Float64Array(new SharedArrayBuffer(16)).fill(1.5)
        // shared memory at the top and deeper (beside values copied only where it is)
        const sent = { v, shared, nested: [v, { s: shared }], ...JSON.parse('{"__proto__":{"x":1}}') }
        const got = decodeValue<Record<string, unknown>>(encodeValue(sent))
        const copied = new Float64Array([1.5, 1.5])
        assert.deepStrictEqual(bytesOf(got), bytesOf({ ...sent, shared: copied, nested: [v, { s: copied }] }))
        assert.ok(Object.hasOwn(got, "__proto__"))
        // the sender's value is left as it was
        assert.equal((sent.nested[1] as { s: Float64Array }).s, shared)
      }),
      { numRuns: 100 }
    )
  })
})

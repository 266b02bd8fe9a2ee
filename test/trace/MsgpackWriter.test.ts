import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { encode } from "@msgpack/msgpack"
import * as fc from "fast-check"
import { MsgpackWriter } from "../../src/trace/internal/msgpackWriter.ts"

const bytesOf = (w: MsgpackWriter) => w.buf.slice(0, w.pos)

/** The bytes of `v` from a writer on a buffer of its own, never a reused one (the reference). */
const fresh = (v: unknown): Uint8Array => {
  const w = new MsgpackWriter()
  w.buf = new Uint8Array(1 << 16)
  w.view = new DataView(w.buf.buffer)
  w.value(v)
  return bytesOf(w)
}
const value = fc.jsonValue({ maxDepth: 3 })

describe("MsgpackWriter buffer reuse", () => {
  it("hands a released buffer to the next writer, which writes correct bytes over the old ones", () => {
    const a = new MsgpackWriter()
    a.value({ filler: "x".repeat(1000), n: [1, 2, 3] })
    const buf = a.buf
    a.release()
    const b = new MsgpackWriter()
    assert.equal(b.buf, buf, "the released buffer is reused")
    b.value("short")
    assert.deepEqual(bytesOf(b), encode("short"))
    b.release()
  })

  it("lets a released writer write again (into a fresh buffer), and never shares a buffer between two live writers", () => {
    fc.assert(fc.property(fc.array(value, { minLength: 1, maxLength: 6 }), (values) => {
      const writers = values.map(() => new MsgpackWriter())
      for (const w of writers) w.release()
      const live = values.map(() => new MsgpackWriter())
      assert.equal(new Set(live.map((w) => w.buf)).size, live.length)
      values.forEach((v, i) => live[i]!.value(v))
      // a released writer still works, in a buffer of its own: writing now must not
      // touch the bytes of the live writer that took its old buffer
      const w = writers[0]!
      const marker = { released: "x".repeat(40) }
      w.value(marker)
      // compared with a fresh buffer's bytes, not @msgpack's: the writer keeps -0 as a
      // float64 where @msgpack writes the integer 0
      const expected = values.map(fresh)
      values.forEach((_, i) => assert.deepEqual(bytesOf(live[i]!), expected[i]))
      assert.deepEqual(bytesOf(w), encode(marker))
      for (const x of live) x.release()
      w.release()
    }), { numRuns: 50 })
  })
})

import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { encode } from "@msgpack/msgpack"
import * as fc from "fast-check"
import { MsgpackWriter } from "../../src/trace/internal/MsgpackWriter.ts"

const bytesOf = (w: MsgpackWriter) => w.buf.slice(0, w.pos)
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
      values.forEach((v, i) => assert.deepEqual(bytesOf(live[i]!), encode(v)))
      for (const w of live) w.release()
      // a released writer still works
      const w = writers[0]!
      w.value(values[0])
      assert.deepEqual(bytesOf(w), encode(values[0]))
      w.release()
    }), { numRuns: 50 })
  })
})

/**
 * The decoder's growable columns (trace/internal/columns.ts): `reserve` at any point
 * keeps every row and the length, and pushing past a reservation still grows.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { DecodedTaskColumns, F64, I32, MemoryColumns } from "../../src/trace/internal/columns.ts"

describe("decoder columns", () => {
  it("reserve keeps rows and length, wherever it happens, and pushing goes on past it", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { maxLength: 3000 }), fc.array(fc.tuple(fc.nat(3000), fc.nat(5000))), (xs, reserves) => {
        const f = new F64()
        const i = new I32()
        xs.forEach((x, k) => {
          for (const [at, n] of reserves) if (at === k) (f.reserve(n), i.reserve(n))
          f.push(x / 7)
          i.push(x)
        })
        assert.deepStrictEqual([...i.view()], xs)
        assert.deepStrictEqual([...f.view()], xs.map((x) => x / 7))
        assert.ok(f.data.length >= xs.length && i.data.length >= xs.length)
      }),
      { numRuns: 100 }
    )
  })

  it("a reserved task or memory table fills up to its reservation without a new array", () => {
    const t = new DecodedTaskColumns()
    t.reserve(5000, 10000)
    const m = new MemoryColumns()
    m.reserve(5000)
    const arrays = () => [t.host.data, t.key.data, t.end.data, t.duration.data, t.deps.data, t.depOffsets.data, m.timestamp.data, m.worker.data]
    const before = arrays()
    for (let r = 0; r < 5000; r++) {
      t.push(0, 1, r, 2, -1, r, 1, 8, NaN)
      t.detail(-1, -1, -1, -1, NaN, NaN, null)
      t.deps.push(r)
      t.deps.push(r + 1)
      t.endRow()
      m.push(r, 0, 1, r, -1, 8, 1)
    }
    arrays().forEach((a, k) => assert.equal(a, before[k], `column ${k} was replaced`))
    assert.equal(t.length, 5000)
    assert.equal(t.depOffsets.view()[5000], 10000)
    assert.equal(m.length, 5000)
  })
})

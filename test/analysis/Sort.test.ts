import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { argsortDesc } from "../../src/analysis/internal/sort.ts"

describe("Sort", () => {
  it("orders like a comparator sort: value descending, NaN last, ties by the tie-breaker", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.double({ noDefaultInfinity: true }), fc.constantFrom(0, 1, 2.5, -3)), { maxLength: 200 }),
        (xs) => {
          const values = Float64Array.from(xs)
          const got = Array.from(argsortDesc(values, (a, b) => a - b))
          const want = xs.map((_, i) => i).sort((a, b) => {
            const x = values[a]
            const y = values[b]
            if (Number.isNaN(x) || Number.isNaN(y)) return Number(Number.isNaN(x)) - Number(Number.isNaN(y)) || a - b
            return y - x || (Object.is(x, y) ? a - b : Object.is(x, -0) ? 1 : -1)
          })
          assert.deepStrictEqual(got, want)
        }
      ),
      { numRuns: 100 }
    )
  })
})

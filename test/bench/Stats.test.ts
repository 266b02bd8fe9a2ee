import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import * as S from "../../src/analysis/Stats.ts"

/** A standard normal draw from a seeded uniform generator (Box–Muller). */
const normal = (next: () => number) => () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())

/** `n` draws of a log-normal timing-like distribution (median `m`, spread `sigma`). */
const timings = (next: () => number, n: number, m: number, sigma: number): Array<number> => {
  const z = normal(next)
  return Array.from({ length: n }, () => m * Math.exp(sigma * z()))
}

describe("Stats", () => {
  it("issue 36: quantiles and the median match hand-computed values (type 7)", () => {
    assert.equal(S.median([3, 1, 2]), 2)
    assert.equal(S.median([4, 1, 3, 2]), 2.5)
    assert.equal(S.quantileSorted([1, 2, 3, 4, 5], 0.25), 2)
    assert.equal(S.quantileSorted([10, 20], 0.25), 12.5)
    assert.ok(Number.isNaN(S.median([])))
    assert.equal(S.median([NaN, 5, Infinity]), 5, "non-finite values are left out")
  })

  it("issue 36: Mann-Whitney matches published values (exact and normal)", () => {
    // scipy.stats.mannwhitneyu([1..5], [6..10], method="exact"): p = 2/252
    const a = S.mannWhitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert.equal(a.method, "exact")
    assert.equal(a.u, 25)
    assert.ok(Math.abs(a.p - 2 / 252) < 1e-12)
    // a single swap: U = 24, P(U >= 24) = 2/252 one-sided → two-sided 4/252
    const b = S.mannWhitney([1, 2, 3, 4, 6], [5, 7, 8, 9, 10])
    assert.equal(b.u, 24)
    assert.ok(Math.abs(b.p - 4 / 252) < 1e-12)
    // ties use the normal approximation with the tie correction
    const t = S.mannWhitney([1, 1, 2, 2], [2, 3, 3, 3])
    assert.equal(t.method, "normal")
    assert.ok(t.p > 0 && t.p < 1)
    // the symmetric case
    assert.equal(S.mannWhitney([1, 2, 3], [1, 2, 3]).p, 1)
    assert.equal(S.mannWhitney([], [1]).method, "none")
  })

  it("issue 36: the exact null distribution sums to C(n+m, n) and is symmetric (property)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 }), (n, m) => {
        // all distinct values: p of the most extreme arrangement is 2 / C(n+m, n)
        const a = Array.from({ length: n }, (_, i) => i)
        const b = Array.from({ length: m }, (_, i) => n + i)
        let c = 1
        for (let k = 1; k <= n; k++) c = (c * (m + k)) / k
        const r = S.mannWhitney(a, b)
        assert.ok(Math.abs(r.p - Math.min(1, 2 / c)) < 1e-9, `n=${n} m=${m} p=${r.p} C=${c}`)
        assert.equal(S.mannWhitney(b, a).p, r.p)
      }),
      { numRuns: 60 }
    )
  })

  it("issue 36: identical distributions are flagged at no more than the stated rate (5%)", () => {
    // 400 comparisons of 10 against 10 log-normal timings from one distribution
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const next = S.rng(seed)
        let flagged = 0
        const trials = 400
        for (let k = 0; k < trials; k++) {
          if (S.mannWhitney(timings(next, 10, 1, 0.1), timings(next, 10, 1, 0.1)).p <= 0.05) flagged++
        }
        // the exact test is conservative: the expected rate is at most 5% (20 of 400); allow sampling error (3 sd)
        assert.ok(flagged <= 20 + 3 * Math.sqrt(400 * 0.05 * 0.95), `${flagged} of ${trials} flagged`)
      }),
      { numRuns: 5 }
    )
  })

  it("issue 36: a 10% shift is found at the stated power (≥ 90% with 10 runs a side at 3% noise)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const next = S.rng(seed)
        let found = 0
        const trials = 200
        for (let k = 0; k < trials; k++) {
          const a = timings(next, 10, 1, 0.03)
          const b = timings(next, 10, 1.1, 0.03)
          const ci = S.ratioInterval(a, b, { seed: k, resamples: 500 })
          if (S.mannWhitney(a, b).p <= 0.05 && ci.lo > 1) found++
        }
        // the shift is 3.2 sd: the test's power is near 1; at least 90% of trials
        assert.ok(found >= 0.9 * trials, `${found} of ${trials}`)
      }),
      { numRuns: 3 }
    )
  })

  it("issue 36: the bootstrap interval of a median covers the true median about 95% of the time", () => {
    const next = S.rng(7)
    let covered = 0
    const trials = 300
    for (let k = 0; k < trials; k++) {
      const xs = timings(next, 30, 2, 0.2)
      const ci = S.medianInterval(xs, { seed: k, resamples: 500 })
      if (ci.lo <= 2 && 2 <= ci.hi) covered++
    }
    // the percentile bootstrap of a median is slightly liberal at n = 30; 88–100% here
    assert.ok(covered >= 0.88 * trials, `${covered} of ${trials}`)
  })

  it("issue 36: the ratio interval holds the ratio of medians, and equal samples give 1", () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0.001, max: 10, noNaN: true }), { minLength: 2, maxLength: 40 }), fc.double({ min: 0.5, max: 2, noNaN: true }), (xs, f) => {
        const r = S.ratioInterval(xs, xs.map((x) => x * f), { resamples: 200 })
        assert.ok(Math.abs(r.estimate - f) < 1e-9 * f)
        assert.ok(r.lo <= r.hi)
        const same = S.ratioInterval(xs, xs, { resamples: 200 })
        assert.equal(same.estimate, 1)
      }),
      { numRuns: 50 }
    )
  })

  it("issue 36: Benjamini–Hochberg q-values are monotone in p, at least p, and match a worked example", () => {
    // R: p.adjust(c(0.01, 0.04, 0.03, 0.2), "BH") = 0.04 0.0533 0.0533 0.2
    const q = S.benjaminiHochberg([0.01, 0.04, 0.03, 0.2, NaN])
    assert.deepEqual(q.map((x) => Math.round(x * 1e4) / 1e4), [0.04, 0.0533, 0.0533, 0.2, NaN])
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 50 }), (ps) => {
        const qs = S.benjaminiHochberg(ps)
        ps.forEach((p, i) => {
          assert.ok(qs[i]! >= p - 1e-12 && qs[i]! <= 1)
          ps.forEach((p2, j) => {
            if (p < p2) assert.ok(qs[i]! <= qs[j]! + 1e-12)
          })
        })
      }),
      { numRuns: 100 }
    )
  })

  it("issue 36: summarize counts Tukey outliers and the relative MAD", () => {
    const s = S.summarize([1, 1.01, 0.99, 1.02, 0.98, 1, 5])
    assert.equal(s.n, 7)
    assert.equal(s.median, 1)
    assert.equal(s.outliers, 1)
    assert.ok(s.rmad > 0 && s.rmad < 0.05)
    assert.ok(s.lo <= s.median && s.median <= s.hi)
  })
})

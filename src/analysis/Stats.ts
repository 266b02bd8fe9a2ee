/**
 * The statistics behind `tessera bench` and `tessera diff` (issue 36): medians with
 * bootstrap confidence intervals, the ratio of two medians with its interval, the
 * Mann-Whitney U test (exact where the samples are small and untied, else the normal
 * approximation with the tie correction), Benjamini–Hochberg control of the false
 * discovery rate, and Tukey's fences for outliers.
 *
 * Everything here is plain functions over arrays of numbers, deterministic: the
 * bootstrap draws from a seeded generator ({@link rng}), so the same data give the same
 * interval on every run and machine.
 *
 * In plain words (docs/bench.md says more):
 * - a 95% bootstrap interval of a median: resample the data with replacement many
 *   times, take each resample's median; the middle 95% of those medians;
 * - the Mann-Whitney U test asks whether a value drawn from one side tends to be larger
 *   than one drawn from the other; its p-value is the chance of a difference at least as
 *   large as the one seen if both sides came from one distribution;
 * - Benjamini–Hochberg: when many groups are compared at once, it raises the bar so that
 *   of the changes it reports, at most the stated fraction (5%) are false on average.
 *
 * @since 0.1.0
 */

/**
 * A small, fast, seeded generator of uniform numbers in [0, 1) (mulberry32).
 *
 * @since 0.1.0
 * @category constructors
 */
export const rng = (seed: number): () => number => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The finite values of `xs`, sorted ascending (a copy). */
const sortedFinite = (xs: ArrayLike<number>): Float64Array => {
  let n = 0
  for (let i = 0; i < xs.length; i++) if (Number.isFinite(xs[i]!)) n++
  const out = new Float64Array(n)
  let k = 0
  for (let i = 0; i < xs.length; i++) if (Number.isFinite(xs[i]!)) out[k++] = xs[i]!
  return out.sort()
}

/**
 * The `q` quantile (0..1) of sorted values, linearly interpolated between order
 * statistics (Hyndman–Fan type 7, as R's and NumPy's default). NaN for no values.
 *
 * @since 0.1.0
 * @category analysis
 */
export const quantileSorted = (sorted: ArrayLike<number>, q: number): number => {
  const n = sorted.length
  if (n === 0) return NaN
  const h = (n - 1) * Math.min(1, Math.max(0, q))
  const lo = Math.floor(h)
  const hi = Math.min(n - 1, lo + 1)
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!)
}

/**
 * The median of the finite values of `xs` (NaN for none).
 *
 * @since 0.1.0
 * @category analysis
 */
export const median = (xs: ArrayLike<number>): number => quantileSorted(sortedFinite(xs), 0.5)

/**
 * The arithmetic mean of the finite values of `xs` (NaN for none).
 *
 * @since 0.1.0
 * @category analysis
 */
export const mean = (xs: ArrayLike<number>): number => {
  let s = 0
  let n = 0
  for (let i = 0; i < xs.length; i++) if (Number.isFinite(xs[i]!)) (s += xs[i]!, n++)
  return n === 0 ? NaN : s / n
}

/** The k-th smallest (0-based) of `a[0..n)`, reordering `a` (Hoare's quickselect). */
const select = (a: Float64Array, n: number, k: number): number => {
  let lo = 0
  let hi = n - 1
  while (lo < hi) {
    const pivot = a[(lo + hi) >> 1]!
    let i = lo
    let j = hi
    while (i <= j) {
      while (a[i]! < pivot) i++
      while (a[j]! > pivot) j--
      if (i <= j) {
        const t = a[i]!
        a[i] = a[j]!
        a[j] = t
        i++
        j--
      }
    }
    if (k <= j) hi = j
    else if (k >= i) lo = i
    else return a[k]!
  }
  return a[k]!
}

/** The median (type 7) of `src.length` values drawn with replacement from `src`. */
const resampleMedian = (src: Float64Array, scratch: Float64Array, next: () => number): number => {
  const n = src.length
  for (let i = 0; i < n; i++) scratch[i] = src[Math.floor(next() * n)]!
  const h = (n - 1) / 2
  const lo = Math.floor(h)
  const a = select(scratch, n, lo)
  if (lo === h) return a
  // the next order statistic: the smallest of what quickselect left above position lo
  let b = Infinity
  for (let i = lo + 1; i < n; i++) if (scratch[i]! < b) b = scratch[i]!
  return a + (h - lo) * (b - a)
}

/**
 * Options of the bootstrap.
 *
 * @since 0.1.0
 * @category models
 */
export interface BootstrapOptions {
  /** resamples (default 2000) */
  readonly resamples?: number
  /** the interval's coverage (default 0.95) */
  readonly level?: number
  /** the generator's seed (default 1) */
  readonly seed?: number
  /**
   * at most this many values of a side are resampled (default 500): a larger side is
   * first thinned to evenly spaced order statistics, which keeps its distribution and
   * bounds the cost on groups of a million tasks; the interval is then wider than the
   * whole sample's would be (conservative), never narrower
   */
  readonly maxValues?: number
}

/**
 * A point estimate and its confidence interval.
 *
 * @since 0.1.0
 * @category models
 */
export interface Interval {
  readonly estimate: number
  readonly lo: number
  readonly hi: number
}

/** `sorted` thinned to at most `max` evenly spaced order statistics. */
const thin = (sorted: Float64Array, max: number): Float64Array => {
  if (sorted.length <= max) return sorted
  const out = new Float64Array(max)
  for (let i = 0; i < max; i++) out[i] = sorted[Math.round((i * (sorted.length - 1)) / (max - 1))]!
  return out
}

/**
 * The median of `xs` with a percentile-bootstrap confidence interval. With one value
 * the interval is that value; with none, NaN throughout.
 *
 * @since 0.1.0
 * @category analysis
 */
export const medianInterval = (xs: ArrayLike<number>, options: BootstrapOptions = {}): Interval => {
  const sorted = sortedFinite(xs)
  const estimate = quantileSorted(sorted, 0.5)
  if (sorted.length <= 1) return { estimate, lo: estimate, hi: estimate }
  const src = thin(sorted, options.maxValues ?? 500)
  const b = options.resamples ?? 2000
  const level = options.level ?? 0.95
  const next = rng(options.seed ?? 1)
  const scratch = new Float64Array(src.length)
  const meds = new Float64Array(b)
  for (let r = 0; r < b; r++) meds[r] = resampleMedian(src, scratch, next)
  meds.sort()
  return { estimate, lo: quantileSorted(meds, (1 - level) / 2), hi: quantileSorted(meds, 1 - (1 - level) / 2) }
}

/**
 * The ratio of medians `median(b) / median(a)` ("new against old" when `a` is the old
 * side), with a percentile-bootstrap interval: each side resampled on its own. NaN where
 * a side has no value or the old median is 0.
 *
 * @since 0.1.0
 * @category analysis
 */
export const ratioInterval = (a: ArrayLike<number>, b: ArrayLike<number>, options: BootstrapOptions = {}): Interval => {
  const sa = sortedFinite(a)
  const sb = sortedFinite(b)
  const estimate = quantileSorted(sb, 0.5) / quantileSorted(sa, 0.5)
  if (sa.length === 0 || sb.length === 0) return { estimate: NaN, lo: NaN, hi: NaN }
  if (sa.length === 1 && sb.length === 1) return { estimate, lo: estimate, hi: estimate }
  const max = options.maxValues ?? 500
  const pa = thin(sa, max)
  const pb = thin(sb, max)
  const res = options.resamples ?? 2000
  const level = options.level ?? 0.95
  const next = rng(options.seed ?? 1)
  const xa = new Float64Array(pa.length)
  const xb = new Float64Array(pb.length)
  const ratios = new Float64Array(res)
  for (let r = 0; r < res; r++) ratios[r] = resampleMedian(pb, xb, next) / resampleMedian(pa, xa, next)
  ratios.sort()
  return { estimate, lo: quantileSorted(ratios, (1 - level) / 2), hi: quantileSorted(ratios, 1 - (1 - level) / 2) }
}

/**
 * The standard normal distribution function.
 *
 * @since 0.1.0
 * @category analysis
 */
export const normalCdf = (z: number): number => {
  // erfc by its continued-fraction-free Chebyshev fit (Numerical Recipes' erfcc; |error| < 1.2e-7)
  const x = Math.abs(z) / Math.SQRT2
  const t = 1 / (1 + 0.5 * x)
  const y = t * Math.exp(
    -x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
      t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
  )
  return z >= 0 ? 1 - y / 2 : y / 2
}

/**
 * The result of a two-sided Mann-Whitney U test of `a` against `b`.
 *
 * @since 0.1.0
 * @category models
 */
export interface MannWhitney {
  /** U of `b`: the count of pairs (x of a, y of b) with y > x, ties counted a half */
  readonly u: number
  /** two-sided p-value (1 where a side is empty) */
  readonly p: number
  /** the probability that a value of `b` exceeds one of `a` (U / (n·m)): 0.5 means no tendency */
  readonly effect: number
  readonly method: "exact" | "normal" | "none"
}

/** Sizes up to which the exact distribution is used (no ties): n·m at most this. */
const exactLimit = 400

/**
 * The exact null distribution of U for sizes n and m: counts of arrangements per U
 * (0..n·m), by the recurrence f(n, m, u) = f(n-1, m, u-m) + f(n, m-1, u).
 */
const exactCounts = (n: number, m: number): Float64Array => {
  // dp over (i, j): counts for i of the first, j of the second
  let prev: Array<Float64Array> = Array.from({ length: m + 1 }, () => Float64Array.of(1))
  for (let i = 1; i <= n; i++) {
    const cur: Array<Float64Array> = [Float64Array.of(1)]
    for (let j = 1; j <= m; j++) {
      const out = new Float64Array(i * j + 1)
      // the largest of the i+j values belongs to the first sample (adds j to U) or the second (adds 0)
      const a = prev[j]!
      for (let u = 0; u < a.length; u++) out[u + j]! += a[u]!
      const b = cur[j - 1]!
      for (let u = 0; u < b.length; u++) out[u]! += b[u]!
      cur.push(out)
    }
    prev = cur
  }
  return prev[m]!
}

/**
 * The two-sided Mann-Whitney U test (Wilcoxon rank-sum) of `a` against `b` over their
 * finite values. Exact when there are no ties and n·m ≤ 400 (ten runs a side is 100);
 * else the normal approximation with the tie correction and a continuity correction of
 * one half.
 *
 * @since 0.1.0
 * @category analysis
 */
export const mannWhitney = (a: ArrayLike<number>, b: ArrayLike<number>): MannWhitney => {
  const sa = sortedFinite(a)
  const sb = sortedFinite(b)
  const n = sa.length
  const m = sb.length
  if (n === 0 || m === 0) return { u: NaN, p: 1, effect: NaN, method: "none" }
  // ranks by a merge of the two sorted samples; ties share their mean rank
  let i = 0
  let j = 0
  let rankSumB = 0
  let tieTerm = 0
  let rank = 1
  while (i < n || j < m) {
    const v = j >= m || (i < n && sa[i]! <= sb[j]!) ? sa[i]! : sb[j]!
    let ca = 0
    let cb = 0
    while (i < n && sa[i] === v) (ca++, i++)
    while (j < m && sb[j] === v) (cb++, j++)
    const t = ca + cb
    const mid = rank + (t - 1) / 2
    rankSumB += cb * mid
    if (t > 1) tieTerm += t * t * t - t
    rank += t
  }
  const u = rankSumB - (m * (m + 1)) / 2
  const effect = u / (n * m)
  if (tieTerm === 0 && n * m <= exactLimit) {
    const counts = exactCounts(n, m)
    let total = 0
    for (let k = 0; k < counts.length; k++) total += counts[k]!
    // two-sided: twice the smaller tail, including the observed U
    const lower = Math.min(u, n * m - u)
    let tail = 0
    for (let k = 0; k <= lower; k++) tail += counts[k]!
    return { u, p: Math.min(1, (2 * tail) / total), effect, method: "exact" }
  }
  const N = n + m
  const mu = (n * m) / 2
  const variance = ((n * m) / 12) * ((N + 1) - tieTerm / (N * (N - 1)))
  if (!(variance > 0)) return { u, p: 1, effect, method: "normal" }
  const z = (Math.abs(u - mu) - 0.5) / Math.sqrt(variance)
  return { u, p: Math.min(1, 2 * (1 - normalCdf(Math.max(0, z)))), effect, method: "normal" }
}

/**
 * Benjamini–Hochberg adjusted p-values (q-values), in the order of `ps`: a group is a
 * discovery at false-discovery rate `alpha` when its q-value is at most `alpha`. NaN
 * p-values (groups not tested) stay NaN and do not count as tests.
 *
 * @since 0.1.0
 * @category analysis
 */
export const benjaminiHochberg = (ps: ReadonlyArray<number>): Array<number> => {
  const idx = ps.map((p, i) => [p, i] as const).filter(([p]) => Number.isFinite(p)).sort((x, y) => x[0] - y[0])
  const m = idx.length
  const q = ps.map(() => NaN)
  let min = 1
  for (let k = m - 1; k >= 0; k--) {
    const [p, i] = idx[k]!
    min = Math.min(min, (p * m) / (k + 1))
    q[i] = min
  }
  return q
}

/**
 * A sample summarised for a benchmark: count, median with its 95% interval, mean,
 * standard deviation, the relative median absolute deviation, quartiles, min/max and
 * the values beyond Tukey's fences (1.5 interquartile ranges beyond the quartiles).
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary {
  readonly n: number
  readonly median: number
  readonly lo: number
  readonly hi: number
  readonly mean: number
  readonly sd: number
  /** median absolute deviation / median (0..; NaN for a zero median) */
  readonly rmad: number
  readonly q1: number
  readonly q3: number
  readonly min: number
  readonly max: number
  readonly outliers: number
}

/**
 * Summarises `xs` (see {@link Summary}).
 *
 * @since 0.1.0
 * @category analysis
 */
export const summarize = (xs: ArrayLike<number>, options: BootstrapOptions = {}): Summary => {
  const s = sortedFinite(xs)
  const n = s.length
  const ci = medianInterval(s, options)
  const mu = mean(s)
  let ss = 0
  for (let i = 0; i < n; i++) ss += (s[i]! - mu) ** 2
  const q1 = quantileSorted(s, 0.25)
  const q3 = quantileSorted(s, 0.75)
  const iqr = q3 - q1
  let outliers = 0
  for (let i = 0; i < n; i++) if (s[i]! < q1 - 1.5 * iqr || s[i]! > q3 + 1.5 * iqr) outliers++
  const dev = Float64Array.from(s, (x) => Math.abs(x - ci.estimate)).sort()
  return {
    n,
    median: ci.estimate,
    lo: ci.lo,
    hi: ci.hi,
    mean: mu,
    sd: n > 1 ? Math.sqrt(ss / (n - 1)) : 0,
    rmad: quantileSorted(dev, 0.5) / ci.estimate,
    q1,
    q3,
    min: n > 0 ? s[0]! : NaN,
    max: n > 0 ? s[n - 1]! : NaN,
    outliers
  }
}

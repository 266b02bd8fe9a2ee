/**
 * KMeans over a chunked array: Lloyd's algorithm, each iteration one small task graph
 * (a partial sum per chunk, tree-combined), driven from the client side in Effect.
 * Initialisation ("k-means++" or "random") runs on a strided sample of every chunk.
 *
 * Rows holding NaN or ±Infinity follow `nonFinite` (NonFinite.ts): by default `fit`
 * fails naming the first (it used to run 300 iterations to a NaN center); with `"skip"`
 * the centers are fitted on the other rows, and `fitPredict` labels those rows -1.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { ChunkedArray } from "./ChunkedArray.ts"
import * as Lineage from "../engine/Lineage.ts"
import { computeDelayed, ensurePersisted, expectColumns, expectDType, kernel, mapBlocks, mapToValues, treeReduce } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"
import * as NonFinite from "./NonFinite.ts"
import type { Partial } from "../kernels/cluster.ts"
import { uniform } from "../kernels/random.ts"

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface KMeansOptions {
  readonly nClusters: number
  readonly maxIter?: number
  /** stop when the centers move less than tol x (mean column variance), squared, as scikit-learn */
  readonly tol?: number
  readonly init?: "k-means++" | "random"
  readonly randomState?: number
  /** rows sampled for initialisation (default 10,000) */
  readonly initSample?: number
  /** rows with NaN or ±Infinity: fail (default, as scikit-learn) or leave them out (labelled -1) */
  readonly nonFinite?: NonFinite.Policy
}

/**
 * A fitted model.
 *
 * @since 0.1.0
 * @category models
 */
export interface KMeansModel {
  /** k x d, row-major */
  readonly centers: Float64Array
  readonly nClusters: number
  readonly iterations: number
  readonly inertia: number
  /** rows left out of the fit for holding NaN or ±Infinity (`nonFinite: "skip"`); absent: none */
  readonly skipped?: number
}

/**
 * Picks k initial centers from sample rows (k-means++ weighting, or uniformly).
 *
 * @since 0.1.0
 * @category utils
 */
export const initCenters = (sample: Float64Array, d: number, k: number, init: "k-means++" | "random", seed: number): Float64Array => {
  const n = sample.length / d
  if (n < k) throw DslError.invalidOption("nClusters", `${k} clusters but only ${n} rows`)
  let draw = 0
  const rnd = () => uniform(seed, 0x6b6d, draw++)
  const centers = new Float64Array(k * d)
  const copy = (c: number, r: number) => centers.set(sample.subarray(r * d, r * d + d), c * d)
  if (init === "random") {
    const picked = new Set<number>()
    for (let c = 0; c < k; c++) {
      let r = Math.floor(rnd() * n)
      while (picked.has(r)) r = (r + 1) % n
      picked.add(r)
      copy(c, r)
    }
    return centers
  }
  copy(0, Math.floor(rnd() * n))
  const dist = new Float64Array(n).fill(Infinity)
  for (let c = 1; c < k; c++) {
    let total = 0
    for (let r = 0; r < n; r++) {
      let s = 0
      for (let j = 0; j < d; j++) {
        const t = sample[r * d + j]! - centers[(c - 1) * d + j]!
        s += t * t
      }
      if (s < dist[r]!) dist[r] = s
      total += dist[r]!
    }
    let target = rnd() * total
    let r = 0
    for (; r < n - 1; r++) {
      target -= dist[r]!
      if (target <= 0) break
    }
    copy(c, r)
  }
  return centers
}

/** Gathers a strided sample of about `size` rows across all chunks. */
export const sample = (X: ChunkedArray, size: number, stage: string) =>
  Effect.map(
    mapToValues<Float64Array>(X, {
      name: "sample_rows",
      kernel: kernel("cluster", "sampleRows"),
      extra: [Math.max(1, Math.ceil(size / X.blocks.length))],
      stage
    }),
    (parts) => {
      const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0))
      let o = 0
      for (const p of parts) {
        out.set(p, o)
        o += p.length
      }
      return Lineage.derive(out, ...parts)
    }
  )

/**
 * Fits KMeans to a 2-D float64 array (persisting it first if it is not yet in memory).
 *
 * @since 0.1.0
 * @category kernels
 */
export const fit = (X: ChunkedArray<"float64">, options: KMeansOptions, stage = "KMeans.fit") =>
  Effect.gen(function*() {
    const k = options.nClusters
    if (!Number.isInteger(k) || k < 1) return yield* Effect.fail(DslError.invalidOption("nClusters", `must be a positive integer, got ${k}`))
    if (X.shape.length !== 2) return yield* Effect.fail(DslError.shapeMismatch(stage, ["n", "d"], X.shape))
    if (X.dtype !== "float64") return yield* Effect.fail(DslError.dtypeMismatch(stage, "float64", X.dtype))
    if (!(X.shape[1]! >= 1)) return yield* Effect.fail(DslError.shapeMismatch(stage, ["n", "d >= 1"], X.shape, "a dimension of size 0: rows without columns have no distance to a center"))
    const d = X.shape[1]!
    const { X: data, skipped } = yield* NonFinite.apply(yield* ensurePersisted(X, stage), options.nonFinite, stage)
    const s = yield* sample(data, options.initSample ?? 10_000, stage)
    let centers = yield* Effect.try({
      try: () => Lineage.derive(initCenters(s, d, k, options.init ?? "k-means++", options.randomState ?? 0), s),
      catch: (e) => e as DslError
    })
    const variance = columnVariance(s, d)
    const tol = (options.tol ?? 1e-4) * variance
    const maxIter = options.maxIter ?? 300
    let iterations = 0
    let inertia = Infinity
    while (iterations < maxIter) {
      iterations++
      const p = yield* computeDelayed(
        treeReduce<Partial>(data, {
          name: "lloyd",
          partial: kernel("cluster", "lloydPartial"),
          extra: [centers, k],
          combine: kernel("cluster", "partialCombine"),
          stage
        })
      )
      inertia = p.error
      const next = new Float64Array(k * d)
      let shift = 0
      for (let c = 0; c < k; c++) {
        for (let j = 0; j < d; j++) {
          const v = p.counts[c]! > 0 ? p.sums[c * d + j]! / p.counts[c]! : centers[c * d + j]!
          shift += (v - centers[c * d + j]!) ** 2
          next[c * d + j] = v
        }
      }
      // the next step's tasks depend on this step's reduction (a connected trace)
      centers = Lineage.derive(next, p)
      if (shift <= tol) break
    }
    return { centers, nClusters: k, iterations, inertia, skipped } satisfies KMeansModel
  })

const columnVariance = (s: Float64Array, d: number): number => {
  const n = s.length / d
  let total = 0
  for (let j = 0; j < d; j++) {
    let m = 0
    for (let r = 0; r < n; r++) m += s[r * d + j]!
    m /= n
    let v = 0
    for (let r = 0; r < n; r++) v += (s[r * d + j]! - m) ** 2
    total += v / n
  }
  return total / d
}

/**
 * Labels every row with its nearest center, lazily (an int32 array).
 *
 * @since 0.1.0
 * @category kernels
 */
export const predict = (model: KMeansModel, X: ChunkedArray, stage = "KMeans.predict"): ChunkedArray<"int32"> => {
  expectColumns(X, model.centers.length / model.nClusters, stage)
  expectDType(X, "float64", stage)
  return mapBlocks(X, { name: "kmeans_predict", kernel: kernel("cluster", "assign"), extra: [model.centers, model.nClusters], dtype: "int32", stage })
}

/**
 * Fits, then labels the same rows.
 *
 * @since 0.1.0
 * @category kernels
 */
export const fitPredict = (X: ChunkedArray<"float64">, options: KMeansOptions, stage = "KMeans.fitPredict") =>
  Effect.gen(function*() {
    const data = yield* ensurePersisted(X, stage)
    const model = yield* fit(data, options, stage)
    const labels = (model.skipped ?? 0) === 0
      ? predict(model, data, stage)
      : mapBlocks(data, { name: "kmeans_predict", kernel: NonFinite.kernels.assignFinite, extra: [model.centers, model.nClusters], dtype: "int32", stage })
    return { model, labels }
  })

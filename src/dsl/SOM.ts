/**
 * SOM: a batch self-organising map over a chunked array. Each epoch is one task graph:
 * per chunk, the neighbourhood-weighted sums around each row's best matching unit,
 * tree-combined; the client moves the weights toward the batch solution by the epoch's
 * learning rate. The neighbourhood width decays geometrically from `sigma` to 0.05, so
 * the last epochs behave like KMeans on the map's nodes.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { ChunkedArray } from "./ChunkedArray.ts"
import * as Lineage from "../engine/Lineage.ts"
import { computeDelayed, ensurePersisted, expectColumns, expectDType, kernel, mapBlocks, treeReduce } from "./ChunkedArray.ts"
import { DslError } from "./DslError.ts"
import { sample } from "./KMeans.ts"
import type { Partial } from "../kernels/cluster.ts"
import { uniform } from "../kernels/random.ts"

/**
 * Options of a SOM (names as in DASF / MiniSom).
 *
 * @since 0.1.0
 * @category models
 */
export interface SOMOptions {
  readonly x: number
  readonly y: number
  readonly inputLen: number
  readonly numEpochs?: number
  readonly sigma?: number
  readonly learningRate?: number
  readonly randomState?: number
}

/**
 * A trained map.
 *
 * @since 0.1.0
 * @category models
 */
export interface SOMModel {
  /** (x*y) x inputLen, row-major; node (i, j) is row i*y + j */
  readonly weights: Float64Array
  readonly x: number
  readonly y: number
  /** quantization error (mean distance of a row to its best matching unit) before each epoch, then after the last */
  readonly quantizationErrors: ReadonlyArray<number>
}

const epochGraph = (X: ChunkedArray, weights: Float64Array, o: SOMOptions, sigma: number, stage: string) =>
  treeReduce<Partial>(X, {
    name: "som_epoch",
    partial: kernel("cluster", "somPartial"),
    extra: [weights, o.x, o.y, sigma],
    combine: kernel("cluster", "partialCombine"),
    stage
  })

/**
 * Trains the map.
 *
 * @since 0.1.0
 * @category kernels
 */
export const fit = (X: ChunkedArray<"float64">, o: SOMOptions, stage = "SOM.fit") =>
  Effect.gen(function*() {
    if (X.shape.length !== 2 || X.shape[1] !== o.inputLen) return yield* Effect.fail(DslError.shapeMismatch(stage, ["n", o.inputLen], X.shape))
    if (!(o.inputLen >= 1)) return yield* Effect.fail(DslError.shapeMismatch(stage, ["n", "inputLen >= 1"], X.shape, "a dimension of size 0: the map has no input to learn"))
    if (X.dtype !== "float64") return yield* Effect.fail(DslError.dtypeMismatch(stage, "float64", X.dtype))
    if (!(o.x >= 1 && o.y >= 1)) return yield* Effect.fail(DslError.invalidOption("x, y", `map must be at least 1x1, got ${o.x}x${o.y}`))
    const d = o.inputLen
    const nodes = o.x * o.y
    const data = yield* ensurePersisted(X)
    const s = yield* sample(data, 10_000, stage)
    const n = s.length / d
    const seed = o.randomState ?? 0
    let weights = Lineage.derive(new Float64Array(nodes * d), s)
    for (let node = 0; node < nodes; node++) {
      const r = Math.floor(uniform(seed, 0x736f6d, node) * n)
      weights.set(s.subarray(r * d, r * d + d), node * d)
    }
    const epochs = o.numEpochs ?? 100
    const sigma0 = o.sigma ?? 1
    const lr0 = o.learningRate ?? 0.5
    const errors: Array<number> = []
    for (let t = 0; t < epochs; t++) {
      const frac = epochs > 1 ? t / (epochs - 1) : 1
      const sigma = sigma0 * Math.pow(Math.min(0.05 / sigma0, 1), frac)
      const lr = lr0 / (1 + t / (epochs / 2))
      const p = yield* computeDelayed(epochGraph(data, weights, o, sigma, stage))
      errors.push(p.error / p.rows)
      const next = new Float64Array(weights)
      for (let node = 0; node < nodes; node++) {
        if (!(p.counts[node]! > 0)) continue
        for (let j = 0; j < d; j++) {
          const target = p.sums[node * d + j]! / p.counts[node]!
          next[node * d + j] = weights[node * d + j]! + Math.min(1, lr) * (target - weights[node * d + j]!)
        }
      }
      weights = Lineage.derive(next, p)
    }
    const last = yield* computeDelayed(epochGraph(data, weights, o, 0, stage))
    errors.push(last.error / last.rows)
    return { weights, x: o.x, y: o.y, quantizationErrors: errors } satisfies SOMModel
  })

/**
 * Labels every row with its best matching unit's index (i*y + j), lazily.
 *
 * @since 0.1.0
 * @category kernels
 */
export const predict = (model: SOMModel, X: ChunkedArray, stage = "SOM.predict"): ChunkedArray<"int32"> => {
  const nodes = model.x * model.y
  expectColumns(X, model.weights.length / nodes, stage)
  expectDType(X, "float64", stage)
  return mapBlocks(X, { name: "som_predict", kernel: kernel("cluster", "assign"), extra: [model.weights, nodes], dtype: "int32", stage })
}

/**
 * Trains, then labels the same rows.
 *
 * @since 0.1.0
 * @category kernels
 */
export const fitPredict = (X: ChunkedArray<"float64">, o: SOMOptions, stage = "SOM.fitPredict") =>
  Effect.gen(function*() {
    const data = yield* ensurePersisted(X)
    const model = yield* fit(data, o, stage)
    return { model, labels: predict(model, data, stage) }
  })

/**
 * The map's quantization error after training.
 *
 * @since 0.1.0
 * @category kernels
 */
export const quantizationError = (model: SOMModel): number => model.quantizationErrors[model.quantizationErrors.length - 1]!

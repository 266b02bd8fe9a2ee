/**
 * DASF's tutorial 5 as a Tessera pipeline: Gaussian blobs, standard scaling, KMeans and
 * a 1x3 SOM on the scaled data, both outputs persisted. `tessera demo` runs it; tests
 * run it small.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type * as Chunk from "../../src/engine/Chunk.ts"
import { compute } from "../../src/dsl/ChunkedArray.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import { KMeans, Normalize, Persist, SOM } from "../../src/dsl/Estimators.ts"
import { adjustedRandIndex } from "../../src/dsl/Metrics.ts"
import { inverse } from "../../src/dsl/Normalize.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import { quantizationError } from "../../src/dsl/SOM.ts"

/**
 * Options of the tutorial.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tutorial5Options {
  readonly samples?: number
  readonly chunkRows?: number
  readonly randomState?: number
  readonly log?: (line: string) => void
}

/** The tutorial's blob centers. */
export const centers: ReadonlyArray<ReadonlyArray<number>> = [[-6, -6], [0, 0], [9, 1]]

/**
 * Builds the pipeline and the objects whose fitted state the summary reads.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (o: Tutorial5Options = {}) => {
  const data = makeBlobs({ nSamples: o.samples ?? 100_000, centers, chunks: o.chunkRows ?? 5_000, randomState: o.randomState ?? 42 })
  const normalize = new Normalize()
  const kmeans = new KMeans({ nClusters: 3, maxIter: 100, randomState: o.randomState ?? 42 })
  const som = new SOM({ x: 1, y: 3, inputLen: 2, numEpochs: 100, sigma: 1, learningRate: 0.5, randomState: o.randomState ?? 42 })
  const pipeline = Pipeline.make("tutorial5", o.log === undefined ? {} : { log: o.log })
  const scaled = pipeline.add(normalize.transform, { X: data.X })
  const kmLabels = pipeline.add(kmeans.fitPredict, { X: scaled })
  const somLabels = pipeline.add(som.fitPredict, { X: scaled })
  pipeline.add(Persist<"int32">("Persist.kmeans"), { X: kmLabels })
  pipeline.add(Persist<"int32">("Persist.som"), { X: somLabels })
  return { pipeline, data, normalize, kmeans, som }
}

/**
 * Bytes the tutorial keeps in memory at its peak, from shapes and dtypes: X and its
 * scaled copy (n x 2 float64, both persisted), the two label arrays (n int32, persisted),
 * and what the summary computes into single chunks (the true labels, with their chunks,
 * and both label arrays). `tessera demo` compares it with the available memory before
 * anything is made.
 *
 * @since 0.1.0
 * @category getters
 */
export const memoryNeeded = (o: Tutorial5Options = {}): number => {
  const n = o.samples ?? 100_000
  const parts: ReadonlyArray<readonly [rows: number, columns: number, itemSize: number]> = [
    [n, 2, 8], // X, persisted by Normalize
    [n, 2, 8], // scaled X, persisted
    [n, 1, 4], // KMeans labels, persisted
    [n, 1, 4], // SOM labels, persisted
    [n, 1, 8], // true labels: computed chunks and their concatenation
    [n, 1, 8] // both label arrays concatenated for the ARI
  ]
  return parts.reduce((sum, [rows, columns, size]) => sum + rows * columns * size, 0)
}

/**
 * What the demo reports: centers in original units, ARI against the true labels, the
 * SOM's quantization error, and the outputs' shapes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Summary {
  readonly kmeans: { readonly centers: ReadonlyArray<ReadonlyArray<number>>; readonly ari: number; readonly iterations: number }
  readonly som: { readonly quantizationError: number; readonly ari: number; readonly weights: ReadonlyArray<ReadonlyArray<number>> }
  readonly outputs: ReadonlyArray<{ readonly stage: string; readonly shape: ReadonlyArray<number>; readonly chunks: number }>
}

/**
 * Runs the tutorial on the current executor and summarises it. Pass a tutorial made with
 * `make` to run that very pipeline (the demo profiles it, so it needs the object first).
 *
 * @since 0.1.0
 * @category compute
 */
export const run = (o: Tutorial5Options = {}, t: ReturnType<typeof make> = make(o)) =>
  Effect.gen(function*() {
    const outputs = yield* t.pipeline.run()
    const truth = (yield* compute(t.data.y)).data as Int32Array
    const labels = (stage: string) =>
      Effect.map(compute(outputs.get(stage) as Parameters<typeof compute>[0]), (c: Chunk.Chunk) => c.data as Int32Array)
    const rows = (flat: Float64Array, d: number) => Array.from({ length: flat.length / d }, (_, i) => Array.from(flat.subarray(i * d, i * d + d)))
    const scaler = t.normalize.scaler!
    const summary: Summary = {
      kmeans: {
        centers: rows(inverse(scaler, t.kmeans.model!.centers), 2),
        ari: adjustedRandIndex(truth, yield* labels("Persist.kmeans")),
        iterations: t.kmeans.model!.iterations
      },
      som: {
        quantizationError: quantizationError(t.som.model!),
        ari: adjustedRandIndex(truth, yield* labels("Persist.som")),
        weights: rows(inverse(scaler, t.som.model!.weights), 2)
      },
      outputs: ["Persist.kmeans", "Persist.som"].map((stage) => {
        const a = outputs.get(stage) as { shape: ReadonlyArray<number>; blocks: ReadonlyArray<unknown> }
        return { stage, shape: a.shape, chunks: a.blocks.length }
      })
    }
    return { ...t, outputs, summary }
  })

/**
 * DASF-style objects whose methods are pipeline stages: `Normalize().transform`,
 * `KMeans(...).fitPredict`, `SOM(...).fitPredict`, `Persist().transform`. Each keeps
 * what it fitted (scaler, model) on the object after the stage ran, as scikit-learn
 * and DASF estimators do.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { ChunkedArray } from "./ChunkedArray.ts"
import { persist } from "./ChunkedArray.ts"
import * as KMeansOps from "./KMeans.ts"
import * as NormalizeOps from "./Normalize.ts"
import type { Stage } from "./Pipeline.ts"
import { stage } from "./Pipeline.ts"
import * as SOMOps from "./SOM.ts"

type X = { readonly X: ChunkedArray<"float64"> }

/**
 * Standard scaling; `scaler` is set once `transform` ran. The stage's output is
 * persisted: DASF's stages after Normalize (KMeans, SOM) each read it many times.
 * `nonFinite` says what to do with rows holding NaN or ±Infinity (default: fail).
 *
 * @since 0.1.0
 * @category kernels
 */
export class Normalize {
  scaler: NormalizeOps.Scaler | undefined
  readonly options: NormalizeOps.NormalizeOptions
  readonly transform: Stage<X, ChunkedArray<"float64">>
  constructor(options: NormalizeOps.NormalizeOptions = {}) {
    this.options = options
    this.transform = stage("Normalize.transform", ({ X }: X) =>
      Effect.flatMap(NormalizeOps.fitTransform(X, "Normalize.transform", options), (r) => {
        this.scaler = r.scaler
        return persist(r.X as ChunkedArray<"float64">, "Normalize.transform")
      }))
  }
}

/**
 * Materialises an array on the workers (shared memory) so later stages reuse it.
 *
 * @since 0.1.0
 * @category kernels
 */
export const Persist = <D extends ChunkedArray["dtype"]>(name = "Persist"): Stage<{ readonly X: ChunkedArray<D> }, ChunkedArray<D>> =>
  stage(name, ({ X }: { readonly X: ChunkedArray<D> }) => persist(X, name))

/**
 * KMeans; `model` is set once a fitting stage ran.
 *
 * @since 0.1.0
 * @category kernels
 */
export class KMeans {
  model: KMeansOps.KMeansModel | undefined
  readonly options: KMeansOps.KMeansOptions
  readonly fitPredict: Stage<X, ChunkedArray<"int32">>
  constructor(options: KMeansOps.KMeansOptions) {
    this.options = options
    this.fitPredict = stage("KMeans.fitPredict", ({ X }: X) =>
      Effect.map(KMeansOps.fitPredict(X, options, "KMeans.fitPredict"), (r) => {
        this.model = r.model
        return r.labels
      }))
  }
}

/**
 * Batch self-organising map; `model` is set once a fitting stage ran.
 *
 * @since 0.1.0
 * @category kernels
 */
export class SOM {
  model: SOMOps.SOMModel | undefined
  readonly options: SOMOps.SOMOptions
  readonly fitPredict: Stage<X, ChunkedArray<"int32">>
  constructor(options: SOMOps.SOMOptions) {
    this.options = options
    this.fitPredict = stage("SOM.fitPredict", ({ X }: X) =>
      Effect.map(SOMOps.fitPredict(X, options, "SOM.fitPredict"), (r) => {
        this.model = r.model
        return r.labels
      }))
  }
}

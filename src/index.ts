/**
 * Tessera's everyday API, one namespace per module: build a pipeline (`Pipeline`,
 * `Datasets`, `Estimators`, `ChunkedArray`), run it (`Executor`, `Engine`), profile it
 * (`DefaultProfiler`, `Trace`, `ResourceMonitor`), and read what was recorded
 * (`Analysis`, `Report`).
 *
 * Needs Node.js 24 or newer: importing it on an older Node throws an
 * `UnsupportedNodeError` (one line) before anything else runs.
 *
 * Everything else is a documented subpath (`tessera/<layer>/<Module>`, see
 * docs/package.md); nothing under a layer's `internal/` is reachable from outside.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Datasets, Estimators, Executor, Pipeline } from "tessera"
 *
 * const { X } = Datasets.makeBlobs({ nSamples: 10_000, centers: [[0, 0], [5, 5]], chunks: 1_000 })
 * const pipeline = Pipeline.make("blobs")
 * pipeline.add(new Estimators.KMeans({ nClusters: 2 }).fitPredict, { X })
 * await Effect.runPromise(pipeline.run().pipe(Effect.provide(Executor.layerWorkers({ workers: 2 }))))
 * ```
 *
 * @since 0.1.0
 */

// First: on a Node.js older than 24 this import throws one line (UnsupportedNodeError),
// before any other module of the package runs (NodeVersion.ts).
import "./NodeVersion.ts"

// What users write
export * as ChunkedArray from "./dsl/ChunkedArray.ts"
export * as DatasetArray from "./dsl/DatasetArray.ts"
export * as DatasetLabeled from "./dsl/DatasetLabeled.ts"
export * as Datasets from "./dsl/Datasets.ts"
export * as DslError from "./dsl/DslError.ts"
export * as Estimators from "./dsl/Estimators.ts"
export * as Pipeline from "./dsl/Pipeline.ts"

// How it runs
export * as Engine from "./engine/Engine.ts"
export * as EngineError from "./engine/EngineError.ts"
export * as Executor from "./engine/Executor.ts"
export * as Kernel from "./engine/Kernel.ts"
export * as TaskGraph from "./engine/TaskGraph.ts"

// Profiling
export * as Bench from "./profiler/Bench.ts"
export * as DefaultProfiler from "./profiler/DefaultProfiler.ts"
export * as ResourceMonitor from "./profiler/ResourceMonitor.ts"
export * as Trace from "./profiler/Trace.ts"

// Reading what was recorded
export * as Analysis from "./analysis/Analysis.ts"
export * as Report from "./report/Report.ts"

/**
 * What users write: pipelines, chunked arrays, datasets, transforms and ML.
 *
 * @since 0.1.0
 */
export * as ArrowTable from "./ArrowTable.ts"
export * as ChunkedArray from "./ChunkedArray.ts"
export * as DatasetArray from "./DatasetArray.ts"
export * as DatasetLabeled from "./DatasetLabeled.ts"
export * as Datasets from "./Datasets.ts"
export * as DslError from "./DslError.ts"
export * as Elementwise from "./Elementwise.ts"
export * as Estimators from "./Estimators.ts"
export * as KMeans from "./KMeans.ts"
export * as Metrics from "./Metrics.ts"
export * as Normalize from "./Normalize.ts"
export * as Pipeline from "./Pipeline.ts"
export * as Reductions from "./Reductions.ts"
export * as SOM from "./SOM.ts"

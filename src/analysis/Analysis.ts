/**
 * Entry point of the analysis layer: load trace databases into Arrow tables, run
 * analyses (each a free function `(tables) => Table`), and the registry of named
 * analyses the `tessera analyze` command offers. Every analysis is documented column
 * by column in docs/analysis.md.
 * They are hand-written passes over the Arrow columns rather than SQL (Query.ts) for
 * speed: see docs/queries.md, "Built-in analyses as queries".
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { type AnalysisName, analysisColumns, analysisNames, analysisTitles, unionColumns } from "./AnalysisNames.ts"
import { perWorkerTaskBalance, workerUtilization } from "./Balance.ts"
import { perFunctionBottleneck, perTaskBottleneck } from "./Bottleneck.ts"
import { criticalPath } from "./CriticalPath.ts"
import { perFunctionSummary } from "./Summary.ts"
import { timeSummary } from "./TimeSummary.ts"
import { stageSummary } from "./StageSummary.ts"
import { transferBandwidth, transferFunctions, transferShare, transferTypes } from "./Transfers.ts"
import type { Tables } from "./internal/taskView.ts"
import type { LoadColumns } from "./Load.ts"

export { analysisNames, analysisTitles, dasfAnalyses } from "./AnalysisNames.ts"
export type { AnalysisName } from "./AnalysisNames.ts"
export { attributeSamples } from "./Attribution.ts"
export type { Attribution } from "./Attribution.ts"
export { maxBuckets, perWorkerTaskBalance, traceSpan, workerUtilization } from "./Balance.ts"
export { perFunctionBottleneck, perTaskBottleneck } from "./Bottleneck.ts"
export { criticalPath, criticalPathRows } from "./CriticalPath.ts"
export { toCsv, toText } from "./Format.ts"
export { dasfFunctionName, functionName } from "./FunctionName.ts"
export { decodeThreads, load, loadBytesUnsafe, loadPromise, parallelMinBytes } from "./Load.ts"
export type {
  LoadOptions,
  ClockOffsetsSchema,
  LoadProgress,
  MemorySchema,
  ResourcesSchema,
  StringColumn,
  TasksSchema,
  TraceTables,
  TransfersSchema,
  TypedTable
} from "./Load.ts"
export { perFunctionSummary } from "./Summary.ts"
export { timeSummary } from "./TimeSummary.ts"
export { noStage, stageSummary } from "./StageSummary.ts"
export { driverSegments, driverTable } from "./Driver.ts"
export type { DriverSegment } from "./Driver.ts"
export { allWorkers, directionOf, transferBandwidth, transferFunctions, transferShare, transferTypes } from "./Transfers.ts"
export { criticalPathSteps } from "./CriticalPath.ts"
export type { CriticalPathSteps, CriticalStep } from "./CriticalPath.ts"
export type { Tables } from "./internal/taskView.ts"

/**
 * A named analysis: its CLI name (also the CSV file's base name), DASF's heading and
 * the function computing it.
 *
 * @since 0.1.0
 * @category models
 */
export interface NamedAnalysis {
  readonly name: Exclude<AnalysisName, "profile">
  readonly title: string
  readonly run: (tables: Tables) => Table
  /** the columns it reads (a load may leave the others out), when declared; else all */
  readonly columns?: LoadColumns
}

const runs: { readonly [K in Exclude<AnalysisName, "profile">]: (tables: Tables) => Table } = {
  function_bottleneck: perFunctionBottleneck,
  task_bottleneck: perTaskBottleneck,
  task_balance: perWorkerTaskBalance,
  critical_path: criticalPath,
  worker_utilization: (t) => workerUtilization(t),
  function_summary: perFunctionSummary,
  time_summary: timeSummary,
  stage_summary: stageSummary,
  transfer_bandwidth: transferBandwidth,
  transfer_types: transferTypes,
  transfer_functions: transferFunctions,
  transfer_share: transferShare
}

/**
 * Every analysis `tessera analyze` offers, DASF's three first, in DASF's order (names
 * and headings from AnalysisNames.ts).
 *
 * @since 0.1.0
 * @category analysis
 */
export const analyses: ReadonlyArray<NamedAnalysis> = analysisNames.flatMap((name) =>
  name === "profile" ? [] : [{ name, title: analysisTitles[name], run: runs[name], ...(analysisColumns[name] !== undefined ? { columns: analysisColumns[name] } : {}) }]
)

/**
 * The columns a set of analyses reads, for a projected load: the union of their
 * declared columns, or undefined (every column) when one of them declares none.
 *
 * @since 0.1.0
 * @category analysis
 */
export const columnsOf = (chosen: ReadonlyArray<NamedAnalysis>): LoadColumns | undefined => unionColumns(chosen.map((a) => a.columns))

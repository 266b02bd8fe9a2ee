/**
 * The names, headings and columns read of the built-in analyses, in a module that imports nothing, so
 * that the command line can list and validate them without loading the analyses (Arrow,
 * the loaders): `tessera --help` and argument checks stay fast. `Analysis.analyses` is
 * typed by these names, so the two cannot drift apart.
 *
 * @since 0.1.0
 */

import type { LoadColumns, TasksSchema } from "./Load.ts"

/**
 * Every built-in analysis: its CLI name (also the CSV file's base name) and DASF's
 * heading, DASF's three first, in DASF's order.
 *
 * @since 0.1.0
 * @category models
 */
export const analysisTitles = {
  function_bottleneck: "Function bottleneck",
  task_bottleneck: "Task bottleneck",
  task_balance: "Task balance",
  critical_path: "Critical path",
  worker_utilization: "Worker utilization",
  function_summary: "Function summary",
  time_summary: "Time summary",
  /** the statistical profiler's samples (Profile.ts): read from the files, not the tables */
  profile: "Profile: top frames",
  stage_summary: "Stage summary",
  transfer_bandwidth: "Transfer bandwidth by worker pair",
  transfer_types: "Transfer bandwidth by data type",
  transfer_functions: "Transfer time per function",
  transfer_share: "Compute vs transfer"
} as const

/**
 * A built-in analysis's name.
 *
 * @since 0.1.0
 * @category models
 */
export type AnalysisName = keyof typeof analysisTitles

/**
 * Every built-in analysis's name, in the order `tessera analyze` prints them.
 *
 * @since 0.1.0
 * @category models
 */
export const analysisNames = Object.keys(analysisTitles) as ReadonlyArray<AnalysisName>

/** What `taskView` (internal/taskView.ts) reads. */
const taskViewColumns: ReadonlyArray<keyof TasksSchema> = ["host", "worker", "key", "function", "start", "end", "duration", "size", "dependencies"]

/**
 * The columns each built-in analysis reads, where declared (a load for them may leave
 * the others out); the others read every column.
 *
 * @since 0.1.0
 * @category models
 */
export const analysisColumns: { readonly [K in Exclude<AnalysisName, "profile">]?: LoadColumns } = {
  function_bottleneck: { tasks: taskViewColumns, memory: ["timestamp"] },
  task_bottleneck: { tasks: taskViewColumns, memory: ["timestamp"] },
  task_balance: { tasks: taskViewColumns, memory: ["timestamp", "host", "worker", "tasks"] }
}

/**
 * The columns these built-in analyses read together, for a projected load: the union of
 * their declared columns, or undefined (every column) when one of them declares none
 * (or is not a built-in analysis, or is `profile`).
 *
 * @since 0.1.0
 * @category models
 */
export const columnsOfNames = (names: ReadonlyArray<string>): LoadColumns | undefined =>
  unionColumns(names.map((n) => (analysisColumns as Record<string, LoadColumns | undefined>)[n]))

/**
 * The union of column projections, or undefined (every column) when one is undefined or
 * leaves a table unnamed.
 *
 * @since 0.1.0
 * @category models
 */
export const unionColumns = (all: ReadonlyArray<LoadColumns | undefined>): LoadColumns | undefined => {
  const tasks = new Set<keyof TasksSchema>()
  const memory = new Set<NonNullable<LoadColumns["memory"]>[number]>()
  for (const c of all) {
    if (c?.tasks === undefined || c.memory === undefined) return undefined
    for (const x of c.tasks) tasks.add(x)
    for (const x of c.memory) memory.add(x)
  }
  return { tasks: [...tasks], memory: [...memory] }
}

/**
 * DASF's three analyses, the default of `tessera analyze`.
 *
 * @since 0.1.0
 * @category models
 */
export const dasfAnalyses: ReadonlyArray<AnalysisName> = ["function_bottleneck", "task_bottleneck", "task_balance"]

/**
 * Does this analysis argument name a user analysis file (Plugin.ts: a `.sql` file or a
 * `.ts`/`.mts`/`.js`/`.mjs` module), by its extension?
 *
 * @since 0.1.0
 * @category guards
 */
export const isUserAnalysis = (s: string): boolean => /\.(sql|ts|mts|js|mjs)$/i.test(s)

/**
 * The CSV / Arrow base name of an analysis argument: a built-in's name, or a user
 * analysis file's base name without its extension (`./q/mine.sql` → `mine`).
 *
 * @since 0.1.0
 * @category models
 */
export const outputName = (s: string): string => (isUserAnalysis(s) ? s.replace(/^.*[\\/]/, "").replace(/\.[^.]+$/, "") : s)

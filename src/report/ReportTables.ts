/**
 * Tables for the report: a converter from any Arrow table (the shape every analysis in
 * `src/analysis` returns) to a `ReportTable`, and two summaries the report can always
 * show from its own columns (per function, per worker) when no analysis tables are given.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { analyses } from "../analysis/Analysis.ts"
import { summaryOf } from "../analysis/Format.ts"
import type { TraceTables } from "../analysis/Load.ts"
import type { ReportTable } from "./TableHtml.ts"
import type { ReportData } from "./ReportData.ts"

const cell = (v: unknown): string | number | null => {
  if (v === null || v === undefined) return null
  if (typeof v === "number") return v
  if (typeof v === "bigint") return Number(v)
  if (typeof v === "boolean") return String(v)
  if (typeof v === "string") return v
  if (v instanceof Date) return v.toISOString()
  return String(v)
}

/**
 * A report table from an Arrow table, column by column.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromArrow = (title: string, table: Table, description?: string): ReportTable => {
  const columns = table.schema.fields.map((f) => f.name)
  const vecs = columns.map((c) => table.getChild(c))
  const rows: Array<Array<string | number | null>> = []
  for (let i = 0; i < table.numRows; i++) rows.push(vecs.map((v) => cell(v?.get(i))))
  return description === undefined ? { title, columns, rows } : { title, description, columns, rows }
}

/**
 * Per-function summary (count, total / mean / max duration, output bytes, CPU cores)
 * and per-worker balance (tasks, busy time, share of wall time), from the report model.
 * Plain loops: one pass over the tasks.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultTables = (data: ReportData): Array<ReportTable> => {
  const t = data.tasks
  const nf = data.functions.length
  const nw = data.workers.length
  const fCount = new Float64Array(nf)
  const fTotal = new Float64Array(nf)
  const fMax = new Float64Array(nf)
  const fBytes = new Float64Array(nf)
  const fCpu = new Float64Array(nf)
  const fCpuN = new Float64Array(nf)
  const wCount = new Float64Array(nw)
  const wBusy = new Float64Array(nw)
  for (let i = 0; i < t.start.length; i++) {
    const d = t.end[i]! - t.start[i]!
    const f = t.fn[i]!
    const w = t.worker[i]!
    fCount[f]!++
    fTotal[f]! += d
    if (d > fMax[f]!) fMax[f] = d
    if (Number.isFinite(t.size[i]!)) fBytes[f]! += t.size[i]!
    if (Number.isFinite(t.cpuTime[i]!)) {
      fCpu[f]! += t.cpuTime[i]!
      fCpuN[f]! += d
    }
    wCount[w]!++
    wBusy[w]! += d
  }
  const byFunction: ReportTable = {
    title: "Per-function summary",
    description: "all tasks of each function; click a column to sort",
    columns: ["function", "tasks", "total duration (s)", "mean duration (s)", "max duration (s)", "output bytes", "mean CPU cores"],
    rows: data.functions
      .map((name, f) => [name, fCount[f]!, fTotal[f]!, fTotal[f]! / fCount[f]!, fMax[f]!, fBytes[f]!, fCpuN[f]! > 0 ? fCpu[f]! / fCpuN[f]! : null])
      .sort((a, b) => (b[2] as number) - (a[2] as number))
  }
  const balance: ReportTable = {
    title: "Per-worker task balance",
    columns: ["worker", "tasks", "busy time (s)", "busy share of wall time"],
    rows: data.workers.map((name, w) => [name, wCount[w]!, wBusy[w]!, data.wall > 0 ? wBusy[w]! / data.wall : null])
  }
  return [byFunction, balance]
}

/**
 * One line per built-in analysis saying what its columns are (the report's caption).
 *
 * @since 0.1.0
 * @category constants
 */
export const analysisCaptions: Readonly<Record<string, string>> = {
  critical_path: "the longest chain of dependent tasks and driver segments, with the scheduling latency between consecutive steps as steps of their own: each step's kind, start and duration (s from the run's begin), its share of the path, and the path's length so far",
  function_summary: "per function: tasks, total / mean / median / 95th-percentile / max duration, bytes read from dependencies (in) and produced (out)",
  function_bottleneck: "DASF's per host, GPU and function: total duration and its share of the host's time, GPU use, mean data size (MB) and throughput (MB/s), tasks and mean task time",
  task_balance: "DASF's task balance: per one-second interval from the run's begin (rows), the chunks each worker (columns) held",
  worker_utilization: "per one-second interval and worker: seconds busy in tasks, seconds idle, and busy share",
  task_bottleneck: "DASF's slowest tasks: duration, share of the host's time and the memory the task's output uses (Mb)",
  time_summary: "per worker, the driver and the run: wall time split into tasks, driver and idle (seconds and %)",
  transfer_bandwidth: "data moved per sending and receiving worker (a GPU copy's other end is host): transfers, bytes, summed transfer time and the rate while transferring (MB/s = bytes ÷ 1e6 ÷ time)",
  transfer_types: "data moved per data type of the keys (type and dtype of the task that made each key): a transfer of several keys is split among them by their sizes",
  transfer_functions: "transfer time per function of the task that received the data, beside that function's task time",
  transfer_share: "per worker row and for the run: task time against transfer time (a cluster worker's transfers sit on its first row)"
}

/**
 * The transfer analyses (analysis/Transfers.ts: bandwidth by worker pair and by data
 * type, transfer time per function, compute vs transfer) as report tables, with their
 * captions; none when the run moved no data (no `Transfer` events).
 *
 * @since 0.1.0
 * @category constructors
 */
export const transferTables = (tables: TraceTables): Array<ReportTable> => {
  if (tables.transfers.numRows === 0) return []
  return ["transfer_bandwidth", "transfer_types", "transfer_functions", "transfer_share"].flatMap((name) => {
    const a = analyses.find((x) => x.name === name)
    return a === undefined ? [] : [fromArrow(a.title, a.run(tables), analysisCaptions[name])]
  })
}

/**
 * The analyses of `src/analysis` (function and task bottleneck, task balance, critical
 * path, worker utilisation, function summary) over loaded tables, as report tables. An
 * analysis that cannot run on these databases (e.g. DASF's bottlenecks without GPU
 * resource samples) becomes a table-less note instead of failing the report.
 *
 * @since 0.1.0
 * @category constructors
 */
export const analysisTables = (tables: TraceTables): Array<ReportTable> => {
  const order = ["critical_path", "function_summary", "function_bottleneck", "task_balance", "worker_utilization", "task_bottleneck"]
  const out: Array<ReportTable> = []
  for (const name of order) {
    const a = analyses.find((x) => x.name === name)
    if (a === undefined) continue
    try {
      const table = a.run(tables)
      // a summary line's "warning: …" part (critical_path's dependency cycle) stands out
      const summary = summaryOf(table)
      const at = summary?.indexOf("warning: ") ?? -1
      const line = at < 0 ? summary : summary!.slice(0, at).replace(/[;\s]+$/, "") || undefined
      const t = fromArrow(a.title, table, [analysisCaptions[name], line].filter((x) => x !== undefined).join(". "))
      out.push(at < 0 ? t : { ...t, warning: summary!.slice(at + "warning: ".length) })
    } catch (e) {
      out.push({ title: a.title, description: `not available for these databases: ${e instanceof Error ? e.message : String(e)}`, columns: [], rows: [] })
    }
  }
  return out
}

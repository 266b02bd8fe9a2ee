/**
 * DASF's two bottleneck analyses with DASF's column names, units and sort order, and
 * correct numbers (DASF-NOTES 1-11; docs/analysis.md lists every difference):
 *
 * - rows are per (Host, worker, Function) / (Host, worker, Task Key); "GPU" is the last
 *   `-` part of the worker id (DASF's label; it is the dask worker name);
 * - "Percentage of total time (%)" is the share of the row's worker's total task time;
 * - GPU means come from the samples attributed (`attributeSamples`) to that row's own
 *   tasks on that row's host, null when there are none or the trace has no GPU fields;
 * - zero-duration tasks are left out of the throughput mean (no division by zero);
 * - rows are sorted by Duration descending, then Host, GPU, Function / Task Key.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { attributeSamples } from "./Attribution.ts"
import { buildTable, codesFromArray, floatsOf } from "./internal/access.ts"
import { type BottleneckTaskColumns, type TaskBottleneckRows, taskBottleneckRows, type TaskStrings } from "./internal/taskRows.ts"
import { pct, workerTotals } from "./internal/grouping.ts"
import { cmpStr, gpuLabel, groupBy, inputBytes, str, type Tables, type TaskView, taskView } from "./internal/taskView.ts"

/**
 * Per (host, worker, function): Host, GPU, Function, Duration (s), Percentage of total
 * time (%), Mean GPU Utilization (%), Mean GPU Memory Used (GB), Mean Data Size (MB),
 * Mean Throughput (MB/s), Num Tasks (chunks), Mean Task time (s).
 *
 * @since 0.1.0
 * @category analysis
 */
export const perFunctionBottleneck = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  const { group, firstRow } = groupBy(v.n, [
    { codes: v.host.codes, size: v.host.size },
    { codes: v.worker.codes, size: v.worker.size },
    { codes: v.fn.codes, size: v.fn.size }
  ])
  const G = firstRow.length
  const dur = new Float64Array(G)
  const count = new Float64Array(G)
  const bytes = new Float64Array(G)
  const thr = new Float64Array(G)
  const thrN = new Float64Array(G)
  const gpu = new Float64Array(G)
  const gpuN = new Float64Array(G)
  const mem = new Float64Array(G)
  const memN = new Float64Array(G)
  const input = inputBytes(v)
  for (let i = 0; i < v.n; i++) {
    const g = group[i]
    dur[g] += v.duration[i]
    count[g] += 1
    bytes[g] += input[i]
    if (v.duration[i] > 0) (thr[g] += input[i] / v.duration[i], thrN[g] += 1)
  }
  const res = tables.resources
  if (res !== undefined && res.numRows > 0) {
    const a = attributeSamples(tables, v)
    const gu = floatsOf(res.getChild("gpu_utilization"), res.numRows)
    const gm = floatsOf(res.getChild("gpu_memory_used"), res.numRows)
    for (let j = 0; j < a.sample.length; j++) {
      const g = group[a.task[j]]
      const s = a.sample[j]
      if (gu[s] === gu[s]) (gpu[g] += gu[s], gpuN[g] += 1)
      if (gm[s] === gm[s]) (mem[g] += gm[s], memN[g] += 1)
    }
  }
  const totalOf = workerTotals(taskColumnsOf(v), v.host.size, v.worker.size)
  const rows = firstRow.map((r, g) => ({
    g,
    host: str(v.host, v.host.codes[r]),
    gpu: gpuLabel(str(v.worker, v.worker.codes[r]) ?? undefined),
    fn: str(v.fn, v.fn.codes[r]),
    total: totalOf(r)
  }))
  rows.sort((a, b) =>
    dur[b.g] - dur[a.g] || cmpStr(a.host, b.host) || cmpStr(a.gpu, b.gpu) || cmpStr(a.fn, b.fn)
  )
  return buildTable({
    "Host": { kind: "string", values: rows.map((r) => r.host) },
    "GPU": { kind: "string", values: rows.map((r) => r.gpu) },
    "Function": { kind: "string", values: rows.map((r) => r.fn) },
    "Duration (s)": { kind: "float", values: rows.map((r) => dur[r.g]) },
    "Percentage of total time (%)": { kind: "float", values: rows.map((r) => pct(dur[r.g], r.total)) },
    "Mean GPU Utilization (%)": { kind: "float", values: rows.map((r) => (gpuN[r.g] > 0 ? gpu[r.g] / gpuN[r.g] : NaN)) },
    "Mean GPU Memory Used (GB)": {
      kind: "float",
      values: rows.map((r) => (memN[r.g] > 0 ? mem[r.g] / memN[r.g] / 1e9 : NaN))
    },
    "Mean Data Size (MB)": { kind: "float", values: rows.map((r) => bytes[r.g] / count[r.g] / 1e6) },
    "Mean Throughput (MB/s)": {
      kind: "float",
      values: rows.map((r) => (thrN[r.g] > 0 ? thr[r.g] / thrN[r.g] / 1e6 : NaN))
    },
    "Num Tasks (chunks)": { kind: "int", values: rows.map((r) => count[r.g]) },
    "Mean Task time (s)": { kind: "float", values: rows.map((r) => dur[r.g] / count[r.g]) }
  })
}

/**
 * Per (host, worker, task key): Host, GPU, Task Key, Duration (s) (summed over the
 * key's executions on that worker), Percentage of total time (%), Memory usage (Mb)
 * (output size in MB, 1e6 bytes, of the key's latest execution on that worker).
 *
 * @since 0.1.0
 * @category analysis
 */
export const perTaskBottleneck = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  return taskBottleneckTable(taskBottleneckRows(taskColumnsOf(v), taskStringsOf(v)), v)
}

/** The task view's columns that {@link perTaskBottleneck} reads (views, not copies). */
const taskColumnsOf = (v: TaskView): BottleneckTaskColumns => ({
  n: v.n,
  host: v.host.codes,
  worker: v.worker.codes,
  key: v.key.codes,
  duration: v.duration,
  end: v.end,
  size: v.size
})

const taskStringsOf = (v: TaskView): TaskStrings => ({
  hosts: v.host.size,
  workers: v.worker.size,
  keys: v.key.size,
  host: v.host.at,
  worker: v.worker.at,
  key: v.key.at
})

/**
 * {@link perTaskBottleneck}'s table from its rows (computed here or on another thread
 * from the same view's columns: the codes are those of `v`'s dictionaries).
 *
 * @since 0.1.0
 * @category utils
 */
export const taskBottleneckTable = (rows: TaskBottleneckRows, v: TaskView): Table =>
  buildTable({
    "Host": { kind: "codes", codes: rows.host, from: v.host },
    "GPU": { kind: "codes", codes: rows.gpu, from: codesFromArray(rows.gpu, rows.gpuLabels) },
    "Task Key": { kind: "codes", codes: rows.key, from: v.key },
    "Duration (s)": { kind: "float", values: rows.duration },
    "Percentage of total time (%)": { kind: "float", values: rows.percentage },
    "Memory usage (Mb)": { kind: "float", values: rows.megabytes }
  })

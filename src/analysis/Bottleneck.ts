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
import { buildTable, floatsOf } from "./internal/access.ts"
import { argsortDesc } from "./internal/sort.ts"
import { cmpStr, gpuCodes, gpuLabel, groupBy, inputBytes, str, type Tables, taskView } from "./internal/taskView.ts"

const workerTotals = (v: ReturnType<typeof taskView>) => {
  const { group, firstRow } = groupBy(v.n, [
    { codes: v.host.codes, size: v.host.size },
    { codes: v.worker.codes, size: v.worker.size }
  ])
  const total = new Float64Array(firstRow.length)
  for (let i = 0; i < v.n; i++) total[group[i]] += v.duration[i]
  return { group, total }
}

const pct = (part: number, whole: number): number => (whole > 0 ? (part / whole) * 100 : NaN)

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
  const wt = workerTotals(v)
  const rows = firstRow.map((r, g) => ({
    g,
    host: str(v.host, v.host.codes[r]),
    gpu: gpuLabel(str(v.worker, v.worker.codes[r]) ?? undefined),
    fn: str(v.fn, v.fn.codes[r]),
    total: wt.total[wt.group[r]]
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
  const { group, firstRow } = groupBy(v.n, [
    { codes: v.host.codes, size: v.host.size },
    { codes: v.worker.codes, size: v.worker.size },
    { codes: v.key.codes, size: v.key.size }
  ])
  const G = firstRow.length
  const dur = new Float64Array(G)
  const size = new Float64Array(G).fill(NaN)
  const lastEnd = new Float64Array(G).fill(-Infinity)
  for (let i = 0; i < v.n; i++) {
    const g = group[i]
    dur[g] += v.duration[i]
    if (v.end[i] >= lastEnd[g]) (lastEnd[g] = v.end[i], size[g] = v.size[i])
  }
  // hundreds of thousands of rows: typed arrays and codes, no row objects (hot path)
  const wt = workerTotals(v)
  const gpu = gpuCodes(v)
  const hostOf = (g: number) => str(v.host, v.host.codes[firstRow[g]])
  const gpuOf = (g: number) => gpu.at(gpu.codes[firstRow[g]]) ?? null
  const keyOf = (g: number) => str(v.key, v.key.codes[firstRow[g]])
  const order = argsortDesc(dur.subarray(0, G), (a, b) =>
    cmpStr(hostOf(a), hostOf(b)) || cmpStr(gpuOf(a), gpuOf(b)) || cmpStr(keyOf(a), keyOf(b))
  )
  // each group's cells side by side, in group order (its first rows come in row order:
  // sequential reads), then gathered in sorted order: one cache line a row, where
  // gathering from the seven arrays missed the cache seven times
  const W = 6
  const cells = new Float64Array(G * W)
  for (let g = 0; g < G; g++) {
    const r = firstRow[g]
    const at = g * W
    cells[at] = dur[g]
    cells[at + 1] = pct(dur[g], wt.total[wt.group[r]])
    cells[at + 2] = size[g] / 1e6
    cells[at + 3] = v.host.codes[r]
    cells[at + 4] = gpu.codes[r]
    cells[at + 5] = v.key.codes[r]
  }
  const pcts = new Float64Array(G)
  const durs = new Float64Array(G)
  const mbs = new Float64Array(G)
  const hostCodes = new Int32Array(G)
  const gpuOut = new Int32Array(G)
  const keyCodes = new Int32Array(G)
  for (let i = 0; i < G; i++) {
    const at = order[i] * W
    durs[i] = cells[at]
    pcts[i] = cells[at + 1]
    mbs[i] = cells[at + 2]
    hostCodes[i] = cells[at + 3]
    gpuOut[i] = cells[at + 4]
    keyCodes[i] = cells[at + 5]
  }
  return buildTable({
    "Host": { kind: "codes", codes: hostCodes, from: v.host },
    "GPU": { kind: "codes", codes: gpuOut, from: gpu },
    "Task Key": { kind: "codes", codes: keyCodes, from: v.key },
    "Duration (s)": { kind: "float", values: durs },
    "Percentage of total time (%)": { kind: "float", values: pcts },
    "Memory usage (Mb)": { kind: "float", values: mbs }
  })
}

/**
 * Per-function duration statistics over all hosts and workers (Tessera's own
 * analysis): count, total, mean, median, 95th percentile and maximum duration, and the
 * bytes each function read (sum of its tasks' input sizes) and wrote (sum of output
 * sizes).
 *
 * A hand-written pass, not SQL: docs/queries.md's first query computes the same numbers
 * in DuckDB (test/analysis/Queries.test.ts checks they agree), but moving a 1M-event
 * trace into DuckDB costs more than this pass and the other analyses together
 * (BENCHMARKS.md, 2026-11-24), and `tessera analyze` must stay under 2 s.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { buildTable } from "./internal/access.ts"
import { cmpStr, groupBy, inputBytes, str, type Tables, taskView } from "./internal/taskView.ts"

/**
 * Percentile by linear interpolation between closest ranks (numpy's default) of an
 * ascending array.
 *
 * @since 0.1.0
 * @category analysis
 */
export const percentile = (sorted: Float64Array, p: number): number => {
  if (sorted.length === 0) return NaN
  const pos = (sorted.length - 1) * p
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo)
}

/**
 * Function, Count, Total (s), Mean (s), p50 (s), p95 (s), Max (s), Bytes In, Bytes Out;
 * sorted by Total descending, then Function.
 *
 * @since 0.1.0
 * @category analysis
 */
export const perFunctionSummary = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  const { group, firstRow } = groupBy(v.n, [{ codes: v.fn.codes, size: v.fn.size }])
  const G = firstRow.length
  const count = new Int32Array(G)
  for (let i = 0; i < v.n; i++) count[group[i]]++
  const offs = new Int32Array(G + 1)
  for (let g = 0; g < G; g++) offs[g + 1] = offs[g] + count[g]
  const fill = offs.slice(0, G)
  const durs = new Float64Array(v.n)
  const total = new Float64Array(G)
  const bin = new Float64Array(G)
  const bout = new Float64Array(G)
  const input = inputBytes(v)
  for (let i = 0; i < v.n; i++) {
    const g = group[i]
    durs[fill[g]++] = v.duration[i]
    total[g] += v.duration[i]
    bin[g] += input[i]
    if (v.size[i] === v.size[i]) bout[g] += v.size[i]
  }
  const p50 = new Float64Array(G)
  const p95 = new Float64Array(G)
  const max = new Float64Array(G)
  for (let g = 0; g < G; g++) {
    const xs = durs.subarray(offs[g], offs[g + 1]).sort()
    p50[g] = percentile(xs, 0.5)
    p95[g] = percentile(xs, 0.95)
    max[g] = xs[xs.length - 1]
  }
  const rows = firstRow.map((r, g) => ({ g, fn: str(v.fn, v.fn.codes[r]) }))
  rows.sort((a, b) => total[b.g] - total[a.g] || cmpStr(a.fn, b.fn))
  return buildTable({
    "Function": { kind: "string", values: rows.map((r) => r.fn) },
    "Count": { kind: "int", values: rows.map((r) => count[r.g]) },
    "Total (s)": { kind: "float", values: rows.map((r) => total[r.g]) },
    "Mean (s)": { kind: "float", values: rows.map((r) => total[r.g] / count[r.g]) },
    "p50 (s)": { kind: "float", values: rows.map((r) => p50[r.g]) },
    "p95 (s)": { kind: "float", values: rows.map((r) => p95[r.g]) },
    "Max (s)": { kind: "float", values: rows.map((r) => max[r.g]) },
    "Bytes In": { kind: "float", values: rows.map((r) => bin[r.g]) },
    "Bytes Out": { kind: "float", values: rows.map((r) => bout[r.g]) }
  })
}

/**
 * The critical path: the chain of dependent tasks whose summed durations is longest,
 * i.e. the chain that bounded the run however many workers there were. The graph is
 * rebuilt from each task's `dependencies` (DASF writes `dependents` empty:
 * DASF-NOTES 13). A key computed more than once counts with its latest execution.
 * Dependencies on keys that are not in the trace are ignored; keys on a cycle (only in
 * corrupt traces) are left out.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { buildTable } from "./internal/access.ts"
import { cmpStr, gpuLabel, str, type Tables, taskView } from "./internal/taskView.ts"

/**
 * The path as task rows (indices into the task table), first task first, and its
 * length in seconds.
 *
 * @since 0.1.0
 * @category models
 */
export interface CriticalPathResult {
  readonly rows: ReadonlyArray<number>
  readonly length: number
}

/**
 * Compute the critical path (longest duration-weighted dependency chain). Ties are
 * broken by the smaller key, so the result is deterministic.
 *
 * @since 0.1.0
 * @category analysis
 */
export const criticalPathRows = (tables: Tables): CriticalPathResult => {
  const v = taskView(tables.tasks)
  const K = v.key.size
  // latest execution per key
  const rowOf = new Int32Array(K).fill(-1)
  for (let i = 0; i < v.n; i++) {
    const k = v.key.codes[i]
    if (k >= 0 && (rowOf[k] < 0 || v.end[i] >= v.end[rowOf[k]])) rowOf[k] = i
  }
  // edges dep -> key (deduplicated per task), Kahn's algorithm
  const indeg = new Int32Array(K)
  const succ: Array<Array<number>> = Array.from({ length: K }, () => [])
  const preds: Array<Array<number>> = Array.from({ length: K }, () => [])
  for (let k = 0; k < K; k++) {
    const r = rowOf[k]
    if (r < 0) continue
    const seen = new Set<number>()
    for (let j = v.depOffsets[r]; j < v.depOffsets[r + 1]; j++) {
      const d = v.deps[j]
      if (d < 0 || rowOf[d] < 0 || seen.has(d) || d === k) continue
      seen.add(d)
      succ[d].push(k)
      preds[k].push(d)
      indeg[k]++
    }
  }
  const dist = new Float64Array(K).fill(-Infinity)
  const from = new Int32Array(K).fill(-1)
  const queue: Array<number> = []
  for (let k = 0; k < K; k++) if (rowOf[k] >= 0 && indeg[k] === 0) queue.push(k)
  const dur = (k: number) => Math.max(0, v.duration[rowOf[k]] || 0)
  for (let q = 0; q < queue.length; q++) {
    const k = queue[q]
    let best = 0
    let bestFrom = -1
    for (const d of preds[k]) {
      if (bestFrom < 0 || dist[d] > best || (dist[d] === best && cmpStr(v.key.at(d), v.key.at(bestFrom)) < 0)) {
        best = dist[d]
        bestFrom = d
      }
    }
    dist[k] = best + dur(k)
    from[k] = bestFrom
    for (const s of succ[k]) if (--indeg[s] === 0) queue.push(s)
  }
  let last = -1
  for (const k of queue) {
    if (last < 0 || dist[k] > dist[last] || (dist[k] === dist[last] && cmpStr(v.key.at(k), v.key.at(last)) < 0)) {
      last = k
    }
  }
  if (last < 0) return { rows: [], length: 0 }
  const chain: Array<number> = []
  for (let k = last; k >= 0; k = from[k]) chain.push(rowOf[k])
  chain.reverse()
  return { rows: chain, length: dist[last] }
}

/**
 * The critical path as a table, one row per task in chain order: Step, Host, GPU,
 * Task Key, Function, Start (s from begin), Duration (s), Share of path (%),
 * Cumulative (s). "Start" is relative to the earliest task start.
 *
 * @since 0.1.0
 * @category analysis
 */
export const criticalPath = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  const { rows, length } = criticalPathRows(tables)
  let t0 = Infinity
  for (let i = 0; i < v.n; i++) if (v.start[i] < t0) t0 = v.start[i]
  let cum = 0
  const cumulative = rows.map((r) => (cum += Math.max(0, v.duration[r] || 0)))
  return buildTable({
    "Step": { kind: "int", values: rows.map((_, i) => i + 1) },
    "Host": { kind: "string", values: rows.map((r) => str(v.host, v.host.codes[r])) },
    "GPU": { kind: "string", values: rows.map((r) => gpuLabel(str(v.worker, v.worker.codes[r]) ?? undefined)) },
    "Task Key": { kind: "string", values: rows.map((r) => str(v.key, v.key.codes[r])) },
    "Function": { kind: "string", values: rows.map((r) => str(v.fn, v.fn.codes[r])) },
    "Start (s from begin)": { kind: "float", values: rows.map((r) => v.start[r] - t0) },
    "Duration (s)": { kind: "float", values: rows.map((r) => v.duration[r]) },
    "Share of path (%)": {
      kind: "float",
      values: rows.map((r) => (length > 0 ? (Math.max(0, v.duration[r] || 0) / length) * 100 : NaN))
    },
    "Cumulative (s)": { kind: "float", values: cumulative }
  })
}

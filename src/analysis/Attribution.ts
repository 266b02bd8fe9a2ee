/**
 * Attribution of resource samples to the tasks running when they were taken: a sample
 * of host H at time t belongs to EVERY task on host H with `start <= t <= end` (the
 * task ran in `[timestamp - duration, timestamp]`). One interval sweep per host,
 * O((tasks + samples) log + pairs) — DASF instead scans the whole database for each
 * sample, credits only the first match in file order, on any host, with the window
 * `[timestamp, timestamp + duration]` (DASF-NOTES 2, 4, 5).
 *
 * @since 0.1.0
 */
import { codesOf, floatsOf, recode } from "./internal/Access.ts"
import { type Tables, type TaskView, taskView } from "./internal/TaskView.ts"

/**
 * (sample row, task row) pairs, ordered by sample row then task row.
 *
 * @since 0.1.0
 * @category models
 */
export interface Attribution {
  readonly sample: Int32Array
  readonly task: Int32Array
}

/**
 * Attribute every resource sample to the tasks running at its instant on its host.
 *
 * @since 0.1.0
 * @category analysis
 */
export const attributeSamples = (tables: Tables, view?: TaskView): Attribution => {
  const res = tables.resources
  if (res === undefined || res.numRows === 0 || tables.tasks.numRows === 0) {
    return { sample: new Int32Array(0), task: new Int32Array(0) }
  }
  const v = view ?? taskView(tables.tasks)
  const m = res.numRows
  const sTime = floatsOf(res.getChild("timestamp"), m)
  const sHostRaw = codesOf(res.getChild("host"), m)
  const sHost = recode(sHostRaw, v.host)
  // bucket rows by host code
  const H = v.host.size
  const taskByHost: Array<Array<number>> = Array.from({ length: H + 1 }, () => [])
  for (let i = 0; i < v.n; i++) taskByHost[v.host.codes[i] + 1].push(i)
  const sampleByHost: Array<Array<number>> = Array.from({ length: H + 1 }, () => [])
  for (let i = 0; i < m; i++) {
    // a sample whose host has no task (code -1 from recode) matches nothing, unless
    // both are null hosts
    const c = sHost[i]
    if (c >= 0 || sHostRaw.codes[i] < 0) sampleByHost[c + 1].push(i)
  }
  const outS: Array<number> = []
  const outT: Array<number> = []
  for (let h = 0; h <= H; h++) {
    const ts = taskByHost[h]
    const ss = sampleByHost[h]
    if (ts.length === 0 || ss.length === 0) continue
    const byStart = Int32Array.from(ts).sort((a, b) => v.start[a] - v.start[b] || a - b)
    const byEnd = Int32Array.from(ts).sort((a, b) => v.end[a] - v.end[b] || a - b)
    const samples = Int32Array.from(ss).sort((a, b) => sTime[a] - sTime[b] || a - b)
    const active = new Set<number>()
    let si = 0
    let ei = 0
    const pairsAt: Array<[number, Array<number>]> = []
    for (const s of samples) {
      const t = sTime[s]
      while (si < byStart.length && v.start[byStart[si]] <= t) active.add(byStart[si++])
      while (ei < byEnd.length && v.end[byEnd[ei]] < t) active.delete(byEnd[ei++])
      if (active.size > 0) pairsAt.push([s, Array.from(active).sort((a, b) => a - b)])
    }
    for (const [s, tasks] of pairsAt) {
      for (const t of tasks) {
        outS.push(s)
        outT.push(t)
      }
    }
  }
  // order by sample row, then task row
  const order = Array.from(outS.keys()).sort((a, b) => outS[a] - outS[b] || outT[a] - outT[b])
  return { sample: Int32Array.from(order, (i) => outS[i]), task: Int32Array.from(order, (i) => outT[i]) }
}

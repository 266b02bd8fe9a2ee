/**
 * Attribution of resource samples to the tasks running when they were taken: a sample
 * of host H at time t belongs to EVERY task on host H with `start <= t <= end` (the
 * task ran in `[timestamp - duration, timestamp]`). Per host, each task finds the
 * samples inside its interval by binary search over that host's sorted sample times,
 * O(tasks log samples + samples log samples + pairs) — DASF instead scans the whole database for each
 * sample, credits only the first match in file order, on any host, with the window
 * `[timestamp, timestamp + duration]` (DASF-NOTES 2, 4, 5).
 *
 * @since 0.1.0
 */
import { codesOf, floatsOf, recode } from "./internal/access.ts"
import { type Tables, type TaskView, taskView } from "./internal/taskView.ts"

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
  // per host: its samples sorted by time (samples are few next to tasks; a sample
  // whose host has no task, code -1 from recode, matches nothing unless both are null)
  const H = v.host.size
  const byHost: Array<Array<number>> = Array.from({ length: H + 1 }, () => [])
  for (let i = 0; i < m; i++) {
    const c = sHost[i]
    if (sTime[i] === sTime[i] && (c >= 0 || sHostRaw.codes[i] < 0)) byHost[c + 1].push(i)
  }
  const idx = byHost.map((ss) => Int32Array.from(ss).sort((a, b) => sTime[a] - sTime[b] || a - b))
  const times = idx.map((ss) => Float64Array.from(ss, (s) => sTime[s]))
  // each task finds its first sample by binary search (once: the position is kept for
  // the second pass), O(tasks log samples + pairs), no sort of the tasks. Two passes
  // (count, then fill) give the pairs grouped by sample row, and within a sample in task
  // row order, without sorting them. Hot path.
  const first = new Int32Array(v.n).fill(-1) // -1: no sample can fall in the task
  const offsets = new Int32Array(m + 1)
  for (let i = 0; i < v.n; i++) {
    const h = v.host.codes[i] + 1
    const ts = times[h]
    if (ts.length === 0) continue
    const st = v.start[i]
    const en = v.end[i]
    if (!(st <= en)) continue
    let lo = 0
    let hi = ts.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (ts[mid] < st) lo = mid + 1
      else hi = mid
    }
    if (lo === ts.length || ts[lo] > en) continue
    first[i] = lo
    const ss = idx[h]
    for (let k = lo; k < ts.length && ts[k] <= en; k++) offsets[ss[k] + 1]++
  }
  for (let s = 0; s < m; s++) offsets[s + 1] += offsets[s]
  const total = offsets[m]
  const sample = new Int32Array(total)
  const task = new Int32Array(total)
  const fill = offsets.slice(0, m)
  for (let i = 0; i < v.n; i++) {
    const lo = first[i]
    if (lo < 0) continue
    const h = v.host.codes[i] + 1
    const ts = times[h]
    const ss = idx[h]
    const en = v.end[i]
    for (let k = lo; k < ts.length && ts[k] <= en; k++) {
      const s = ss[k]
      const at = fill[s]++
      sample[at] = s
      task[at] = i
    }
  }
  return { sample, task }
}

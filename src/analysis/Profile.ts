/**
 * The statistical profiler's samples (trace/SampleEvents) as answers: the top frames by
 * self and total time (`tessera analyze -a profile`), the call tree for a flame graph
 * (the report's icicle), and Chrome's `.cpuprofile` format (`tessera export --format
 * cpuprofile`). Any selection of samples: by the task's function, its stage, a time
 * window.
 *
 * Time is the samples' weights summed (issue 31 item 1): each sample stands for the
 * thread time it covers (V8's real interval before it, within its function's tasks; see
 * `StatisticalProfiler.attribute`), not a fixed interval: V8 samples more often than
 * asked (2–5 ms at 10 ms) and less often on a busy machine. Every view here, the SQL
 * `samples` table and the report's flame graph sum the same weights. A sample's function
 * is its task's ("idle" on a worker between tasks, "driver" on the main thread). Lines and
 * columns are shown 1-based (V8 stores them 0-based).
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { type DroppedBytes, type Frame, type ProfileData, readProfilePromise } from "../trace/SampleEvents.ts"
import { buildTable } from "./internal/access.ts"

export type { DroppedBytes, Frame, ProfileData, ProfileSamples } from "../trace/SampleEvents.ts"

/**
 * Reads the samples of database files (files without samples add none); `dropped`: bytes
 * at a file's end that were no whole record. Rejects with `TraceFormatError` (file and
 * byte offset) for a corrupt sample record (issue 32 item 12).
 *
 * @since 0.1.0
 * @category encoding
 */
export const loadProfilePromise = (files: ReadonlyArray<string>): Promise<ProfileData & { readonly dropped: ReadonlyArray<DroppedBytes> }> => readProfilePromise(files)

/**
 * Which samples: of tasks of one function, of one stage, within `[from, to]` (epoch
 * seconds), on one thread.
 *
 * @since 0.1.0
 * @category models
 */
export interface SampleFilter {
  readonly function?: string | undefined
  readonly stage?: string | undefined
  readonly from?: number | undefined
  readonly to?: number | undefined
  readonly thread?: string | undefined
}

/**
 * Indices of the samples the filter keeps, in order.
 *
 * @since 0.1.0
 * @category analysis
 */
export const selectSamples = (d: ProfileData, f: SampleFilter = {}): Array<number> => {
  const out: Array<number> = []
  forSelected(d, f, (q) => void out.push(q))
  return out
}

/** Calls `each` with the index of every sample the filter keeps, in order (no index list made). */
const forSelected = (d: ProfileData, f: SampleFilter, each: (q: number) => void): void => {
  const s = d.samples
  // which threads and tasks the filter keeps, decided once each (the samples hold indices)
  const threadOk = s.threads.map((t) => f.thread === undefined || t.thread === f.thread)
  const taskOk = s.tasks.map((t) => (f.function === undefined || t.name === f.function) && (f.stage === undefined || t.stage === f.stage))
  for (let q = 0; q < s.time.length; q++) {
    if (!taskOk[s.taskIndex[q]!] || !threadOk[s.threadIndex[q]!]) continue
    if (f.from !== undefined && s.time[q]! < f.from) continue
    if (f.to !== undefined && s.time[q]! > f.to) continue
    each(q)
  }
}

/**
 * A frame's place for people: `url:line:column` (1-based), or the bare URL.
 *
 * @since 0.1.0
 * @category formatting
 */
export const location = (f: Frame): string => (f.url === "" ? "" : f.line < 0 ? f.url : `${f.url}:${f.line + 1}:${f.column + 1}`)

/**
 * A frame's label: its function name, `(anonymous)` when it has none.
 *
 * @since 0.1.0
 * @category formatting
 */
export const label = (f: Frame): string => (f.functionName === "" ? "(anonymous)" : f.functionName)

/**
 * Frames by self time (innermost frame of a sample) and total time (anywhere on its
 * stack, once per sample), over the selected samples: sample counts and seconds (the
 * samples' weights summed).
 *
 * @since 0.1.0
 * @category models
 */
export interface FrameTime {
  readonly frame: Frame
  readonly selfSamples: number
  readonly totalSamples: number
  readonly selfSeconds: number
  readonly totalSeconds: number
}

/**
 * Self and total time of every frame over the selected samples, by self seconds, then
 * total seconds, descending.
 *
 * @since 0.1.0
 * @category analysis
 */
export const frameTimes = (d: ProfileData, f: SampleFilter = {}): Array<FrameTime> => {
  const n = d.frames.length
  const self = new Float64Array(n), total = new Float64Array(n), selfS = new Float64Array(n), totalS = new Float64Array(n)
  const seen = new Int32Array(n).fill(-1)
  forSelected(d, f, (q) => {
    const dt = d.samples.weight[q]!
    let node = d.samples.stack[q]!
    if (node < 0) return
    const top = d.frame[node]!
    self[top]!++
    selfS[top]! += dt
    for (; node >= 0; node = d.parent[node]!) {
      const fr = d.frame[node]!
      if (seen[fr] === q) continue
      seen[fr] = q
      total[fr]!++
      totalS[fr]! += dt
    }
  })
  const out: Array<FrameTime> = []
  for (let i = 0; i < n; i++) {
    if (total[i] === 0) continue
    out.push({ frame: d.frames[i]!, selfSamples: self[i]!, totalSamples: total[i]!, selfSeconds: selfS[i]!, totalSeconds: totalS[i]! })
  }
  return out.sort((a, b) => b.selfSeconds - a.selfSeconds || b.totalSeconds - a.totalSeconds || b.selfSamples - a.selfSamples)
}

/**
 * Seconds of thread time the selected samples stand for (their weights summed): what
 * `tessera analyze -a profile`'s rows, the flame graph's root and the `.cpuprofile`
 * export add up to.
 *
 * @since 0.1.0
 * @category analysis
 */
export const sampledSeconds = (d: ProfileData, f: SampleFilter = {}): number => {
  let sum = 0
  forSelected(d, f, (q) => void (sum += d.samples.weight[q]!))
  return sum
}

/**
 * `tessera analyze -a profile`: the top frames by self and total time as a table —
 * function, location, self_s, self_pct, total_s, total_pct, samples (self) — over the
 * samples the filter keeps (seconds: their weights; percentages of those samples'
 * seconds).
 *
 * @since 0.1.0
 * @category analysis
 */
export const profileTable = (d: ProfileData, f: SampleFilter = {}): Table => {
  const all = sampledSeconds(d, f)
  const rows = frameTimes(d, f)
  const pct = (x: number) => (all === 0 ? 0 : Math.round((1000 * x) / all) / 10)
  return buildTable({
    function: { kind: "string", values: rows.map((r) => label(r.frame)) },
    location: { kind: "string", values: rows.map((r) => location(r.frame)) },
    self_s: { kind: "float", values: rows.map((r) => r.selfSeconds) },
    self_pct: { kind: "float", values: rows.map((r) => pct(r.selfSeconds)) },
    total_s: { kind: "float", values: rows.map((r) => r.totalSeconds) },
    total_pct: { kind: "float", values: rows.map((r) => pct(r.totalSeconds)) },
    samples: { kind: "float", values: rows.map((r) => r.selfSamples) }
  })
}

/**
 * One box of a flame graph: a frame (or, on the first level, the task's function), the
 * seconds of its samples (`value`, the box's width) and of those where it is the
 * innermost frame (`self`), and their counts (`samples`, `selfSamples`).
 *
 * @since 0.1.0
 * @category models
 */
export interface FlameNode {
  readonly name: string
  readonly location: string
  value: number
  self: number
  samples: number
  selfSamples: number
  readonly children: Array<FlameNode>
}

/**
 * The call tree of the selected samples, its first level the tasks' functions ("idle",
 * "driver" included) so a whole-run graph splits by function as dask's does; children
 * by seconds, descending.
 *
 * @since 0.1.0
 * @category analysis
 */
export const flameTree = (d: ProfileData, f: SampleFilter = {}): FlameNode => {
  const root: FlameNode = { name: "all", location: "", value: 0, self: 0, samples: 0, selfSamples: 0, children: [] }
  const index = new Map<FlameNode, Map<string, FlameNode>>()
  const child = (p: FlameNode, name: string, loc: string): FlameNode => {
    let m = index.get(p)
    if (m === undefined) index.set(p, m = new Map())
    const k = `${name}\u0000${loc}`
    let c = m.get(k)
    if (c === undefined) {
      c = { name, location: loc, value: 0, self: 0, samples: 0, selfSamples: 0, children: [] }
      m.set(k, c)
      p.children.push(c)
    }
    return c
  }
  const path: Array<number> = []
  const add = (box: FlameNode, w: number) => {
    box.value += w
    box.samples++
  }
  forSelected(d, f, (q) => {
    const w = d.samples.weight[q]!
    add(root, w)
    const task = d.samples.tasks[d.samples.taskIndex[q]!]!
    let box = child(root, task.name, task.stage)
    add(box, w)
    path.length = 0
    for (let node = d.samples.stack[q]!; node >= 0; node = d.parent[node]!) path.push(d.frame[node]!)
    for (let i = path.length - 1; i >= 0; i--) {
      const fr = d.frames[path[i]!]!
      box = child(box, label(fr), location(fr))
      add(box, w)
    }
    box.self += w
    box.selfSamples++
  })
  const sort = (n: FlameNode): void => {
    n.children.sort((a, b) => b.value - a.value || b.samples - a.samples)
    for (const c of n.children) sort(c)
  }
  sort(root)
  return root
}

/**
 * A Chrome DevTools / speedscope `.cpuprofile`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CpuProfile {
  readonly nodes: Array<{
    id: number
    callFrame: { functionName: string; scriptId: string; url: string; lineNumber: number; columnNumber: number }
    hitCount: number
    children: Array<number>
  }>
  /** µs, epoch clock */
  readonly startTime: number
  readonly endTime: number
  readonly samples: Array<number>
  readonly timeDeltas: Array<number>
}

/**
 * The name of the `.cpuprofile` node (a child of the root) that holds the time no sample
 * stands for, between a thread's charged intervals. Not V8's `(idle)`, which real samples
 * can carry (a thread V8 was told is idle): no JavaScript function has this name.
 *
 * @since 0.1.0
 * @category encoding
 */
export const unsampledNode = "(unsampled)"

/**
 * The selected samples as a `.cpuprofile` whose durations are the samples' weights.
 *
 * DevTools and speedscope give each sample the time to the next one (the last: to
 * `endTime`). So, in time order, each sample is placed where the thread time it stands
 * for begins (its time less its weight, or where the previous one's ends, whichever is
 * later), and a gap before it gets an `(unsampled)` sample (`unsampledNode`): every
 * sample then lasts exactly its weight, and the file's samples, less those, add up to the
 * same seconds as `tessera analyze -a profile` and SQL's `samples`. One thread's file
 * keeps its samples at their times (within a weight); samples of several threads (a
 * per-function file) are laid end to end in time order, so its timeline is thread time,
 * not wall time. A sample with no stack hits the root.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toCpuProfile = (d: ProfileData, f: SampleFilter = {}): CpuProfile => {
  const time = d.samples.time
  const qs = Int32Array.from(selectSamples(d, f)).sort((a, b) => time[a]! - time[b]! || a - b)
  const nodes: CpuProfile["nodes"] = [{ id: 1, callFrame: { functionName: "(root)", scriptId: "0", url: "", lineNumber: -1, columnNumber: -1 }, hitCount: 0, children: [] }]
  const ids = new Map<number, number>()
  // iterative: a stack may be 10,000 frames deep (issue 32 item 12)
  const path: Array<number> = []
  const idOf = (node: number): number => {
    if (node < 0) return 1
    const got = ids.get(node)
    if (got !== undefined) return got
    path.length = 0
    for (let at = node; at >= 0 && !ids.has(at); at = d.parent[at]!) path.push(at)
    for (let i = path.length - 1; i >= 0; i--) {
      const at = path[i]!
      const up = d.parent[at]!
      const parent = up < 0 ? 1 : ids.get(up)!
      const fr = d.frames[d.frame[at]!]!
      const id = nodes.length + 1
      nodes.push({ id, callFrame: { functionName: fr.functionName, scriptId: "0", url: fr.url, lineNumber: fr.line, columnNumber: fr.column }, hitCount: 0, children: [] })
      nodes[parent - 1]!.children.push(id)
      ids.set(at, id)
    }
    return ids.get(node)!
  }
  let gap = 0
  const gapId = (): number => {
    if (gap === 0) {
      gap = nodes.length + 1
      nodes.push({ id: gap, callFrame: { functionName: unsampledNode, scriptId: "0", url: "", lineNumber: -1, columnNumber: -1 }, hitCount: 0, children: [] })
      nodes[0]!.children.push(gap)
    }
    return gap
  }
  // µs integers throughout, so that the deltas add up exactly
  const samples: Array<number> = []
  const timeDeltas: Array<number> = []
  const us = (x: number) => Math.round(x * 1e6)
  const startTime = qs.length > 0 ? us(d.samples.time[qs[0]!]! - d.samples.weight[qs[0]!]!) : 0
  let prev = startTime
  let cursor = startTime
  const put = (id: number, at: number) => {
    samples.push(id)
    timeDeltas.push(at - prev)
    prev = at
  }
  for (const q of qs) {
    const w = us(d.samples.weight[q]!)
    const begin = us(d.samples.time[q]!) - w
    if (begin > cursor) {
      const id = gapId()
      nodes[id - 1]!.hitCount++
      put(id, cursor)
      cursor = begin
    }
    const id = idOf(d.samples.stack[q]!)
    nodes[id - 1]!.hitCount++
    put(id, cursor)
    cursor += w
  }
  return { nodes, startTime, endTime: cursor, samples, timeDeltas }
}

/**
 * Seconds a `.cpuprofile`'s samples last as DevTools and speedscope count them (each to
 * the next sample, the last to `endTime`), leaving out `(unsampled)` ones.
 *
 * @since 0.1.0
 * @category encoding
 */
export const cpuProfileSeconds = (p: CpuProfile): number => {
  const gaps = new Set(p.nodes[0]?.children.filter((id) => p.nodes[id - 1]?.callFrame.functionName === unsampledNode))
  let t = p.startTime
  const at = p.timeDeltas.map((dt) => (t += dt))
  let sum = 0
  for (let i = 0; i < p.samples.length; i++) {
    if (gaps.has(p.samples[i]!)) continue
    sum += (i + 1 < at.length ? at[i + 1]! : p.endTime) - at[i]!
  }
  return sum / 1e6
}

/**
 * One `.cpuprofile` per worker (thread) or per task function, named for files
 * (`worker-host-0`, `driver`; `kmeans_step`, `idle`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const cpuProfiles = (d: ProfileData, by: "worker" | "function"): Array<{ readonly name: string; readonly profile: CpuProfile }> => {
  const s = d.samples
  const used = (index: Int32Array, n: number) => {
    const seen = new Uint8Array(n)
    for (let q = 0; q < index.length; q++) seen[index[q]!] = 1
    return seen
  }
  const groups = by === "worker"
    ? ((seen) => [...new Set(s.threads.filter((_, i) => seen[i] === 1).map((t) => t.thread))].sort())(used(s.threadIndex, s.threads.length))
    : ((seen) => [...new Set(s.tasks.filter((_, i) => seen[i] === 1).map((t) => t.name))].sort())(used(s.taskIndex, s.tasks.length))
  return groups.map((g) => ({ name: g, profile: toCpuProfile(d, by === "worker" ? { thread: g } : { function: g }) }))
}

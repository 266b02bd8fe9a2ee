/**
 * Per-stage summary (Tessera's own analysis), and the one definition of a stage's time
 * that `tessera analyze -a stage_summary`, the report's per-stage table, its "where did
 * the time go" bars and its stage graph's shading all use (`stageTimes`).
 *
 * A stage's tasks are the tasks that carry its name (Tessera's `stage` arg). A stage's wall time is the part of the run that belongs to
 * it. The run (first event to last: tasks, driver segments, memory and resource
 * samples) is cut into windows:
 *
 * - `(start-up)`: from the run's first event to its first task's start — the driver's
 *   setup, the worker pool's and the workers' start-up, the first graph's submission.
 *   Its own row, never a user stage's.
 * - then one window per compute (the driver's segments carry the compute's number),
 *   from the compute's first driver segment to the next compute's (the last to the end
 *   of the run), belonging to the stage whose tasks ran longest in that compute's `wait`
 *   (a compute that ran no task continues the stage before it). Without driver
 *   segments (DASF's traces), a stage's window runs from its first task's start to the
 *   next stage's first start.
 *
 * The windows do not overlap and cover the run, so the rows' wall times add up to the
 * run's and their shares to 100 %. A stage's driver time is the main thread's own work
 * (its segments other than `wait` and `worker start`) inside its windows.
 *
 * Rows: `(start-up)` first (where the run has one), then the stages in the order they
 * first ran, then the pipeline graph's stages that no task names (a stage whose work
 * ran under another stage's name, or that never ran: a row of zeros), then `(no stage)` (tasks without a stage: a DASF trace, or computes outside
 * a pipeline stage) last. A trace without stages gives `(no stage)` (and `(start-up)`
 * where it has one); an empty trace gives no rows.
 *
 * Columns of `stage_summary`: Stage; Tasks; Erred (tasks whose state is `erred`: the
 * task that failed a run); Task time (s) (sum of its tasks' durations: worker time, can
 * exceed the wall time when tasks ran in parallel); Compute (s) and Transfer (s) (the
 * task time split by the tasks' phases: transfer = gather + transfer phases); Start (s
 * from begin) (its first window's start, or its first task's where it has no window);
 * Wall (s) (its windows' length); Share of run (%) (Wall / the run's wall time); Driver
 * (s); Task span (s) (its first task's start to its last task's end); Bytes In (its
 * tasks' inputs' sizes, as `function_summary`); Bytes Out (its tasks' result sizes);
 * Critical path (%) (its tasks' share of the critical path's length).
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import type { TraceEvent } from "../trace/TraceEvent.ts"
import { isPipelineGraphEvent } from "../trace/TraceEvent.ts"
import { criticalPathSteps } from "./CriticalPath.ts"
import { driverSegments } from "./Driver.ts"
import { buildTable, codesOf, floatsOf } from "./internal/access.ts"
import { inputBytes, type Tables, taskView } from "./internal/taskView.ts"

/**
 * The label of the row of tasks that carry no stage.
 *
 * @since 0.1.0
 * @category constants
 */
export const noStage = "(no stage)"

/**
 * The label of the row of the run's start-up (before its first task started).
 *
 * @since 0.1.0
 * @category constants
 */
export const startUp = "(start-up)"

/**
 * A driver segment as `stageTimes` reads it.
 *
 * @since 0.1.0
 * @category models
 */
export interface StageSegment {
  readonly start: number
  readonly end: number
  /** the compute's number (NaN where absent) */
  readonly compute: number
  readonly activity: string
}

/**
 * What `stageTimes` reads: the tasks as columns (any time origin, the same for all),
 * the stage names, the pipeline graph's stages, the driver's segments and the run's span.
 *
 * @since 0.1.0
 * @category models
 */
export interface StageInput {
  readonly start: ArrayLike<number>
  readonly end: ArrayLike<number>
  /** per task, an index into `names`; -1: no stage */
  readonly stage: ArrayLike<number>
  readonly names: ReadonlyArray<string>
  /** per task, seconds of its gather and transfer phases (NaN without) */
  readonly gather: ArrayLike<number>
  readonly transfer: ArrayLike<number>
  /** per task, bytes out (NaN where unknown) and in */
  readonly size: ArrayLike<number>
  readonly bytesIn: ArrayLike<number>
  /** per task, non-zero where the task erred */
  readonly erred: ArrayLike<number>
  /** the pipeline graph's stages, in the order the pipeline runs them */
  readonly graph: ReadonlyArray<string>
  readonly segments: ReadonlyArray<StageSegment>
  readonly runStart: number
  readonly runEnd: number
}

/**
 * One row of the per-stage summary (seconds; `start` from the run's start, NaN for a
 * stage that never ran; `share` a fraction of the run's wall time).
 *
 * @since 0.1.0
 * @category models
 */
export interface StageRow {
  readonly stage: string
  readonly kind: "start-up" | "stage" | "no stage"
  readonly tasks: number
  readonly erred: number
  readonly taskTime: number
  readonly compute: number
  readonly transfer: number
  readonly start: number
  readonly wall: number
  readonly share: number
  readonly driver: number
  readonly taskSpan: number
  readonly bytesIn: number
  readonly bytesOut: number
}

/**
 * The rows, and the run cut into windows (time order, disjoint, covering the run from
 * its start-up on): `[lo[k], hi[k])` belongs to `rows[row[k]]`. `taskRow[i]` is task
 * `i`'s row.
 *
 * @since 0.1.0
 * @category models
 */
export interface StageTimes {
  readonly rows: ReadonlyArray<StageRow>
  readonly lo: Float64Array
  readonly hi: Float64Array
  readonly row: Int32Array
  readonly taskRow: Int32Array
  readonly runStart: number
  readonly runEnd: number
}

type Spans = Array<number> // flat [a0, b0, a1, b1, ...]

/**
 * Sorted, disjoint union of flat spans `[a0, b0, a1, b1, ...]` (touching spans merge;
 * empty ones are dropped). Starts and ends are sorted apart and swept: the union is
 * where at least one span is open.
 *
 * @since 0.1.0
 * @category utils
 */
export const spanUnion = (spans: ReadonlyArray<number>): Array<number> => {
  const n = spans.length / 2
  let m = 0
  for (let i = 0; i < n; i++) if (spans[2 * i + 1]! > spans[2 * i]!) m++
  const starts = new Float64Array(m)
  const ends = new Float64Array(m)
  for (let i = 0, k = 0; i < n; i++) {
    if (spans[2 * i + 1]! > spans[2 * i]!) (starts[k] = spans[2 * i]!, ends[k] = spans[2 * i + 1]!, k++)
  }
  starts.sort()
  ends.sort()
  const out: Spans = []
  let open = 0
  let i = 0
  let j = 0
  while (i < m) {
    if (starts[i]! <= ends[j]!) {
      if (open === 0) out.push(starts[i]!)
      open++
      i++
    } else {
      open--
      if (open === 0) out.push(ends[j]!)
      j++
    }
  }
  if (m > 0) out.push(ends[m - 1]!)
  return out
}

/**
 * Per window (sorted, disjoint `[lo[k], hi[k])`), the length of the disjoint spans `u`
 * inside it.
 *
 * @since 0.1.0
 * @category utils
 */
export const overlapPerWindow = (u: ReadonlyArray<number>, lo: Float64Array, hi: Float64Array): Float64Array => {
  const out = new Float64Array(lo.length)
  let k = 0
  for (let i = 0; i < u.length; i += 2) {
    const a = u[i]!
    const b = u[i + 1]!
    while (k > 0 && lo[k]! > a) k--
    while (k < lo.length && hi[k]! <= a) k++
    for (let j = k; j < lo.length && lo[j]! < b; j++) {
      const ov = Math.min(b, hi[j]!) - Math.max(a, lo[j]!)
      if (ov > 0) out[j]! += ov
    }
  }
  return out
}

// a label per task: its stage's index, S for no stage; S + 1 is the start-up
const computeBounds = (input: StageInput, label: Int32Array, S: number): Array<{ at: number; label: number }> => {
  const { start, end, segments } = input
  const n = label.length
  const bounds: Array<{ at: number; label: number }> = []
  const computes = new Map<number, { first: number; waitA: number; waitB: number }>()
  for (const s of segments) {
    if (!Number.isFinite(s.compute)) continue
    let x = computes.get(s.compute)
    if (x === undefined) computes.set(s.compute, x = { first: s.start, waitA: NaN, waitB: NaN })
    if (s.start < x.first) x.first = s.start
    if (s.activity === "wait") (x.waitA = s.start, x.waitB = s.end)
  }
  if (computes.size > 0) {
    const list = [...computes.values()].sort((a, b) => a.first - b.first)
    const order = Array.from({ length: list.length }, (_, i) => i).filter((i) => Number.isFinite(list[i]!.waitA))
      .sort((a, b) => list[a]!.waitA - list[b]!.waitA)
    const starts = order.map((i) => list[i]!.waitA)
    // task time per (compute, label): tasks whose start lies in the compute's wait
    const best = list.map(() => new Map<number, number>())
    for (let i = 0; i < n; i++) {
      let lo = 0
      let hi = starts.length
      while (lo < hi) {
        const m = (lo + hi) >> 1
        if (starts[m]! <= start[i]! + 1e-9) lo = m + 1
        else hi = m
      }
      if (lo === 0) continue
      const c = order[lo - 1]!
      if (start[i]! > list[c]!.waitB + 1e-9) continue
      const m = best[c]!
      m.set(label[i]!, (m.get(label[i]!) ?? 0) + Math.max(0, end[i]! - start[i]!))
    }
    let prev = -1
    list.forEach((c, i) => {
      let l = -1
      let top = -1
      for (const [k, v] of best[i]!) if (v > top || (v === top && k < l)) (top = v, l = k)
      // a compute that ran no task (none recorded) continues the stage before it
      if (l < 0) l = prev < 0 ? S : prev
      bounds.push({ at: c.first, label: l })
      prev = l
    })
  } else {
    const first = new Map<number, number>()
    for (let i = 0; i < n; i++) {
      const f = first.get(label[i]!)
      if (f === undefined || start[i]! < f) first.set(label[i]!, start[i]!)
    }
    for (const [l, at] of [...first.entries()].sort((a, b) => a[1] - b[1] || a[0] - b[0])) bounds.push({ at, label: l })
  }
  return bounds
}

/**
 * The per-stage rows and the run's windows (see the module header). Plain loops over
 * the task columns: tasks can number in the millions.
 *
 * @since 0.1.0
 * @category analysis
 */
export const stageTimes = (input: StageInput): StageTimes => {
  const { runStart, runEnd } = input
  const n = input.start.length
  const S = input.names.length
  const NO = S
  const UP = S + 1
  const L = S + 2
  // task times: a task without a duration (an erred one) is a point at its end
  const start = new Float64Array(n)
  const end = new Float64Array(n)
  const label = new Int32Array(n)
  let firstTask = Infinity
  for (let i = 0; i < n; i++) {
    const b = input.end[i]!
    const a = Number.isFinite(input.start[i]!) && input.start[i]! <= b ? input.start[i]! : b
    start[i] = a
    end[i] = b
    const c = input.stage[i]!
    label[i] = c >= 0 && c < S ? c : NO
    if (a < firstTask) firstTask = a
  }
  // windows
  const wLo: Array<number> = []
  const wHi: Array<number> = []
  const wLabel: Array<number> = []
  const push = (lo: number, hi: number, l: number) => {
    if (!(hi > lo)) return
    wLo.push(lo)
    wHi.push(hi)
    wLabel.push(l)
  }
  if (!Number.isFinite(firstTask)) {
    if (input.segments.length > 0) push(runStart, runEnd, UP)
  } else {
    const from = Math.min(Math.max(firstTask, runStart), runEnd)
    push(runStart, from, UP)
    const bounds = computeBounds({ ...input, start, end }, label, S)
    for (let i = 0; i < bounds.length; i++) {
      const lo = Math.min(runEnd, Math.max(from, bounds[i]!.at))
      const hi = i + 1 < bounds.length ? Math.min(runEnd, Math.max(lo, bounds[i + 1]!.at)) : runEnd
      // the first window after the start-up starts at the first task
      push(wLo.length > 0 && wLabel[wLabel.length - 1] !== UP ? lo : from, hi, bounds[i]!.label)
    }
  }
  const lo = Float64Array.from(wLo)
  const hi = Float64Array.from(wHi)
  // the driver's own work per window
  const work: Spans = []
  for (const s of input.segments) if (s.activity !== "wait" && s.activity !== "worker start") work.push(s.start, s.end)
  const driverK = overlapPerWindow(spanUnion(work), lo, hi)
  // per label
  const tasks = new Float64Array(L)
  const erred = new Float64Array(L)
  const time = new Float64Array(L)
  const moved = new Float64Array(L)
  const bin = new Float64Array(L)
  const bout = new Float64Array(L)
  const firstT = new Float64Array(L).fill(Infinity)
  const lastT = new Float64Array(L).fill(-Infinity)
  const wall = new Float64Array(L)
  const driver = new Float64Array(L)
  const firstW = new Float64Array(L).fill(Infinity)
  for (let i = 0; i < n; i++) {
    const l = label[i]!
    const d = end[i]! - start[i]!
    tasks[l]!++
    if (input.erred[i]) erred[l]!++
    time[l]! += d
    const g = input.gather[i]!
    const x = input.transfer[i]!
    const m = (Number.isFinite(g) && g > 0 ? g : 0) + (Number.isFinite(x) && x > 0 ? x : 0)
    moved[l]! += d > 0 ? Math.min(d, m) : 0
    if (Number.isFinite(input.bytesIn[i]!)) bin[l]! += input.bytesIn[i]!
    if (Number.isFinite(input.size[i]!)) bout[l]! += input.size[i]!
    if (start[i]! < firstT[l]!) firstT[l] = start[i]!
    if (end[i]! > lastT[l]!) lastT[l] = end[i]!
  }
  for (let k = 0; k < wLabel.length; k++) {
    const l = wLabel[k]!
    wall[l]! += hi[k]! - lo[k]!
    driver[l]! += driverK[k]!
    if (lo[k]! < firstW[l]!) firstW[l] = lo[k]!
  }
  const span = runEnd - runStart
  const rowOf = new Int32Array(L).fill(-1)
  const rows: Array<StageRow> = []
  const add = (l: number, name: string, kind: StageRow["kind"]) => {
    const at = Math.min(firstW[l]!, firstT[l]!)
    rowOf[l] = rows.length
    rows.push({
      stage: name,
      kind,
      tasks: tasks[l]!,
      erred: erred[l]!,
      taskTime: time[l]!,
      compute: time[l]! - moved[l]!,
      transfer: moved[l]!,
      start: Number.isFinite(at) ? at - runStart : NaN,
      wall: wall[l]!,
      share: span > 0 ? wall[l]! / span : NaN,
      driver: driver[l]!,
      taskSpan: tasks[l]! > 0 ? Math.max(0, lastT[l]! - firstT[l]!) : 0,
      bytesIn: bin[l]!,
      bytesOut: bout[l]!
    })
  }
  const ran = (l: number) => tasks[l]! > 0 || wall[l]! > 0
  if (ran(UP)) add(UP, startUp, "start-up")
  const order = Array.from({ length: S }, (_, l) => l).filter(ran)
    .sort((a, b) => Math.min(firstW[a]!, firstT[a]!) - Math.min(firstW[b]!, firstT[b]!) || (input.names[a]! < input.names[b]! ? -1 : 1))
  for (const l of order) add(l, input.names[l]!, "stage")
  const seen = new Set(order.map((l) => input.names[l]!))
  const index = new Map(input.names.map((s, l) => [s, l]))
  for (const name of input.graph) {
    if (seen.has(name)) continue
    seen.add(name)
    const l = index.get(name)
    if (l !== undefined) add(l, name, "stage")
    else {
      // a graph stage no task names
      rows.push({ stage: name, kind: "stage", tasks: 0, erred: 0, taskTime: 0, compute: 0, transfer: 0, start: NaN, wall: 0, share: span > 0 ? 0 : NaN, driver: 0, taskSpan: 0, bytesIn: 0, bytesOut: 0 })
    }
  }
  if (ran(NO)) add(NO, noStage, "no stage")
  const taskRow = new Int32Array(n)
  for (let i = 0; i < n; i++) taskRow[i] = rowOf[label[i]!]!
  return { rows, lo, hi, row: Int32Array.from(wLabel, (l) => rowOf[l]!), taskRow, runStart, runEnd }
}

/**
 * The stages of a pipeline graph's DOT (`Pipeline.visualize()`, the `Pipeline Graph`
 * event's `dot`), in the order the graph declares them (the order the pipeline runs
 * them): every quoted node statement, then edge ends not declared as nodes.
 *
 * @since 0.1.0
 * @category analysis
 */
export const stagesOfDot = (dot: string): Array<string> => {
  const body = dot.slice(dot.indexOf("{") + 1)
  // statements: split at ; or a line break outside quotes and brackets
  const statements: Array<string> = []
  let cur = ""
  let inQuote = false
  let depth = 0
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!
    if (inQuote) {
      cur += ch
      if (ch === "\\" && i + 1 < body.length) cur += body[++i]!
      else if (ch === "\"") inQuote = false
    } else if (ch === "\"") (inQuote = true, cur += ch)
    else if (ch === "[") (depth++, cur += ch)
    else if (ch === "]") (depth = Math.max(0, depth - 1), cur += ch)
    else if ((ch === ";" || ch === "\n" || ch === "}") && depth === 0) (statements.push(cur.trim()), cur = "")
    else cur += ch
  }
  const quoted = /^"((?:[^"\\]|\\.)*)"/
  const unquote = (s: string): string => s.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))
  const nodes: Array<string> = []
  const ends: Array<string> = []
  for (const st of statements) {
    const m = quoted.exec(st)
    if (m === null) continue
    const rest = st.slice(m[0].length).trim()
    if (rest === "" || rest.startsWith("[")) nodes.push(unquote(m[1]!))
    else if (rest.startsWith("->")) {
      ends.push(unquote(m[1]!))
      const m2 = quoted.exec(rest.slice(2).trim())
      if (m2 !== null) ends.push(unquote(m2[1]!))
    }
  }
  return [...new Set([...nodes, ...ends])]
}

/**
 * The pipeline graph's stages of loaded tables (their first `Pipeline Graph` event);
 * empty without one.
 *
 * @since 0.1.0
 * @category analysis
 */
export const graphStages = (tables: { readonly metadata?: ReadonlyArray<TraceEvent> }): Array<string> => {
  const g = tables.metadata?.find(isPipelineGraphEvent)
  return g === undefined ? [] : stagesOfDot(g.args.dot)
}

/**
 * Per row of a loaded tasks table, 1 where the task erred (its `state` is "erred": the
 * task that failed a run), else 0.
 *
 * @since 0.1.0
 * @category analysis
 */
export const erredTasks = (tasks: Table): Uint8Array => {
  const n = tasks.numRows
  const state = codesOf(tasks.getChild("state"), n)
  const erredCode = new Map<number, boolean>()
  const erred = new Uint8Array(n)
  for (let i = 0; i < n; i++) {
    const c = state.codes[i]!
    if (c < 0) continue
    let e = erredCode.get(c)
    if (e === undefined) (e = state.at(c) === "erred", erredCode.set(c, e))
    if (e) erred[i] = 1
  }
  return erred
}

/**
 * `stageTimes`' input from loaded tables.
 *
 * @since 0.1.0
 * @category analysis
 */
export const stageInputOf = (tables: Tables & { readonly metadata?: ReadonlyArray<TraceEvent> }): StageInput => {
  const v = taskView(tables.tasks)
  const n = v.n
  // stage codes (of a possibly trace-wide dictionary) to small indices
  const codes = codesOf(tables.tasks.getChild("stage"), n)
  const names: Array<string> = []
  const local = new Map<number, number>()
  const stage = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    const c = codes.codes[i]!
    if (c < 0) (stage[i] = -1)
    else {
      let l = local.get(c)
      if (l === undefined) (l = names.length, names.push(codes.at(c)), local.set(c, l))
      stage[i] = l
    }
  }
  const erred = erredTasks(tables.tasks)
  const phase = (p: "gather" | "transfer"): Float64Array => {
    const a = floatsOf(tables.tasks.getChild(`${p}_start`), n)
    const b = floatsOf(tables.tasks.getChild(`${p}_end`), n)
    return b.map((x, i) => x - a[i]!)
  }
  const segments = driverSegments(tables.driver)
  let t0 = Infinity
  let t1 = -Infinity
  const see = (a: number, b: number) => {
    if (a < t0) t0 = a
    if (b > t1) t1 = b
  }
  for (let i = 0; i < n; i++) see(Number.isFinite(v.start[i]!) ? v.start[i]! : v.end[i]!, v.end[i]!)
  for (const s of segments) see(s.start, s.end)
  for (const t of [tables.memory, tables.resources]) {
    if (t === undefined) continue
    const ts = floatsOf(t.getChild("timestamp"), t.numRows)
    for (let i = 0; i < ts.length; i++) if (Number.isFinite(ts[i]!)) see(ts[i]!, ts[i]!)
  }
  if (!(t1 >= t0)) (t0 = 0, t1 = 0)
  return {
    start: v.start,
    end: v.end,
    stage,
    names,
    gather: phase("gather"),
    transfer: phase("transfer"),
    size: v.size,
    bytesIn: inputBytes(v),
    erred,
    graph: graphStages(tables),
    segments,
    runStart: t0,
    runEnd: t1
  }
}

/**
 * Stage, Tasks, Erred, Task time (s), Compute (s), Transfer (s), Start (s from begin),
 * Wall (s), Share of run (%), Driver (s), Task span (s), Bytes In, Bytes Out, Critical
 * path (%): one row per stage, `(start-up)` and `(no stage)` (see the module header).
 *
 * @since 0.1.0
 * @category analysis
 */
export const stageSummary = (tables: Tables & { readonly metadata?: ReadonlyArray<TraceEvent> }): Table => {
  const input = stageInputOf(tables)
  const st = stageTimes(input)
  const rows = st.rows
  // an empty trace (no task, no driver segment) gives no rows
  const visible = input.start.length > 0 || input.segments.length > 0 ? rows : []
  const onPath = new Float64Array(rows.length)
  let pathLength = 0
  if (input.start.length > 0) {
    const v = taskView(tables.tasks)
    const path = criticalPathSteps(tables)
    pathLength = path.length
    for (const step of path.steps) {
      if (step._tag !== "Task") continue
      onPath[st.taskRow[step.row]!]! += Math.max(0, v.duration[step.row] || 0)
    }
  }
  const col = (f: (r: StageRow, i: number) => number) => ({ kind: "float" as const, values: visible.map(f) })
  return buildTable({
    "Stage": { kind: "string", values: visible.map((r) => r.stage) },
    "Tasks": { kind: "int", values: visible.map((r) => r.tasks) },
    "Erred": { kind: "int", values: visible.map((r) => r.erred) },
    "Task time (s)": col((r) => r.taskTime),
    "Compute (s)": col((r) => r.compute),
    "Transfer (s)": col((r) => r.transfer),
    "Start (s from begin)": col((r) => r.start),
    "Wall (s)": col((r) => r.wall),
    "Share of run (%)": col((r) => r.share * 100),
    "Driver (s)": col((r) => r.driver),
    "Task span (s)": col((r) => r.taskSpan),
    "Bytes In": col((r) => r.bytesIn),
    "Bytes Out": col((r) => r.bytesOut),
    "Critical path (%)": col((_, i) => (pathLength > 0 ? (onPath[i]! / pathLength) * 100 : NaN))
  })
}

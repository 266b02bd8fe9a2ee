/**
 * The diagnosis rules: a fixed vocabulary of rule ids (never renamed; new ones only
 * added), the findings they make, and their thresholds, each an option with its reason
 * (docs/diagnosis.md). A rule reads the trace's facts (Facts.ts), decides whether its
 * fault is there, and estimates what fixing it would save by a what-if on the recorded
 * critical path (WhatIf.ts).
 *
 * @since 0.1.0
 */
import type { CriticalStep } from "../CriticalPath.ts"
import { str } from "../internal/taskView.ts"
import { columnCodes, columnFloats, type Facts, type Group, median } from "./Facts.ts"
import { nextTaskRow, saving, stepDuration } from "./WhatIf.ts"

/**
 * Every rule id, in no particular order. Ids are stable across versions.
 *
 * @since 0.1.0
 * @category models
 */
export const ruleIds = [
  "tasks-too-small",
  "too-few-tasks",
  "straggler",
  "data-skew",
  "worker-imbalance",
  "driver-bound",
  "scheduling-latency",
  "startup-dominated",
  "transfer-bound",
  "serialization-bound",
  "host-device-copies",
  "gpu-idle",
  "memory-pressure",
  "memory-growth",
  "gc-pressure",
  "event-loop-blocked",
  "io-bound",
  "serial-stage",
  "recomputation",
  "clock-skew",
  "worker-lost"
] as const

/**
 * A rule id.
 *
 * @since 0.1.0
 * @category models
 */
export type RuleId = (typeof ruleIds)[number]

/**
 * How much a finding matters: by its estimated saving's share of the wall time (see
 * `Thresholds.severity`), or, for findings about memory and clocks that save no time,
 * by the rule's own measure.
 *
 * @since 0.1.0
 * @category models
 */
export type Severity = "high" | "medium" | "low"

/**
 * Where the evidence is: times in seconds from the run's start (the task stream's
 * axis), the keys of the tasks that show it (at most 20).
 *
 * @since 0.1.0
 * @category models
 */
export interface Evidence {
  readonly stage?: string
  readonly function?: string
  readonly host?: string
  readonly worker?: string
  readonly keys: ReadonlyArray<string>
  readonly start: number
  readonly end: number
}

/**
 * One finding.
 *
 * @since 0.1.0
 * @category models
 */
export interface Finding {
  readonly rule: RuleId
  readonly severity: Severity
  /** one plain sentence with the numbers */
  readonly message: string
  readonly evidence: Evidence
  /** one concrete fix */
  readonly fix: string
  /** the what-if's estimate: seconds, and their share of the wall time (0..1) */
  readonly saving: { readonly seconds: number; readonly share: number }
  /** the what-if's assumptions, one line */
  readonly assumptions: string
}

/**
 * The thresholds, each an option (docs/diagnosis.md gives each one's reason).
 *
 * @since 0.1.0
 * @category models
 */
export interface Thresholds {
  /** a saving of at least this share of the wall time is high severity, of `medium` medium */
  readonly severity: { readonly high: number; readonly medium: number }
  /** start-up is part of every run: high only above this share */
  readonly startupHigh: number
  /**
   * driver-bound: high only above this share of the wall time; a loop whose next step
   * needs the driver's decision (a convergence check) cannot become one graph, so its
   * what-if is the loosest bound of all
   */
  readonly driverHigh: number
  /** a finding saving less than this share of the wall time (and less than `minSeconds`) is not reported */
  readonly minShare: number
  readonly minSeconds: number
  /** groups smaller than this have no median worth comparing with */
  readonly minGroup: number
  /** tasks-too-small: at least this many tasks, each shorter than `overheadRatio` × the per-task hand-over */
  readonly smallMinTasks: number
  readonly overheadRatio: number
  /** tasks-too-small: fuse until the hand-over is at most this share of a task */
  readonly targetOverhead: number
  /** straggler: above this many times its group's median (Spark: 3) */
  readonly stragglerFactor: number
  /**
   * straggler: at most this share of a group's tasks (at least one): when many tasks are
   * slow, the machine was (other processes, a loaded host), not a task
   */
  readonly stragglerMaxShare: number
  /**
   * straggler: a worker's first task of a group whose excess is mostly CPU time, at most
   * this much more than the group's median, compiled its kernel (V8's JIT warm-up)
   */
  readonly warmupSeconds: number
  /** straggler / data-skew: the excess over the median at least this share of the wall time */
  readonly stragglerMinShare: number
  /** data-skew: bytes above this many times its group's median (Spark: 5), and at least `skewMinBytes` */
  readonly skewFactor: number
  readonly skewMinBytes: number
  /** worker-imbalance: busiest worker above this many times the mean busy time */
  readonly imbalanceRatio: number
  /** scheduling-latency: latency above this share of the critical path */
  readonly latencyShare: number
  /** driver-bound: the driver's own work between computes and the hand-overs at their boundaries (on the critical path) above this share of the wall time */
  readonly driverShare: number
  /** startup-dominated: start-up above this share of the wall time */
  readonly startupShare: number
  /** too-few-tasks: a stage's tasks at least this long (median, seconds) */
  readonly fewTasksMinSeconds: number
  /** serial-stage: a stage's concurrency (task time / span) at most this */
  readonly serialConcurrency: number
  /** io-bound: reading tasks whose time is at least this share off the CPU */
  readonly offCpuShare: number
  /**
   * event-loop-blocked: a task below this CPU share of its duration sat blocked (a
   * preempted task on a loaded machine still gets a share; a blocked one next to none)
   */
  readonly blockedCpuShare: number
  /** event-loop-blocked: tasks at least this long */
  readonly blockedMinSeconds: number
  /** gc-pressure: GC above this share of sampled task time (Clinic.js Doctor flags GC) */
  readonly gcShare: number
  /**
   * memory-pressure: a host's memory in use (total − available) at least this share of
   * its total (Dask pauses a worker at 80% of its memory limit)
   */
  readonly memoryPressure: number
  /** memory-pressure: high from this share (Dask terminates a worker at 95%; Linux's OOM killer is near) */
  readonly memoryPressureHigh: number
  /** memory-growth: a worker's heap grows by at least this many bytes over the run */
  readonly growthBytes: number
  /** memory-growth: over at least this many of its tasks (fewer make no trend: a heap grows before its first full GC) */
  readonly growthMinTasks: number
  /** memory-growth: this share of consecutive tasks at least as high as the one before */
  readonly growthRising: number
  /** clock-skew: a measured offset above this (seconds) */
  readonly clockOffset: number
  /** gpu-idle: idle gaps of a GPU worker at least this long (Nsight: 500 ms) */
  readonly gpuGap: number
  /** transfer-bound / serialization-bound: shares */
  readonly transferShare: number
  readonly serializationShare: number
}

/**
 * The default thresholds.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultThresholds: Thresholds = {
  severity: { high: 0.25, medium: 0.05 },
  startupHigh: 0.6,
  driverHigh: 0.5,
  minShare: 0.01,
  minSeconds: 0.005,
  minGroup: 4,
  smallMinTasks: 50,
  overheadRatio: 1,
  targetOverhead: 0.1,
  stragglerFactor: 3,
  stragglerMaxShare: 0.1,
  stragglerMinShare: 0.05,
  warmupSeconds: 0.05,
  skewFactor: 5,
  skewMinBytes: 1 << 20,
  imbalanceRatio: 1.25,
  latencyShare: 0.3,
  driverShare: 0.1,
  startupShare: 0.3,
  fewTasksMinSeconds: 0.05,
  serialConcurrency: 1.2,
  offCpuShare: 0.3,
  blockedCpuShare: 0.1,
  blockedMinSeconds: 0.05,
  gcShare: 0.1,
  memoryPressure: 0.8,
  memoryPressureHigh: 0.95,
  growthBytes: 64 * 1024 * 1024,
  growthMinTasks: 24,
  growthRising: 0.75,
  clockOffset: 0.005,
  gpuGap: 0.5,
  transferShare: 0.2,
  serializationShare: 0.5
}

// ---------------------------------------------------------------------------
// helpers

const fmtS = (s: number): string =>
  s >= 100 ? `${s.toFixed(0)} s` : s >= 1 ? `${s.toFixed(2)} s` : s >= 0.001 ? `${(s * 1000).toPrecision(3)} ms` : `${(s * 1e6).toPrecision(3)} µs`
const fmtPct = (x: number): string => `${(100 * x).toFixed(x >= 0.1 ? 0 : 1)}%`
const fmtN = (n: number): string => Math.round(n).toLocaleString("en-US")
const fmtBytes = (b: number): string =>
  b >= 1 << 30 ? `${(b / (1 << 30)).toFixed(1)} GiB` : b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(1)} MiB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${Math.round(b)} B`

/** @internal */
export const format = { seconds: fmtS, pct: fmtPct, n: fmtN, bytes: fmtBytes }

const groupName = (g: Group): string => (g.stage !== "" && g.stage !== g.fn ? `${g.stage} (${g.fn})` : g.fn || g.stage || "(unnamed)")

interface Draft {
  readonly rule: RuleId
  readonly message: string
  readonly evidence: Evidence
  readonly fix: string
  readonly seconds: number
  readonly assumptions: string
  /** for rules that save no time: their own severity */
  readonly severity?: Severity
}

const evidenceOf = (f: Facts, rows: ArrayLike<number>, extra: Partial<Evidence> = {}): Evidence => {
  let a = Infinity
  let b = -Infinity
  const keys: Array<string> = []
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!
    if (f.v.start[r]! < a) a = f.v.start[r]!
    if (f.v.end[r]! > b) b = f.v.end[r]!
    if (keys.length < 20) keys.push(str(f.v.key, f.v.key.codes[r]!) ?? "")
  }
  if (!(b >= a)) (a = f.runStart, b = f.runEnd)
  return { keys, start: a - f.runStart, end: b - f.runStart, ...extra }
}

const sameGroup = (g: Group): Partial<Evidence> => ({ ...(g.stage !== "" ? { stage: g.stage } : {}), ...(g.fn !== "" ? { function: g.fn } : {}) })

const workerOf = (f: Facts, r: number): Partial<Evidence> => ({
  host: str(f.v.host, f.v.host.codes[r]!) ?? "",
  worker: str(f.v.worker, f.v.worker.codes[r]!) ?? ""
})

const workerCount = (f: Facts): number => {
  const starts = new Set<string>()
  for (const s of f.input.segments) {
    const d = s as unknown as { readonly host?: string; readonly worker?: string }
    if (s.activity === "worker start") starts.add(`${d.host}\t${d.worker}`)
  }
  // the pool's size: its threads' start-ups, as the caller gives it, the stack
  // sampler's threads, or at least the workers that ran tasks
  return Math.max(starts.size, f.poolSize ?? 0, f.gc?.workers ?? 0, f.workers.length)
}

const pathTasksOf = (f: Facts, inGroup: (r: number) => boolean): Array<number> => {
  const out: Array<number> = []
  for (const s of f.path.steps) if (s._tag === "Task" && inGroup(s.row)) out.push(s.row)
  return out
}

const keyRows = new WeakMap<Facts, Int32Array>()
/** task row of each key code (its latest execution; -1: none) */
const keyRowOf = (f: Facts): Int32Array => {
  let m = keyRows.get(f)
  if (m === undefined) {
    m = new Int32Array(f.v.key.size).fill(-1)
    for (let i = 0; i < f.v.n; i++) {
      const c = f.v.key.codes[i]!
      if (c >= 0 && (m[c]! < 0 || f.v.end[i]! >= f.v.end[m[c]!]!)) m[c] = i
    }
    keyRows.set(f, m)
  }
  return m
}

const lead = "on the recorded critical path (another chain may become critical: an upper bound)"

// ---------------------------------------------------------------------------
// rules

type Rule = (f: Facts, t: Thresholds) => ReadonlyArray<Draft>

const tasksTooSmall: Rule = (f, t) => {
  const W = Math.max(1, workerCount(f))
  const next = nextTaskRow(f.path)
  const groupOf = new Int32Array(f.v.n).fill(-1)
  f.groups.forEach((g, gi) => g.rows.forEach((r) => (groupOf[r] = gi)))
  const shapes = columnCodes(f.tables.tasks, "shape")
  const found: Array<{ g: Group; perTask: number; factor: number; seconds: number; fix: string }> = []
  // each compute's task rows, as compressed rows (compute -1: tasks outside any, e.g. DASF's)
  let computes = 0
  for (let r = 0; r < f.v.n; r++) if (f.computeOf[r]! + 1 > computes) computes = f.computeOf[r]! + 1
  const off = new Int32Array(computes + 2)
  for (let r = 0; r < f.v.n; r++) off[f.computeOf[r]! + 2]!++
  for (let c = 1; c < off.length; c++) off[c]! += off[c - 1]!
  const fill = off.slice()
  const computeRows = new Int32Array(f.v.n)
  for (let r = 0; r < f.v.n; r++) computeRows[fill[f.computeOf[r]! + 1]!++] = r
  const rowsOfCompute = (c: number) => computeRows.subarray(off[c + 1]!, off[c + 2]!)
  f.groups.forEach((g, gi) => {
    if (g.rows.length < t.smallMinTasks) return
    // the hand-over per task: per compute, the workers' time over the group's span there
    // that its tasks did not fill, over the group's tasks there (the engine hands tasks
    // out in batches, so a worker's idle time between two tasks alone undercounts it)
    const spans = new Map<number, { a: number; b: number; n: number; busy: number }>()
    for (const r of g.rows) {
      const c = f.computeOf[r]!
      const d = Math.max(0, f.v.duration[r]! || 0)
      const e = spans.get(c)
      if (e === undefined) spans.set(c, { a: f.v.start[r]!, b: f.v.end[r]!, n: 1, busy: d })
      else (e.a = Math.min(e.a, f.v.start[r]!), e.b = Math.max(e.b, f.v.end[r]!), e.n++, e.busy += d)
    }
    // first as the group's own tasks fill the spans (an upper bound on the idle time): a
    // group whose tasks are not small even so is done with, before the costlier measure
    let upper = 0
    for (const e of spans.values()) upper += Math.max(0, Math.min(W, e.n) * Math.max(0, e.b - e.a) - e.busy)
    if (!(g.medianDuration < t.overheadRatio * (upper / g.rows.length))) return
    let idle = 0
    const perComputeIdle = new Float64Array(spans.size)
    let k = 0
    for (const [c, e] of spans) {
      // busy: every task of the compute in the span (a tree's combine waits for the
      // partial tasks between its levels: they are not hand-over)
      let busy = 0
      const rows = rowsOfCompute(c)
      for (let j = 0; j < rows.length; j++) {
        const r = rows[j]!
        busy += Math.max(0, Math.min(f.v.end[r]!, e.b) - Math.max(f.v.start[r]!, e.a))
      }
      const x = Math.max(0, Math.min(W, e.n) * Math.max(0, e.b - e.a) - Math.max(busy, e.busy))
      idle += x
      perComputeIdle[k++] = x / e.n
    }
    // robust to a loaded machine: the median compute's hand-over per task. Stalls another
    // process causes hit some computes (the mean over all rises with the load; a loop of
    // identical computes shows it), and fusing tasks does not remove them
    const mean = idle / g.rows.length
    const perTask = Math.min(mean, median(perComputeIdle, Int32Array.from(perComputeIdle.keys())))
    const robust = mean > 0 ? perTask / mean : 0
    if (!(perTask > 0) || !(g.medianDuration < t.overheadRatio * perTask)) return
    // fusable: the tasks of one compute (a later compute's tasks wait for the driver), of
    // one array (the chunks of one key name: `('name-token', i, ...)`; an iteration's
    // array cannot be fused with the next one's)
    const perCompute = g.rows.length / Math.max(1, spans.size)
    const arrays = new Set<string>()
    for (const r of g.rows) {
      const k = str(f.v.key, f.v.key.codes[r]!) ?? ""
      const comma = k.indexOf(",")
      arrays.add(comma < 0 ? k : k.slice(0, comma))
    }
    const perArray = g.rows.length / Math.max(1, arrays.size)
    const factor = Math.min(Math.ceil(perTask / (t.targetOverhead * Math.max(g.medianDuration, 1e-6))), Math.floor(Math.min(perCompute, perArray) / W))
    if (factor < 2) return
    // the hand-overs before the group's tasks, but a compute's first (after the driver's
    // segment: one per compute however many tasks it has; driver-bound weighs those),
    // fewer by the factor, in the share the median compute shows (stalls stay)
    const seconds = saving(f.v, f.path, (s, i, d) =>
      s._tag === "Latency" && s.kind !== "dispatch" && next[i]! >= 0 && groupOf[next[i]!] === gi ? d * (1 - (1 - 1 / factor) * robust) : undefined)
    const mid = g.rows[g.rows.length >> 1]!
    // the chunk's rows: the task's first input's (a per-chunk task's chunk), else its own
    const d0 = f.v.depOffsets[mid]! < f.v.depOffsets[mid + 1]! && f.v.deps[f.v.depOffsets[mid]!]! >= 0 ? keyRowOf(f)[f.v.deps[f.v.depOffsets[mid]!]!] : undefined
    const shapeRow = d0 !== undefined && d0 >= 0 ? d0 : mid
    const shape = shapes.codes.length > 0 && shapes.codes[shapeRow]! >= 0 ? shapes.at(shapes.codes[shapeRow]!) : ""
    const rows = Number(shape.split("x")[0])
    const chunkText = rows > 1 ? `chunks of ≥ ${fmtN(rows * factor)} rows` : `${factor} tasks' work in one task`
    found.push({ g, perTask, factor, seconds, fix: `${chunkText}: ${factor}x fewer tasks` })
  })
  if (found.length === 0) return []
  // one finding: the group that saves most, the others counted in
  found.sort((a, b) => b.seconds - a.seconds || b.g.rows.length - a.g.rows.length)
  const top = found[0]!
  const others = found.slice(1)
  const seconds = found.reduce((a, x) => a + x.seconds, 0)
  return [{
    rule: "tasks-too-small",
    message: `${fmtN(top.g.rows.length)} ${groupName(top.g)} tasks take ${fmtS(top.g.medianDuration)} each (median) against ~${fmtS(top.perTask)} of hand-over per task (the workers' time in the group's span no task filled, median compute)` +
      (others.length > 0 ? `; ${others.length} more group${others.length === 1 ? "" : "s"} of tiny tasks (${others.slice(0, 3).map((x) => groupName(x.g)).join(", ")}${others.length > 3 ? ", …" : ""})` : ""),
    evidence: evidenceOf(f, top.g.rows, sameGroup(top.g)),
    fix: top.fix,
    seconds,
    assumptions: `the hand-overs before the small tasks ${lead}, but each compute's first, fewer by the group's fusion factor (${found.slice(0, 4).map((x) => `${x.factor}x`).join(", ")}${found.length > 4 ? ", …" : ""}; tasks fused within one array and one compute, at least one per worker), at the median compute's hand-over (stalls of a loaded machine not counted); task time unchanged`
  }]
}

// the fastest tenth of the hand-overs on the path: what one costs on this machine
const latencyFloor = (f: Facts): number => {
  const lat: Array<number> = []
  for (const s of f.path.steps) if (s._tag === "Latency") lat.push(s.end - s.start)
  lat.sort((a, b) => a - b)
  return lat[Math.floor(lat.length / 10)] ?? 0
}

const schedulingLatency: Rule = (f, t) => {
  const p = f.path
  if (!(p.length > 0) || p.latency / p.length < t.latencyShare) return []
  // the hand-over before the first task is start-up's (startup-dominated)
  const first = firstTaskStep(f)
  // hand-overs slower than this run's usual one of their kind (its median: a task after
  // another on one worker takes microseconds, a compute's first dispatch or a result's
  // trip back hundreds): stalls, not the cost of handing over (that, tasks-too-small and
  // driver-bound weigh)
  const byKind = new Map<string, Array<number>>()
  let count = 0
  p.steps.forEach((s, i) => {
    if (s._tag !== "Latency" || i <= first) return
    let a = byKind.get(s.kind)
    if (a === undefined) byKind.set(s.kind, a = [])
    a.push(s.end - s.start)
    count++
  })
  const usual = new Map<string, number>()
  for (const [k, a] of byKind) (a.sort((x, y) => x - y), usual.set(k, a[a.length >> 1]!))
  const seconds = saving(f.v, p, (s, i, d) => (s._tag === "Latency" && i > first ? Math.min(d, usual.get(s.kind) ?? d) : undefined))
  const taskSteps = p.steps.filter((s) => s._tag === "Task").length
  // the machine: the share of a core the tasks themselves got (median over tasks of 1 ms
  // or more; over at most ~20,000 of them, evenly spread). Under half, other processes held the cores: the stalls are theirs, and
  // the finding says so, at most of medium severity
  const shares: Array<number> = []
  for (let r = 0; r < f.v.n; r += Math.max(1, Math.floor(f.v.n / 20_000))) {
    const d = f.v.duration[r]!
    const c = f.cpu[r]!
    if (d >= 1e-3 && c === c) shares.push(Math.min(1, c / d))
  }
  shares.sort((a, b) => a - b)
  const cpuShare = shares.length >= 8 ? shares[shares.length >> 1]! : 1
  const busyMachine = cpuShare < 0.5
  return [{
    rule: "scheduling-latency",
    message: `${fmtPct(p.latency / Math.max(f.wall, p.length))} of the run is scheduling latency: ${fmtN(count)} hand-overs on the critical path (${fmtN(taskSteps)} tasks) take ${fmtS(p.latency)} against ${fmtS(p.tasks)} of task time` +
      (busyMachine ? `; the tasks themselves got ${fmtPct(cpuShare)} of a core (median): other processes held the machine's cores` : ""),
    evidence: { keys: [], start: 0, end: f.wall },
    fix: busyMachine
      ? "the machine was busy: run where cores are free, or with fewer worker threads"
      : "hand-overs stall: no more worker threads than free cores (other processes on the machine?), and a driver that is not busy while tasks wait",
    ...(busyMachine ? { severity: seconds / Math.max(f.wall, 1e-12) >= t.severity.medium ? "medium" as const : "low" as const } : {}),
    seconds,
    assumptions: `every hand-over ${lead} slower than this run's median one of its kind (${[...usual].map(([k, x]) => `${k} ${fmtS(x)}`).join(", ")}) at that median`
  }]
}

// whether the tasks of `g` overlapping task `r` on other workers were slowed as `r` was:
// their median ratio to the group's median at least twice, and at least a third of
// `r`'s own (`factor`: the straggler factor; a load spike that doubles every task does
// not explain one task 1,000 times its median); false when none overlaps
const slowedTogether = (f: Facts, g: Group, r: number, factor: number): boolean => {
  const ratios: Array<number> = []
  const a = f.v.start[r]!
  const b = f.v.end[r]!
  const w = f.v.worker.codes[r]!
  for (let j = 0; j < g.rows.length; j++) {
    const q = g.rows[j]!
    if (q === r || f.v.worker.codes[q] === w || f.v.end[q]! <= a || f.v.start[q]! >= b) continue
    ratios.push(f.v.duration[q]! / Math.max(g.medianDuration, 1e-9))
  }
  if (ratios.length === 0) return false
  ratios.sort((x, y) => x - y)
  const own = f.v.duration[r]! / Math.max(g.medianDuration, 1e-9)
  return ratios[ratios.length >> 1]! >= Math.max(2, own / Math.max(1, factor))
}

const stragglerAndSkew: Rule = (f, t) => {
  const out: Array<Draft> = []
  // the run's noise: a task off the CPU this long (90th percentile over all tasks) was
  // most likely preempted, not slow of its own
  const off: Array<number> = []
  for (let r = 0; r < f.v.n; r += Math.max(1, Math.floor(f.v.n / 20_000))) off.push(offCpu(f, r))
  off.sort((a, b) => a - b)
  const noise = off[Math.floor(0.9 * (off.length - 1))] ?? 0
  const minExcess = Math.max(t.minSeconds, t.stragglerMinShare * f.wall, 2 * noise)
  for (const g of f.groups) {
    if (g.rows.length < t.minGroup) continue
    const slow: Array<number> = []
    const skew: Array<number> = []
    for (const r of g.rows) {
      const d = f.v.duration[r]!
      const big = f.bytes[r]! >= t.skewMinBytes && f.bytes[r]! > t.skewFactor * g.medianBytes
      if (big) skew.push(r)
      else if (d > t.stragglerFactor * g.medianDuration && d - g.medianDuration >= minExcess) slow.push(r)
    }
    if (slow.length > Math.max(1, Math.ceil(t.stragglerMaxShare * g.rows.length))) slow.length = 0
    // the machine, not the task: the group's tasks running at the same time on other
    // workers were slow too (a load spike slows every thread; a slow task, only itself)
    if (slow.length > 0) {
      const checked = slow.slice().sort((a, b) => f.v.duration[b]! - f.v.duration[a]!).slice(0, 5)
      // a worker's first task of the group compiles its kernel (V8's JIT): where most of
      // its excess is CPU time, and that extra CPU time is at most `warmupSeconds`, it is
      // warm-up, not a straggler
      const firstOn = new Map<number, number>()
      const nw = f.v.worker.size + 1
      for (const q of g.rows) {
        const w = (f.v.host.codes[q]! + 1) * nw + f.v.worker.codes[q]! + 1
        const p = firstOn.get(w)
        if (p === undefined || f.v.start[q]! < f.v.start[p]!) firstOn.set(w, q)
      }
      const medianCpu = median(f.cpu, g.rows)
      for (const r of checked) {
        const extraCpu = f.cpu[r]! - medianCpu
        if (
          firstOn.get((f.v.host.codes[r]! + 1) * nw + f.v.worker.codes[r]! + 1) === r &&
          extraCpu <= t.warmupSeconds && extraCpu >= 0.5 * (f.v.duration[r]! - g.medianDuration)
        ) {
          slow.splice(slow.indexOf(r), 1)
          continue
        }
        // and the slowness the OS caused: time the task's thread took no samples (it did not
        // run, where a thread that waits in a call is sampled on time) is not the task's
        const own = f.v.duration[r]! - g.medianDuration - unsampled(f, r)
        if (slowedTogether(f, g, r, t.stragglerFactor) || preempted(f, r) || own < minExcess) slow.splice(slow.indexOf(r), 1)
      }
    }
    for (const [rule, rows] of [["data-skew", skew], ["straggler", slow]] as const) {
      if (rows.length === 0) continue
      const set = new Set(rows)
      const worst = rows.reduce((a, b) => (f.v.duration[b]! > f.v.duration[a]! ? b : a))
      const seconds = saving(f.v, f.path, (s) => (s._tag === "Task" && set.has(s.row) ? g.medianDuration : undefined))
      const d = f.v.duration[worst]!
      const ratio = d / Math.max(g.medianDuration, 1e-9)
      if (rule === "data-skew") {
        if (d <= g.medianDuration * 1.5 && seconds <= 0) continue // big but not slow: nothing to win
        out.push({
          rule,
          message: `${rows.length === 1 ? "one" : fmtN(rows.length)} ${groupName(g)} task${rows.length === 1 ? "" : "s"} handle${rows.length === 1 ? "s" : ""} ${fmtBytes(f.bytes[worst]!)}, ${(f.bytes[worst]! / Math.max(g.medianBytes, 1)).toFixed(0)}x the group's median ${fmtBytes(g.medianBytes)}, and take${rows.length === 1 ? "s" : ""} ${fmtS(d)} against a median of ${fmtS(g.medianDuration)}`,
          evidence: evidenceOf(f, rows, { ...sameGroup(g), ...workerOf(f, worst) }),
          fix: "re-chunk the input evenly (equal rows per chunk), or split the large chunk",
          seconds,
          assumptions: `the large task${rows.length === 1 ? "" : "s"} ${lead} at the group's median duration (the data spread evenly)`
        })
      } else {
        out.push({
          rule,
          message: `${rows.length === 1 ? "one" : fmtN(rows.length)} ${groupName(g)} task${rows.length === 1 ? "" : "s"} took ${fmtS(d)}, ${ratio.toFixed(0)}x the group's median of ${fmtS(g.medianDuration)}, with no more data than the others`,
          evidence: evidenceOf(f, rows, { ...sameGroup(g), ...workerOf(f, worst) }),
          fix: `look at what ${str(f.v.key, f.v.key.codes[worst]!)} does differently (its samples: tessera analyze -a profile --function ${g.fn || "F"}); a slow worker or a data-dependent branch`,
          seconds,
          assumptions: `the slow task${rows.length === 1 ? "" : "s"} ${lead} at the group's median duration`
        })
      }
    }
  }
  return out
}

const tooFewTasks: Rule = (f, t) => {
  const W = workerCount(f)
  if (W < 2) return []
  // a group of fewer tasks than workers, each long, taking a real share of the run (a
  // reduction's last combine is one task too, but a short one)
  const hit = f.groups.filter((g) => g.rows.length < W && g.medianDuration >= t.fewTasksMinSeconds && g.taskTime >= 0.1 * f.wall)
  if (hit.length === 0) return []
  const rows = hit.flatMap((g) => Array.from(g.rows))
  const taskTime = hit.reduce((a, g) => a + g.taskTime, 0)
  const nOf = new Map<number, number>()
  for (const g of hit) for (const r of g.rows) nOf.set(r, g.rows.length)
  const seconds = saving(f.v, f.path, (s, _i, d) => (s._tag === "Task" && nOf.has(s.row) ? d * Math.min(1, nOf.get(s.row)! / W) : undefined))
  const names = hit.map(groupName)
  return [{
    rule: "too-few-tasks",
    message: `${names.length === 1 ? names[0] : `${names.length} groups (${names.slice(0, 3).join(", ")}${names.length > 3 ? ", …" : ""})`} ran ${rows.length === 1 ? "one task" : `${fmtN(rows.length)} tasks`} of ${fmtS(taskTime)} on ${W} workers: at most ${rows.length} busy, the others idle`,
    evidence: evidenceOf(f, rows, sameGroup(hit[0]!)),
    fix: `at least ${W} chunks (one per worker; smaller chunks): up to ${W}x the parallelism`,
    seconds,
    assumptions: `each such task ${lead} split into ${W} equal parts run at once`
  }]
}

const workerImbalance: Rule = (f, t) => {
  // CPU workers against CPU workers: a GPU worker runs other tasks (its own queue), so
  // its busy time is no measure of the CPU workers' balance
  const onGpu = gpuWorkerRows(f)
  const gpus = new Set<string>()
  for (let r = 0; r < f.v.n; r++) if (onGpu[r] === 1) gpus.add(`${str(f.v.host, f.v.host.codes[r]!) ?? ""}\t${str(f.v.worker, f.v.worker.codes[r]!) ?? ""}`)
  const ws = f.workers.filter((w) => w.tasks > 0 && !gpus.has(`${w.host}\t${w.worker}`))
  if (ws.length < 2) return []
  const mean = ws.reduce((a, w) => a + w.busy, 0) / ws.length
  const top = ws.reduce((a, b) => (b.busy > a.busy ? b : a))
  if (!(top.busy > t.imbalanceRatio * mean)) return []
  // one long task explains it: that is a straggler's, not the balance's
  const excess = top.busy - mean - Math.max(0, top.longest - top.busy / top.tasks)
  if (excess < Math.max(t.minSeconds, 0.05 * f.wall)) return []
  const rows: Array<number> = []
  for (let i = 0; i < f.v.n && rows.length < 20; i++) {
    if (str(f.v.worker, f.v.worker.codes[i]!) === top.worker && str(f.v.host, f.v.host.codes[i]!) === top.host) rows.push(i)
  }
  return [{
    rule: "worker-imbalance",
    message: `worker ${top.worker} was busy ${fmtS(top.busy)} against a mean of ${fmtS(mean)} over ${ws.length} workers (${(top.busy / mean).toFixed(1)}x), ${fmtN(top.tasks)} tasks`,
    evidence: { ...evidenceOf(f, rows), host: top.host, worker: top.worker },
    fix: "more, smaller chunks so the scheduler can even out the work; check that tasks are not pinned to one worker",
    seconds: Math.min(excess, f.wall) * Math.min(1, top.busy / Math.max(f.wall, 1e-9)),
    assumptions: "the busiest worker's excess over the mean spread over the others, in the share of the run it was busy (a worker idle most of the run did not bound it)"
  }]
}

const drivenActivities = new Set(["between computes", "graph build", "submit"])

// the index of the path's first task step (-1: none): the hand-over before it is start-up
const firstTaskStep = (f: Facts): number => f.path.steps.findIndex((s) => s._tag === "Task")

const driverBound: Rule = (f, t) => {
  const segs = f.input.segments
  const computes = new Set(segs.map((s) => s.compute).filter((c) => c === c)).size
  let own = 0
  let back = 0
  let out = 0
  const first = firstTaskStep(f)
  f.path.steps.forEach((s, i) => {
    if (i < first) return // start-up's (startup-dominated)
    if (s._tag === "Driver" && drivenActivities.has(s.segment.activity)) own += s.segment.end - s.segment.start
    if (s._tag === "Latency" && s.kind === "result") back += s.end - s.start
    if (s._tag === "Latency" && s.kind === "dispatch") out += s.end - s.start
  })
  // a loop: at least 3 computes (two are a stage persisted and then used, not a loop)
  if (computes < 3 || (own + back + out) / Math.max(f.wall, 1e-9) < t.driverShare) return []
  const keep = 1 / computes
  // one graph: the driver's work between computes once; a result going back to the
  // driver and the next compute's tasks handed out become one hand-over between tasks,
  // as fast as the run's fastest tenth of hand-overs
  const floor = latencyFloor(f)
  const seconds = saving(f.v, f.path, (s, i, d) =>
    i < first
      ? undefined
      : s._tag === "Driver" && drivenActivities.has(s.segment.activity)
      ? d * keep
      : s._tag === "Latency" && s.kind === "result"
      ? 0
      : s._tag === "Latency" && s.kind === "dispatch"
      ? Math.min(d, floor)
      : undefined)
  return [{
    rule: "driver-bound",
    message: `the driver ran ${fmtN(computes)} computes: ${fmtS(own)} of its own work between them, ${fmtS(out)} handing each one's tasks out and ${fmtS(back)} waiting for results to come back, ${fmtPct((own + back + out) / Math.max(f.wall, 1e-9))} of the run`,
    evidence: { keys: [], start: 0, end: f.wall, worker: "driver" },
    fix: `build one graph: keep the loop's arrays lazy and compute once (${fmtN(computes)} computes → 1)`,
    seconds,
    assumptions: `the driver's work between computes ${lead} once instead of ${fmtN(computes)} times; each result's trip back and the next hand-over out become one hand-over between tasks, as fast as the run's fastest tenth (${fmtS(floor)})`
  }]
}

const startupDominated: Rule = (f, t) => {
  // start-up is what passed before the run's first task started: where the path reaches
  // its first task later (a worker lost and replaced mid-run, its start-up on the path),
  // only the steps' part before that counts (worker-lost names the rest)
  const firstStart = f.groups.reduce((a, g) => Math.min(a, g.start), Infinity)
  let start = 0
  let boot = 0
  let firstHandOver = 0
  for (const s of f.path.steps) {
    if (s._tag === "Task") break
    const [a, b] = s._tag === "Driver" ? [s.segment.start, s.segment.end] : [s.start, s.end]
    const d = Math.min(stepDuration(f.v, s), Math.max(0, Math.min(b, firstStart) - a))
    start += d
    if (s._tag === "Driver" && s.segment.activity === "worker start") boot += d
    if (s._tag === "Latency" && s.kind === "dispatch") firstHandOver += d
  }
  if (start / Math.max(f.wall, 1e-9) < t.startupShare) return []
  const share = start / Math.max(f.wall, 1e-9)
  // the first hand-over beyond the run's usual one: workers (and their profilers) getting ready
  const lat: Array<number> = []
  for (const s of f.path.steps) if (s._tag === "Latency" && s.kind === "dispatch") lat.push(s.end - s.start)
  lat.sort((a, b) => a - b)
  const usual = lat[lat.length >> 1] ?? 0
  const slowFirst = Math.max(0, firstHandOver - usual)
  if (boot + slowFirst <= 0) return []
  return [{
    rule: "startup-dominated",
    message: `${fmtPct(share)} of the run (${fmtS(start)}) passed before its first task: ${fmtS(boot)} booting worker threads, ${fmtS(firstHandOver)} handing the first task out (${fmtS(usual)} is this run's usual hand-over)`,
    evidence: { keys: [], start: 0, end: start, worker: "driver" },
    fix: "keep one executor for several pipelines (the pool boots once), or run more work per run",
    seconds: boot + slowFirst,
    assumptions: "worker threads already started and ready (a pool kept from an earlier run): no boot, and the first hand-over as fast as the run's usual one; the rest of start-up unchanged",
    severity: share >= t.startupHigh ? "high" : "medium"
  }]
}

/**
 * Whether a task's thread was off the CPU because the machine did not run it (other
 * processes), as opposed to waiting in a call (sleep, Atomics.wait, a read): V8's
 * sampler interrupts a thread waiting in a call and samples it on time, but a thread the
 * OS does not run takes no sample until it runs again. So a task with less than a
 * quarter of the samples its duration calls for was preempted. Without samples: false.
 */
const preempted = (f: Facts, r: number): boolean => {
  const gc = f.gc
  if (gc === undefined || !(gc.interval > 0)) return false
  const n = gc.samplesByKey.get(str(f.v.key, f.v.key.codes[r]!) ?? "") ?? 0
  return n < 0.25 * (f.v.duration[r]! / gc.interval)
}

/** Seconds of a task its thread took no stack samples in (0 without samples). */
const unsampled = (f: Facts, r: number): number => {
  const gc = f.gc
  if (gc === undefined || !(gc.interval > 0)) return 0
  const n = gc.samplesByKey.get(str(f.v.key, f.v.key.codes[r]!) ?? "") ?? 0
  return Math.max(0, f.v.duration[r]! - n * gc.interval)
}

const offCpu = (f: Facts, r: number): number => {
  const d = f.v.duration[r]!
  const c = f.cpu[r]!
  return c === c && d > 0 ? Math.max(0, d - c) : 0
}

const blockedAndIo: Rule = (f, t) => {
  const out: Array<Draft> = []
  for (const g of f.groups) {
    const blocked: Array<number> = []
    const io: Array<number> = []
    let blockedTime = 0
    let ioOff = 0
    for (const r of g.rows) {
      const d = f.v.duration[r]!
      const c = f.cpu[r]!
      if (!(c === c) || !(d > 0)) continue
      if (f.io[r]! > 0) {
        io.push(r)
        ioOff += offCpu(f, r)
      } else if (d >= t.blockedMinSeconds && c / d < t.blockedCpuShare && !preempted(f, r) && offCpu(f, r) - unsampled(f, r) >= 0.5 * offCpu(f, r)) {
        // blocked: off the CPU and sampled there (a thread waiting in a call is sampled on
        // time; one the OS did not run is not), for most of its time off the CPU
        blocked.push(r)
        blockedTime += offCpu(f, r)
      }
    }
    if (blocked.length >= 3 && blockedTime >= 0.1 * g.taskTime) {
      const set = new Set(blocked)
      const seconds = saving(f.v, f.path, (s, _i, d) => (s._tag === "Task" && set.has(s.row) ? d - offCpu(f, s.row) : undefined))
      out.push({
        rule: "event-loop-blocked",
        message: `${fmtN(blocked.length)} ${groupName(g)} tasks spent ${fmtS(blockedTime)} off the CPU without reading files (${fmtPct(blockedTime / g.taskTime)} of the group's task time): their worker threads were blocked`,
        evidence: evidenceOf(f, blocked, sameGroup(g)),
        fix: "a kernel waits synchronously (Atomics.wait, execSync, a lock, a sleep): compute instead, or do the wait outside the kernel",
        seconds,
        assumptions: `the blocked tasks ${lead} at their CPU time`
      })
    }
    if (io.length > 0 && g.taskTime > 0.1 * f.wall) {
      const ioTime = io.reduce((a, r) => a + f.v.duration[r]!, 0)
      const bytes = io.reduce((a, r) => a + f.io[r]!, 0)
      const W = Math.max(1, workerCount(f))
      const set = new Set(io)
      const offShare = ioOff / Math.max(ioTime, 1e-9)
      const pathIo = pathTasksOf(f, (r) => set.has(r)).reduce((a, r) => a + f.v.duration[r]!, 0)
      if (offShare < t.offCpuShare && pathIo < 0.5 * f.path.tasks) continue
      const seconds = saving(f.v, f.path, (s, _i, d) => (s._tag === "Task" && set.has(s.row) ? d - offCpu(f, s.row) * (1 - 1 / W) : undefined))
      out.push({
        rule: "io-bound",
        message: `${fmtN(io.length)} ${groupName(g)} tasks read ${fmtBytes(bytes)} from files in ${fmtS(ioTime)} (${fmtBytes(bytes / Math.max(ioTime, 1e-9))}/s), ${fmtPct(offShare)} of it off the CPU, ${fmtPct(pathIo / Math.max(f.path.length, 1e-9))} of the critical path`,
        evidence: evidenceOf(f, io, sameGroup(g)),
        fix: "read once and keep the chunk (persist), read fewer larger blocks, or overlap reads with compute (more chunks than workers)",
        seconds: Math.max(seconds, offShare >= t.offCpuShare ? 0 : pathIo * 0),
        assumptions: `reading tasks ${lead} keep their CPU time; their time off the CPU overlapped with other work across ${W} workers`
      })
    }
  }
  return out
}

const serialStage: Rule = (f, t) => {
  const W = workerCount(f)
  if (W < 2) return []
  const out: Array<Draft> = []
  const keyRow = keyRowOf(f)
  for (const g of f.groups) {
    const n = g.rows.length
    if (n < t.minGroup) continue
    const span = g.end - g.start
    if (!(span > 0.1 * f.wall) || g.taskTime / span > t.serialConcurrency) continue
    const mine = new Set(g.rows)
    let chained = 0
    for (const r of g.rows) {
      for (let j = f.v.depOffsets[r]!; j < f.v.depOffsets[r + 1]!; j++) {
        const dr = f.v.deps[j]! >= 0 ? keyRow[f.v.deps[j]!]! : -1
        if (dr >= 0 && mine.has(dr) && f.computeOf[dr] === f.computeOf[r]) (chained++, j = f.v.depOffsets[r + 1]!)
      }
    }
    if (chained < 0.75 * (n - 1)) continue
    const depth = Math.ceil(Math.log2(n)) + 1
    const keep = Math.min(1, depth / n)
    const next = nextTaskRow(f.path)
    const seconds = saving(f.v, f.path, (s, i, d) =>
      (s._tag === "Task" && mine.has(s.row)) || (s._tag === "Latency" && next[i]! >= 0 && mine.has(next[i]!)) ? d * keep : undefined)
    out.push({
      rule: "serial-stage",
      message: `${fmtN(n)} ${groupName(g)} tasks ran one after another (each needs the one before), ${fmtS(span)} with ${W} workers available (concurrency ${(g.taskTime / span).toFixed(2)})`,
      evidence: evidenceOf(f, g.rows, sameGroup(g)),
      fix: `combine as a tree (ChunkedArray.treeReduce) instead of a fold: depth ${depth} instead of ${fmtN(n)}`,
      seconds,
      assumptions: `the chain's tasks and hand-overs ${lead} cut to a tree's depth (${depth} of ${fmtN(n)})`
    })
  }
  return out
}

const recomputation: Rule = (f) => {
  // keys run more than once: the same key again (DASF N15, Load's `recomputed`), or
  // Tessera's `key#2` executions: grouped by the key without its `#n`, over the
  // dictionary (strings made once per key, only for keys with a `#`)
  const K = f.v.key.size
  const base = new Int32Array(K)
  const byBase = new Map<string, number>()
  for (let c = 0; c < K; c++) {
    base[c] = c
    const k = f.v.key.at(c)
    const h = k.lastIndexOf("#")
    if (h > 0 && /^#\d+$/.test(k.slice(h))) {
      const b = k.slice(0, h)
      let id = byBase.get(b)
      if (id === undefined) {
        id = -1
        byBase.set(b, id)
      }
    }
  }
  if (byBase.size > 0) {
    for (let c = 0; c < K; c++) {
      const k = f.v.key.at(c)
      const id = byBase.get(k)
      if (id !== undefined && id < 0) byBase.set(k, c)
    }
    for (let c = 0; c < K; c++) {
      const k = f.v.key.at(c)
      const h = k.lastIndexOf("#")
      if (h <= 0) continue
      const id = byBase.get(k.slice(0, h))
      if (id !== undefined && id >= 0) base[c] = id
    }
  }
  const count = new Int32Array(K)
  for (let i = 0; i < f.v.n; i++) if (f.v.key.codes[i]! >= 0) count[base[f.v.key.codes[i]!]!]!++
  const groups = new Map<number, Array<number>>()
  for (let i = 0; i < f.v.n; i++) {
    const c = f.v.key.codes[i]!
    if (c < 0 || count[base[c]!]! < 2) continue
    let a = groups.get(base[c]!)
    if (a === undefined) groups.set(base[c]!, a = [])
    a.push(i)
  }
  const rows: Array<number> = []
  let wasted = 0
  let repeats = 0
  for (const a of groups.values()) {
    a.sort((x, y) => f.v.end[x]! - f.v.end[y]!)
    for (const r of a.slice(0, -1)) (rows.push(r), wasted += Math.max(0, f.v.duration[r]!), repeats++)
  }
  const states = columnCodes(f.tables.tasks, "state")
  let erred = 0
  for (let i = 0; i < states.codes.length; i++) if (states.codes[i]! >= 0 && states.at(states.codes[i]!) === "erred") erred++
  if (repeats === 0) return []
  const W = Math.max(1, workerCount(f))
  return [{
    rule: "recomputation",
    message: `${fmtN(repeats)} task executions were repeats of a key already run (${fmtS(wasted)} of task time${erred > 0 ? `, ${erred} erred` : ""}): a lost worker's results recomputed, or a result computed twice`,
    evidence: evidenceOf(f, rows),
    fix: "find why the worker was lost (its memory bound, a crash in a kernel); persist results used by several computes",
    seconds: wasted / W,
    assumptions: `the repeated executions' task time not spent, spread over ${W} workers`
  }]
}

// a worker that started again during the run (a second start-up of its thread, or one
// after it had run tasks): it died (a kernel that exits, a native crash) and the pool
// replaced it; its task was run again, but the attempt that died leaves no task event
const workerLost: Rule = (f) => {
  const starts = f.input.segments
    .filter((s) => s.activity === "worker start")
    .map((s) => s as unknown as { readonly host?: string; readonly worker?: string; readonly start: number; readonly end: number })
    .sort((a, b) => a.start - b.start)
  if (starts.length === 0) return []
  // per worker of a start-up, its tasks, to find its last task before a restart (by the
  // host and worker codes: no string per task)
  const wanted = new Set(starts.map((s) => `${s.host ?? ""}\t${s.worker ?? ""}`))
  const nw = f.v.worker.size + 1
  const idOfCodes = new Map<number, string>()
  for (let h = -1; h < f.v.host.size; h++) {
    for (let w = -1; w < f.v.worker.size; w++) {
      const id = `${(h < 0 ? null : str(f.v.host, h)) ?? ""}\t${(w < 0 ? null : str(f.v.worker, w)) ?? ""}`
      if (wanted.has(id)) idOfCodes.set((h + 1) * nw + w + 1, id)
    }
  }
  const tasksOf = new Map<string, Array<number>>()
  for (let r = 0; r < f.v.n; r++) {
    const id = idOfCodes.get((f.v.host.codes[r]! + 1) * nw + f.v.worker.codes[r]! + 1)
    if (id === undefined) continue
    let a = tasksOf.get(id)
    if (a === undefined) tasksOf.set(id, a = [])
    a.push(r)
  }
  const firstStart = f.groups.reduce((a, g) => Math.min(a, g.start), Infinity)
  const seen = new Map<string, number>() // worker -> end of its latest start-up
  const lost: Array<{ host: string; worker: string; from: number; to: number; after: Array<number> }> = []
  for (const s of starts) {
    const id = `${s.host ?? ""}\t${s.worker ?? ""}`
    const rows = tasksOf.get(id) ?? []
    let lastEnd = -Infinity
    for (const r of rows) if (f.v.end[r]! <= s.start && f.v.end[r]! > lastEnd) lastEnd = f.v.end[r]!
    const previous = seen.get(id)
    seen.set(id, s.end)
    // its first start-up, unless it began after the run's first task had started (a pool
    // started before the profiler leaves its first start-ups out of the trace; a
    // replacement that died on its first task ran none before)
    if (previous === undefined && lastEnd === -Infinity && !(s.start > firstStart + 1e-3)) continue
    const from = previous === undefined && lastEnd === -Infinity ? s.start : Math.max(previous ?? -Infinity, lastEnd)
    lost.push({ host: s.host ?? "", worker: s.worker ?? "", from, to: s.end, after: rows.filter((r) => f.v.start[r]! >= s.end).slice(0, 20) })
  }
  if (lost.length === 0) return []
  const W = Math.max(1, workerCount(f))
  const gone = lost.reduce((a, l) => a + Math.max(0, l.to - l.from), 0)
  const first = lost[0]!
  const names = [...new Set(lost.map((l) => l.worker))]
  return [{
    rule: "worker-lost",
    message: `${lost.length === 1 ? `worker ${first.worker} died and was replaced` : `${fmtN(lost.length)} workers died and were replaced (${names.slice(0, 3).join(", ")}${names.length > 3 ? ", …" : ""})`}: ${fmtS(gone)} without ${lost.length === 1 ? "it" : "them"}, from ${lost.length === 1 ? "its" : "their"} last finished task or start-up in the trace (else the replacement's start) to ${lost.length === 1 ? "its" : "their"} replacement's being ready; the task ${lost.length === 1 ? "it was" : "they were"} running was run again`,
    evidence: {
      keys: lost.flatMap((l) => l.after.map((r) => str(f.v.key, f.v.key.codes[r]!) ?? "")).slice(0, 20),
      start: Math.min(Math.max(0, first.from - f.runStart), f.wall),
      end: Math.min(Math.max(0, first.to - f.runStart), f.wall),
      host: first.host,
      worker: first.worker
    },
    fix: "find why the worker died: a kernel that calls process.exit or throws outside its task, a native crash, or its memory bound (the run's log names the cause)",
    seconds: gone / W,
    assumptions: `the dead workers' time from their last finished task or start-up in the trace (else their replacements' start) to their replacements' start-up done, spread over ${W} workers (the attempt that died, and its partial work, leave no task event)`
  }]
}

const memoryGrowth: Rule = (f, t) => {
  const byWorker = new Map<number, Array<number>>()
  const nw = f.v.worker.size + 1
  for (let i = 0; i < f.v.n; i++) {
    if (!(f.peak[i]! > 0)) continue
    const id = (f.v.host.codes[i]! + 1) * nw + f.v.worker.codes[i]! + 1
    let a = byWorker.get(id)
    if (a === undefined) byWorker.set(id, a = [])
    a.push(i)
  }
  let worst: { rows: Array<number>; growth: number; first: number; last: number } | undefined
  for (const rows of byWorker.values()) {
    if (rows.length < t.growthMinTasks) continue
    rows.sort((a, b) => f.v.end[a]! - f.v.end[b]!)
    const q = Math.max(1, rows.length >> 2)
    const med = (rs: Array<number>) => {
      const xs = rs.map((r) => f.peak[r]!).sort((a, b) => a - b)
      return xs[xs.length >> 1]!
    }
    const first = med(rows.slice(0, q))
    const last = med(rows.slice(-q))
    let up = 0
    for (let i = 1; i < rows.length; i++) if (f.peak[rows[i]!]! >= f.peak[rows[i - 1]!]!) up++
    const growth = last - first
    if (growth >= t.growthBytes && growth >= 0.5 * first && up >= t.growthRising * (rows.length - 1)) {
      if (worst === undefined || growth > worst.growth) worst = { rows, growth, first, last }
    }
  }
  if (worst === undefined) return []
  const r0 = worst.rows[worst.rows.length - 1]!
  return [{
    rule: "memory-growth",
    message: `worker ${str(f.v.worker, f.v.worker.codes[r0]!)}'s memory grew from ${fmtBytes(worst.first)} to ${fmtBytes(worst.last)} over ${fmtN(worst.rows.length)} tasks and was not given back: something keeps every chunk`,
    evidence: { ...evidenceOf(f, [worst.rows[0]!, r0]), ...workerOf(f, r0) },
    fix: "drop references to chunks a kernel is done with (module-level arrays, caches without a bound)",
    seconds: 0,
    assumptions: "saves memory, not time: the run fails once the growth reaches the worker's memory bound",
    severity: worst.growth >= 4 * t.growthBytes ? "high" : "medium"
  }]
}

const memoryPressure: Rule = (f, t) => {
  const out: Array<Draft> = []
  for (const h of f.hostMemory) {
    if (!(h.total > 0) || h.used.length === 0) continue
    let peak = 0
    for (let i = 1; i < h.used.length; i++) if (h.used[i]! > h.used[peak]!) peak = i
    const share = h.used[peak]! / h.total
    if (share < t.memoryPressure) continue
    // the span above the threshold around the peak, and the tasks of that host running in it
    const bar = t.memoryPressure * h.total
    let a = peak
    let b = peak
    while (a > 0 && h.used[a - 1]! >= bar) a--
    while (b + 1 < h.used.length && h.used[b + 1]! >= bar) b++
    const from = h.time[a]!
    const to = h.time[b]!
    const rows: Array<number> = []
    for (let r = 0; r < f.v.n && rows.length < 20; r++) {
      if (f.v.start[r]! <= to && f.v.end[r]! >= from && (str(f.v.host, f.v.host.codes[r]!) ?? "") === h.host) rows.push(r)
    }
    const own = h.own[peak]!
    const ours = own === own && own >= 0.5 * h.used[peak]!
    const at = Math.min(Math.max(0, h.time[peak]! - f.runStart), f.wall)
    out.push({
      rule: "memory-pressure",
      message: `host ${h.host}'s memory in use peaked at ${fmtBytes(h.used[peak]!)} of ${fmtBytes(h.total)} (${fmtPct(share)}) at ${at.toFixed(2)} s` +
        (own === own ? `; the traced processes held ${fmtBytes(own)} of it` : ""),
      evidence: {
        keys: rows.map((r) => str(f.v.key, f.v.key.codes[r]!) ?? ""),
        start: Math.min(Math.max(0, from - f.runStart), f.wall),
        end: Math.min(Math.max(0, to - f.runStart), f.wall),
        host: h.host
      },
      fix: ours
        ? "hold less at once: unpersist arrays later stages no longer read, fewer chunks in flight (fewer workers, smaller chunks), or a host with more memory"
        : `other processes held most of it (${fmtBytes(Math.max(0, h.used[peak]! - (own === own ? own : 0)))}): run where memory is free, or give the run fewer workers`,
      seconds: 0,
      assumptions: "saves no time until the host swaps or its OOM killer stops a worker: memory in use is the host's total less what it can still give without swapping (Linux's MemAvailable)",
      severity: share >= t.memoryPressureHigh ? "high" : "medium"
    })
  }
  return out
}

const gcPressure: Rule = (f, t) => {
  const gc = f.gc
  if (gc === undefined || !(gc.sampled > 0)) return []
  const out: Array<Draft> = []
  for (const [fn, s] of gc.byFunction) {
    if (fn === "idle" || fn === "driver" || !(s.sampled > 0)) continue
    const share = s.gc / s.sampled
    if (share < t.gcShare || s.gc < t.minSeconds) continue
    const rows: Array<number> = []
    for (let i = 0; i < f.v.n; i++) if (str(f.v.fn, f.v.fn.codes[i]!) === fn) rows.push(i)
    const set = new Set(rows)
    const seconds = saving(f.v, f.path, (st, _i, d) => (st._tag === "Task" && set.has(st.row) ? d * (1 - share) : undefined))
    out.push({
      rule: "gc-pressure",
      message: `${fmtPct(share)} of ${fn}'s sampled time (${fmtS(s.gc)} of ${fmtS(s.sampled)}) is V8's garbage collector`,
      evidence: { ...evidenceOf(f, rows), function: fn },
      fix: "allocate less per element: reuse output buffers, typed arrays instead of arrays of objects or numbers boxed in closures",
      seconds,
      assumptions: `${fn}'s tasks ${lead} without their GC share`
    })
  }
  return out
}

const clockSkew: Rule = (f, t) => {
  const out: Array<Draft> = []
  const co = f.tables.clockOffsets
  if (co !== undefined && co.numRows > 0) {
    const off = columnFloats(co, "offset")
    const unc = columnFloats(co, "uncertainty")
    const names = columnCodes(co, "name")
    let worst = -1
    for (let i = 0; i < off.length; i++) if (worst < 0 || Math.abs(off[i]!) > Math.abs(off[worst]!)) worst = i
    if (worst >= 0 && Math.abs(off[worst]!) >= t.clockOffset) {
      const name = names.codes[worst]! >= 0 ? names.at(names.codes[worst]!) : "a worker"
      out.push({
        rule: "clock-skew",
        message: `${name}'s clock was ${fmtS(Math.abs(off[worst]!))} ${off[worst]! > 0 ? "ahead of" : "behind"} the scheduler's (measured to ±${fmtS(unc[worst]!)}; its times are corrected by it)`,
        evidence: { keys: [], start: 0, end: f.wall, worker: name },
        fix: "synchronise the hosts' clocks (chrony, NTP): a correction is only as good as its round trips",
        seconds: 0,
        assumptions: "saves no time: times across hosts are off by up to the uncertainty",
        severity: unc[worst]! > Math.max(f.groups.reduce((a, g) => Math.min(a, g.medianDuration || Infinity), Infinity), 0) ? "medium" : "low"
      })
    }
  }
  // uncorrected: a task starting before its input ended, on another host
  const keyRow = keyRowOf(f)
  const runs = new Int32Array(f.v.key.size) // a key run more than once: which run is the input is unknown
  for (let i = 0; i < f.v.n; i++) if (f.v.key.codes[i]! >= 0) runs[f.v.key.codes[i]!]!++
  let worstGap = 0
  let worstRow = -1
  for (let r = 0; r < f.v.n; r++) {
    for (let j = f.v.depOffsets[r]!; j < f.v.depOffsets[r + 1]!; j++) {
      const d = f.v.deps[j]! >= 0 ? keyRow[f.v.deps[j]!]! : -1
      if (d < 0 || f.v.host.codes[d] === f.v.host.codes[r] || runs[f.v.deps[j]!]! > 1) continue
      const gap = f.v.end[d]! - f.v.start[r]!
      if (gap > worstGap) (worstGap = gap, worstRow = r)
    }
  }
  if (worstRow >= 0 && worstGap >= t.clockOffset && worstGap > 0) {
    out.push({
      rule: "clock-skew",
      message: `task ${str(f.v.key, f.v.key.codes[worstRow]!)} started ${fmtS(worstGap)} before an input from another host ended: the hosts' clocks disagree and the trace does not correct it`,
      evidence: evidenceOf(f, [worstRow], workerOf(f, worstRow)),
      fix: "synchronise the hosts' clocks (chrony, NTP), or record with Tessera's cluster, which measures and applies each worker's offset",
      seconds: 0,
      assumptions: "saves no time: cross-host orderings and the critical path are unreliable by this much",
      // high where the error is as long as a typical task: orderings across hosts are then unknown
      severity: worstGap >= f.groups.reduce((a, g) => Math.min(a, g.medianDuration || Infinity), Infinity) ? "high" : "medium"
    })
  }
  return out
}

// the GPU workers: those that copied to or from a device (transfers with a direction)
const gpuWorkerRows = (f: Facts): Uint8Array => {
  const tr = f.tables.transfers
  const out = new Uint8Array(f.v.n)
  if (tr === undefined || tr.numRows === 0) return out
  const dir = columnCodes(tr, "direction")
  const host = columnCodes(tr, "host")
  const worker = columnCodes(tr, "worker")
  const gpus = new Set<string>()
  for (let i = 0; i < tr.numRows; i++) {
    if (dir.codes[i]! >= 0 && worker.codes[i]! >= 0) gpus.add(`${host.codes[i]! >= 0 ? host.at(host.codes[i]!) : ""}\t${worker.at(worker.codes[i]!)}`)
  }
  if (gpus.size === 0) return out
  for (let r = 0; r < f.v.n; r++) out[r] = gpus.has(`${str(f.v.host, f.v.host.codes[r]!) ?? ""}\t${str(f.v.worker, f.v.worker.codes[r]!) ?? ""}`) ? 1 : 0
  return out
}

const transfers: Rule = (f, t) => {
  const out: Array<Draft> = []
  const tr = f.tables.transfers
  // transfer-bound: the tasks' gather/transfer phases on the path; a GPU task's phases are
  // its copies to and from the device (host-device-copies weighs those)
  const onGpu = gpuWorkerRows(f)
  const phaseOf = (r: number) => (onGpu[r] === 1 ? 0 : (f.input.gather[r]! || 0) + (f.input.transfer[r]! || 0))
  let phase = 0
  for (let r = 0; r < f.v.n; r++) phase += phaseOf(r)
  const busy = f.workers.reduce((a, w) => a + w.busy, 0)
  if (phase > 0 && phase / Math.max(busy, 1e-9) >= t.transferShare) {
    const seconds = saving(f.v, f.path, (s, _i, d) => (s._tag === "Task" ? d - phaseOf(s.row) : undefined))
    out.push({
      rule: "transfer-bound",
      message: `${fmtPct(phase / busy)} of the task time (${fmtS(phase)}) went to fetching inputs from other workers and copying results`,
      evidence: { keys: [], start: 0, end: f.wall },
      fix: "keep dependent tasks on the worker holding their inputs (fewer hosts, larger workers), or move less: reduce before gathering",
      seconds,
      assumptions: `the tasks ${lead} without their gather and transfer phases`
    })
  }
  if (tr === undefined || tr.numRows === 0) return out
  const dur = columnFloats(tr, "duration")
  const ser = columnFloats(tr, "serialize")
  const de = columnFloats(tr, "deserialize")
  const dir = columnCodes(tr, "direction")
  let moved = 0
  let codec = 0
  let copies = 0
  let copyTime = 0
  for (let i = 0; i < tr.numRows; i++) {
    const d = Math.max(0, dur[i]! || 0)
    if (dir.codes[i]! >= 0) (copies++, copyTime += d)
    else (moved += d, codec += (ser[i]! || 0) + (de[i]! || 0))
  }
  if (moved > 0 && codec / moved >= t.serializationShare && moved >= t.transferShare * f.wall) {
    out.push({
      rule: "serialization-bound",
      message: `${fmtPct(codec / moved)} of ${fmtS(moved)} of peer transfers was serialising and deserialising`,
      evidence: { keys: [], start: 0, end: f.wall },
      fix: "move typed arrays (chunks) rather than objects: they go as raw bytes",
      seconds: codec / Math.max(1, workerCount(f)),
      assumptions: "serialisation free; transfers spread over the workers",
    })
  }
  if (copies >= 4) {
    // against the GPU workers' task time (their copies are their tasks' gather and
    // transfer phases), not the wall time: a GPU worker's start-up (a device to open)
    // is no copy's
    let gpuTime = 0
    const perGroup = new Map<string, number>()
    const rows: Array<number> = []
    for (let r = 0; r < f.v.n; r++) {
      if (onGpu[r] !== 1) continue
      gpuTime += Math.max(0, f.v.duration[r]! || 0)
      const g = `${f.input.stage[r]}\t${f.v.fn.codes[r]}`
      perGroup.set(g, (perGroup.get(g) ?? 0) + 1)
      if (rows.length < 20) rows.push(r)
    }
    // kept on the device, each chain of GPU steps copies its chunk in once and out once:
    // as many chains as the largest step (group) has tasks
    const chains = Math.max(1, ...perGroup.values())
    const keep = Math.min(1, (2 * chains) / copies)
    if (copies > 2 * chains && copyTime >= t.transferShare * Math.max(gpuTime, 1e-9)) {
      const seconds = saving(f.v, f.path, (s, _i, d) =>
        s._tag === "Task" && onGpu[s.row] === 1 ? d - ((f.input.gather[s.row]! || 0) + (f.input.transfer[s.row]! || 0)) * (1 - keep) : undefined)
      out.push({
        rule: "host-device-copies",
        message: `${fmtN(copies)} host↔device copies took ${fmtS(copyTime)}, ${fmtPct(copyTime / Math.max(gpuTime, 1e-9))} of the GPU tasks' time; ${fmtN(chains)} chains of GPU steps would need ${fmtN(2 * chains)}`,
        evidence: evidenceOf(f, rows),
        fix: "keep intermediate results on the device: chain GPU kernels (give the steps between them GPU versions) so that no step reads back",
        seconds: Math.min(seconds, copyTime * (1 - keep)),
        assumptions: `the GPU tasks ${lead} with their copies cut to one in and one out per chain (${fmtN(2 * chains)} of ${fmtN(copies)})`
      })
    }
  }
  return out
}

const gpuIdle: Rule = (f, t) => {
  const out: Array<Draft> = []
  const byWorker = new Map<string, Array<number>>()
  // a GPU worker: one that copied to or from a device, or one named so
  const onGpu = gpuWorkerRows(f)
  const isGpu = new Int8Array(f.v.worker.size).fill(-1)
  for (let i = 0; i < f.v.n; i++) {
    const c = f.v.worker.codes[i]!
    if (c < 0) continue
    if (isGpu[c] === -1) isGpu[c] = /gpu/i.test(f.v.worker.at(c)) ? 1 : 0
    if (isGpu[c] === 0 && onGpu[i] === 0) continue
    const w = f.v.worker.at(c)
    let a = byWorker.get(w)
    if (a === undefined) byWorker.set(w, a = [])
    a.push(i)
  }
  for (const [w, rows] of byWorker) {
    rows.sort((a, b) => f.v.start[a]! - f.v.start[b]!)
    let idle = 0
    let end = f.v.end[rows[0]!]!
    for (const r of rows) {
      const gap = f.v.start[r]! - end
      if (gap >= t.gpuGap) idle += gap
      end = Math.max(end, f.v.end[r]!)
    }
    if (idle < 0.2 * f.wall) continue
    out.push({
      rule: "gpu-idle",
      message: `GPU worker ${w} sat idle for ${fmtS(idle)} in gaps of ${fmtS(t.gpuGap)} or more, ${fmtPct(idle / f.wall)} of the run`,
      evidence: { ...evidenceOf(f, rows), worker: w },
      fix: "feed the GPU from several chunks at once (more chunks in flight), and prepare inputs while it computes",
      seconds: Math.min(idle, f.path.driver + f.path.latency),
      assumptions: "the GPU's idle gaps overlapped with the driver's work and the hand-overs on the critical path",
    })
  }
  return out
}

/**
 * Every rule, run in this order (the result is sorted by saving anyway).
 *
 * @since 0.1.0
 * @category analysis
 */
export const rules: ReadonlyArray<Rule> = [
  tasksTooSmall,
  schedulingLatency,
  stragglerAndSkew,
  tooFewTasks,
  workerImbalance,
  driverBound,
  startupDominated,
  blockedAndIo,
  serialStage,
  recomputation,
  workerLost,
  memoryGrowth,
  memoryPressure,
  gcPressure,
  clockSkew,
  transfers,
  gpuIdle
]

/**
 * Run the rules over the facts: drafts with too small a saving dropped (memory and clock
 * findings, stragglers and skewed tasks kept), severities from the saving's share, sorted by saving (then severity,
 * then rule id). `scheduling-latency` is left out where tasks-too-small and driver-bound
 * already explain at least half of the latency it would save; `worker-imbalance` where a
 * lost worker's time explains half of it; `event-loop-blocked` and
 * `straggler` where the same function is GC-bound (V8's collector keeps it waiting, and
 * makes one task of it slower than the rest: the GC is the finding).
 *
 * @since 0.1.0
 * @category analysis
 */
export const runRules = (f: Facts, t: Thresholds = defaultThresholds): Array<Finding> => {
  const drafts = rules.flatMap((r) => r(f, t))
  const small = drafts.filter((d) => d.rule === "tasks-too-small").reduce((a, d) => a + d.seconds, 0)
  const driver = drafts.filter((d) => d.rule === "driver-bound").reduce((a, d) => a + d.seconds, 0)
  const wall = Math.max(f.wall, 1e-12)
  // V8 collects on helper threads: a GC-heavy function's thread waits off the CPU
  const gcBound = new Set(drafts.filter((d) => d.rule === "gc-pressure").map((d) => d.evidence.function))
  // a worker lost for a while leaves the others busier: that imbalance is the loss's
  const lost = drafts.filter((d) => d.rule === "worker-lost").reduce((a, d) => a + d.seconds, 0)
  const out: Array<Finding> = []
  for (const d of drafts) {
    if (d.rule === "scheduling-latency" && small + driver >= 0.5 * d.seconds) continue
    if (d.rule === "worker-imbalance" && lost >= 0.5 * d.seconds) continue
    if ((d.rule === "event-loop-blocked" || d.rule === "straggler") && gcBound.has(d.evidence.function)) continue
    const seconds = Math.min(Math.max(0, d.seconds), wall)
    const share = seconds / wall
    // a straggler or a skewed task is evidence even where the run did not wait for it
    if (d.severity === undefined && seconds < t.minSeconds && share < t.minShare && d.rule !== "straggler" && d.rule !== "data-skew") continue
    const high = d.rule === "driver-bound" ? Math.max(t.severity.high, t.driverHigh) : t.severity.high
    const bySaving: Severity = share >= high ? "high" : share >= t.severity.medium ? "medium" : "low"
    const severity: Severity = d.rule === "startup-dominated"
      ? (d.severity === "high" ? "high" : bySaving === "low" ? "low" : "medium") // start-up is in every run
      : d.severity ?? bySaving
    out.push({
      rule: d.rule,
      severity,
      message: d.message,
      evidence: d.evidence,
      fix: d.fix,
      saving: { seconds, share },
      assumptions: d.assumptions
    })
  }
  return out.sort((a, b) => b.saving.seconds - a.saving.seconds || rank(a.severity) - rank(b.severity) || (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0))
}

const rank = (s: Severity): number => (s === "high" ? 0 : s === "medium" ? 1 : 2)

/** @internal */
export type { CriticalStep }

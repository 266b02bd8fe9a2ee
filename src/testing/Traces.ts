/**
 * fast-check arbitraries for task graphs and for the traces a run of them writes, in
 * Tessera's format or DASF's, each with its ground truth known by construction: the
 * true critical path (the longest duration-weighted dependency chain), the true busy
 * time of every worker, the true bytes moved between hosts, the wall time, the clock
 * offsets applied, and the faults seeded. What users property-test their own analyses
 * with, and what Tessera's rules and analyses are tested with (docs/diagnosis.md, "The
 * test kit").
 *
 * A generated run: tasks in dependency order (each depends on earlier ones only, so the
 * graph is a DAG), functions with a per-function base duration and size (±20% jitter,
 * so that a fault-free trace has no straggler and no skew), scheduled by a list
 * scheduler on `hosts × workersPerHost` workers (a task starts when its inputs are there,
 * 0.2 ms after they end, plus a transfer when one comes from another host, and its
 * worker is free). Events: `Compute` per task; with `memory`, `Managed Memory` after each
 * task; with `resources`, `Resource Usage` every 50 ms per host (with the host's memory:
 * 16 GiB in total, a quarter in use); `Transfer` per input
 * fetched from another host (Tessera's format); a `Clock Offset` per shifted host
 * (Tessera's format, whose times are corrected), or shifted times (DASF's, uncorrected).
 *
 * Needs `fast-check` (a dev dependency of the project that imports this module).
 *
 * @since 0.1.0
 */
import * as fc from "fast-check"
import type { TraceEvent } from "../trace/TraceEvent.ts"
import { encodeRecords } from "../trace/TraceFormat.ts"

/**
 * One task of a generated graph: index, key, function, stage, inputs (indices of earlier
 * tasks), duration (seconds) and result bytes.
 *
 * @since 0.1.0
 * @category models
 */
export interface GraphTask {
  readonly index: number
  readonly key: string
  readonly fn: string
  readonly stage: string
  readonly deps: ReadonlyArray<number>
  readonly duration: number
  readonly size: number
  /** CPU seconds (default: 95% of the duration; a seeded straggler waits: its function's) */
  readonly cpu?: number
}

/**
 * A task as scheduled: its host and worker (thread id) and its start and end (seconds,
 * on the true clock).
 *
 * @since 0.1.0
 * @category models
 */
export interface ScheduledTask extends GraphTask {
  readonly host: string
  readonly worker: string
  readonly start: number
  readonly end: number
}

/**
 * Faults a trace can be seeded with: `straggler` (one task 10x its function's duration,
 * data and CPU time unchanged: it waits), `skew` (one `load` or `transform` task with 40x the data, more than
 * 5x what any other task handles in and out, and 20x the duration),
 * `clock-skew` (the second host's clock 50 ms ahead), `memory-pressure` (the first
 * host's memory in use at 97% of its total in the samples of the run's middle fifth;
 * resource samples are written whatever `resources` says).
 *
 * @since 0.1.0
 * @category models
 */
export type Fault = "straggler" | "skew" | "clock-skew" | "memory-pressure"

/**
 * The generated hosts' memory: 16 GiB each, a quarter in use; 97% under `memory-pressure`.
 *
 * @since 0.1.0
 * @category constants
 */
export const hostMemoryTotal = 16 * 2 ** 30

/**
 * What is true of a generated trace, computed from the graph and the schedule, not from
 * the events.
 *
 * @since 0.1.0
 * @category models
 */
export interface GroundTruth {
  /** seconds: the longest duration-weighted dependency chain */
  readonly criticalPath: number
  /** its keys, first first (ties: the chain whose last task's key is smaller) */
  readonly criticalKeys: ReadonlyArray<string>
  /** seconds of tasks per worker, by `host/worker` */
  readonly busy: Readonly<Record<string, number>>
  /** bytes of inputs fetched from another host */
  readonly bytesMoved: number
  /** seconds from the first task's start to the last one's end */
  readonly wall: number
  /** seconds a host's clock runs ahead (only hosts shifted) */
  readonly offsets: Readonly<Record<string, number>>
  /** the host whose memory was under pressure (`memory-pressure`), its peak bytes in use */
  readonly memoryPressure?: { readonly host: string; readonly peak: number }
  readonly faults: ReadonlyArray<Fault>
  /** the seeded faults' tasks, by fault */
  readonly faultKeys: Readonly<Partial<Record<Fault, string>>>
}

/**
 * A generated trace: the events in file order, the tasks as scheduled, the truth.
 *
 * @since 0.1.0
 * @category models
 */
export interface GeneratedTrace {
  readonly format: "tessera" | "dasf"
  readonly events: ReadonlyArray<TraceEvent>
  readonly tasks: ReadonlyArray<ScheduledTask>
  readonly hosts: ReadonlyArray<string>
  readonly workers: number
  readonly truth: GroundTruth
}

/**
 * Options of the arbitraries (every one optional).
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceOptions {
  readonly minTasks?: number
  readonly maxTasks?: number
  readonly format?: "tessera" | "dasf"
  readonly maxHosts?: number
  readonly maxWorkersPerHost?: number
  /** faults to seed (default none) */
  readonly faults?: ReadonlyArray<Fault>
  readonly memory?: boolean
  readonly resources?: boolean
  /** seconds added to every time (default 1.7e9: an epoch clock) */
  readonly origin?: number
}

const functions = [
  { fn: "load", stage: "read", base: 0.004, size: 80_000 },
  { fn: "transform", stage: "transform", base: 0.006, size: 80_000 },
  { fn: "reduce", stage: "reduce", base: 0.002, size: 800 }
] as const

/**
 * A task graph: 1 to `maxTasks` tasks, each depending on up to 3 earlier ones, of three
 * functions (`load`, `transform`, `reduce`, one stage each) with base durations 4, 6 and
 * 2 ms and ±20% jitter.
 *
 * @since 0.1.0
 * @category testing
 */
export const graphArb = (options: Pick<TraceOptions, "minTasks" | "maxTasks"> = {}): fc.Arbitrary<ReadonlyArray<GraphTask>> =>
  fc.array(
    fc.record({
      f: fc.integer({ min: 0, max: functions.length - 1 }),
      deps: fc.array(fc.nat(), { maxLength: 3 }),
      jitter: fc.integer({ min: -20, max: 20 }),
      sizeJitter: fc.integer({ min: -20, max: 20 })
    }),
    { minLength: Math.max(1, options.minTasks ?? 1), maxLength: Math.max(1, options.maxTasks ?? 40) }
  ).map((raw) =>
    raw.map((t, i): GraphTask => {
      const f = functions[i === 0 ? 0 : t.f]!
      return {
        index: i,
        key: `('${f.fn}-${i.toString(16).padStart(6, "0")}', ${i})`,
        fn: f.fn,
        stage: f.stage,
        deps: i === 0 ? [] : [...new Set(t.deps.map((d) => d % i))].sort((a, b) => a - b),
        duration: f.base * (1 + t.jitter / 100),
        size: Math.round(f.size * (1 + t.sizeJitter / 100))
      }
    })
  )

/**
 * The longest duration-weighted chain of a graph, naively: per task, its duration plus
 * the longest chain among its inputs (ties: the input with the smaller key).
 *
 * @since 0.1.0
 * @category testing
 */
export const longestChain = (tasks: ReadonlyArray<GraphTask>): { readonly length: number; readonly keys: ReadonlyArray<string> } => {
  const dist: Array<number> = []
  const from: Array<number> = []
  for (const t of tasks) {
    let best = -1
    for (const d of t.deps) if (best < 0 || dist[d]! > dist[best]! || (dist[d] === dist[best] && tasks[d]!.key < tasks[best]!.key)) best = d
    dist.push((best < 0 ? 0 : dist[best]!) + t.duration)
    from.push(best)
  }
  let last = -1
  tasks.forEach((t, i) => {
    if (last < 0 || dist[i]! > dist[last]! || (dist[i] === dist[last] && t.key < tasks[last]!.key)) last = i
  })
  const keys: Array<string> = []
  for (let x = last; x >= 0; x = from[x]!) keys.push(tasks[x]!.key)
  return { length: last < 0 ? 0 : dist[last]!, keys: keys.reverse() }
}

const latency = 0.0002
const bandwidth = 1e9 // bytes per second between hosts

/**
 * Schedule a graph on `hosts × perHost` workers (the list scheduler described in the
 * module header), faults applied first. Deterministic.
 *
 * @since 0.1.0
 * @category testing
 */
export const schedule = (
  graph: ReadonlyArray<GraphTask>,
  hosts: ReadonlyArray<string>,
  perHost: number,
  faults: ReadonlyArray<Fault> = [],
  pick = 0
): { readonly tasks: ReadonlyArray<ScheduledTask>; readonly faultKeys: Partial<Record<Fault, string>>; readonly bytesMoved: number } => {
  const faultKeys: Partial<Record<Fault, string>> = {}
  let g = graph
  const seed = (fault: Fault, scale: (t: GraphTask) => GraphTask, eligible: (t: GraphTask) => boolean = () => true) => {
    // a task of the most common function, so that its group has a median to stand out from
    const counts = new Map<string, number>()
    for (const t of g) if (eligible(t)) counts.set(t.fn, (counts.get(t.fn) ?? 0) + 1)
    if (counts.size === 0) return
    const [fn, count] = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]!
    // the diagnosis judges a task against a group of at least 4 (Rules' minGroup): a
    // smaller one is not seeded, and traceArb draws again
    if (count < 4) return
    const of = g.filter((t) => t.fn === fn && faultKeys.straggler !== t.key && faultKeys.skew !== t.key)
    if (of.length === 0) return
    const victim = of[pick % of.length]!
    faultKeys[fault] = victim.key
    g = g.map((t) => (t === victim ? scale(t) : t))
  }
  // a straggler that waits (a sleep, a lock): 10x the time, the CPU time of its function
  if (faults.includes("straggler")) seed("straggler", (t) => ({ ...t, duration: t.duration * 10, cpu: t.duration * 0.95 }))
  // skew: of a function whose chunks are data (not a reduction's few bytes)
  if (faults.includes("skew")) seed("skew", (t) => ({ ...t, duration: t.duration * 20, size: t.size * 40 }), (t) => t.fn !== "reduce")
  const workers = hosts.flatMap((h) => Array.from({ length: perHost }, (_, i) => ({ host: h, worker: `worker-${h}-${i}`, free: 0 })))
  const out: Array<ScheduledTask> = []
  let bytesMoved = 0
  for (const t of g) {
    // the worker that could start it first; an input from another host is fetched first
    let best: { w: (typeof workers)[number]; start: number; moved: number } | undefined
    for (const w of workers) {
      let ready = 0
      let moved = 0
      for (const d of t.deps) {
        const dep = out[d]!
        const remote = dep.host !== w.host
        if (remote) moved += dep.size
        ready = Math.max(ready, dep.end + latency + (remote ? dep.size / bandwidth : 0))
      }
      const start = Math.max(ready, w.free)
      if (best === undefined || start < best.start) best = { w, start, moved }
    }
    const { moved, start, w } = best!
    bytesMoved += moved
    w.free = start + t.duration
    out.push({ ...t, host: w.host, worker: w.worker, start, end: start + t.duration })
  }
  return { tasks: out, faultKeys, bytesMoved }
}

/**
 * The events of a scheduled run (module header), in timestamp order.
 *
 * @since 0.1.0
 * @category constructors
 */
export const eventsOf = (
  tasks: ReadonlyArray<ScheduledTask>,
  options: {
    readonly format: "tessera" | "dasf"
    readonly origin: number
    readonly offsets: Readonly<Record<string, number>>
    readonly memory: boolean
    readonly resources: boolean
    /** the host whose samples in the run's middle fifth show 97% of its memory in use */
    readonly pressured?: string
  }
): Array<TraceEvent> => {
  const { format, origin, offsets } = options
  // DASF's times are each host's own clock (uncorrected); Tessera's are corrected
  const at = (host: string, t: number) => origin + t + (format === "dasf" ? offsets[host] ?? 0 : 0)
  const events: Array<TraceEvent> = []
  const dependents = new Map<number, Array<string>>()
  for (const t of tasks) for (const d of t.deps) (dependents.get(d) ?? dependents.set(d, []).get(d)!).push(t.key)
  const held = new Map<string, { bytes: number; n: number }>()
  for (const t of tasks) {
    const args: Record<string, unknown> = {
      key: t.key,
      name: t.fn,
      state: "memory",
      size: t.size,
      dependencies: t.deps.map((d) => tasks[d]!.key),
      dependents: format === "dasf" ? [] : dependents.get(t.index) ?? []
    }
    if (format === "tessera") {
      const s = at(t.host, t.start)
      const e = at(t.host, t.end)
      args.stage = t.stage
      args.cpu_time = t.cpu ?? t.duration * 0.95
      args.peak_memory = 32 << 20
      args.startstops = [
        { action: "gather", start: s, stop: s },
        { action: "compute", start: s, stop: e },
        { action: "transfer", start: e, stop: e }
      ]
    }
    events.push({ name: "Compute", timestamp: at(t.host, t.end), phase: "X", process_id: t.host, thread_id: t.worker, args, duration: t.duration })
    if (options.memory) {
      const h = held.get(t.worker) ?? { bytes: 0, n: 0 }
      h.bytes += t.size
      h.n++
      held.set(t.worker, h)
      events.push({
        name: "Managed Memory",
        timestamp: at(t.host, t.end),
        phase: "I",
        scope: "g",
        process_id: t.host,
        thread_id: t.worker,
        args: { key: t.key, state: "memory", size: h.bytes, tasks: h.n }
      })
    }
    if (format === "tessera") {
      for (const d of t.deps) {
        const dep = tasks[d]!
        if (dep.host === t.host) continue
        const start = dep.end + latency
        events.push({
          name: "Transfer",
          timestamp: at(t.host, start + dep.size / bandwidth),
          phase: "X",
          process_id: t.host,
          thread_id: t.worker,
          args: { keys: [dep.key], bytes: dep.size, worker: t.worker, peer: dep.worker, start: at(t.host, start), stop: at(t.host, start + dep.size / bandwidth) },
          duration: dep.size / bandwidth
        })
      }
    }
  }
  if (format === "tessera") {
    for (const [host, offset] of Object.entries(offsets)) {
      events.push({ name: "Clock Offset", timestamp: origin, phase: "I", scope: "t", process_id: host, thread_id: `worker-${host}-0`, args: { worker: `tessera-worker@${host}:0`, offset, uncertainty: 0.0001 } })
    }
  }
  if (options.resources && tasks.length > 0) {
    const end = Math.max(...tasks.map((t) => t.end))
    for (const host of [...new Set(tasks.map((t) => t.host))]) {
      // under pressure, at least ten samples over the run (a short run has few at 50 ms)
      const step = options.pressured !== undefined ? Math.max(1e-4, Math.min(0.05, end / 10)) : 0.05
      for (let t = 0; t <= end + 1e-9; t += step) {
        const pressed = host === options.pressured && t >= 0.4 * end && t <= 0.6 * end
        const used = (pressed ? 0.97 : 0.25) * hostMemoryTotal
        const args = { cpu: 100, memory: 1 << 28, time: origin + t }
        events.push({
          name: "Resource Usage",
          timestamp: at(host, t),
          phase: "I",
          scope: "g",
          process_id: host,
          thread_id: null,
          // DASF writes no host memory; Tessera's ResourceMonitor adds it
          args: format === "dasf" ? args : { ...args, "host_memory.total": hostMemoryTotal, "host_memory.available": hostMemoryTotal - used }
        })
      }
    }
  }
  return events.sort((a, b) => a.timestamp - b.timestamp)
}

/**
 * A generated trace (the module header says what it holds) with its ground truth.
 *
 * @since 0.1.0
 * @category testing
 */
export const traceArb = (options: TraceOptions = {}): fc.Arbitrary<GeneratedTrace> => {
  const format = options.format ?? "tessera"
  const faults = options.faults ?? []
  // a seeded fault needs a group with a median: at least 12 tasks (4 of one function
  // among load and transform, for skew; the first task is always a load)
  const minTasks = Math.max(options.minTasks ?? 1, faults.length > 0 ? 12 : 1)
  return fc.record({
    graph: graphArb({ minTasks, maxTasks: Math.max(minTasks, options.maxTasks ?? 40) }),
    hosts: fc.integer({ min: faults.includes("clock-skew") ? 2 : 1, max: Math.max(faults.includes("clock-skew") ? 2 : 1, options.maxHosts ?? 2) }),
    perHost: fc.integer({ min: 1, max: Math.max(1, options.maxWorkersPerHost ?? 3) }),
    pick: fc.nat()
  }).map(({ graph, hosts: h, perHost, pick }): GeneratedTrace => {
    const hosts = Array.from({ length: h }, (_, i) => `host${i}`)
    const offsets: Record<string, number> = faults.includes("clock-skew") ? { [hosts[1]!]: 0.05 } : {}
    const { bytesMoved, faultKeys, tasks } = schedule(graph, hosts, perHost, faults, pick)
    const busy: Record<string, number> = {}
    for (const t of tasks) busy[`${t.host}/${t.worker}`] = (busy[`${t.host}/${t.worker}`] ?? 0) + t.duration
    const chain = longestChain(tasks)
    const wall = tasks.length === 0 ? 0 : Math.max(...tasks.map((t) => t.end)) - Math.min(...tasks.map((t) => t.start))
    const pressured = faults.includes("memory-pressure") && format === "tessera" ? tasks[0]?.host : undefined
    const events = eventsOf(tasks, {
      format,
      origin: options.origin ?? 1.7e9,
      offsets,
      memory: options.memory ?? true,
      resources: options.resources === true || pressured !== undefined,
      ...(pressured !== undefined ? { pressured } : {})
    })
    return {
      format,
      events,
      tasks,
      hosts,
      workers: hosts.length * perHost,
      truth: {
        criticalPath: chain.length,
        criticalKeys: chain.keys,
        busy,
        bytesMoved,
        wall,
        offsets,
        faults,
        faultKeys,
        ...(pressured !== undefined ? { memoryPressure: { host: pressured, peak: 0.97 * hostMemoryTotal } } : {})
      }
    }
  }).filter((t) => faults.every((f) => f === "clock-skew" || f === "memory-pressure" || t.truth.faultKeys[f] !== undefined))
}

/**
 * The trace as one database file's bytes (DASF's framing: 8-byte big-endian length, one
 * msgpack map per event), for `Load.loadBytesUnsafe` or a file on disk.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toBytes = (trace: Pick<GeneratedTrace, "events">): Uint8Array => encodeRecords(trace.events)

/**
 * The same trace with every time (timestamps, durations, phases, transfer times) scaled
 * by `k` around `origin`: what a run `k` times slower writes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const scaleTimes = (trace: GeneratedTrace, k: number, origin = 1.7e9): GeneratedTrace => {
  const t = (x: unknown) => (typeof x === "number" ? origin + (x - origin) * k : x)
  const d = (x: unknown) => (typeof x === "number" ? x * k : x)
  const events = trace.events.map((e): TraceEvent => {
    const args = { ...(e.args as Record<string, unknown>) }
    if (Array.isArray(args.startstops)) args.startstops = (args.startstops as Array<{ action: string; start: number; stop: number }>).map((s) => ({ ...s, start: t(s.start) as number, stop: t(s.stop) as number }))
    for (const k2 of ["start", "stop"]) if (k2 in args) args[k2] = t(args[k2])
    for (const k2 of ["cpu_time", "offset", "uncertainty"]) if (k2 in args) args[k2] = d(args[k2])
    if ("time" in args) args.time = t(args.time)
    return { ...e, timestamp: t(e.timestamp) as number, ...(e.duration !== undefined ? { duration: d(e.duration) as number } : {}), args }
  })
  return {
    ...trace,
    events,
    tasks: trace.tasks.map((x) => ({ ...x, duration: x.duration * k, start: x.start * k, end: x.end * k })),
    truth: {
      ...trace.truth,
      criticalPath: trace.truth.criticalPath * k,
      busy: Object.fromEntries(Object.entries(trace.truth.busy).map(([w, b]) => [w, b * k])),
      wall: trace.truth.wall * k,
      offsets: Object.fromEntries(Object.entries(trace.truth.offsets).map(([h, o]) => [h, o * k]))
    }
  }
}

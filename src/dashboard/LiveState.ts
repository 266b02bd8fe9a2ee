/**
 * LiveState: what the live dashboard knows about a run, kept bounded whatever the run's
 * size, and the deltas it sends to pages.
 *
 * The engine's hooks (`callbacks`) only copy a few numbers into preallocated arrays:
 * no allocation per task beyond what the engine passes, no I/O, nothing that waits (a
 * hook must never block the engine). Everything else happens on `tick` (the server's
 * fixed cadence, every 200 ms):
 *
 * - **detail**: the last `detailCapacity` rectangles (tasks, data transfers, driver
 *   segments), in a ring of typed arrays; a page gets at most `maxRectsPerTick` new ones
 *   a tick, the rest are *shed* (counted, and the page says how many: they are still in
 *   the aggregates, and in the ring for a zoom to fetch);
 * - **aggregates**, exact for the whole run: tasks done and erred per group (stage ×
 *   function) with each group's total and running count read from the scheduler state
 *   of the computes in flight; per row (worker thread, GPU worker, cluster worker, the
 *   driver) busy seconds and CPU seconds per time bin, the longest task's function per
 *   bin; held bytes, chunks and device bytes per worker (now and the peak per bin); the
 *   cluster-wide held bytes per bin; transfers by worker pair (bytes, count, seconds);
 *   the host's resources (`sampleResources`). Bins start 10 ms wide; when a run outgrows
 *   `bins` of them, neighbours merge (the width doubles), so the state's size never
 *   depends on the run's length or task count.
 *
 * Times are seconds since `t0` (epoch seconds; the layer's opening). Strings (keys,
 * function, stage and worker names) are data: the page shows them as text only.
 *
 * @since 0.1.0
 */
import type { Callbacks } from "../engine/Hooks.ts"
import type { DriverRecord, MemoryRecord, TaskRecord, TransferRecord } from "../engine/EngineEvents.ts"
import * as Sampling from "../engine/Sampling.ts"
import type { SchedulerState } from "../engine/State.ts"
import type { TaskGraph } from "../engine/TaskGraph.ts"
import { type FindingsPanel, noTraces } from "./Diagnosis.ts"
import { type FlamePanel, noSamples } from "./Flame.ts"
import { LiveFlame, type LiveFlameOptions } from "./LiveFlame.ts"

/**
 * The dashboard's own stack sampling (the Profile tab during a run, `LiveFlame.ts`):
 * V8's sampling profiler in each worker thread at `interval` ms (default 10, the
 * profiler's), its samples handed over every `flushSeconds` (default 1; see
 * `Sampling.SamplingRequest`), folded into `bounds`. With the statistical profiler's
 * layer in the same compute, both get every sample (`Sampling.share`).
 *
 * @since 0.1.0
 * @category models
 */
export interface LiveSampling {
  readonly interval?: number
  readonly flushSeconds?: number
  readonly bounds?: LiveFlameOptions
}

/**
 * Options of a live state.
 *
 * @since 0.1.0
 * @category models
 */
export interface LiveOptions {
  /** rectangles kept for zooming (default 262,144) */
  readonly detailCapacity?: number
  /** time bins per row (default 1,024) */
  readonly bins?: number
  /** the first bins' width, seconds (default 0.01) */
  readonly binSeconds?: number
  /** most new rectangles sent per tick (default 1,000) */
  readonly maxRectsPerTick?: number
  /** the origin of the time axis, epoch seconds (default now) */
  readonly t0?: number
  /** the host's name, for the light hooks' worker rows (`worker-{host}-{i}`; default "localhost") */
  readonly host?: string
}

/** Kinds of rectangles. */
export const KIND_TASK = 0
export const KIND_ERRED = 1
export const KIND_TRANSFER = 2
export const KIND_DRIVER = 3

class Dict {
  readonly names: Array<string> = []
  readonly index = new Map<string, number>()
  id(name: string): number {
    let i = this.index.get(name)
    if (i === undefined) {
      i = this.names.length
      this.names.push(name)
      this.index.set(name, i)
    }
    return i
  }
}

interface Group {
  readonly id: number
  readonly stage: string
  readonly name: string
  total: number
  done: number
  erred: number
  running: number
  changed: boolean
}

interface Row {
  busy: Float64Array
  cpu: Float64Array
  longest: Float64Array
  fn: Int32Array
  mem: Float64Array
  tasks: number
  erred: number
  busyTotal: number
  cpuTotal: number
  bytes: number
  chunks: number
  device: number
  peakTask: number
}

interface Pair {
  readonly from: string
  readonly to: string
  bytes: number
  count: number
  seconds: number
  changed: boolean
}

interface Compute {
  readonly graph: TaskGraph
  readonly state: SchedulerState
  groupOf: Int32Array | null
}

/**
 * One detailed rectangle as a page gets it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Rect {
  readonly id: number
  readonly start: number
  readonly end: number
  readonly row: number
  /** function (tasks), activity (driver), -1 (transfers) */
  readonly fn: number
  readonly stage: number
  readonly kind: number
  readonly key: string
  readonly cpu: number
  readonly bytes: number
}

const origin = performance.timeOrigin
const nowSeconds = (): number => (origin + performance.now()) / 1000

/**
 * The live state of a run (see the module header).
 *
 * @since 0.1.0
 * @category models
 */
export class LiveState {
  readonly t0: number
  readonly capacity: number
  readonly nBins: number
  readonly maxRectsPerTick: number
  binWidth: number
  /** bumped when the bins merge: pages take the whole bins again */
  binEpoch = 0
  readonly rows = new Dict()
  readonly functions = new Dict()
  readonly stages = new Dict()
  readonly activities = new Dict()
  readonly hosts = new Dict()
  private readonly rowState: Array<Row> = []
  private readonly groups = new Map<string, Group>()
  private readonly groupList: Array<Group> = []
  private readonly pairs = new Map<string, Pair>()
  private readonly computes = new Set<Compute>()
  // the ring
  private readonly rStart: Float64Array
  private readonly rEnd: Float64Array
  private readonly rRow: Int32Array
  private readonly rFn: Int32Array
  private readonly rStage: Int32Array
  private readonly rKind: Uint8Array
  private readonly rCpu: Float32Array
  private readonly rBytes: Float64Array
  private readonly rKey: Array<string>
  /** rectangles recorded so far (the next one's id) */
  written = 0
  /** rectangles handed to pages so far (by `takeNew`) */
  sentUpTo = 0
  /** rectangles never sent to pages as detail (in the aggregates only) */
  shed = 0
  /** task records seen (done + erred): the engine's own count */
  tasksSeen = 0
  tasksDone = 0
  tasksErred = 0
  transfers = 0
  transferBytes = 0
  computesStarted = 0
  computesFinished = 0
  /** computes that failed (a task erred, or interrupted): the light hooks see no erred task itself */
  computesFailed = 0
  /** the latest time seen, seconds since t0 */
  latest = 0
  /** the run is over (no compute in flight since `finished` was called) */
  over = false
  /** fed by the light hooks (the driver's view; see `callbacks`) */
  light = false
  /** this host's name (the light hooks' worker rows) */
  host: string
  /** the Findings tab: tessera diagnose's findings once the run is over (`Diagnosis.ts` `diagnoseInto`) */
  findings: FindingsPanel = noTraces
  /** the Profile tab: the statistical profiler's samples, as the report's flame payload (`Flame.ts` `profileInto`) */
  flame: FlamePanel = noSamples
  /** the Profile tab during a run: the engine's stack samples, folded (`LiveFlame.ts`); null: the dashboard does not sample */
  liveFlame: LiveFlame | null = null
  private totalBytes = 0
  private readonly memTotal: Float64Array
  /** host resource samples: time, cpu %, memory bytes used, per host (bounded: decimated) */
  readonly resources: Array<{ t: Array<number>; cpu: Array<number>; mem: Array<number> }> = []
  private readonly lastGroupCache: { name: string | undefined; stage: string | undefined; group: Group | undefined } = {
    name: undefined,
    stage: undefined,
    group: undefined
  }
  private binsTouchedLo = Infinity
  private binsTouchedHi = -1

  constructor(options: LiveOptions = {}) {
    this.t0 = options.t0 ?? nowSeconds()
    this.host = options.host ?? "localhost"
    this.capacity = Math.max(16, options.detailCapacity ?? 262_144)
    this.nBins = Math.max(16, options.bins ?? 1024)
    this.binWidth = options.binSeconds ?? 0.01
    this.maxRectsPerTick = Math.max(1, options.maxRectsPerTick ?? 1000)
    const c = this.capacity
    this.rStart = new Float64Array(c)
    this.rEnd = new Float64Array(c)
    this.rRow = new Int32Array(c)
    this.rFn = new Int32Array(c)
    this.rStage = new Int32Array(c)
    this.rKind = new Uint8Array(c)
    this.rCpu = new Float32Array(c)
    this.rBytes = new Float64Array(c)
    this.rKey = new Array<string>(c).fill("")
    this.memTotal = new Float64Array(this.nBins)
  }

  // ---- recording ---------------------------------------------------------------

  private row(threadId: string, host: string): Row {
    const i = this.rows.id(threadId)
    let r = this.rowState[i]
    if (r === undefined) {
      this.hosts.id(host)
      const n = this.nBins
      r = {
        busy: new Float64Array(n),
        cpu: new Float64Array(n),
        longest: new Float64Array(n),
        fn: new Int32Array(n).fill(-1),
        mem: new Float64Array(n),
        tasks: 0,
        erred: 0,
        busyTotal: 0,
        cpuTotal: 0,
        bytes: 0,
        chunks: 0,
        device: 0,
        peakTask: 0
      }
      this.rowState[i] = r
    }
    return r
  }

  /** Makes room for time `t` (seconds since t0) by merging neighbouring bins. */
  private fit(t: number): void {
    while (t >= this.binWidth * this.nBins) {
      const half = this.nBins / 2
      const merge = (a: Float64Array, how: "sum" | "max") => {
        for (let b = 0; b < half; b++) {
          const x = a[2 * b]!, y = a[2 * b + 1]!
          a[b] = how === "sum" ? x + y : Math.max(x, y)
        }
        a.fill(0, half)
      }
      for (const r of this.rowState) {
        if (r === undefined) continue
        for (let b = 0; b < half; b++) {
          const l = r.longest[2 * b]! >= r.longest[2 * b + 1]! ? 2 * b : 2 * b + 1
          r.fn[b] = r.fn[l]!
        }
        r.fn.fill(-1, half)
        merge(r.busy, "sum")
        merge(r.cpu, "sum")
        merge(r.longest, "max")
        merge(r.mem, "max")
      }
      merge(this.memTotal, "max")
      this.binWidth *= 2
      this.binEpoch++
    }
  }

  /** The latest engine time seen (seconds since t0): the run's time axis. */
  private saw(t: number): void {
    if (t > this.latest) this.latest = t
  }

  private touch(lo: number, hi: number) {
    if (lo < this.binsTouchedLo) this.binsTouchedLo = lo
    if (hi > this.binsTouchedHi) this.binsTouchedHi = hi
  }

  private push(start: number, end: number, row: number, fn: number, stage: number, kind: number, key: string, cpu: number, bytes: number): void {
    const j = this.written % this.capacity
    this.rStart[j] = start
    this.rEnd[j] = end
    this.rRow[j] = row
    this.rFn[j] = fn
    this.rStage[j] = stage
    this.rKind[j] = kind
    this.rCpu[j] = cpu
    this.rBytes[j] = bytes
    this.rKey[j] = key
    this.written++
  }

  /** Busy time of [start, end) on row `r`, spread over the bins it covers. */
  private occupy(r: Row, start: number, end: number, fn: number, cpu: number): void {
    if (!(end >= start) || !Number.isFinite(start) || !Number.isFinite(end)) return
    this.fit(end)
    this.saw(end)
    const w = this.binWidth
    const lo = Math.max(0, Math.floor(start / w))
    const hi = Math.min(this.nBins - 1, Math.floor(end / w))
    const d = end - start
    for (let b = lo; b <= hi; b++) {
      const part = Math.min(end, (b + 1) * w) - Math.max(start, b * w)
      if (part <= 0 && d > 0) continue
      r.busy[b]! += part
      if (d > 0) r.cpu[b]! += cpu * (part / d)
      if (part >= r.longest[b]!) {
        r.longest[b] = part
        r.fn[b] = fn
      }
    }
    this.touch(lo, hi)
  }

  private group(stage: string | undefined, name: string): Group {
    const c = this.lastGroupCache
    if (c.group !== undefined && c.name === name && c.stage === stage) return c.group
    const s = stage ?? ""
    const k = s + "\u0000" + name
    let g = this.groups.get(k)
    if (g === undefined) {
      g = { id: this.groupList.length, stage: s, name, total: 0, done: 0, erred: 0, running: 0, changed: true }
      this.groups.set(k, g)
      this.groupList.push(g)
      if (stage !== undefined) this.stages.id(stage)
    }
    c.name = name
    c.stage = stage
    c.group = g
    return g
  }

  /** A finished or erred task (the engine's `task` record; read during the call only). */
  task(t: TaskRecord): void {
    const start = t.phases.gather[0] - this.t0
    const end = t.phases.transfer[1] - this.t0
    const r = this.row(t.threadId, t.host)
    const row = this.rows.index.get(t.threadId)!
    const fn = this.functions.id(t.name)
    const erred = t.state === "erred"
    const g = this.group(t.stage, t.name)
    if (erred) g.erred++, this.tasksErred++, r.erred++
    else g.done++, this.tasksDone++
    g.changed = true
    this.tasksSeen++
    r.tasks++
    const d = end - start
    if (Number.isFinite(d) && d > 0) r.busyTotal += d
    r.cpuTotal += t.cpuTime
    if (t.peakMemory !== undefined && t.peakMemory > r.peakTask) r.peakTask = t.peakMemory
    this.occupy(r, start, end, fn, t.cpuTime)
    this.push(start, end, row, fn, t.stage === undefined ? -1 : this.stages.id(t.stage), erred ? KIND_ERRED : KIND_TASK, t.key, t.cpuTime, t.nbytes)
  }

  /** A worker's held bytes changed. */
  memory(m: MemoryRecord): void {
    const r = this.row(m.threadId, m.host)
    const t = m.timestamp - this.t0
    this.fit(Math.max(0, t))
    this.saw(t)
    this.totalBytes += m.bytes - r.bytes
    r.bytes = m.bytes
    r.chunks = m.chunks
    if (m.device !== undefined) r.device = m.device
    const b = Math.min(this.nBins - 1, Math.max(0, Math.floor(t / this.binWidth)))
    if (m.bytes > r.mem[b]!) r.mem[b] = m.bytes
    if (this.totalBytes > this.memTotal[b]!) this.memTotal[b] = this.totalBytes
    this.touch(b, b)
  }

  /** A driver segment. */
  driver(d: DriverRecord): void {
    const r = this.row(d.threadId, d.host)
    const row = this.rows.index.get(d.threadId)!
    const a = this.activities.id(d.activity)
    const start = d.start - this.t0
    const end = d.end - this.t0
    if (d.activity !== "wait") this.occupy(r, start, end, -2 - a, 0)
    else this.fit(Math.max(0, end)), this.saw(end)
    this.push(start, end, row, a, -1, KIND_DRIVER, d.key, 0, 0)
  }

  /** Data moved to a worker. */
  transfer(x: TransferRecord): void {
    this.row(x.threadId, x.host)
    const row = this.rows.index.get(x.threadId)!
    const start = x.start - this.t0
    const end = x.stop - this.t0
    this.fit(Math.max(0, end))
    this.saw(end)
    const from = x.peer ?? (x.direction === "device-to-host" ? "device" : x.direction === "host-to-device" ? "host" : "?")
    const k = from + "\u0000" + x.threadId
    let p = this.pairs.get(k)
    if (p === undefined) {
      p = { from, to: x.threadId, bytes: 0, count: 0, seconds: 0, changed: true }
      this.pairs.set(k, p)
    }
    p.bytes += x.bytes
    p.count++
    p.seconds += Math.max(0, x.stop - x.start)
    p.changed = true
    this.transfers++
    this.transferBytes += x.bytes
    this.push(start, end, row, -1, -1, KIND_TRANSFER, x.keys.length === 1 ? x.keys[0]! : `${x.keys.length} keys`, 0, x.bytes)
  }

  /** A compute started: its groups' totals are counted on the next tick, not here. */
  startState(graph: TaskGraph, state: SchedulerState): void {
    this.computes.add({ graph, state, groupOf: null })
    this.computeStart = nowSeconds() - this.t0
    this.computesStarted++
    this.over = false
  }

  /** A compute finished (`failed`: a task erred or it was interrupted). */
  finish(_graph: TaskGraph, state: SchedulerState, failed = false): void {
    if (failed) this.computesFailed++
    for (const c of this.computes) {
      if (c.state !== state) continue
      this.countTotals(c)
      this.computes.delete(c)
    }
    this.computesFinished++
  }

  /** Marks the run over (the layer closed): the page shows its final state. */
  close(): void {
    this.drain()
    for (const c of this.computes) this.countTotals(c)
    this.computes.clear()
    for (const g of this.groupList) if (g.running !== 0) (g.running = 0), (g.changed = true)
    this.over = true
  }

  /** A recorded run is loaded (Replay.ts): over, its time axis `wall` long, nothing left to send live. */
  finishReplay(wall: number): void {
    this.fit(Math.max(0, wall))
    this.saw(wall)
    this.sentUpTo = this.written
    this.over = true
  }

  private readonly workerRows: Array<Row | undefined> = []
  private readonly workerRowIds: Array<number> = []
  private readonly workerEnd: Array<number> = []
  /** when the latest compute started (seconds since t0): the light hooks' rectangles start no earlier */
  private computeStart = 0

  // light hooks: each result's arrival, kept raw (four writes, no lookups) until `drain`
  private readonly pendingCap = 1 << 16
  private readonly pKey: Array<string> = new Array<string>(1 << 16).fill("")
  private readonly pGraph: Array<TaskGraph | undefined> = new Array<TaskGraph | undefined>(1 << 16).fill(undefined)
  private readonly pWorker = new Int32Array(1 << 16)
  private readonly pTime = new Float64Array(1 << 16)
  private pending = 0

  /** Light hooks: a task's result reached the driver (see `callbacks`). */
  posttask(key: string, graph: TaskGraph, workerId: number): void {
    const j = this.pending++
    this.pKey[j] = key
    this.pGraph[j] = graph
    this.pWorker[j] = workerId
    this.pTime[j] = performance.now()
    this.tasksSeen++
    if (this.pending === this.pendingCap) this.drain()
  }

  /**
   * Turns the light hooks' raw arrivals into rectangles, groups and bins (on each tick,
   * off the engine's path). A rectangle runs from the worker's previous result (or the
   * compute's start) to this one: the driver's view of the worker's time.
   */
  drain(): void {
    // the stack samples handed over since the last tick (`LiveFlame`), folded here too:
    // a tick drains whether or not a page watches, so nothing piles up
    this.liveFlame?.fold()
    const n = this.pending
    this.pending = 0
    for (let j = 0; j < n; j++) {
      const graph = this.pGraph[j]!
      const key = this.pKey[j]!
      this.pGraph[j] = undefined
      const i = graph.index.get(key)
      if (i === undefined) continue
      const workerId = this.pWorker[j]!
      const end = (origin + this.pTime[j]!) / 1000 - this.t0
      let r = this.workerRows[workerId]
      if (r === undefined) {
        const thread = `worker-${this.host}-${workerId}`
        r = this.row(thread, this.host)
        this.workerRows[workerId] = r
        this.workerRowIds[workerId] = this.rows.index.get(thread)!
      }
      const start = Math.min(end, Math.max(this.workerEnd[workerId] ?? this.computeStart, this.computeStart))
      this.workerEnd[workerId] = end
      const name = graph.names[i]!
      const stage = graph.specs[i]!.stage
      const fn = this.functions.id(name)
      const g = this.group(stage, name)
      g.done++
      g.changed = true
      this.tasksDone++
      r.tasks++
      r.busyTotal += end - start
      this.occupy(r, start, end, fn, 0)
      this.push(start, end, this.workerRowIds[workerId]!, fn, stage === undefined ? -1 : this.stages.id(stage), KIND_TASK, key, 0, 0)
    }
  }

  /**
   * The callbacks that feed this state (what `Dashboard.layer` adds to the engine's).
   *
   * - `records: true`: the engine's task and memory records, each task's own times
   *   measured in the thread that ran it, its CPU time, held bytes per worker. The engine
   *   builds those records only when some hook asks for them, at a cost on tiny tasks
   *   (docs/dashboard.md: a no-op fan-out runs several times slower), which a profiler
   *   (`--profile`) pays anyway.
   * - `records: false` (light): the scheduler's `posttask` hook, which only notes the
   *   key, worker and time (`drain` does the rest on the next tick): exact counts and
   *   progress; rectangles on the driver's clock, from the worker's previous result to
   *   this one (tasks of a batch arrive together); no CPU time or held bytes.
   *
   * Both take the driver's segments and the data transfers (cheap: a few per compute,
   * one per cluster fetch).
   */
  callbacks(options: { readonly records?: boolean; readonly sample?: LiveSampling } = {}): Callbacks {
    const sampling = options.sample === undefined ? {} : this.sampling(options.sample)
    if (options.records !== true) {
      this.light = true
      return {
        ...sampling,
        startState: (g, s) => this.startState(g, s),
        finish: (g, s, f) => this.finish(g, s, f),
        posttask: (k, _r, g, _s, w) => this.posttask(k, g, w),
        driver: (d) => this.driver(d),
        transfer: (x) => this.transfer(x)
      }
    }
    return {
      ...sampling,
      startState: (g, s) => this.startState(g, s),
      finish: (g, s, f) => this.finish(g, s, f),
      task: (t) => this.task(t),
      memory: (m) => this.memory(m),
      driver: (d) => this.driver(d),
      transfer: (x) => this.transfer(x),
      transientRecords: true
    }
  }

  /**
   * The sampling part of the callbacks (`LiveSampling`): a request at its interval with a
   * short flush, and a `samples` method that hands each record to the live flame
   * structure, folded on the tick.
   */
  private sampling(o: LiveSampling): Pick<Callbacks, "sampling" | "samples"> {
    const flame = (this.liveFlame ??= new LiveFlame(this.t0, o.bounds))
    const request = { interval: o.interval ?? 10, flushSeconds: o.flushSeconds ?? 1 }
    flame.flushSeconds = Sampling.flushOf(request)
    return {
      sampling: request,
      samples: (r) => flame.push(r)
    }
  }

  /** One host resource sample (cpu %, bytes of memory used), kept to at most 2,000 per host by halving. */
  resourceSample(host: string, epochSeconds: number, cpu: number, mem: number): void {
    const h = this.hosts.id(host)
    const r = (this.resources[h] ??= { t: [], cpu: [], mem: [] })
    const t = epochSeconds - this.t0
    this.fit(Math.max(0, t))
    r.t.push(t)
    r.cpu.push(cpu)
    r.mem.push(mem)
    if (r.t.length > 2000) {
      const keep = (a: Array<number>) => a.filter((_, i) => i % 2 === 0)
      r.t = keep(r.t)
      r.cpu = keep(r.cpu)
      r.mem = keep(r.mem)
    }
  }

  // ---- reading -----------------------------------------------------------------

  /** Counts each of the compute's groups' total, once per compute. */
  private countTotals(c: Compute): Int32Array {
    if (c.groupOf !== null) return c.groupOf
    const { graph, state } = c
    const groupOf = new Int32Array(graph.size).fill(-1)
    const flame = this.liveFlame
    for (let i = 0; i < graph.size; i++) {
      if (!state.needed[i]) continue
      const spec = graph.specs[i]!
      const g = this.group(spec.stage, graph.names[i]!)
      g.total++
      g.changed = true
      groupOf[i] = g.id
      // the live flame's stages: which stages each kernel ran in
      if (flame !== null) flame.kernelStage(spec.kernel.name, spec.stage ?? "")
    }
    c.groupOf = groupOf
    return groupOf
  }

  /** The running count of each group: the scheduler states of the computes in flight, read now. */
  private refreshRunning(): void {
    for (const g of this.groupList) if (g.running !== 0) (g.running = 0), (g.changed = true)
    for (const c of this.computes) {
      const groupOf = this.countTotals(c)
      const { graph, state } = c
      if (state.runningCount === 0) continue
      for (let i = 0; i < graph.size; i++) {
        if (state.running[i] && groupOf[i]! >= 0) {
          const g = this.groupList[groupOf[i]!]!
          g.running++
          g.changed = true
        }
      }
    }
  }

  /** The rectangle with this id, when still in the ring. */
  rect(id: number): Rect | undefined {
    if (id < 0 || id >= this.written || id < this.written - this.capacity) return undefined
    const j = id % this.capacity
    return {
      id,
      start: this.rStart[j]!,
      end: this.rEnd[j]!,
      row: this.rRow[j]!,
      fn: this.rFn[j]!,
      stage: this.rStage[j]!,
      kind: this.rKind[j]!,
      key: this.rKey[j]!,
      cpu: this.rCpu[j]!,
      bytes: this.rBytes[j]!
    }
  }

  /** The oldest rectangle id still held. */
  get oldest(): number {
    return Math.max(0, this.written - this.capacity)
  }

  /** Columns of rectangles [from, to) (ids), times rounded to 0.1 ms. */
  rectColumns(ids: Iterable<number>): RectColumns {
    const out: RectColumns = { id: [], s: [], e: [], r: [], f: [], k: [] }
    for (const id of ids) {
      const j = id % this.capacity
      out.id.push(id)
      out.s.push(Math.round(this.rStart[j]! * 1e4) / 1e4)
      out.e.push(Math.round(this.rEnd[j]! * 1e4) / 1e4)
      out.r.push(this.rRow[j]!)
      out.f.push(this.rFn[j]!)
      out.k.push(this.rKind[j]!)
    }
    return out
  }

  /** Ids of the held rectangles intersecting [from, to] (seconds), at most `limit`, and how many intersect in all. */
  detailIn(from: number, to: number, limit: number): { readonly ids: Array<number>; readonly count: number; readonly complete: boolean } {
    const ids: Array<number> = []
    let count = 0
    for (let id = this.oldest; id < this.written; id++) {
      const j = id % this.capacity
      if (this.rEnd[j]! < from || this.rStart[j]! > to) continue
      count++
      if (ids.length < limit) ids.push(id)
    }
    // complete when the ring still holds everything since the window's start
    const complete = this.oldest === 0 || this.rEnd[this.oldest % this.capacity]! <= from
    return { ids, count, complete }
  }

  /** The newest rectangles not yet sent (at most `maxRectsPerTick`; older ones are shed). */
  takeNew(): Array<number> {
    const from = Math.max(this.sentUpTo, this.written - this.maxRectsPerTick)
    this.shed += from - this.sentUpTo
    const ids: Array<number> = []
    for (let id = from; id < this.written; id++) ids.push(id)
    this.sentUpTo = this.written
    return ids
  }

  /** The latest `n` rectangles held. */
  latestIds(n: number): Array<number> {
    const ids: Array<number> = []
    for (let id = Math.max(this.oldest, this.written - n); id < this.written; id++) ids.push(id)
    return ids
  }

  private rowsSummary() {
    return this.rowState.map((r, i) => ({
      name: this.rows.names[i]!,
      tasks: r.tasks,
      erred: r.erred,
      busy: r.busyTotal,
      cpu: r.cpuTotal,
      bytes: r.bytes,
      chunks: r.chunks,
      device: r.device,
      peakTask: r.peakTask
    }))
  }

  private binsSlice(lo: number, hi: number) {
    const round = (a: Float64Array) => Array.from(a.subarray(lo, hi + 1), (v) => Math.round(v * 1e4) / 1e4)
    return {
      lo,
      busy: this.rowState.map((r) => round(r.busy)),
      cpu: this.rowState.map((r) => round(r.cpu)),
      fn: this.rowState.map((r) => Array.from(r.fn.subarray(lo, hi + 1))),
      mem: this.rowState.map((r) => Array.from(r.mem.subarray(lo, hi + 1))),
      total: Array.from(this.memTotal.subarray(lo, hi + 1))
    }
  }

  /**
   * The whole state as a page starts from: dictionaries, every group, every row, all
   * bins, pairs, resources and the latest `recent` rectangles.
   */
  snapshot(recent = 5000): Snapshot {
    this.drain()
    this.refreshRunning()
    const hi = Math.min(this.nBins - 1, Math.floor(this.latest / this.binWidth))
    return {
      type: "snapshot",
      t: this.latest,
      over: this.over,
      rows: [...this.rows.names],
      functions: [...this.functions.names],
      stages: [...this.stages.names],
      activities: [...this.activities.names],
      hosts: [...this.hosts.names],
      binWidth: this.binWidth,
      binEpoch: this.binEpoch,
      bins: this.binsSlice(0, Math.max(0, hi)),
      groups: this.groupList.map(groupRow),
      workers: this.rowsSummary(),
      pairs: [...this.pairs.values()].map(pairRow),
      resources: this.resources.map((r) => ({ t: [...r.t], cpu: [...r.cpu], mem: [...r.mem] })),
      rects: this.rectColumns(this.latestIds(recent)),
      counts: this.counts()
    }
  }

  counts(): Counts {
    return {
      tasks: this.tasksSeen,
      done: this.tasksDone,
      erred: this.tasksErred,
      rects: this.written,
      held: this.written - this.oldest,
      shed: this.shed,
      transfers: this.transfers,
      transferBytes: this.transferBytes,
      computes: this.computesStarted,
      computesDone: this.computesFinished,
      computesFailed: this.computesFailed,
      running: [...this.computes].reduce((a, c) => a + c.state.runningCount, 0),
      capacity: this.capacity,
      light: this.light
    }
  }

  /**
   * What changed since the last delta: new rectangles (at most `maxRectsPerTick`),
   * dictionary entries from the lengths the pages know, touched bins (all of them after
   * a merge), changed groups, rows and pairs, new resource samples.
   */
  delta(known: { rows: number; functions: number; stages: number; activities: number; hosts: number; binEpoch: number; resources: Array<number> }): Delta {
    this.drain()
    this.refreshRunning()
    const merged = known.binEpoch !== this.binEpoch
    let bins: Delta["bins"] = null
    const hi = Math.min(this.nBins - 1, Math.floor(this.latest / this.binWidth))
    if (merged) bins = this.binsSlice(0, Math.max(0, hi))
    else if (this.binsTouchedHi >= 0) bins = this.binsSlice(Math.min(this.binsTouchedLo, hi), Math.max(this.binsTouchedHi, hi))
    this.binsTouchedLo = Infinity
    this.binsTouchedHi = -1
    const groups = this.groupList.filter((g) => g.changed).map(groupRow)
    for (const g of this.groupList) g.changed = false
    const pairs = [...this.pairs.values()].filter((p) => p.changed).map(pairRow)
    for (const p of this.pairs.values()) p.changed = false
    const d: Delta = {
      type: "delta",
      from: { rows: known.rows, functions: known.functions, stages: known.stages, activities: known.activities, hosts: known.hosts },
      t: this.latest,
      over: this.over,
      rows: this.rows.names.slice(known.rows),
      functions: this.functions.names.slice(known.functions),
      stages: this.stages.names.slice(known.stages),
      activities: this.activities.names.slice(known.activities),
      hosts: this.hosts.names.slice(known.hosts),
      binWidth: this.binWidth,
      binEpoch: this.binEpoch,
      bins,
      groups,
      workers: this.rowsSummary(),
      pairs,
      resources: this.resources.map((r, h) => {
        const from = known.resources[h] ?? 0
        // after a halving the page takes the whole series again
        return from > r.t.length ? { from: 0, t: [...r.t], cpu: [...r.cpu], mem: [...r.mem] } : { from, t: r.t.slice(from), cpu: r.cpu.slice(from), mem: r.mem.slice(from) }
      }),
      rects: this.rectColumns(this.takeNew()),
      counts: this.counts()
    }
    known.rows = this.rows.names.length
    known.functions = this.functions.names.length
    known.stages = this.stages.names.length
    known.activities = this.activities.names.length
    known.hosts = this.hosts.names.length
    known.binEpoch = this.binEpoch
    known.resources = this.resources.map((r) => r.t.length)
    return d
  }
}

const groupRow = (g: Group) => ({ id: g.id, stage: g.stage, name: g.name, total: Math.max(g.total, g.done + g.erred), done: g.done, erred: g.erred, running: g.running })
const pairRow = (p: Pair) => ({ from: p.from, to: p.to, bytes: p.bytes, count: p.count, seconds: p.seconds })

/**
 * Rectangles in columns: ids, start and end (seconds since t0), row, function (or
 * activity), kind.
 *
 * @since 0.1.0
 * @category models
 */
export interface RectColumns {
  id: Array<number>
  s: Array<number>
  e: Array<number>
  r: Array<number>
  f: Array<number>
  k: Array<number>
}

/**
 * Exact counts of the run.
 *
 * @since 0.1.0
 * @category models
 */
export interface Counts {
  readonly tasks: number
  readonly done: number
  readonly erred: number
  readonly rects: number
  readonly held: number
  readonly shed: number
  readonly transfers: number
  readonly transferBytes: number
  readonly computes: number
  readonly computesDone: number
  readonly computesFailed: number
  readonly running: number
  readonly capacity: number
  /** fed by the light hooks (the driver's view) */
  readonly light: boolean
}

/**
 * Bins of every row from bin `lo` on: busy and CPU seconds, the longest task's function
 * (`-1` none, `-2 - a` driver activity `a`), peak held bytes; the cluster-wide total.
 *
 * @since 0.1.0
 * @category models
 */
export interface Bins {
  readonly lo: number
  readonly busy: Array<Array<number>>
  readonly cpu: Array<Array<number>>
  readonly fn: Array<Array<number>>
  readonly mem: Array<Array<number>>
  readonly total: Array<number>
}

/**
 * A page's starting state.
 *
 * @since 0.1.0
 * @category models
 */
export interface Snapshot {
  readonly type: "snapshot"
  readonly t: number
  readonly over: boolean
  readonly rows: Array<string>
  readonly functions: Array<string>
  readonly stages: Array<string>
  readonly activities: Array<string>
  readonly hosts: Array<string>
  readonly binWidth: number
  readonly binEpoch: number
  readonly bins: Bins
  readonly groups: Array<ReturnType<typeof groupRow>>
  readonly workers: Array<{ name: string; tasks: number; erred: number; busy: number; cpu: number; bytes: number; chunks: number; device: number; peakTask: number }>
  readonly pairs: Array<ReturnType<typeof pairRow>>
  readonly resources: Array<{ t: Array<number>; cpu: Array<number>; mem: Array<number> }>
  readonly rects: RectColumns
  readonly counts: Counts
}

/**
 * A tick's changes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Delta extends Omit<Snapshot, "type" | "bins" | "resources"> {
  readonly type: "delta"
  /** where the dictionaries' new entries go (a page that joined later already has some) */
  readonly from: { readonly rows: number; readonly functions: number; readonly stages: number; readonly activities: number; readonly hosts: number }
  readonly bins: Bins | null
  readonly resources: Array<{ from: number; t: Array<number>; cpu: Array<number>; mem: Array<number> }>
}

/**
 * The Profile tab during a run: the engine's stack samples (`Sampling.SampleRecord`,
 * one per worker thread per flush) folded into a bounded structure — time bins × (call
 * tree node, function) with sample counts and seconds — from which the server answers
 * `/api/flame?from&to&fn` with the report's flame payload (`report/FlameGraph.ts`
 * `flamePayload`'s binned shape, drawn by the same `flameCode`).
 *
 * - The hook (`push`) keeps the record (the engine hands it over: its arrays are the
 *   hook's) and returns; `fold` (on the server's tick and before an answer) does the work.
 * - Bounded: at most `nBins` time bins; when the run outgrows them, neighbouring bins
 *   merge (the width doubles), as the task stream's bins do. What is shed is time
 *   resolution: a window is followed to whole bins (a bin counts when its middle is in
 *   it); the totals stay exact. The call tree grows with the program's distinct stacks,
 *   not the run's length; past `maxNodes` nodes a new stack is cut at its deepest known
 *   frame (counted in `cutSamples`, said on the page).
 * - The first level (function) is the task's kernel: the frame the worker's batch loop
 *   (`runBatch` in engine/internal/worker.ts) called; a sample without it is "idle" (a
 *   worker between tasks). A sample carries no task, so its stage is its kernel's: the
 *   stages the computes' tasks of that kernel (by its export name, `KernelRef.name`)
 *   belong to (`kernelStage`), "a | b" for a kernel of several (at most 8 named), ""
 *   for idle and a kernel no task named.
 * - A sample's seconds: V8's interval before it, cut at `maxSampleSeconds` of the
 *   sampling interval (the profiler's rule for a late gap: a thread that was not
 *   running is not charged).
 *
 * @since 0.1.0
 */
import type { SampleRecord } from "../engine/Sampling.ts"
import type { FlameRows } from "../report/FlameGraph.ts"
import { maxSampleSeconds } from "../trace/SampleEvents.ts"

/**
 * Bounds of the live flame structure.
 *
 * @since 0.1.0
 * @category models
 */
export interface LiveFlameOptions {
  /** time bins kept (default 128) */
  readonly nBins?: number
  /** width of a bin at the start (seconds, default 0.25; doubles as the run outgrows the bins) */
  readonly binWidth?: number
  /** call tree nodes kept (default 20,000) */
  readonly maxNodes?: number
}

/**
 * What the tab asks for: a window (seconds since `t0`, either end open) and a function
 * (its name; undefined: all).
 *
 * @since 0.1.0
 * @category models
 */
export interface FlameQuery {
  readonly from?: number
  readonly to?: number
  readonly fn?: string
  /** a stage label as the payload's `stages` names it */
  readonly stage?: string
}

/** stages named per kernel, at most */
const MAX_KERNEL_STAGES = 8

/** the worker's batch loop: the frame it calls is the task's kernel */
const isBatchLoop = (functionName: string, url: string): boolean =>
  functionName === "runBatch" && url.endsWith("/engine/internal/worker.ts")

/**
 * The live flame structure of one dashboard.
 *
 * @since 0.1.0
 * @category models
 */
export class LiveFlame {
  readonly t0: number
  readonly nBins: number
  readonly maxNodes: number
  binWidth: number
  /** frames: label and location */
  readonly names: Array<string> = []
  readonly locs: Array<string> = []
  private readonly frameIds = new Map<string, number>()
  /** call tree: parent node (-1: a root) and frame of each node */
  readonly parent: Array<number> = []
  readonly frame: Array<number> = []
  /** the kernel (function index) under each node, -1: idle */
  private readonly kernel: Array<number> = []
  private readonly nodeIds = new Map<string, number>()
  /** functions (first level): "idle" first */
  readonly fns: Array<string> = ["idle"]
  private readonly fnIds = new Map<string, number>([["idle", 0]])
  /** per bin: ((node + 1) · 4096 + function) → [samples, µs] (node -1: no frame) */
  private bins: Array<Map<number, [number, number]>>
  /** the stages of each kernel (export name) */
  private readonly stagesOf = new Map<string, Set<string>>()
  /** records handed over, not folded yet */
  private pending: Array<SampleRecord> = []
  /** samples folded, their seconds, samples cut to a shorter stack, records folded */
  samples = 0
  seconds = 0
  cutSamples = 0
  records = 0
  /** the latest sample time folded (seconds since t0) */
  latest = 0
  /** how often the workers hand their samples over (seconds; what the dashboard asked for) */
  flushSeconds = 1

  constructor(t0: number, options: LiveFlameOptions = {}) {
    this.t0 = t0
    this.nBins = Math.max(2, Math.floor(options.nBins ?? 128))
    this.binWidth = options.binWidth ?? 0.25
    this.maxNodes = Math.max(1, Math.floor(options.maxNodes ?? 20_000))
    this.bins = Array.from({ length: this.nBins }, () => new Map())
  }

  /** The hook's side: keeps the record for the next `fold` (no work on the engine's thread beyond this). */
  push(record: SampleRecord): void {
    this.pending.push(record)
  }

  /** Notes that a task of kernel `name` (its export name) belongs to `stage`. */
  kernelStage(name: string, stage: string): void {
    if (stage === "") return
    let set = this.stagesOf.get(name)
    if (set === undefined) this.stagesOf.set(name, set = new Set())
    if (set.size < MAX_KERNEL_STAGES + 1) set.add(stage)
  }

  /** A function's stage label: its kernel's stages. */
  private stageLabel(fn: number): string {
    const set = fn === 0 ? undefined : this.stagesOf.get(this.fns[fn]!)
    if (set === undefined || set.size === 0) return ""
    const list = [...set].sort()
    return list.length > MAX_KERNEL_STAGES ? `${list.slice(0, MAX_KERNEL_STAGES).join(" | ")} | …` : list.join(" | ")
  }

  /** Records handed over and not folded yet. */
  pendingRecords(): number {
    return this.pending.length
  }

  /** Folds the records handed over since the last call. */
  fold(): void {
    const list = this.pending
    if (list.length === 0) return
    this.pending = []
    for (const r of list) this.foldRecord(r)
  }

  private frameOf(functionName: string, url: string, line: number, column: number): number {
    const key = `${functionName}\u0000${url}\u0000${line}\u0000${column}`
    let id = this.frameIds.get(key)
    if (id === undefined) {
      this.frameIds.set(key, id = this.names.length)
      this.names.push(functionName === "" ? "(anonymous)" : functionName)
      this.locs.push(url === "" ? "" : line < 0 ? url : `${url}:${line + 1}:${column + 1}`)
    }
    return id
  }

  private fnOf(name: string): number {
    let id = this.fnIds.get(name)
    if (id !== undefined) return id
    // a key holds the function in 12 bits: past 4,095 kernels, the rest share one
    if (this.fns.length >= 4095) return this.fnOf("(other functions)")
    this.fnIds.set(name, id = this.fns.push(name) - 1)
    return id
  }

  private foldRecord(r: SampleRecord): void {
    this.records++
    // the record's nodes onto the shared tree, parents first (V8 lists them so; a parent
    // later in the list is resolved when reached)
    const byId = new Map<number, number>()
    const loopOf = new Map<number, boolean>()
    const local = new Map<number, (typeof r.nodes)[number]>()
    for (const n of r.nodes) local.set(n.id, n)
    const resolve = (id: number): number => {
      const known = byId.get(id)
      if (known !== undefined) return known
      const n = local.get(id)
      if (n === undefined) return -1
      // V8's "(root)" is no frame (the profiler's call trees leave it out too)
      if (n.parent === 0 && n.functionName === "(root)") {
        byId.set(id, -1)
        return -1
      }
      const p = n.parent === 0 ? -1 : resolve(n.parent)
      const f = this.frameOf(n.functionName, n.url, n.line, n.column)
      const parentIsLoop = n.parent !== 0 && loopOf.get(n.parent) === true
      loopOf.set(id, isBatchLoop(n.functionName, n.url))
      const key = `${p},${f}`
      let v = this.nodeIds.get(key)
      if (v === undefined) {
        if (this.parent.length >= this.maxNodes) {
          byId.set(id, p)
          return p
        }
        this.nodeIds.set(key, v = this.parent.length)
        this.parent.push(p)
        this.frame.push(f)
        this.kernel.push(parentIsLoop ? this.fnOf(this.names[f]!) : p >= 0 ? this.kernel[p]! : 0)
      }
      byId.set(id, v)
      return v
    }
    const cut = maxSampleSeconds(r.interval)
    for (let q = 0; q < r.samples.length; q++) {
      const local0 = local.get(r.samples[q]!)
      // -1: no frame (V8's root, or a node the record lacks): counted under "idle" alone
      const v = resolve(r.samples[q]!)
      // a node dropped at the cap: the sample stands on its deepest kept ancestor
      if (v >= 0 && local0 !== undefined && this.frame[v] !== this.frameOf(local0.functionName, local0.url, local0.line, local0.column)) this.cutSamples++
      const t = r.times[q]! - this.t0
      const us = Math.round(Math.min(r.deltas[q]!, cut) * 1e6)
      this.fit(t)
      const b = Math.min(this.nBins - 1, Math.max(0, Math.floor(t / this.binWidth)))
      const k = (v + 1) * 4096 + (v >= 0 ? this.kernel[v]! : 0)
      const bin = this.bins[b]!
      const e = bin.get(k)
      if (e === undefined) bin.set(k, [1, us])
      else {
        e[0]++
        e[1] += us
      }
      this.samples++
      this.seconds += us / 1e6
      if (t > this.latest) this.latest = t
    }
  }

  /** Makes room for time `t` by merging neighbouring bins (the width doubles). */
  private fit(t: number): void {
    while (t >= this.nBins * this.binWidth) {
      const next: Array<Map<number, [number, number]>> = Array.from({ length: this.nBins }, () => new Map())
      for (let b = 0; b < this.nBins; b++) {
        const into = next[b >> 1]!
        for (const [k, [c, us]] of this.bins[b]!) {
          const e = into.get(k)
          if (e === undefined) into.set(k, [c, us])
          else {
            e[0] += c
            e[1] += us
          }
        }
      }
      this.bins = next
      this.binWidth *= 2
    }
  }

  /** Bins kept now (those with samples), for tests: per bin its total samples and µs. */
  binTotals(): Array<{ readonly bin: number; readonly samples: number; readonly us: number }> {
    const out: Array<{ bin: number; samples: number; us: number }> = []
    this.bins.forEach((m, bin) => {
      let samples = 0, us = 0
      for (const [c, u] of m.values()) {
        samples += c
        us += u
      }
      if (samples > 0) out.push({ bin, samples, us })
    })
    return out
  }

  /**
   * The report's flame payload (binned: `c` counts, `bin` the bins' width) of the bins
   * whose middle is in the query's window, summed per (call tree node, function), of its
   * function or stage: at most one row per distinct (stack, function) pair, whatever the
   * window; each row's time is the window's middle (the page filters by it again).
   */
  payload(q: FlameQuery = {}): {
    readonly names: ReadonlyArray<string>
    readonly locs: ReadonlyArray<string>
    readonly parent: ReadonlyArray<number>
    readonly frame: ReadonlyArray<number>
    readonly fns: ReadonlyArray<string>
    readonly stages: ReadonlyArray<string>
    readonly bin: number
    readonly samples: FlameRows
  } {
    this.fold()
    const want = q.fn === undefined ? -1 : this.fns.indexOf(q.fn)
    // stages: "" first, then each function's label as first met
    const stages = [""]
    const stageOfFn = this.fns.map((_, fn) => {
      const label = this.stageLabel(fn)
      let i = stages.indexOf(label)
      if (i < 0) i = stages.push(label) - 1
      return i
    })
    const wantStage = q.stage === undefined ? -1 : stages.indexOf(q.stage)
    // the selected bins summed per (node, function): the answer grows with the call tree,
    // not with the bins; each row stands at the window's middle (in it, for the page's own filter)
    const sums = new Map<number, [number, number]>()
    for (let b = 0; b < this.nBins; b++) {
      const mid = (b + 0.5) * this.binWidth
      if ((q.from !== undefined && mid < q.from) || (q.to !== undefined && mid > q.to)) continue
      for (const [k, [c, us]] of this.bins[b]!) {
        const fn = k % 4096
        if (q.fn !== undefined && fn !== want) continue
        if (q.stage !== undefined && stageOfFn[fn] !== wantStage) continue
        const e = sums.get(k)
        if (e === undefined) sums.set(k, [c, us])
        else {
          e[0] += c
          e[1] += us
        }
      }
    }
    const at = q.from !== undefined && q.to !== undefined ? (q.from + q.to) / 2 : q.from ?? q.to ?? 0
    const rows: FlameRows = { t: [], w: [], node: [], fn: [], stage: [], c: [] }
    for (const [k, [c, us]] of sums) {
      const fn = k % 4096
      rows.t.push(at)
      rows.w.push(us / 1e6)
      rows.node.push(Math.floor(k / 4096) - 1)
      rows.fn.push(fn)
      rows.stage.push(stageOfFn[fn]!)
      rows.c!.push(c)
    }
    return { names: this.names, locs: this.locs, parent: this.parent, frame: this.frame, fns: this.fns, stages, bin: this.binWidth, samples: rows }
  }
}

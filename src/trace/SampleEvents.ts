/**
 * The statistical profiler's events (issue 18): stack samples of every sampled thread,
 * each attributed to the task it ran in, written to the profiler's own database
 * (`{name}-StatisticalProfiler-{host}.msgpack`, DASF's framing and event fields; DASF's
 * reader reads the events and its analyser ignores their names).
 *
 * - `Profile Stacks` (I, scope `p`, `thread_id` null): the frames and call-tree nodes
 *   first seen since the previous one. Frames get ids `frame0, frame0+1, …` (args
 *   `functions`, `urls`, `lines`, `columns`: V8's call frame, line and column 0-based),
 *   nodes ids `node0, …` (args `parents`: parent node, 0 for a top-level frame;
 *   `frames`: the node's frame). Ids are per file (per host), from 1, in order.
 * - `Profile Samples` (X, `thread_id` the sampled thread: `worker-{host}-{i}` or
 *   `driver`): one thread's samples over `[timestamp - duration, timestamp]` (epoch
 *   seconds): args `interval` (seconds), `stacks` (the innermost node of each sample),
 *   `offsets` (µs since the event's start, integers), `weights` (µs of thread time each
 *   sample stands for, integers: V8's real interval before it, within its function's
 *   tasks, see `StatisticalProfiler.attribute`), `tasks` (0: no task — idle on a
 *   worker, the driver's own work on `driver`; i: the task `keys[i-1]`, whose function
 *   is `names[i-1]` and stage `stages[i-1]`, "" when none).
 *
 * Files written before `weights` existed (Tessera before issue 31) read with an
 * estimate (`estimateWeights`): the gap to the same thread's next sample, up to about
 * `interval` (`sampleSeconds`), half of it where the next sample is another function's.
 *
 * `SampleEncoder` makes the events (interning frames and nodes), `ProfileReader` folds
 * them back (from several files, ids made global), `readProfilePromise` reads files,
 * decoding only these events (the records whose name is one of them).
 *
 * @since 0.1.0
 */
import { decodeEventUnsafe, headerBytes, scanFramesUnsafe, streamFrames } from "./TraceFormat.ts"
import type { TraceEvent } from "./TraceEvent.ts"

/**
 * Event names.
 *
 * @since 0.1.0
 * @category constants
 */
export const SampleEventNames = { stacks: "Profile Stacks", samples: "Profile Samples" } as const

/**
 * Thread id of the main thread's samples.
 *
 * @since 0.1.0
 * @category constants
 */
export const driverThread = "driver"

/**
 * One call frame.
 *
 * @since 0.1.0
 * @category models
 */
export interface Frame {
  readonly functionName: string
  readonly url: string
  /** 0-based, as V8 gives it */
  readonly line: number
  /** 0-based */
  readonly column: number
}

/**
 * One thread's samples to encode: the call tree (ids from V8, `parent` 0 for the root's
 * children… and the root itself), per sample the node and its time (epoch seconds),
 * and the attribution (`task[q]`: 0 none, i → `keys[i-1]`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ThreadSamples {
  readonly host: string
  readonly threadId: string
  readonly interval: number
  readonly nodes: ReadonlyArray<Frame & { readonly id: number; readonly parent: number }>
  readonly samples: ArrayLike<number>
  readonly times: ArrayLike<number>
  readonly task: ArrayLike<number>
  readonly keys: ReadonlyArray<string>
  readonly names: ReadonlyArray<string>
  readonly stages: ReadonlyArray<string>
  /** seconds of thread time each sample stands for; without them, none are written (readers estimate them) */
  readonly weights?: ArrayLike<number>
}

/**
 * Interns frames and call-tree nodes of one host's samples and makes their events.
 *
 * @since 0.1.0
 * @category encoding
 */
export class SampleEncoder {
  private readonly frameIds = new Map<string, number>()
  private readonly nodeIds = new Map<string, number>()
  private nextFrame = 1
  private nextNode = 1

  /** The events of one thread's samples: a `Profile Stacks` first when there are new frames or nodes. */
  encode(t: ThreadSamples): Array<TraceEvent> {
    const n = t.samples.length
    if (n === 0) return []
    const frame0 = this.nextFrame
    const node0 = this.nextNode
    const nf = { functions: [] as Array<string>, urls: [] as Array<string>, lines: [] as Array<number>, columns: [] as Array<number> }
    const parents: Array<number> = []
    const frames: Array<number> = []
    const byId = new Map<number, (typeof t.nodes)[number]>()
    for (const v of t.nodes) byId.set(v.id, v)
    const mapped = new Map<number, number>()
    const nodeOf = (id: number): number => {
      const got = mapped.get(id)
      if (got !== undefined) return got
      const v = byId.get(id)
      // V8's root, or a node we do not know: the root (0)
      if (v === undefined || (v.parent === 0 && v.functionName === "(root)")) return mapped.set(id, 0), 0
      const parent = nodeOf(v.parent)
      const fk = `${v.functionName}\u0000${v.url}\u0000${v.line}\u0000${v.column}`
      let f = this.frameIds.get(fk)
      if (f === undefined) {
        this.frameIds.set(fk, f = this.nextFrame++)
        nf.functions.push(v.functionName)
        nf.urls.push(v.url)
        nf.lines.push(v.line)
        nf.columns.push(v.column)
      }
      const nk = `${parent}:${f}`
      let node = this.nodeIds.get(nk)
      if (node === undefined) {
        this.nodeIds.set(nk, node = this.nextNode++)
        parents.push(parent)
        frames.push(f)
      }
      mapped.set(id, node)
      return node
    }
    const stacks = new Array<number>(n)
    for (let q = 0; q < n; q++) stacks[q] = nodeOf(t.samples[q]!)
    const out: Array<TraceEvent> = []
    if (parents.length > 0 || nf.functions.length > 0) {
      out.push({
        name: SampleEventNames.stacks,
        timestamp: t.times[0]!,
        phase: "I",
        scope: "p",
        process_id: t.host,
        thread_id: null,
        args: { frame0, ...nf, node0, parents, frames }
      })
    }
    const start = t.times[0]!
    const end = t.times[n - 1]!
    const offsets = new Array<number>(n)
    const task = new Array<number>(n)
    for (let q = 0; q < n; q++) {
      offsets[q] = Math.round((t.times[q]! - start) * 1e6)
      task[q] = t.task[q]!
    }
    const w = t.weights
    const weights = w === undefined ? undefined : Array.from({ length: n }, (_, q) => Math.max(0, Math.round(w[q]! * 1e6)))
    out.push({
      name: SampleEventNames.samples,
      timestamp: end,
      phase: "X",
      process_id: t.host,
      thread_id: t.threadId,
      args: {
        interval: t.interval,
        stacks,
        offsets,
        ...(weights === undefined ? {} : { weights }),
        tasks: task,
        keys: t.keys,
        names: t.names,
        stages: t.stages
      },
      duration: Math.max(0, end - start)
    })
    return out
  }
}

/**
 * Samples read back, over all files: frames and call-tree nodes with global ids
 * (`parent[s]`: the parent node, -1 for a top-level frame; `frame[s]`: its frame), and
 * one entry per sample in the sample columns.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProfileData {
  readonly frames: ReadonlyArray<Frame>
  readonly parent: ReadonlyArray<number>
  readonly frame: ReadonlyArray<number>
  readonly samples: {
    readonly host: ReadonlyArray<string>
    readonly thread: ReadonlyArray<string>
    readonly time: ReadonlyArray<number>
    /** innermost node; -1: an empty stack */
    readonly stack: ReadonlyArray<number>
    /** task key, "" for none */
    readonly key: ReadonlyArray<string>
    /** the task's function, "idle" on a worker with no task, "driver" on the driver */
    readonly name: ReadonlyArray<string>
    /** the task's stage, "" when none */
    readonly stage: ReadonlyArray<string>
    /** the sampling interval, seconds */
    readonly interval: ReadonlyArray<number>
    /**
     * seconds of thread time the sample stands for (issue 31 item 1): as written, else
     * (files from before weights) estimated by `estimateWeights`
     */
    readonly weight: ReadonlyArray<number>
  }
}

/**
 * The longest gap (seconds) between two samples of a thread that V8 takes while the
 * thread runs, at sampling interval `interval` (seconds): the interval plus V8's usual
 * lateness (its sampling thread signals ~0.1 ms after each period: measured deltas of a
 * spinning thread 1.10–1.13 ms at 1 ms, 2.08–2.11 at 2, 10.10–10.12 at 10;
 * docs/profiler.md "Weights"). A longer gap is late: V8's signal found the thread off
 * the CPU (a thread takes the signal, and stamps the sample, only when it runs again),
 * or V8's sampling thread was itself late (`StatisticalProfiler.attribute` weighs such
 * gaps by the task's CPU share).
 *
 * @since 0.1.0
 * @category constants
 */
export const maxSampleSeconds = (interval: number): number => 1.1 * interval + 1e-4

/**
 * For files without weights (and so without the task spans and CPU times that
 * `StatisticalProfiler.attribute` weighs with): the thread time (seconds) one sample
 * stands for over a gap of `gap` seconds, at sampling interval `interval`: the gap
 * itself, up to `maxSampleSeconds`; half of that for a late gap (the thread ran for some
 * part of one period of it, half on average, when it was off the CPU).
 *
 * @since 0.1.0
 * @category decoding
 */
export const sampleSeconds = (gap: number, interval: number): number => {
  const cap = maxSampleSeconds(interval)
  return gap <= cap ? Math.max(0, gap) : cap / 2
}

/**
 * Weights for samples written without them: per thread (host and thread), in time order,
 * the gap to the thread's next sample as `sampleSeconds` counts it (up to about one
 * interval; the last sample of a thread: the interval), and half of that where the next
 * sample is another function's (`name`; "idle" included): its task ended somewhere in
 * the gap, and such files carry no task spans to clip with (tasks of one function back
 * to back keep the whole gap: an idle stretch longer than an interval would have had an
 * idle sample). A sample never stands for more than about one interval.
 *
 * @since 0.1.0
 * @category decoding
 */
export const estimateWeights = (
  samples: { readonly host: ReadonlyArray<string>; readonly thread: ReadonlyArray<string>; readonly time: ReadonlyArray<number>; readonly name: ReadonlyArray<string>; readonly interval: ReadonlyArray<number> },
  which: ReadonlyArray<number>
): Array<number> => {
  const { host, thread, time, name, interval } = samples
  const byThread = new Map<string, Array<number>>()
  for (const q of which) {
    const k = `${host[q]}\u0000${thread[q]}`
    let list = byThread.get(k)
    if (list === undefined) byThread.set(k, list = [])
    list.push(q)
  }
  const out = new Array<number>(time.length).fill(0)
  for (const list of byThread.values()) {
    list.sort((a, b) => time[a]! - time[b]!)
    for (let i = 0; i < list.length; i++) {
      const q = list[i]!
      const next = list[i + 1]
      const w = sampleSeconds(next !== undefined ? time[next]! - time[q]! : interval[q]!, interval[q]!)
      out[q] = next !== undefined && name[next] !== name[q] ? w / 2 : w
    }
  }
  return out
}

const numbers = (u: unknown): Array<number> => (Array.isArray(u) ? u.map((x) => (typeof x === "number" ? x : Number(x))) : [])
const strings = (u: unknown): Array<string> => (Array.isArray(u) ? u.map((x) => (typeof x === "string" ? x : String(x ?? ""))) : [])

/**
 * Folds `Profile Stacks` / `Profile Samples` events (other events are skipped) into
 * `ProfileData`. Per host, ids are mapped to global ones; a frame seen on two hosts is
 * one frame, and so is a call path.
 *
 * @since 0.1.0
 * @category decoding
 */
export class ProfileReader {
  private readonly frames: Array<Frame> = []
  private readonly frameKeys = new Map<string, number>()
  private readonly parent: Array<number> = []
  private readonly frame: Array<number> = []
  private readonly nodeKeys = new Map<string, number>()
  /** per host: local frame id → global, local node id → global */
  private readonly hosts = new Map<string, { frames: Array<number>; nodes: Array<number> }>()
  private readonly s = {
    host: [] as Array<string>,
    thread: [] as Array<string>,
    time: [] as Array<number>,
    stack: [] as Array<number>,
    key: [] as Array<string>,
    name: [] as Array<string>,
    stage: [] as Array<string>,
    interval: [] as Array<number>,
    weight: [] as Array<number>
  }
  /** samples read without weights (files from before them), estimated in `data()` */
  private readonly unweighted: Array<number> = []

  private host(h: string) {
    let m = this.hosts.get(h)
    if (m === undefined) this.hosts.set(h, m = { frames: [], nodes: [] })
    return m
  }

  add(e: TraceEvent): void {
    if (e.name === SampleEventNames.stacks) this.addStacks(e)
    else if (e.name === SampleEventNames.samples) this.addSamples(e)
  }

  private addStacks(e: TraceEvent): void {
    const a = e.args
    const m = this.host(String(e.process_id ?? ""))
    const functions = strings(a.functions), urls = strings(a.urls), lines = numbers(a.lines), columns = numbers(a.columns)
    const frame0 = Number(a.frame0)
    for (let i = 0; i < functions.length; i++) {
      const f: Frame = { functionName: functions[i]!, url: urls[i] ?? "", line: lines[i] ?? 0, column: columns[i] ?? 0 }
      const k = `${f.functionName}\u0000${f.url}\u0000${f.line}\u0000${f.column}`
      let g = this.frameKeys.get(k)
      if (g === undefined) {
        this.frameKeys.set(k, g = this.frames.length)
        this.frames.push(f)
      }
      m.frames[frame0 + i] = g
    }
    const parents = numbers(a.parents), frames = numbers(a.frames)
    const node0 = Number(a.node0)
    for (let i = 0; i < parents.length; i++) {
      const p = parents[i] === 0 ? -1 : (m.nodes[parents[i]!] ?? -1)
      const f = m.frames[frames[i]!] ?? -1
      const k = `${p}:${f}`
      let g = this.nodeKeys.get(k)
      if (g === undefined) {
        this.nodeKeys.set(k, g = this.parent.length)
        this.parent.push(p)
        this.frame.push(f)
      }
      m.nodes[node0 + i] = g
    }
  }

  private addSamples(e: TraceEvent): void {
    const a = e.args
    const host = String(e.process_id ?? "")
    const thread = String(e.thread_id ?? "")
    const m = this.host(host)
    const stacks = numbers(a.stacks), offsets = numbers(a.offsets), tasks = numbers(a.tasks)
    const keys = strings(a.keys), names = strings(a.names), stages = strings(a.stages)
    const interval = typeof a.interval === "number" ? a.interval : 0
    const weights = Array.isArray(a.weights) ? numbers(a.weights) : undefined
    const start = e.timestamp - (e.duration ?? 0)
    const none = thread === driverThread ? "driver" : "idle"
    for (let q = 0; q < stacks.length; q++) {
      const w = weights?.[q]
      if (w === undefined || !(w >= 0)) this.unweighted.push(this.s.weight.length)
      this.s.weight.push(w !== undefined && w >= 0 ? w / 1e6 : 0)
      const t = tasks[q] ?? 0
      this.s.host.push(host)
      this.s.thread.push(thread)
      this.s.time.push(start + (offsets[q] ?? 0) / 1e6)
      this.s.stack.push(stacks[q] === 0 ? -1 : (m.nodes[stacks[q]!] ?? -1))
      this.s.key.push(t > 0 ? (keys[t - 1] ?? "") : "")
      this.s.name.push(t > 0 ? (names[t - 1] ?? "") : none)
      this.s.stage.push(t > 0 ? (stages[t - 1] ?? "") : "")
      this.s.interval.push(interval)
    }
  }

  data(): ProfileData {
    if (this.unweighted.length > 0) {
      const s = this.s
      const est = estimateWeights(s, this.unweighted)
      for (const q of this.unweighted) s.weight[q] = est[q]!
      this.unweighted.length = 0
    }
    return { frames: this.frames, parent: this.parent, frame: this.frame, samples: this.s }
  }
}

const enc = new TextEncoder()
const wanted = Object.values(SampleEventNames).map((n) => Uint8Array.from([0xa4, ...enc.encode("name"), 0xa0 | n.length, ...enc.encode(n)]))

/** Whether the record in `bytes[start..end)` is one of ours (Tessera writes `name` first). */
const isSampleRecord = (bytes: Uint8Array, start: number, end: number): boolean => {
  if ((bytes[start]! & 0xf0) !== 0x80) return false
  next: for (const w of wanted) {
    if (end - start - 1 < w.length) continue
    for (let q = 0; q < w.length; q++) if (bytes[start + 1 + q] !== w[q]) continue next
    return true
  }
  return false
}

/**
 * The samples in database files (any files: records that are not sample events are
 * skipped undecoded). Throws `TraceFormatError` for a missing or corrupt file.
 *
 * @since 0.1.0
 * @category decoding
 */
export const readProfilePromise = async (files: ReadonlyArray<string>): Promise<ProfileData> => {
  const reader = new ProfileReader()
  for (const file of files) {
    for await (const { bytes, end, fileOffset } of streamFrames(file)) {
      scanFramesUnsafe(bytes.subarray(0, end), file, fileOffset, (s, e) => {
        if (isSampleRecord(bytes, s, e)) reader.add(decodeEventUnsafe(bytes, s, e, file, fileOffset + s - headerBytes))
      })
    }
  }
  return reader.data()
}

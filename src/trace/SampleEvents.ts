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
import { notAnEvent } from "./TraceFormatError.ts"
import { F64, I32 } from "./internal/columns.ts"

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
    // iterative: V8's stacks may be 10,000 frames deep (issue 32 item 12)
    const path: Array<number> = []
    const nodeOf = (id: number): number => {
      const got = mapped.get(id)
      if (got !== undefined) return got
      // the ids from `id` up to the first one mapped already (or the root), then mapped top-down
      path.length = 0
      const seen = new Set<number>()
      for (let at: number | undefined = id; at !== undefined && !mapped.has(at) && !seen.has(at);) {
        seen.add(at)
        path.push(at)
        const v = byId.get(at)
        at = v === undefined || (v.parent === 0 && v.functionName === "(root)") ? undefined : v.parent
      }
      for (let i = path.length - 1; i >= 0; i--) nodeOfParentMapped(path[i]!)
      return mapped.get(id)!
    }
    // `id`'s node, its parent's already mapped (a parent outside the tree, or a cycle: the root)
    const nodeOfParentMapped = (id: number): void => {
      const v = byId.get(id)
      // V8's root, or a node we do not know: the root (0)
      if (v === undefined || (v.parent === 0 && v.functionName === "(root)")) return void mapped.set(id, 0)
      const parent = mapped.get(v.parent) ?? 0
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
 * The sample columns are typed arrays (issue 32 item 11: arrays of numbers and strings
 * cost ~64 bytes a sample, and 8M samples did not fit a 512 MB heap): per sample its
 * time, weight, interval (Float64), innermost node, thread (`thread`: an index into
 * `threads`) and task (`task`: an index into `tasks`) (Int32), 32 bytes outside the
 * heap. `host`, `thread`… as strings per sample (`host`, `thread`, `key`, `name`,
 * `stage`) are made on first use, for code that wants them; the views here use the
 * indices.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProfileData {
  readonly frames: ReadonlyArray<Frame>
  readonly parent: ReadonlyArray<number>
  readonly frame: ReadonlyArray<number>
  readonly samples: ProfileSamples
}

/**
 * The sample columns of `ProfileData` (see there).
 *
 * @since 0.1.0
 * @category models
 */
export interface ProfileSamples {
  readonly time: Float64Array
  /** innermost node; -1: an empty stack */
  readonly stack: Int32Array
  /** the sampling interval, seconds */
  readonly interval: Float64Array
  /**
   * seconds of thread time the sample stands for (issue 31 item 1): as written, else
   * (files from before weights) estimated by `estimateWeights`
   */
  readonly weight: Float64Array
  /** the sample's thread, an index into `threads` */
  readonly threadIndex: Int32Array
  /** the sample's task, an index into `tasks` */
  readonly taskIndex: Int32Array
  /** the sampled threads: host and thread id */
  readonly threads: ReadonlyArray<{ readonly host: string; readonly thread: string }>
  /** the tasks samples ran in: key ("" for none), function ("idle" on a worker with no task, "driver" on the driver), stage ("" when none) */
  readonly tasks: ReadonlyArray<{ readonly key: string; readonly name: string; readonly stage: string }>
  /** per sample, made on first use */
  readonly host: ReadonlyArray<string>
  readonly thread: ReadonlyArray<string>
  /** task key, "" for none */
  readonly key: ReadonlyArray<string>
  /** the task's function, "idle" on a worker with no task, "driver" on the driver */
  readonly name: ReadonlyArray<string>
  /** the task's stage, "" when none */
  readonly stage: ReadonlyArray<string>
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
 * @category encoding
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
 * @category encoding
 */
export const estimateWeights = (
  samples: { readonly host: ArrayLike<string>; readonly thread: ArrayLike<string>; readonly time: ArrayLike<number>; readonly name: ArrayLike<string>; readonly interval: ArrayLike<number> },
  which: ArrayLike<number>
): Float64Array => {
  const { host, thread, name } = samples
  return estimateWeightsBy((q) => `${host[q]}\u0000${thread[q]}`, (q) => name[q]!, samples.time, samples.interval, which)
}

// `estimateWeights` with the thread and function of a sample given by functions (a
// thread may be any key: the reader's thread index)
const estimateWeightsBy = (
  threadOf: (q: number) => string | number,
  nameOf: (q: number) => string,
  time: ArrayLike<number>,
  interval: ArrayLike<number>,
  which: ArrayLike<number>
): Float64Array => {
  const byThread = new Map<string | number, Array<number>>()
  for (let i = 0; i < which.length; i++) {
    const q = which[i]!
    const k = threadOf(q)
    let list = byThread.get(k)
    if (list === undefined) byThread.set(k, list = [])
    list.push(q)
  }
  const out = new Float64Array(time.length)
  for (const list of byThread.values()) {
    list.sort((a, b) => time[a]! - time[b]!)
    for (let i = 0; i < list.length; i++) {
      const q = list[i]!
      const next = list[i + 1]
      const w = sampleSeconds(next !== undefined ? time[next]! - time[q]! : interval[q]!, interval[q]!)
      out[q] = next !== undefined && nameOf(next) !== nameOf(q) ? w / 2 : w
    }
  }
  return out
}

const numbers = (u: unknown): Array<number> => (Array.isArray(u) ? u.map((x) => (typeof x === "number" ? x : Number(x))) : [])
const strings = (u: unknown): Array<string> => (Array.isArray(u) ? u.map((x) => (typeof x === "string" ? x : String(x ?? ""))) : [])

/**
 * Where a sample event was read (file and byte offset of its record), for the errors
 * that name a bad one.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordPlace {
  readonly file: string
  readonly offset: number
}

/** An id written into a sample event: an integer from 0 (ids are from 1; 0 is the root). */
const isId = (x: number): boolean => Number.isInteger(x) && x >= 0 && x < 2 ** 31

/**
 * Folds `Profile Stacks` / `Profile Samples` events (other events are skipped) into
 * `ProfileData`. Per host, ids are mapped to global ones; a frame seen on two hosts is
 * one frame, and so is a call path. A sample event that cannot be read as written (its
 * columns not arrays of one length, a frame, node or stack id no earlier `Profile
 * Stacks` defined) is a `TraceFormatError` (`NotAnEvent`) naming the record's file and
 * byte offset (`where`), never a silently empty profile (issue 32 item 12).
 *
 * @since 0.1.0
 * @category encoding
 */
export class ProfileReader {
  private readonly frames: Array<Frame> = []
  private readonly frameKeys = new Map<string, number>()
  private readonly parent: Array<number> = []
  private readonly frame: Array<number> = []
  private readonly nodeKeys = new Map<string, number>()
  /** per host: local frame id → global, local node id → global */
  private readonly hosts = new Map<string, { frames: Map<number, number>; nodes: Map<number, number> }>()
  private readonly time = new F64()
  private readonly stack = new I32()
  private readonly interval = new F64()
  private readonly weight = new F64()
  private readonly threadIndex = new I32()
  private readonly taskIndex = new I32()
  private readonly threads: Array<{ readonly host: string; readonly thread: string }> = []
  private readonly threadIds = new Map<string, number>()
  private readonly tasks: Array<{ readonly key: string; readonly name: string; readonly stage: string }> = []
  private readonly taskIds = new Map<string, number>()
  /** samples read without weights (files from before them), estimated in `data()` */
  private readonly unweighted = new I32()

  private host(h: string) {
    let m = this.hosts.get(h)
    if (m === undefined) this.hosts.set(h, m = { frames: new Map(), nodes: new Map() })
    return m
  }

  add(e: TraceEvent, where?: RecordPlace): void {
    if (e.name === SampleEventNames.stacks) this.addStacks(e, where)
    else if (e.name === SampleEventNames.samples) this.addSamples(e, where)
  }

  private bad(e: TraceEvent, where: RecordPlace | undefined, problem: string): never {
    throw notAnEvent(where?.file ?? "(events)", where?.offset ?? 0, `is a ${e.name} event (${e.process_id ?? "no host"}, ${e.thread_id ?? "no thread"}) that ${problem}`)
  }

  private addStacks(e: TraceEvent, where: RecordPlace | undefined): void {
    const a = e.args
    const m = this.host(String(e.process_id ?? ""))
    const functions = strings(a.functions), urls = strings(a.urls), lines = numbers(a.lines), columns = numbers(a.columns)
    const frame0 = Number(a.frame0)
    if (functions.length > 0 && !(isId(frame0) && frame0 > 0)) this.bad(e, where, `has frame0 ${String(a.frame0)}, not an id from 1`)
    for (let i = 0; i < functions.length; i++) {
      const f: Frame = { functionName: functions[i]!, url: urls[i] ?? "", line: lines[i] ?? 0, column: columns[i] ?? 0 }
      const k = `${f.functionName}\u0000${f.url}\u0000${f.line}\u0000${f.column}`
      let g = this.frameKeys.get(k)
      if (g === undefined) {
        this.frameKeys.set(k, g = this.frames.length)
        this.frames.push(f)
      }
      m.frames.set(frame0 + i, g)
    }
    const parents = numbers(a.parents), frames = numbers(a.frames)
    if (parents.length !== frames.length) this.bad(e, where, `has ${parents.length} parents for ${frames.length} frames`)
    const node0 = Number(a.node0)
    if (parents.length > 0 && !(isId(node0) && node0 > 0)) this.bad(e, where, `has node0 ${String(a.node0)}, not an id from 1`)
    for (let i = 0; i < parents.length; i++) {
      const pid = parents[i]!, fid = frames[i]!
      const p = pid === 0 ? -1 : m.nodes.get(pid)
      if (p === undefined) this.bad(e, where, `gives node ${node0 + i} the parent ${pid}, which no Profile Stacks record of this host defines before it`)
      const f = m.frames.get(fid)
      if (f === undefined) this.bad(e, where, `gives node ${node0 + i} the frame ${fid}, which no Profile Stacks record of this host defines`)
      const k = `${p}:${f}`
      let g = this.nodeKeys.get(k)
      if (g === undefined) {
        this.nodeKeys.set(k, g = this.parent.length)
        this.parent.push(p)
        this.frame.push(f)
      }
      m.nodes.set(node0 + i, g)
    }
  }

  private addSamples(e: TraceEvent, where: RecordPlace | undefined): void {
    const a = e.args
    const host = String(e.process_id ?? "")
    const thread = String(e.thread_id ?? "")
    const m = this.host(host)
    if (!Array.isArray(a.stacks) || !Array.isArray(a.offsets)) this.bad(e, where, "lacks its stacks or offsets arrays")
    const stacks = numbers(a.stacks), offsets = numbers(a.offsets), tasks = numbers(a.tasks)
    const n = stacks.length
    if (offsets.length !== n) this.bad(e, where, `has ${offsets.length} offsets for ${n} samples`)
    if (Array.isArray(a.tasks) && tasks.length !== n) this.bad(e, where, `has ${tasks.length} tasks for ${n} samples`)
    const keys = strings(a.keys), names = strings(a.names), stages = strings(a.stages)
    const interval = typeof a.interval === "number" ? a.interval : 0
    const weights = Array.isArray(a.weights) ? numbers(a.weights) : undefined
    if (weights !== undefined && weights.length !== n) this.bad(e, where, `has ${weights.length} weights for ${n} samples`)
    const start = e.timestamp - (e.duration ?? 0)
    const none = thread === driverThread ? "driver" : "idle"
    const tk = `${host}\u0000${thread}`
    let ti = this.threadIds.get(tk)
    if (ti === undefined) {
      this.threadIds.set(tk, ti = this.threads.length)
      this.threads.push({ host, thread })
    }
    // this event's tasks (0: none) as global task indices
    const taskOf = new Int32Array(keys.length + 1).fill(-1)
    const task = (t: number): number => {
      const local = t > 0 && t <= keys.length ? t : 0
      let g = taskOf[local]!
      if (g >= 0) return g
      const key = local > 0 ? keys[local - 1]! : "", name = local > 0 ? (names[local - 1] ?? "") : none, stage = local > 0 ? (stages[local - 1] ?? "") : ""
      const k = `${key}\u0000${name}\u0000${stage}`
      g = this.taskIds.get(k) ?? -1
      if (g < 0) {
        this.taskIds.set(k, g = this.tasks.length)
        this.tasks.push({ key, name, stage })
      }
      taskOf[local] = g
      return g
    }
    for (let q = 0; q < n; q++) {
      const id = stacks[q]!, offset = offsets[q]!
      if (!isId(id)) this.bad(e, where, `gives sample ${q} the stack ${id}, not a node id`)
      const node = id === 0 ? -1 : m.nodes.get(id)
      if (node === undefined) this.bad(e, where, `gives sample ${q} the stack ${id}, a node no Profile Stacks record of this host defines before it`)
      if (!Number.isFinite(offset)) this.bad(e, where, `gives sample ${q} the offset ${offset}`)
      const w = weights?.[q]
      if (w === undefined || !(w >= 0)) this.unweighted.push(this.weight.length)
      this.weight.push(w !== undefined && w >= 0 ? w / 1e6 : 0)
      this.time.push(start + offset / 1e6)
      this.stack.push(node)
      this.interval.push(interval)
      this.threadIndex.push(ti)
      this.taskIndex.push(task(tasks[q] ?? 0))
    }
  }

  data(): ProfileData {
    const threads = this.threads, tasks = this.tasks
    const threadIndex = this.threadIndex.view(), taskIndex = this.taskIndex.view()
    const n = threadIndex.length
    const perSample = <T>(index: Int32Array, list: ReadonlyArray<T>, f: (x: T) => string) => {
      let made: Array<string> | undefined
      return () => (made ??= Array.from({ length: n }, (_, q) => f(list[index[q]!]!)))
    }
    const host = perSample(threadIndex, threads, (t) => t.host), thread = perSample(threadIndex, threads, (t) => t.thread)
    const key = perSample(taskIndex, tasks, (t) => t.key), name = perSample(taskIndex, tasks, (t) => t.name), stage = perSample(taskIndex, tasks, (t) => t.stage)
    const samples: ProfileSamples = {
      time: this.time.view(),
      stack: this.stack.view(),
      interval: this.interval.view(),
      weight: this.weight.view(),
      threadIndex,
      taskIndex,
      threads,
      tasks,
      get host() {
        return host()
      },
      get thread() {
        return thread()
      },
      get key() {
        return key()
      },
      get name() {
        return name()
      },
      get stage() {
        return stage()
      }
    }
    if (this.unweighted.length > 0) {
      // the estimate reads threads and functions through their indices
      const which = this.unweighted.view()
      const est = estimateWeightsBy((q) => threadIndex[q]!, (q) => tasks[taskIndex[q]!]!.name, samples.time, samples.interval, which)
      for (let i = 0; i < which.length; i++) samples.weight[which[i]!] = est[which[i]!]!
      this.unweighted.length = 0
    }
    return { frames: this.frames, parent: this.parent, frame: this.frame, samples }
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

/** The UTF-8 bytes of the sample events' names, to find a record that names one elsewhere than first. */
const nameBytes = Object.values(SampleEventNames).map((n) => Buffer.from(n))

/** Whether the record `bytes[start..end)` holds a sample event's name anywhere (a writer that puts `name` later). */
const mentionsSamples = (bytes: Uint8Array, start: number, end: number): boolean => {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start)
  return nameBytes.some((n) => b.indexOf(n) >= 0)
}

/**
 * The samples in database files (any files: records that are not sample events are
 * skipped undecoded). Throws `TraceFormatError` for a missing or corrupt file, and for a
 * sample event that cannot be read as written (file and byte offset of its record:
 * `ProfileReader`). Bytes at a file's end that are no whole record (a truncated or
 * corrupt record, which every reader drops) are listed in `dropped`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const readProfilePromise = async (files: ReadonlyArray<string>): Promise<ProfileData & { readonly dropped: ReadonlyArray<DroppedBytes> }> => {
  const reader = new ProfileReader()
  const dropped: Array<DroppedBytes> = []
  for (const file of files) {
    const it = streamFrames(file)
    for (;;) {
      const next = await it.next()
      if (next.done === true) {
        const { bytes, droppedBytes } = next.value
        if (droppedBytes > 0) dropped.push({ file, offset: bytes - droppedBytes, bytes: droppedBytes })
        break
      }
      const { bytes, end, fileOffset } = next.value
      scanFramesUnsafe(bytes.subarray(0, end), file, fileOffset, (s, e) => {
        if (!isSampleRecord(bytes, s, e) && !mentionsSamples(bytes, s, e)) return
        const offset = fileOffset + s - headerBytes
        reader.add(decodeEventUnsafe(bytes, s, e, file, offset), { file, offset })
      })
    }
  }
  return { ...reader.data(), dropped }
}

/**
 * Bytes at the end of a file that are no whole record: from `offset`, `bytes` long.
 *
 * @since 0.1.0
 * @category models
 */
export interface DroppedBytes {
  readonly file: string
  readonly offset: number
  readonly bytes: number
}

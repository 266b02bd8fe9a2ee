/**
 * StatisticalProfiler layer (issue 18; dask's worker profiler): where the CPU goes
 * inside tasks. For the layer's lifetime, V8's sampling profiler samples every worker
 * thread of the computes run under it (the engine's side: `Sampling`; each worker
 * samples from the first compute that asks until the pool closes or this layer does),
 * and the main thread where tasks run on it or when asked (here, `ThreadSampler`), every
 * `interval` ms (default 10). Each
 * sample is attributed to the task that ran on its thread at that moment — the task
 * whose span (gather start to transfer end, from the engine's `TaskRecord`s) holds the
 * sample's time — or to none: "idle" on a worker, "driver" on the main thread — and
 * weighed: the seconds of thread time it stands for, V8's real interval before it clipped
 * to that task's span (`attribute`; issue 31 item 1), so that sampled seconds add up to
 * at most the tasks' wall time however often V8 samples.
 *
 * Writes `Profile Stacks` / `Profile Samples` events (trace/SampleEvents) to its own
 * database, by default next to DASF's two as `{name}-StatisticalProfiler-{host}.msgpack`
 * (see `fileFor`): DASF's TracePlugin file stays as DASF writes it, and reading the
 * samples back never decodes the task trace. Frames keep V8's function name, URL, line
 * and column; `file:` URLs under `root` (default the working directory) or else under
 * Tessera's own folder are written as relative paths (`src/kernels/cluster.ts`).
 *
 * Stacking: a hook layer (`Hooks.layerEffect`), so stack it with the others with
 * `Layer.provideMerge`. Closing: the layer asks the executors still sampling for it for
 * their last samples (and waits for them), then writes the main thread's.
 *
 * The main thread: with the in-process executor (`layerSync`) tasks run there; from its
 * first compute the layer samples the main thread and attributes its samples to those
 * tasks the same way, else "driver". Other executors' main thread is sampled only with
 * `driver: true` (see `SamplerOptions.driver` for why).
 *
 * On a cluster executor (with `workers`), each worker process samples its threads and
 * writes `{name}-StatisticalProfiler-{host}.msgpack` for its host (a worker plugin,
 * `WorkerPlugins.statistical`); the driver's file keeps the main thread's samples.
 *
 * Leaves out: workers' samples arrive every `Sampling.flushSeconds` and at the end, not
 * live.
 *
 * @since 0.1.0
 */
import { hostname } from "node:os"
import { isAbsolute, join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, type Layer, type Scope } from "effect"
import * as EngineClock from "../engine/EngineClock.ts"
import { driverThreadId, type TaskRecord } from "../engine/EngineEvents.ts"
import * as Hooks from "../engine/Hooks.ts"
import * as Kernel from "../engine/Kernel.ts"
import * as WorkerPlugin from "../engine/WorkerPlugin.ts"
import * as Sampling from "../engine/Sampling.ts"
import * as ThreadSamplers from "../engine/ThreadSampler.ts"
import { maxSampleSeconds, SampleEncoder } from "../trace/SampleEvents.ts"
import type { DatabaseError, EventDatabase } from "./EventDatabase.ts"
import { openDatabase, type TraceOptions } from "./Trace.ts"

/**
 * How to sample.
 *
 * @since 0.1.0
 * @category models
 */
export interface SamplerOptions {
  /** milliseconds between samples (default 10) */
  readonly interval?: number
  /** process_id of the main thread's samples (default os.hostname()) */
  readonly host?: string
  /** project folder: file URLs under it are written as relative paths (default the working directory; then Tessera's folder) */
  readonly root?: string
  /**
   * sample the main thread: true for the layer's whole life, false never; default
   * (undefined) only once an executor runs tasks on it (the in-process executor,
   * `layerSync`), from its first such compute. Starting V8's profiler in a main thread
   * that loaded Effect costs 50–300 ms (it logs all the code the thread holds), and its
   * samples outside tasks say where the driver's own time goes, which the trace's Driver
   * events already show by activity.
   */
  readonly driver?: boolean
  /**
   * on a cluster executor, cluster workers write their samples to their host's
   * `fileFor(name, host, directory)` (a worker plugin, `WorkerPlugins.statistical`);
   * without it their threads are not sampled
   */
  readonly workers?: { readonly name: string; readonly directory?: string; readonly overwrite?: boolean }
}

/**
 * Where to write and how to sample.
 *
 * @since 0.1.0
 * @category models
 */
export type StatisticalProfilerOptions = TraceOptions & SamplerOptions

/**
 * The database file for profile name `name` on `host`, named like DASF's files.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fileFor = (name: string, host: string = hostname(), directory = "."): string => {
  const file = `${name}-StatisticalProfiler-${host}.msgpack`
  // a name that is an absolute path stays one, as DefaultProfiler.files keeps it
  return isAbsolute(file) ? file : join(directory, file)
}

/**
 * Tessera's own folder (the package root: `src/`'s parent, or `dist/`'s when compiled,
 * as dist/src/profiler/ or bundled, as dist/bundle/cli/: both two folders below it).
 *
 * @since 0.1.0
 * @category constants
 */
export const tesseraRoot: string = fileURLToPath(new URL(/\/dist\/(src|bundle)\//.test(import.meta.url) ? "../../.." : "../..", import.meta.url))

/**
 * A frame's URL as written: a path relative to the first of `roots` that holds the file
 * (default: the working directory, then Tessera's own folder, so both a user's kernels
 * and Tessera's show as project paths), the file's path when none does, other URLs
 * (`node:internal/…`) as they are.
 *
 * @since 0.1.0
 * @category constructors
 */
export const displayUrl = (url: string, roots: ReadonlyArray<string>): string => {
  if (!url.startsWith("file:")) return url
  let path: string
  try {
    path = fileURLToPath(url)
  } catch {
    return url
  }
  for (const root of roots) {
    const rel = relative(root, path)
    if (rel !== "" && !rel.startsWith("..") && !rel.startsWith(sep)) return rel.split(sep).join("/")
  }
  return path
}

/**
 * A task's span on its thread (gather start to transfer end, epoch seconds) and what its
 * samples are attributed to.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskSpan {
  readonly start: number
  readonly end: number
  readonly key: string
  readonly name: string
  readonly stage: string
  /** the thread's CPU seconds in the span (`TaskRecord.cpuTime`), when known */
  readonly cpu?: number
}

/**
 * The shortest task (seconds) whose `cpu_time` says what share of its span its thread
 * ran: shorter ones read 0 or a whole scheduler tick (docs/profiler.md, "`cpu_time`").
 *
 * @since 0.1.0
 * @category constants
 */
export const minCpuSeconds = 0.02

/** the share of its span a task's thread ran (1 when unknown or too short to tell) */
const onCpu = (s: TaskSpan | undefined): number =>
  s === undefined || s.cpu === undefined || !(s.end - s.start >= minCpuSeconds) ? 1 : Math.min(1, Math.max(0, s.cpu / (s.end - s.start)))

/**
 * How far (seconds) outside a task's span a sample may fall and still be the task's: a
 * sample stamped up to this long after a task ended (or, failing that, before the next
 * began) is that task's. Measured (docs/profiler.md): on the demo a quarter of the
 * samples of short tasks carry a time within 3 µs after the end of the task whose frames
 * they show, or just before the next task's start.
 *
 * @since 0.1.0
 * @category constants
 */
export const slackSeconds = 25e-6

/**
 * One thread's timeline as the profiler attributes and weighs its samples, carried from
 * one delivery of samples to the next: the task spans not yet passed (in order of start)
 * and, per group of samples (a function and stage, or no task), the time up to which its
 * samples have been charged.
 *
 * @since 0.1.0
 * @category models
 */
export interface Timeline {
  readonly spans: Array<TaskSpan>
  readonly covered: Map<string, number>
}

/**
 * An empty timeline (or one of these spans).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeTimeline = (spans: Array<TaskSpan> = []): Timeline => ({ spans, covered: new Map() })

/** the group of a sample's time: its task's function and stage, or no task */
const groupOf = (s: TaskSpan | undefined): string => (s === undefined ? "" : `f\u0000${s.name}\u0000${s.stage}`)

/**
 * Seconds of `[a, b]` inside the spans of group `g` (from `spans[from]` on), or, for no
 * task (`g` ""), outside every span.
 */
const inside = (spans: ReadonlyArray<TaskSpan>, from: number, a: number, b: number, g: string): number => {
  let mine = 0, busy = 0
  for (let k = from; k < spans.length && spans[k]!.start < b; k++) {
    const c = spans[k]!
    const o = Math.min(b, c.end) - Math.max(a, c.start)
    if (o <= 0) continue
    busy += o
    if (g !== "" && groupOf(c) === g) mine += o
  }
  return g === "" ? Math.max(0, b - a - busy) : mine
}

/**
 * The attribution and weights of one thread's samples (issue 31 item 1), given that
 * thread's timeline (or just its task spans in order of start) and the samples' times
 * in order.
 *
 * Attribution, per sample: 0 (no task) or i (the task `keys[i-1]`): the task whose span
 * holds the sample's time, else one that ended at most `slackSeconds` before it, else one
 * that starts at most `slackSeconds` after it.
 *
 * Weight, per sample (seconds): the thread time it stands for. Its window is V8's
 * interval before it (`deltas[q]`; without them, the gap to the previous sample of this
 * call, 0 for the first), and, when the next sample is of another function (or none), the
 * gap after it (the last sample of a call: up to `maxSampleSeconds` after it). The
 * weight is the part of that window spent in tasks of the sample's function and stage on
 * this thread (for a sample of no task: outside every task), never counted twice for
 * one function. So a function's samples on a thread weigh at most its tasks' wall time
 * there, a task's time is never charged to "idle" nor idle time to a task, and the time
 * of a run of short tasks of one function between two samples is the function's (not
 * only the sampled task's, which would count a 0.2 ms task for a 10 ms interval).
 *
 * A late gap (longer than `maxSampleSeconds` of the sampling `interval`, seconds) is
 * one where V8's signal found the thread off the CPU (it takes the signal, and stamps the
 * sample, only when it runs again) or V8's sampling thread was itself late: of such a gap
 * the sample counts the share its task's thread ran (`cpu / span`, from the task's
 * `cpu_time`, for tasks of at least `minCpuSeconds`; all of it otherwise, and for a
 * sample of no task). So on a busy machine a task's samples add up to about its CPU time,
 * neither its wall time (the whole gaps) nor less (gaps cut to one interval while the
 * thread did run).
 *
 * Spans that ended before the last sample's window are removed from the timeline (later
 * samples are later).
 *
 * @since 0.1.0
 * @category analysis
 */
export const attribute = (
  timeline: Timeline | Array<TaskSpan>,
  times: ArrayLike<number>,
  deltas?: ArrayLike<number>,
  interval?: number
): { task: Int32Array; keys: Array<string>; names: Array<string>; stages: Array<string>; weights: Float64Array } => {
  const tl = Array.isArray(timeline) ? makeTimeline(timeline) : timeline
  const spans = tl.spans
  const n = times.length
  const task = new Int32Array(n)
  const weights = new Float64Array(n)
  const held = new Array<TaskSpan | undefined>(n)
  const keys: Array<string> = [], names: Array<string> = [], stages: Array<string> = []
  const index = new Map<TaskSpan, number>()
  let j = 0
  for (let q = 0; q < n; q++) {
    const t = times[q]!
    while (j < spans.length && spans[j]!.end < t - slackSeconds) j++
    // spans[j] is the first that ends at most `slackSeconds` before t
    let s: TaskSpan | undefined
    for (let k = j; k < spans.length && spans[k]!.start <= t + slackSeconds; k++) {
      const c = spans[k]!
      if (c.start <= t && t <= c.end) {
        s = c
        break
      }
      if (s === undefined) s = c
    }
    if (s === undefined) continue
    held[q] = s
    let i = index.get(s)
    if (i === undefined) {
      keys.push(s.key)
      names.push(s.name)
      stages.push(s.stage)
      index.set(s, i = keys.length)
    }
    task[q] = i
  }
  const late = interval === undefined ? Infinity : maxSampleSeconds(interval)
  const reach = interval === undefined ? 0 : late
  let w0 = 0
  for (let q = 0; q < n; q++) {
    const t = times[q]!
    const d = Math.max(0, deltas !== undefined ? deltas[q]! : q > 0 ? t - times[q - 1]! : 0)
    // spans[w0] is the first that ends at or after this window's start (windows start at
    // or after the previous sample: V8's delta is the time since it)
    const from = q > 0 ? Math.min(times[q - 1]!, t - d) : t - d
    while (w0 < spans.length && spans[w0]!.end < from) w0++
    const s = held[q]
    const g = groupOf(s)
    const share = onCpu(s)
    let covered = tl.covered.get(g) ?? -Infinity
    let w = 0
    // before: V8's interval
    const lo = Math.max(t - d, covered)
    if (t > lo) {
      w += inside(spans, w0, lo, t, g) * (d > late ? share : 1)
      covered = t
    }
    // after, up to the next sample when it is another function's
    const gap = q + 1 < n ? (groupOf(held[q + 1]) === g ? 0 : times[q + 1]! - t) : reach
    const hi = t + gap
    if (hi > Math.max(t, covered)) {
      w += inside(spans, w0, Math.max(t, covered), hi, g) * (gap > late ? share : 1)
      covered = hi
    }
    tl.covered.set(g, Math.max(covered, tl.covered.get(g) ?? -Infinity))
    weights[q] = w
  }
  const last = n > 0 ? times[n - 1]! : -Infinity
  let drop = 0
  while (drop < spans.length && spans[drop]!.end < last - slackSeconds) drop++
  spans.splice(0, drop)
  return { task, keys, names, stages, weights }
}

/**
 * The profiler's callbacks writing into `db`, sampling the main thread for the current
 * scope; on scope close, the executors' last samples and the main thread's are written.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  db: EventDatabase,
  options: SamplerOptions = {}
): Effect.Effect<Hooks.Callbacks, never, Scope.Scope> =>
  Effect.gen(function*() {
    const interval = options.interval ?? 10
    if (!(interval > 0)) return yield* Effect.die(new RangeError(`StatisticalProfiler interval must be positive, got ${interval}`))
    const roots = [options.root ?? process.cwd(), tesseraRoot]
    const host = options.host ?? hostname()
    const encoders = new Map<string, SampleEncoder>()
    const timelines = new Map<string, Timeline>()
    const timeline = (thread: string): Timeline => {
      let tl = timelines.get(thread)
      if (tl === undefined) timelines.set(thread, tl = makeTimeline())
      return tl
    }
    const write = (r: Sampling.SampleRecord): void => {
      let enc = encoders.get(r.host)
      if (enc === undefined) encoders.set(r.host, enc = new SampleEncoder())
      const a = attribute(timeline(r.threadId), r.times, r.deltas, r.interval)
      const nodes = r.nodes.map((n) => ({ ...n, url: displayUrl(n.url, roots) }))
      for (const e of enc.encode({ ...r, nodes, ...a })) db.record(e)
    }
    let driver: ThreadSamplers.ThreadSampler | null = null
    const startDriver = () => {
      driver ??= ThreadSamplers.acquire(interval)
    }
    if (options.driver === true) startDriver()
    const takeDriver = (restart: boolean) => {
      if (driver === null) return
      const chunk = driver.take(restart)
      write({ ...chunk, host, workerId: -1, threadId: driverThreadId, interval: interval / 1000 })
    }
    const w = options.workers
    const callbacks: Hooks.Callbacks = {
      ...(w !== undefined
        ? {
          workerPlugin: {
            id: WorkerPlugin.makeId("samples"),
            module: Kernel.sibling(import.meta.url, "./WorkerPlugins").href,
            name: "statistical",
            options: {
              name: w.name,
              directory: resolve(w.directory ?? "."),
              interval,
              root: roots[0],
              ...(w.overwrite === true ? { overwrite: true } : {})
            }
          }
        }
        : {}),
      sampling: { interval },
      task: (r: TaskRecord) => {
        // a task of the in-process executor ran on the main thread: the driver's samples hold it
        const thread = r.mainThread === true ? driverThreadId : r.threadId
        timeline(thread).spans.push({ start: r.phases.gather[0], end: r.phases.transfer[1], key: r.key, name: r.name, stage: r.stage ?? "", cpu: r.cpuTime })
      },
      samples: (r) => write(r),
      finish: () => {
        // spans of threads whose samples never come (the in-process executor's) must not pile up
        const old = EngineClock.nowSeconds() - 12 * Sampling.flushSeconds
        for (const tl of timelines.values()) {
          const list = tl.spans
          if (list.length < 4096) continue
          let drop = 0
          while (drop < list.length && list[drop]!.end < old) drop++
          list.splice(0, drop)
        }
        if (driver !== null && performance.now() - (driver as ThreadSamplers.ThreadSampler).startedAt >= Sampling.flushSeconds * 1000) takeDriver(true)
      }
    }
    const unregister = options.driver === undefined ? Sampling.onMainThreadTasks(callbacks, startDriver) : () => {}
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => (unregister(), Promise.all([WorkerPlugin.close(callbacks), Sampling.stop(callbacks)]))).pipe(
        Effect.andThen(Effect.sync(() => {
          // the next layer in this process reuses the main thread's running profiler
          takeDriver(true)
          if (driver !== null) ThreadSamplers.release(driver, Sampling.lingerSeconds * 1000)
          db.commit()
        }))
      )
    )
    return callbacks
  })

/**
 * The statistical profiler as a layer: computes run under it are sampled; its database
 * is flushed and closed when the layer's scope closes.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: StatisticalProfilerOptions): Layer.Layer<never, DatabaseError> =>
  Hooks.layerEffect(Effect.flatMap(openDatabase(options), (db) => make(db, options)))

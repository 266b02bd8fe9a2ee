/**
 * Statistical sampling of the threads that run tasks: the engine's side of the
 * statistical profiler (issue 18). A hook (`Hooks.Callbacks`) asks for it with a
 * `sampling` request and takes what comes back in its `samples` method; executors that
 * can sample (the worker pool) act on it: each worker thread runs V8's sampling profiler
 * (`node:inspector`, see `ThreadSampler`) at the requested interval from the first
 * compute that asks (or from its boot: `Executor.WorkersOptions.sampleInterval`) until
 * the request is stopped (`stop`) or the pool closes, and delivers its samples as
 * `SampleRecord`s — one per worker per flush — through the hook's `samples` method. A
 * worker flushes every `flushSeconds` and when sampling stops, or as often as the hook
 * asks (`SamplingRequest.flushSeconds`, at least `minFlushSeconds`: the pool asks its
 * workers on a timer; a busy worker answers after its batch). Several hooks of a compute
 * that ask share one sampler (`share`, put before them by `Hooks.collect`): the smallest
 * interval, the shortest flush, every record to each. V8's profiler itself
 * keeps running after a request stops, for `lingerSeconds` (its start costs tens of ms,
 * a flush well under one: see `ThreadSampler`), so that a process that profiles run
 * after run starts it once; samples taken for no hook are dropped in the worker.
 *
 * Samples carry stacks, epoch-second times (EngineClock's clock) and V8's interval before
 * each (its `timeDeltas`), nothing else: the profiler layer attributes them to tasks with
 * the `TaskRecord`s of the same thread and turns the intervals into the time each sample
 * stands for (issue 31 item 1).
 *
 * Clock: V8 stamps samples in µs on the monotonic clock (`CLOCK_MONOTONIC`, the clock of
 * `process.hrtime`); `fromCpuProfile` moves them onto the epoch clock with the offset
 * `EngineClock.nowSeconds()·1e6 − hrtime µs`, read in the sampled thread when its
 * profile stops (docs/profiler.md "Statistical profiler" shows the experiment).
 *
 * This module imports no `node:` builtin (the DSL reaches it through Hooks); the
 * inspector lives in `ThreadSampler`. The in-process (`layerSync`) executor runs tasks
 * on the main thread, which the profiler layer samples: it says so
 * (`mainThreadTasks`) and marks its records (`TaskRecord.mainThread`), so that the
 * layer starts sampling the main thread and attributes those samples to its tasks.
 *
 * @since 0.1.0
 */
import * as OwnerRegistry from "./internal/ownerRegistry.ts"

/**
 * One node of a sampled call tree: V8's call frame (function name, script URL, 0-based
 * line and column) and its parent's id (0: none; ids start at 1).
 *
 * @since 0.1.0
 * @category models
 */
export interface SampleNode {
  readonly id: number
  readonly parent: number
  readonly functionName: string
  readonly url: string
  readonly line: number
  readonly column: number
}

/**
 * Samples of one thread: the call tree they point into, and per sample the node it
 * hit (the innermost frame), its time (epoch seconds) and V8's interval before it
 * (seconds since the thread's previous sample, or since the window opened for its first:
 * the profile's `timeDeltas`; never negative).
 *
 * @since 0.1.0
 * @category models
 */
export interface SampleChunk {
  readonly nodes: ReadonlyArray<SampleNode>
  readonly samples: Int32Array
  readonly times: Float64Array
  readonly deltas: Float64Array
}

/**
 * A `SampleChunk` of one thread as the engine delivers it.
 *
 * @since 0.1.0
 * @category models
 */
export interface SampleRecord extends SampleChunk {
  readonly host: string
  /** the worker's index; -1 for the main thread */
  readonly workerId: number
  /** `worker-{host}-{i}` (or `driver`) */
  readonly threadId: string
  /** sampling interval, seconds */
  readonly interval: number
}

/**
 * What a hook asks for: sampling every `interval` milliseconds, its samples handed over
 * at least every `flushSeconds` (default and most `flushSeconds`, least
 * `minFlushSeconds`: a live view asks for a short one; each flush ends the thread's
 * sampling window and opens the next, costing the window's serialisation, not a restart
 * of V8's profiler: `ThreadSampler`).
 *
 * @since 0.1.0
 * @category models
 */
export interface SamplingRequest {
  readonly interval: number
  readonly flushSeconds?: number
}

/**
 * How often (seconds) a sampling worker hands over its samples while it works.
 *
 * @since 0.1.0
 * @category constants
 */
export const flushSeconds = 10

/**
 * The shortest flush period (seconds) a hook may ask for (`SamplingRequest.flushSeconds`).
 *
 * @since 0.1.0
 * @category constants
 */
export const minFlushSeconds = 0.25

/**
 * The flush period (seconds) `request` asks for, bounded to [`minFlushSeconds`,
 * `flushSeconds`] (not a finite number: the default).
 *
 * @since 0.1.0
 * @category getters
 */
export const flushOf = (request: SamplingRequest | undefined): number => {
  const f = request?.flushSeconds
  return f === undefined || !Number.isFinite(f) ? flushSeconds : Math.min(flushSeconds, Math.max(minFlushSeconds, f))
}

/**
 * How long (seconds) a worker keeps V8's profiler running after the last hook sampling
 * it let go: a hook that asks again within it (the next run in a process that profiles
 * run after run) pays no start (`ThreadSampler`); samples taken meanwhile are dropped.
 *
 * @since 0.1.0
 * @category constants
 */
export const lingerSeconds = 30

/**
 * A V8 cpuprofile, as `Profiler.stop` and `Profiler.consoleProfileFinished` carry it (the
 * fields used here).
 *
 * @since 0.1.0
 * @category models
 */
export interface CpuProfileLike {
  readonly nodes: ReadonlyArray<{
    readonly id: number
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number }
    readonly children?: ReadonlyArray<number>
  }>
  readonly startTime: number
  readonly samples?: ReadonlyArray<number>
  readonly timeDeltas?: ReadonlyArray<number>
}

/**
 * A V8 cpuprofile as a `SampleChunk`: parents instead of children, times moved onto the
 * epoch clock by `offsetMicros` (epoch µs − the profile's µs, read in the same thread),
 * V8's `timeDeltas` in seconds (a negative one, V8 ordering samples as it processed
 * them, as 0). Samples stamped at or before `afterMicros` (the profile's µs) are left
 * out: they were delivered with the previous, overlapping window (`ThreadSampler`); the
 * first one kept keeps its delta (the time since the left-out sample before it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromCpuProfile = (profile: CpuProfileLike, offsetMicros: number, afterMicros = -Infinity): SampleChunk => {
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const nodes = profile.nodes.map((n): SampleNode => ({
    id: n.id,
    parent: parent.get(n.id) ?? 0,
    functionName: n.callFrame.functionName,
    url: n.callFrame.url,
    line: n.callFrame.lineNumber,
    column: n.callFrame.columnNumber
  }))
  const ids = profile.samples ?? []
  const deltas = profile.timeDeltas ?? []
  let samples = new Int32Array(ids.length)
  let times = new Float64Array(ids.length)
  let gaps = new Float64Array(ids.length)
  let t = profile.startTime
  let n = 0
  for (let q = 0; q < ids.length; q++) {
    const d = deltas[q] ?? 0
    t += d
    if (t <= afterMicros) continue
    samples[n] = ids[q]!
    gaps[n] = d > 0 ? d / 1e6 : 0
    times[n++] = (t + offsetMicros) / 1e6
  }
  if (n < ids.length) {
    samples = samples.slice(0, n)
    times = times.slice(0, n)
    gaps = gaps.slice(0, n)
  }
  return { nodes, samples, times, deltas: gaps }
}

/**
 * Something sampling for a request (an executor): `stop` ends its sampling and resolves
 * once its last samples are delivered.
 *
 * @since 0.1.0
 * @category models
 */
export interface SampleSource {
  readonly stop: () => Promise<void>
}

const sources = OwnerRegistry.make<SampleSource>()

/**
 * Registers `source` as sampling for `owner` (the hook carrying the request) until the
 * returned function is called.
 *
 * @since 0.1.0
 * @category layers
 */
export const attach = (owner: object, source: SampleSource): () => void => sources.attach(owner, source)

/**
 * Stops every source sampling for `owner`; resolves when their last samples have been
 * delivered (the profiler layer calls it when it closes).
 *
 * @since 0.1.0
 * @category layers
 */
export const stop = async (owner: object): Promise<void> => {
  const owners = [owner, ...(sharedBy.get(owner) ?? [])]
  await Promise.all(owners.flatMap((o) => sources.of(o)).map((s) => s.stop()))
}

const mainThreadHooks = new Map<object, () => void>()

/**
 * Registers `start` to be called when an executor runs tasks on the main thread for
 * `owner` (the in-process executor), so that the hook samples the main thread from then
 * on; until the returned function is called.
 *
 * @since 0.1.0
 * @category layers
 */
export const onMainThreadTasks = (owner: object, start: () => void): () => void => {
  mainThreadHooks.set(owner, start)
  return () => {
    if (mainThreadHooks.get(owner) === start) mainThreadHooks.delete(owner)
  }
}

/**
 * Said by an executor about to run tasks on the main thread for `owner` (see
 * `onMainThreadTasks`).
 *
 * @since 0.1.0
 * @category layers
 */
export const mainThreadTasks = (owner: object): void => {
  for (const o of membersOf.get(owner) ?? [owner]) mainThreadHooks.get(o)?.()
}

/** A hook with a sampling request and a `samples` method (see `Hooks.Callbacks`). */
interface Sampler {
  readonly sampling?: SamplingRequest | undefined
  samples?(record: SampleRecord): void
}

/** the hooks a shared sampler stands for, and the shared samplers each hook is part of */
const membersOf = new WeakMap<object, ReadonlyArray<Sampler>>()
const sharedBy = new WeakMap<object, Set<object>>()
/** the shared sampler of a list of hooks, by its first hook (kept while the hooks stay the same) */
const sharedOf = new WeakMap<object, Array<{ readonly members: ReadonlyArray<Sampler>; readonly shared: Sampler }>>()

/**
 * One sampler for several hooks that ask for sampling (`Hooks.collect` puts it before
 * them, so a compute samples for it): it asks for the smallest interval and the shortest
 * flush of theirs and gives every record to each of them (the same object: a hook must not
 * change it). The same hooks get the same sampler back (an executor keeps sampling across
 * computes for one owner). `stop(hook)` of any of them stops it (delivering its last samples
 * to all); `mainThreadTasks` of it reaches each hook's `onMainThreadTasks`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const share = <S extends Sampler>(hooks: ReadonlyArray<S>): S => {
  if (hooks.length === 1) return hooks[0]!
  const first = hooks[0]!
  let list = sharedOf.get(first)
  if (list === undefined) sharedOf.set(first, list = [])
  const known = list.find((e) => e.members.length === hooks.length && e.members.every((m, i) => m === hooks[i]))
  if (known !== undefined) return known.shared as S
  const members = [...hooks]
  const flush = Math.min(...members.map((m) => flushOf(m.sampling)))
  const shared: Sampler = {
    sampling: { interval: Math.min(...members.map((m) => m.sampling!.interval)), ...(flush < flushSeconds ? { flushSeconds: flush } : {}) },
    samples: (record) => {
      for (const m of members) m.samples!(record)
    }
  }
  // a bounded memo: a process that builds hook lists anew per compute keeps the latest few
  if (list.length >= 8) list.shift()
  list.push({ members, shared })
  membersOf.set(shared, members)
  for (const m of members) {
    let set = sharedBy.get(m)
    if (set === undefined) sharedBy.set(m, set = new Set())
    set.add(shared)
  }
  return shared as S
}

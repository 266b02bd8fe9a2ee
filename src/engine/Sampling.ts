/**
 * Statistical sampling of the threads that run tasks: the engine's side of the
 * statistical profiler (issue 18). A hook (`Hooks.Callbacks`) asks for it with a
 * `sampling` request and takes what comes back in its `samples` method; executors that
 * can sample (the worker pool) act on it: each worker thread runs V8's sampling profiler
 * (`node:inspector`, see `ThreadSampler`) at the requested interval from the first
 * compute that asks until the request is stopped (`stop`) or the pool closes, and
 * delivers its samples as `SampleRecord`s — one per worker per flush — through the
 * hook's `samples` method. A worker flushes every `flushSeconds` (restarting the
 * profiler costs ~10–30 ms, so it is not done per compute) and when sampling stops.
 *
 * Samples carry stacks and epoch-second times (EngineClock's clock), nothing else: the
 * profiler layer attributes them to tasks with the `TaskRecord`s of the same thread.
 *
 * Clock: V8 stamps samples in µs on the monotonic clock (`CLOCK_MONOTONIC`, the clock of
 * `process.hrtime`); `fromCpuProfile` moves them onto the epoch clock with the offset
 * `EngineClock.nowSeconds()·1e6 − hrtime µs`, read in the sampled thread when its
 * profile stops (docs/profiler.md "Statistical profiler" shows the experiment).
 *
 * This module imports no `node:` builtin (the DSL reaches it through Hooks); the
 * inspector lives in `ThreadSampler`. Leaves out: the in-process (`layerSync`)
 * executor does not sample on its own (its tasks run on the main thread, which the
 * profiler layer samples as the driver).
 *
 * @since 0.1.0
 */

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
 * hit (the innermost frame) and its time (epoch seconds).
 *
 * @since 0.1.0
 * @category models
 */
export interface SampleChunk {
  readonly nodes: ReadonlyArray<SampleNode>
  readonly samples: Int32Array
  readonly times: Float64Array
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
 * What a hook asks for: sampling every `interval` milliseconds.
 *
 * @since 0.1.0
 * @category models
 */
export interface SamplingRequest {
  readonly interval: number
}

/**
 * How often (seconds) a sampling worker hands over its samples while it works.
 *
 * @since 0.1.0
 * @category constants
 */
export const flushSeconds = 10

/** A V8 cpuprofile, as `Profiler.stop` returns it (the fields used here). */
interface CpuProfileLike {
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
 * epoch clock by `offsetMicros` (epoch µs − the profile's µs, read in the same thread).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromCpuProfile = (profile: CpuProfileLike, offsetMicros: number): SampleChunk => {
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
  const samples = Int32Array.from(ids)
  const times = new Float64Array(ids.length)
  let t = profile.startTime
  for (let q = 0; q < ids.length; q++) {
    t += deltas[q] ?? 0
    times[q] = (t + offsetMicros) / 1e6
  }
  return { nodes, samples, times }
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

const sources = new Map<object, Set<SampleSource>>()

/**
 * Registers `source` as sampling for `owner` (the hook carrying the request) until the
 * returned function is called.
 *
 * @since 0.1.0
 * @category registration
 */
export const attach = (owner: object, source: SampleSource): () => void => {
  let set = sources.get(owner)
  if (set === undefined) sources.set(owner, set = new Set())
  set.add(source)
  return () => {
    set.delete(source)
    if (set.size === 0 && sources.get(owner) === set) sources.delete(owner)
  }
}

/**
 * Stops every source sampling for `owner`; resolves when their last samples have been
 * delivered (the profiler layer calls it when it closes).
 *
 * @since 0.1.0
 * @category registration
 */
export const stop = async (owner: object): Promise<void> => {
  const set = sources.get(owner)
  if (set === undefined) return
  await Promise.all([...set].map((s) => s.stop()))
}

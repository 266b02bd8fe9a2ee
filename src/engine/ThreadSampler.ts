/**
 * V8's sampling profiler on the calling thread: an `inspector.Session` connected in
 * this thread (in a worker thread it profiles that worker, not the main thread), with
 * `Profiler.setSamplingInterval`, sampling in back-to-back windows; `take` ends the
 * current window, returns its samples (see `Sampling.fromCpuProfile`) and optionally
 * opens the next. The session's calls are synchronous in the thread that owns it.
 *
 * Windows, not `Profiler.start`/`stop`: V8's profiler (the inspector creates it with
 * lazy code logging) logs every piece of code the isolate holds when it starts, and
 * throws that away when its last profile stops: tens of milliseconds in a worker, more
 * in a main thread that loaded Effect (measured: docs/profiler.md, BENCHMARKS.md). A
 * window is a console profile (`inspector.console.profile(title)`, delivered by
 * `Profiler.consoleProfileFinished`, synchronously in this thread); the next window is
 * opened *before* the current one is ended, so V8's profiler never has zero profiles,
 * never stops, and never logs the code again: a `take` costs the window's serialisation
 * instead of a restart. A sample that falls in the few µs where two windows overlap is
 * delivered once (by the first).
 *
 * Cost: the first window pays V8's start; from then on each sample costs the thread a
 * signal and a stack walk, and V8's sampling thread the stack's symbolisation.
 *
 * Leaves out: console profiles reach every enabled inspector session of the thread, so a
 * debugger attached with its Profiler domain enabled would record the windows too.
 *
 * Used by the worker threads (engine/internal/worker.ts) and by the statistical
 * profiler layer for the main thread. Imports `node:inspector`: not for the DSL's reach.
 *
 * @since 0.1.0
 */
import { console as inspectorConsole, Session } from "node:inspector"
import * as EngineClock from "./EngineClock.ts"
import { type CpuProfileLike, fromCpuProfile, type SampleChunk } from "./Sampling.ts"

const call = <A>(session: Session, method: string, params?: object): A => {
  let out: { error: Error | null; value: A | undefined } | undefined
  const post = session.post.bind(session) as (m: string, p: object, cb: (error: Error | null, value?: object) => void) => void
  post(method, params ?? {}, (error, value) => {
    out = { error, value: value as A | undefined }
  })
  if (out === undefined) throw new Error(`inspector ${method}: no synchronous reply`)
  if (out.error !== null) throw out.error
  return out.value as A
}

/**
 * Epoch µs − monotonic µs of this thread, read now (the midpoint of two hrtime reads
 * around one EngineClock read).
 *
 * @since 0.1.0
 * @category getters
 */
export const clockOffsetMicros = (): number => {
  const a = process.hrtime.bigint()
  const e = EngineClock.nowSeconds()
  const b = process.hrtime.bigint()
  return e * 1e6 - Number((a + b) / 2n) / 1000
}

const empty = (): SampleChunk => ({ nodes: [], samples: new Int32Array(0), times: new Float64Array(0), deltas: new Float64Array(0) })

/** window titles are unique in the process (console profiles reach every session of a thread) */
let nextSampler = 1

/**
 * A running sampler on the calling thread.
 *
 * @since 0.1.0
 * @category models
 */
export class ThreadSampler {
  private readonly session: Session
  private readonly prefix: string
  private window = 0
  /** the open window's title, null when stopped */
  private title: string | null = null
  /** the profile of the window just ended (set by the session's notification) */
  private finished: CpuProfileLike | null = null
  /** V8 µs time of the latest sample delivered (later windows start before it ends) */
  private lastMicros = -Infinity
  /** `performance.now()` when the open window started */
  startedAt = 0
  /** interval in milliseconds */
  readonly interval: number

  constructor(intervalMs: number) {
    this.interval = intervalMs
    this.prefix = `tessera-sampler-${nextSampler++}-`
    this.session = new Session()
    this.session.connect()
    this.session.on("Profiler.consoleProfileFinished", (m: { params: { title?: string; profile: CpuProfileLike } }) => {
      if (m.params.title?.startsWith(this.prefix) === true) this.finished = m.params.profile
    })
    call(this.session, "Profiler.enable")
    call(this.session, "Profiler.setSamplingInterval", { interval: Math.max(1, Math.round(intervalMs * 1000)) })
    this.open()
  }

  private open(): void {
    this.title = `${this.prefix}${++this.window}`
    inspectorConsole.profile(this.title)
    this.startedAt = performance.now()
  }

  /** Ends the open window and returns its profile (null when none was delivered). */
  private end(restart: boolean): CpuProfileLike | null {
    const title = this.title
    if (title === null) return null
    // the next window first: V8's profiler keeps running (see the module comment)
    if (restart) this.open()
    else this.title = null
    this.finished = null
    inspectorConsole.profileEnd(title)
    const p = this.finished as CpuProfileLike | null
    this.finished = null
    return p
  }

  /**
   * Ends the open window, returns its samples (those taken at or after `fromSeconds`,
   * epoch seconds, when given), opens the next when `restart`.
   */
  take(restart: boolean, fromSeconds = -Infinity): SampleChunk {
    const p = this.end(restart)
    if (p === null) return empty()
    const offset = clockOffsetMicros()
    const chunk = fromCpuProfile(p, offset, Math.max(this.lastMicros, fromSeconds * 1e6 - offset))
    if (p.samples !== undefined && p.samples.length > 0) this.lastMicros = Math.max(this.lastMicros, lastTime(p))
    return chunk
  }

  /** Ends the open window and drops its samples; opens the next when `restart`. */
  discard(restart: boolean): void {
    const p = this.end(restart)
    if (p !== null && p.samples !== undefined && p.samples.length > 0) this.lastMicros = Math.max(this.lastMicros, lastTime(p))
  }

  /** Whether a window is open. */
  get running(): boolean {
    return this.title !== null
  }

  /** Stops sampling (dropping what was not taken) and disconnects. */
  close(): void {
    this.end(false)
    this.session.disconnect()
  }
}

/**
 * The V8 µs time of a profile's latest sample: the greatest, not the last in order (V8
 * orders samples as it processed them, so a window can end on a negative delta, and
 * the samples between that time and the greatest are in the next window too).
 *
 * @since 0.1.0
 * @category getters
 */
export const lastTime = (p: CpuProfileLike): number => {
  let t = p.startTime
  let max = -Infinity
  for (const d of p.timeDeltas ?? []) {
    t += d
    if (t > max) max = t
  }
  return max
}

/** The main thread's shared sampler (see `acquire`). */
let shared: { sampler: ThreadSampler; inUse: boolean; linger: ReturnType<typeof setTimeout> | undefined } | undefined

/**
 * A sampler on the calling thread at `intervalMs`, kept running between users: the one
 * a previous user `release`d (its samples taken for nobody dropped) when it is idle and at
 * the same interval, else a new one. The main thread pays V8's start (its dearest: all
 * of Effect's code is logged; docs/profiler.md) once per process instead of once per
 * profiler layer. A second user while the shared one is taken gets a sampler of its own.
 *
 * @since 0.1.0
 * @category constructors
 */
export const acquire = (intervalMs: number): ThreadSampler => {
  if (shared !== undefined && !shared.inUse && shared.sampler.interval === intervalMs && shared.sampler.running) {
    if (shared.linger !== undefined) clearTimeout(shared.linger)
    shared.linger = undefined
    shared.inUse = true
    shared.sampler.discard(true)
    return shared.sampler
  }
  const sampler = new ThreadSampler(intervalMs)
  if (shared === undefined || !shared.inUse) {
    if (shared !== undefined) shared.sampler.close()
    shared = { sampler, inUse: true, linger: undefined }
  }
  return sampler
}

/**
 * Gives back a sampler from `acquire`: the shared one keeps running for `lingerMs` (on an
 * unref'd timer, so it never keeps the process alive), then stops; any other is closed.
 * Take its samples before (`take`): what it records after is dropped.
 *
 * @since 0.1.0
 * @category combinators
 */
export const release = (sampler: ThreadSampler, lingerMs: number): void => {
  const s = shared
  if (s === undefined || s.sampler !== sampler) return sampler.close()
  s.inUse = false
  if (!sampler.running) {
    shared = undefined
    return sampler.close()
  }
  s.linger = setTimeout(() => {
    if (shared === s && !s.inUse) {
      shared = undefined
      s.sampler.close()
    }
  }, lingerMs)
  s.linger.unref()
}

/**
 * V8's sampling profiler on the calling thread: an `inspector.Session` connected in
 * this thread (in a worker thread it profiles that worker, not the main thread), with
 * `Profiler.setSamplingInterval` and `Profiler.start`; `take` stops it, returns the
 * samples (see `Sampling.fromCpuProfile`) and optionally starts it again. The session's
 * calls are synchronous in the thread that owns it.
 *
 * Costs (measured, docs/profiler.md): `Profiler.start` takes ~10–30 ms (V8 logs the
 * code that exists), `Profiler.stop` a few ms; in between, each sample costs the thread
 * a signal and a stack walk.
 *
 * Used by the worker threads (engine/internal/worker.ts) and by the statistical
 * profiler layer for the main thread. Imports `node:inspector`: not for the DSL's reach.
 *
 * @since 0.1.0
 */
import { Session } from "node:inspector"
import * as EngineClock from "./EngineClock.ts"
import { fromCpuProfile, type SampleChunk } from "./Sampling.ts"

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

/**
 * A running sampler on the calling thread.
 *
 * @since 0.1.0
 * @category models
 */
export class ThreadSampler {
  private readonly session: Session
  private running = false
  /** `performance.now()` when it last started */
  startedAt = 0
  /** interval in milliseconds */
  readonly interval: number

  constructor(intervalMs: number) {
    this.interval = intervalMs
    this.session = new Session()
    this.session.connect()
    call(this.session, "Profiler.enable")
    call(this.session, "Profiler.setSamplingInterval", { interval: Math.max(1, Math.round(intervalMs * 1000)) })
    this.start()
  }

  private start(): void {
    call(this.session, "Profiler.start")
    this.running = true
    this.startedAt = performance.now()
  }

  /** Stops sampling, returns the samples since the last start, restarts when `restart`. */
  take(restart: boolean): SampleChunk {
    if (!this.running) return { nodes: [], samples: new Int32Array(0), times: new Float64Array(0) }
    const { profile } = call<{ profile: Parameters<typeof fromCpuProfile>[0] }>(this.session, "Profiler.stop")
    this.running = false
    const chunk = fromCpuProfile(profile, clockOffsetMicros())
    if (restart) this.start()
    return chunk
  }

  /** Stops sampling (dropping what was not taken) and disconnects. */
  close(): void {
    if (this.running) call(this.session, "Profiler.stop")
    this.running = false
    this.session.disconnect()
  }
}

/**
 * ResourceProfiler: dask.diagnostics' `ResourceProfiler({ dt })` — samples `time` (epoch
 * seconds), `mem` (resident memory, MB) and `cpu` (% of one core) of the whole process
 * (main thread + worker threads) every `dt` seconds (default 1) from each compute's
 * `start` until its `finish`, taking the first sample immediately and a last one at
 * finish. Results accumulate over computes until `clear()`.
 *
 * dask samples from a separate process; here a timer in the main thread does it, which
 * is enough because the engine's main thread only schedules (kernels run in workers).
 * With the in-process sync executor, samples come only when the loop yields.
 *
 * @since 0.1.0
 */
import * as EngineClock from "../engine/EngineClock.ts"
import type * as Hooks from "../engine/Hooks.ts"
import type { HasCallbacks } from "./Callback.ts"

/**
 * One sample (dask's `ResourceData`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResourceData {
  readonly time: number
  readonly mem: number
  readonly cpu: number
}

/**
 * A resource profiler.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResourceProfiler extends HasCallbacks {
  readonly dt: number
  readonly results: ReadonlyArray<ResourceData>
  readonly clear: () => void
}

/**
 * Options of the resource profiler.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResourceProfilerOptions {
  /** sampling period in seconds (default 1, dask's) */
  readonly dt?: number
}

/**
 * A new resource profiler sampling every `dt` seconds (must be > 0; throws RangeError).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: ResourceProfilerOptions = {}): ResourceProfiler => {
  const dt = options.dt ?? 1
  if (!(dt > 0) || !Number.isFinite(dt)) throw new RangeError(`ResourceProfiler dt must be a positive number of seconds, got ${dt}`)
  let results: Array<ResourceData> = []
  let timer: ReturnType<typeof setInterval> | null = null
  let lastCpu = process.cpuUsage()
  let lastAt = performance.now()
  let active = 0
  const sample = () => {
    const now = performance.now()
    const cpu = process.cpuUsage()
    const used = (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000 // ms
    const pct = now > lastAt ? (used / (now - lastAt)) * 100 : 0
    lastCpu = cpu
    lastAt = now
    results.push({ time: EngineClock.nowSeconds(), mem: process.memoryUsage.rss() / 1e6, cpu: Math.round(pct * 10) / 10 })
  }
  const callbacks: Hooks.Callbacks = {
    start: () => {
      if (active++ > 0) return
      lastCpu = process.cpuUsage()
      lastAt = performance.now()
      sample()
      timer = setInterval(sample, dt * 1000)
      timer.unref()
    },
    finish: () => {
      if (--active > 0) return
      if (timer !== null) clearInterval(timer)
      timer = null
      sample()
    }
  }
  return {
    dt,
    callbacks,
    get results() {
      return results
    },
    clear: () => {
      results = []
    }
  }
}

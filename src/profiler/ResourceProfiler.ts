/**
 * ResourceProfiler: dask.diagnostics' `ResourceProfiler({ dt })` — samples `time` (epoch
 * seconds), `mem` (resident memory, MB) and `cpu` (% of one core) of the whole process
 * (main thread + worker threads) every `dt` seconds (default 1) from each compute's
 * `start` until its `finish`, taking the first sample immediately and a last one at
 * finish. Results accumulate over computes until `clear()`.
 *
 * `cpu` is the process's CPU time over the interval since the previous sample, divided
 * by that interval. The very first sample (after `make` or `clear`) has no previous
 * one and reads 0, as dask's does (psutil's first `cpu_percent()` call); a later
 * compute's first sample covers the time since the previous compute's last sample, as
 * dask's does too. Intervals shorter than 1 ms repeat the previous value (a ratio of two
 * near-zero numbers is noise), and every value is capped at 100 x
 * `os.availableParallelism()`: the process cannot use more, so anything above is
 * measurement error (CPU time and wall time come from different clocks).
 *
 * dask samples from a separate process; here a timer in the main thread does it, which
 * is enough because the engine's main thread only schedules (kernels run in workers).
 * With the in-process sync executor, samples come only when the loop yields.
 *
 * @since 0.1.0
 */
import { availableParallelism } from "node:os"
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
  const cap = 100 * availableParallelism()
  let results: Array<ResourceData> = []
  let timer: ReturnType<typeof setInterval> | null = null
  // the previous sample's CPU time and wall time; null before the first sample
  let last: { readonly cpu: NodeJS.CpuUsage; readonly at: number; readonly pct: number } | null = null
  let active = 0
  const sample = () => {
    const now = performance.now()
    const cpu = process.cpuUsage()
    let pct = 0
    if (last !== null) {
      const wall = now - last.at // ms
      if (wall < 1) pct = last.pct
      else {
        const used = (cpu.user - last.cpu.user + cpu.system - last.cpu.system) / 1000 // ms
        pct = Math.min(cap, Math.max(0, Math.round((used / wall) * 1000) / 10))
      }
    }
    // a repeated value keeps the older reference point, so the next interval is real
    last = last !== null && now - last.at < 1 ? { ...last, pct } : { cpu, at: now, pct }
    results.push({ time: EngineClock.nowSeconds(), mem: process.memoryUsage.rss() / 1e6, cpu: pct })
  }
  const callbacks: Hooks.Callbacks = {
    start: () => {
      if (active++ > 0) return
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
      last = null
    }
  }
}

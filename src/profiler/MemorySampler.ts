/**
 * MemorySampler, after distributed's `MemorySampler`: record a memory measure
 * (default: this process's resident set size) around any computation, under a label,
 * then compare labelled runs as an Arrow table or, with `report/MemorySamplerPlot.ts`
 * `plot(sampler, base)`, as a figure (the drawing lives in the report layer).
 *
 * `sample(label, { interval, measure })` is an Effect scoped resource: it takes one
 * sample immediately, then one every `interval` ms, and a last one when its scope
 * closes. `samplePromise(label, options, fn)` is the same around a Promise-returning
 * function. Timestamps are epoch seconds on the engine's clock (EngineClock).
 *
 * Leaves out: per-worker memory (the engine's `Managed Memory` events have that).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Scope } from "effect"
import { Table, Utf8, Dictionary, Int32, makeVector, vectorFromArray } from "apache-arrow"
import { nowSeconds as now } from "../engine/EngineClock.ts"

/**
 * Options of one sampling run.
 *
 * @since 0.1.0
 * @category models
 */
export interface SampleOptions {
  /** milliseconds between samples (default 100) */
  readonly interval?: number
  /** the measure in bytes (default `process.memoryUsage().rss`) */
  readonly measure?: () => number
}

/**
 * One labelled series of (time, bytes) samples.
 *
 * @since 0.1.0
 * @category models
 */
export interface Series {
  readonly label: string
  readonly time: Array<number>
  readonly bytes: Array<number>
}

/**
 * A sampler holding any number of labelled series.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemorySampler {
  readonly series: ReadonlyArray<Series>
  /** Sample while the enclosing scope is open. */
  readonly sample: (label: string, options?: SampleOptions) => Effect.Effect<Series, never, Scope.Scope>
  /** Sample while `fn` runs; resolves to `fn`'s result. */
  readonly samplePromise: <A>(label: string, options: SampleOptions, fn: () => Promise<A>) => Promise<A>
  /** Long table (label, time, bytes); aligned: time = seconds since each series' first sample. */
  readonly toTable: (options?: { readonly align?: boolean }) => Table
}

/**
 * Make an empty sampler.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): MemorySampler => {
  const series: Array<Series> = []
  const start = (label: string, options: SampleOptions | undefined) => {
    const measure = options?.measure ?? (() => process.memoryUsage().rss)
    const s: Series = { label, time: [], bytes: [] }
    series.push(s)
    const take = () => {
      s.time.push(now())
      s.bytes.push(measure())
    }
    take()
    const timer = setInterval(take, Math.max(1, options?.interval ?? 100))
    return {
      s,
      stop: () => {
        clearInterval(timer)
        take()
      }
    }
  }
  const toTable = (options?: { readonly align?: boolean }): Table => {
    const labels: Array<string> = []
    const time: Array<number> = []
    const bytes: Array<number> = []
    for (const s of series) {
      const t0 = s.time[0] ?? 0
      for (let i = 0; i < s.time.length; i++) {
        labels.push(s.label)
        time.push(options?.align === true ? s.time[i]! - t0 : s.time[i]!)
        bytes.push(s.bytes[i]!)
      }
    }
    return new Table({
      label: vectorFromArray(labels, new Dictionary(new Utf8(), new Int32())),
      time: makeVector(Float64Array.from(time)),
      bytes: makeVector(Float64Array.from(bytes))
    })
  }
  return {
    series,
    sample: (label, options) =>
      Effect.acquireRelease(Effect.sync(() => start(label, options)), (r) => Effect.sync(() => r.stop())).pipe(
        Effect.map((r) => r.s)
      ),
    samplePromise: async (label, options, fn) => {
      const r = start(label, options)
      try {
        return await fn()
      } finally {
        r.stop()
      }
    },
    toTable
  }
}

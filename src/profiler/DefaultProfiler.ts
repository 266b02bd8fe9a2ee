/**
 * `registerDefaultProfiler`: DASF's `register_default_profiler` in one line — registers
 * the Trace layer and the ResourceMonitor layer, printing
 * `Registered worker plugin: {name}-TracePlugin` and
 * `Registered resource plugin: {name}-ResourceMonitor`, writing
 * `{name}-TracePlugin-{host}.msgpack` and `{name}-ResourceMonitor-{host}.msgpack` in
 * the working directory or `directory` (`{name}-{unix time}-...` with `addTimeSuffix`).
 *
 * Two forms: `layer(options)` for Effect programs (both plugins live as long as the
 * layer), and `registerDefaultProfiler(pipelineOrOptions, options)` for Promise users,
 * which registers globally and returns a handle to `close()`; an unclosed handle is
 * flushed when the process exits (and on SIGINT/SIGTERM, fatal errors), and its sampling
 * timer never keeps the process alive.
 *
 * Both files are created when the profiler is registered (when `registerDefaultProfiler`
 * returns, or when the layer is built). A file that already holds events (a profile name
 * used before) is appended to, as DASF does, and one warning line says so (through
 * `warn`, default stderr: the file and how many bytes it held); `overwrite: true`
 * truncates both files first instead.
 *
 * With a pipeline (the first argument, or the `pipeline` option), the trace database
 * also gets one "Pipeline Graph" event (an instant event DASF reads and ignores) holding
 * the pipeline's stage DAG
 * (`visualize()` DOT; see PipelineGraph): written when the first compute starts, or at
 * close when nothing was computed.
 *
 * `enableNvtx`: Node.js has no NVTX binding, so the option prints one warning per process
 * and is otherwise ignored (never a failure).
 *
 * @since 0.1.0
 */
import { hostname } from "node:os"
import { join } from "node:path"
import { Clock, Effect, Layer } from "effect"
import * as EngineClock from "../engine/EngineClock.ts"
import * as Hooks from "../engine/Hooks.ts"
import type { DatabaseError } from "./EventDatabase.ts"
import { defaultWarn, FileDatabase, openAnnounced } from "./FileDatabase.ts"
import { HostSampler } from "./internal/hostSampler.ts"
import * as PipelineGraph from "./PipelineGraph.ts"
import * as ResourceMonitor from "./ResourceMonitor.ts"
import * as Trace from "./Trace.ts"

/**
 * Options of the default profiler.
 *
 * @since 0.1.0
 * @category models
 */
export interface DefaultProfilerOptions {
  /** file name prefix (default "tessera") */
  readonly name?: string
  /** NVTX ranges: not available on Node.js; one warning */
  readonly enableNvtx?: boolean
  /** put `-{unix time}` after the name */
  readonly addTimeSuffix?: boolean
  /** where the files go (default the working directory) */
  readonly directory?: string
  /** resource sampling period in milliseconds (default 100) */
  readonly interval?: number
  /** host name in file names and events (default os.hostname()) */
  readonly host?: string
  /** events buffered before a batch is written (default 5000) */
  readonly commitThreshold?: number
  /**
   * truncate both files when they are created instead of appending to files of an
   * earlier run (default false: append, with a warning)
   */
  readonly overwrite?: boolean
  /** printer of the registration lines (default console.log) */
  readonly log?: (line: string) => void
  /** printer of warnings: appending to a non-empty file (default: a line on stderr) */
  readonly warn?: (line: string) => void
  /** the pipeline whose stage DAG goes into the trace ("Pipeline Graph" event) */
  readonly pipeline?: PipelineGraph.PipelineLike
}

/**
 * The two file paths and plugin names the options lead to.
 *
 * @since 0.1.0
 * @category models
 */
export interface DefaultProfilerFiles {
  readonly traceName: string
  readonly resourceName: string
  readonly traceFile: string
  readonly resourceFile: string
}

/**
 * Works out plugin names and file paths; `nowSeconds` is the unix time for the suffix.
 *
 * @since 0.1.0
 * @category constructors
 */
export const files = (options: DefaultProfilerOptions, nowSeconds: number): DefaultProfilerFiles => {
  const base = (options.name ?? "tessera") + (options.addTimeSuffix === true ? `-${Math.floor(nowSeconds)}` : "")
  const host = options.host ?? hostname()
  const dir = options.directory ?? "."
  return {
    traceName: `${base}-TracePlugin`,
    resourceName: `${base}-ResourceMonitor`,
    traceFile: join(dir, `${base}-TracePlugin-${host}.msgpack`),
    resourceFile: join(dir, `${base}-ResourceMonitor-${host}.msgpack`)
  }
}

let nvtxWarned = false
const warnNvtx = (options: DefaultProfilerOptions): void => {
  if (options.enableNvtx !== true || nvtxWarned) return
  nvtxWarned = true
  process.emitWarning("enableNvtx: no NVTX library is available for Node.js; profiling continues without NVTX ranges")
}

const registerScoped = (cb: Hooks.Callbacks) =>
  Effect.acquireRelease(Effect.sync(() => Hooks.register(cb)), (unregister) => Effect.sync(unregister))

const commitOptions = (o: DefaultProfilerOptions) => ({
  ...(o.commitThreshold !== undefined ? { commitThreshold: o.commitThreshold } : {}),
  ...(o.overwrite !== undefined ? { overwrite: o.overwrite } : {})
})

/**
 * Trace + ResourceMonitor as one layer, named and placed as DASF does.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: DefaultProfilerOptions = {}): Layer.Layer<never, DatabaseError> =>
  Layer.unwrap(Effect.map(Clock.currentTimeMillis, (ms) => {
    const f = files(options, ms / 1000)
    const log = options.log ?? console.log
    const warn = options.warn ?? defaultWarn
    warnNvtx(options)
    return Layer.mergeAll(
      Layer.effectDiscard(Effect.gen(function*() {
        const db = yield* Trace.openDatabase({ file: f.traceFile, ...commitOptions(options), warn })
        yield* registerScoped(Trace.callbacks(db))
        const pipeline = options.pipeline
        if (pipeline !== undefined) {
          const graph = PipelineGraph.recorder(db, pipeline, options.host ?? hostname())
          // finalizers run in reverse: this one (record if no compute ran) before the file closes
          yield* Effect.addFinalizer(() => Effect.sync(graph.recordUnsafe))
          yield* registerScoped(graph.callbacks)
        }
        log(`Registered worker plugin: ${f.traceName}`)
      })),
      Layer.effectDiscard(Effect.sync(() => log(`Registered resource plugin: ${f.resourceName}`))).pipe(
        Layer.provideMerge(ResourceMonitor.layer({
          file: f.resourceFile,
          ...commitOptions(options),
          warn,
          ...(options.interval !== undefined ? { interval: options.interval } : {}),
          ...(options.host !== undefined ? { host: options.host } : {})
        }))
      )
    )
  }))

/**
 * A running default profiler (Promise form).
 *
 * @since 0.1.0
 * @category models
 */
export interface DefaultProfilerHandle extends DefaultProfilerFiles {
  /** Stops sampling, unregisters the hooks, flushes and closes both files. Idempotent. */
  readonly close: () => void
}

const isOptions = (u: unknown): u is DefaultProfilerOptions =>
  typeof u === "object" && u !== null && !PipelineGraph.isPipelineLike(u) && !("stages" in u) && !("run" in u)

/**
 * DASF's `register_default_profiler(pipeline, name, enable_nvtx, add_time_suffix)` for
 * Promise users. Hooks are registered globally, so any compute is profiled; a pipeline
 * (anything with `name` and `visualize()`) as first argument also puts its stage DAG
 * into the trace. Options may come first instead. Both files exist when it returns.
 * Throws `DatabaseError` when a file cannot be created.
 *
 * @since 0.1.0
 * @category constructors
 */
export function registerDefaultProfiler(pipeline: PipelineGraph.PipelineLike, options?: DefaultProfilerOptions): DefaultProfilerHandle
export function registerDefaultProfiler(options?: DefaultProfilerOptions): DefaultProfilerHandle
export function registerDefaultProfiler(
  pipelineOrOptions: PipelineGraph.PipelineLike | DefaultProfilerOptions | undefined,
  options: DefaultProfilerOptions
): DefaultProfilerHandle
export function registerDefaultProfiler(
  pipelineOrOptions?: PipelineGraph.PipelineLike | DefaultProfilerOptions,
  options?: DefaultProfilerOptions
): DefaultProfilerHandle {
  const o: DefaultProfilerOptions = options ?? (isOptions(pipelineOrOptions) ? pipelineOrOptions : {})
  const pipeline = PipelineGraph.isPipelineLike(pipelineOrOptions) ? pipelineOrOptions : o.pipeline
  const f = files(o, Date.now() / 1000)
  const log = o.log ?? console.log
  const warn = o.warn ?? defaultWarn
  warnNvtx(o)
  const host = o.host ?? hostname()
  // both files are created now, so the returned paths exist (and a re-used name is told)
  const traceDb = new FileDatabase(f.traceFile, commitOptions(o))
  const resourceDb = new FileDatabase(f.resourceFile, commitOptions(o))
  try {
    openAnnounced(traceDb, warn)
    openAnnounced(resourceDb, warn)
  } catch (e) {
    traceDb.close()
    resourceDb.close()
    throw e
  }
  const unregisterTrace = Hooks.register(Trace.callbacks(traceDb))
  const graph = pipeline === undefined ? undefined : PipelineGraph.recorder(traceDb, pipeline, host)
  const unregisterGraph = graph === undefined ? () => {} : Hooks.register(graph.callbacks)
  log(`Registered worker plugin: ${f.traceName}`)
  const sampler = new HostSampler()
  const sample = () =>
    resourceDb.record(ResourceMonitor.resourceEvent(EngineClock.nowSeconds(), host, sampler.sampleUnsafe(Date.now() / 1000)))
  sample()
  // plain timers here (not Effect fibers) so an unclosed profiler never keeps the process alive
  const timer = setInterval(sample, o.interval ?? 100)
  timer.unref()
  const gpuTimer = sampler.hasGpu ? setInterval(() => void sampler.pollGpu(), 1000) : null
  gpuTimer?.unref()
  if (sampler.hasGpu) void sampler.pollGpu()
  const ioTimer = sampler.needsSystemInformation ? setInterval(() => void sampler.pollSystemInformation(), o.interval ?? 100) : null
  ioTimer?.unref()
  log(`Registered resource plugin: ${f.resourceName}`)
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    process.off("beforeExit", close)
    clearInterval(timer)
    if (gpuTimer !== null) clearInterval(gpuTimer)
    if (ioTimer !== null) clearInterval(ioTimer)
    unregisterTrace()
    unregisterGraph()
    graph?.recordUnsafe()
    sample()
    sampler.close()
    traceDb.close()
    resourceDb.close()
  }
  process.once("beforeExit", close)
  return { ...f, close }
}

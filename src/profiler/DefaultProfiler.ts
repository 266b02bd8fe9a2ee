/**
 * `registerDefaultProfiler`: DASF's `register_default_profiler` in one line — registers
 * the Trace layer and the ResourceMonitor layer, printing
 * `Registered worker plugin: {name}-TracePlugin` and
 * `Registered resource plugin: {name}-ResourceMonitor`, writing
 * `{name}-TracePlugin-{host}.msgpack` and `{name}-ResourceMonitor-{host}.msgpack` in
 * the working directory or `directory` (`{name}-{unix time}-...` with `addTimeSuffix`).
 *
 * Two forms of the same layers: `layer(options)` for Effect programs (both plugins live
 * as long as the layer, and only computes run under it are traced), and
 * `registerDefaultProfiler(pipelineOrOptions, options)` for Promise users, which builds
 * that layer in a scope of its own, registers the callbacks it provides globally (every
 * compute is traced, as in DASF) and returns a handle whose `close()` closes the scope;
 * an unclosed handle is flushed when the process exits (and on SIGINT/SIGTERM, fatal
 * errors), and its sampling never keeps the process alive (its fibers sleep on unref'd
 * timers).
 *
 * `registerDefaultProfiler` also runs the statistical profiler (issue 18: V8's stack
 * samples of every worker thread every 10 ms, attributed to tasks; `StatisticalProfiler`)
 * into a third file, `{name}-StatisticalProfiler-{host}.msgpack`, announced as
 * `Registered sampling profiler: {name}-StatisticalProfiler`, unless `sample: false`
 * (the CLI's `--no-sample`). Its file is complete when `close()`'s promise resolves;
 * a process killed before that loses the samples not yet handed over (they are written
 * every `Sampling.flushSeconds` and at close). `layer` samples with `sample: true`.
 *
 * On a cluster executor, each worker process writes the same two files for its own host
 * (`{name}-TracePlugin-{worker host}.msgpack`, and one worker per host without the driver
 * the host's `ResourceMonitor`), through a worker plugin (`WorkerPlugins.trace`); the
 * driver's files get the driver's events and the driver's host's resources (the driver
 * process with the worker processes on its host). See docs/cluster.md.
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
import { isAbsolute, join, resolve } from "node:path"
import { Cause, Clock, Context, Effect, Exit, Layer, Scope } from "effect"
import * as Hooks from "../engine/Hooks.ts"
import * as Kernel from "../engine/Kernel.ts"
import * as WorkerPlugin from "../engine/WorkerPlugin.ts"
import type { DatabaseError } from "./EventDatabase.ts"
import { defaultWarn } from "./FileDatabase.ts"
import { unrefClock } from "./internal/unrefClock.ts"
import * as PipelineGraph from "./PipelineGraph.ts"
import * as ResourceMonitor from "./ResourceMonitor.ts"
import * as StatisticalProfiler from "./StatisticalProfiler.ts"
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
  /**
   * the statistical profiler too (`StatisticalProfiler`, `{name}-StatisticalProfiler-{host}.msgpack`):
   * default true for `registerDefaultProfiler`, false for `layer` (where it can also be
   * stacked by hand); false is the CLI's `--no-sample`
   */
  readonly sample?: boolean
  /** its sampling interval in milliseconds (default 10) */
  readonly sampleInterval?: number
  /**
   * it samples the driver's main thread too (`StatisticalProfiler` `driver: true`; the
   * CLI's `--sample-driver`); default: only once tasks run on it (the in-process executor)
   */
  readonly sampleDriver?: boolean
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
  /** the statistical profiler's (written only when it samples) */
  readonly sampleName: string
  readonly sampleFile: string
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
  // a name that is an absolute path stays one (join(".", "/tmp/x") would be "tmp/x")
  const at = (file: string) => (isAbsolute(file) ? file : join(dir, file))
  return {
    traceName: `${base}-TracePlugin`,
    resourceName: `${base}-ResourceMonitor`,
    traceFile: at(`${base}-TracePlugin-${host}.msgpack`),
    resourceFile: at(`${base}-ResourceMonitor-${host}.msgpack`),
    sampleName: `${base}-StatisticalProfiler`,
    sampleFile: at(`${base}-StatisticalProfiler-${host}.msgpack`)
  }
}

let nvtxWarned = false
const warnNvtx = (options: DefaultProfilerOptions): void => {
  if (options.enableNvtx !== true || nvtxWarned) return
  nvtxWarned = true
  process.emitWarning("enableNvtx: no NVTX library is available for Node.js; profiling continues without NVTX ranges")
}

const commitOptions = (o: DefaultProfilerOptions) => ({
  ...(o.commitThreshold !== undefined ? { commitThreshold: o.commitThreshold } : {}),
  ...(o.overwrite !== undefined ? { overwrite: o.overwrite } : {})
})

/**
 * Trace + ResourceMonitor as one layer, named and placed as DASF does; with `sample:
 * true` the statistical profiler on top of them.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: DefaultProfilerOptions = {}): Layer.Layer<never, DatabaseError> =>
  Layer.unwrap(Effect.map(Clock.currentTimeMillis, (ms) => {
    const f = files(options, ms / 1000)
    const base = layerAt(options, f)
    return options.sample === true ? samplerAt(options, f).pipe(Layer.provideMerge(base)) : base
  }))

/** The statistical profiler writing `f.sampleFile`, announced like the others. */
const samplerAt = (options: DefaultProfilerOptions, f: DefaultProfilerFiles): Layer.Layer<never, DatabaseError> =>
  Layer.effectDiscard(Effect.sync(() => (options.log ?? console.log)(`Registered sampling profiler: ${f.sampleName}`))).pipe(
    Layer.provideMerge(StatisticalProfiler.layer({
      file: f.sampleFile,
      ...commitOptions(options),
      warn: options.warn ?? defaultWarn,
      // cluster workers write their host's sidecar
      workers: {
        name: f.sampleName.slice(0, -"-StatisticalProfiler".length),
        directory: resolve(options.directory ?? "."),
        ...(options.overwrite === true ? { overwrite: true } : {})
      },
      ...(options.sampleInterval !== undefined ? { interval: options.sampleInterval } : {}),
      ...(options.sampleDriver === true ? { driver: true } : {}),
      ...(options.host !== undefined ? { host: options.host } : {})
    }))
  )

/**
 * The Trace layer's worker plugin: the same files, named for each worker's host, in the
 * same folder (an absolute path, which every host needs).
 */
const tracePlugin = (options: DefaultProfilerOptions, f: DefaultProfilerFiles): WorkerPlugin.WorkerPlugin => ({
  id: WorkerPlugin.makeId("trace"),
  module: Kernel.sibling(import.meta.url, "./WorkerPlugins").href,
  name: "trace",
  options: {
    name: f.traceName.slice(0, -"-TracePlugin".length),
    directory: resolve(options.directory ?? "."),
    ...commitOptions(options),
    ...(options.interval !== undefined ? { interval: options.interval } : {})
  }
})

/** The layer writing the files `f` (worked out once by the caller). */
const layerAt = (options: DefaultProfilerOptions, f: DefaultProfilerFiles): Layer.Layer<never, DatabaseError> => {
  const log = options.log ?? console.log
  const warn = options.warn ?? defaultWarn
  warnNvtx(options)
  const trace = Hooks.layerEffect(Effect.gen(function*() {
    const db = yield* Trace.openDatabase({ file: f.traceFile, ...commitOptions(options), warn })
    // on a cluster, each worker process writes its host's files (WorkerPlugins.trace)
    const traced: Hooks.Callbacks = { ...Trace.callbacks(db), workerPlugin: tracePlugin(options, f) }
    // finalizers run in reverse: the workers' files are flushed before this one closes
    // (synchronous when no cluster runs it: registerDefaultProfiler closes with runSync)
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => WorkerPlugin.attached(traced) ? Effect.promise(() => WorkerPlugin.close(traced)) : Effect.void)
    )
    const callbacks = [traced]
    const pipeline = options.pipeline
    if (pipeline !== undefined) {
      const graph = PipelineGraph.recorder(db, pipeline, options.host ?? hostname())
      // finalizers run in reverse: this one (record if no compute ran) before the file closes
      yield* Effect.addFinalizer(() => Effect.sync(graph.recordUnsafe))
      callbacks.push(graph.callbacks)
    }
    log(`Registered worker plugin: ${f.traceName}`)
    return callbacks
  }))
  const resources = Layer.effectDiscard(Effect.sync(() => log(`Registered resource plugin: ${f.resourceName}`))).pipe(
    Layer.provideMerge(ResourceMonitor.layer({
      file: f.resourceFile,
      ...commitOptions(options),
      warn,
      ...(options.interval !== undefined ? { interval: options.interval } : {}),
      ...(options.host !== undefined ? { host: options.host } : {})
    }))
  )
  // trace first, then resources: the registration lines come out in DASF's order
  return resources.pipe(Layer.provideMerge(trace))
}

/**
 * A running default profiler (Promise form).
 *
 * @since 0.1.0
 * @category models
 */
export interface DefaultProfilerHandle extends DefaultProfilerFiles {
  /**
   * Stops sampling, unregisters the hooks, flushes and closes the trace and resource
   * files before it returns. The statistical profiler's file is complete when the
   * returned promise resolves (the workers' last samples arrive asynchronously).
   * Idempotent (later calls return the same promise).
   */
  readonly close: () => Promise<void>
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
  const withPipeline = pipeline === undefined ? o : { ...o, pipeline }
  // the layers' builds are synchronous (files opened, first sample taken), so the files
  // exist when this returns; their sampling fibers sleep on unref'd timers. Two scopes:
  // Trace + ResourceMonitor close synchronously, the statistical profiler waits for the
  // workers' last samples.
  const build = (l: Layer.Layer<never, DatabaseError>) => {
    const scope = Scope.makeUnsafe()
    const built = Effect.runSyncExit(Layer.buildWithScope(l, scope).pipe(Effect.provideService(Clock.Clock, unrefClock)))
    if (Exit.isFailure(built)) {
      Effect.runSync(Scope.close(scope, built))
      throw Cause.squash(built.cause)
    }
    const callbacks = Context.get(built.value, Hooks.CurrentCallbacks)
    return { scope, callbacks, unregister: callbacks.map(Hooks.register) }
  }
  const main = build(layerAt(withPipeline, f))
  let sampler: ReturnType<typeof build> | undefined
  try {
    sampler = o.sample === false ? undefined : build(samplerAt(withPipeline, f))
  } catch (e) {
    for (const un of main.unregister) un()
    Effect.runSync(Scope.close(main.scope, Exit.void))
    throw e
  }
  let closed: Promise<void> | undefined
  const close = () => {
    if (closed !== undefined) return closed
    process.off("beforeExit", close)
    for (const un of [...main.unregister, ...(sampler?.unregister ?? [])]) un()
    // cluster workers flush their files in the background (a Promise user's close is
    // synchronous), and at the latest when their processes stop
    for (const cb of main.callbacks) void WorkerPlugin.close(cb)
    Effect.runSync(Scope.close(main.scope, Exit.void))
    closed = sampler === undefined ? Promise.resolve() : Effect.runPromise(Scope.close(sampler.scope, Exit.void))
    return closed
  }
  process.once("beforeExit", close)
  return { ...f, close }
}

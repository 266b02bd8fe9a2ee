/**
 * ResourceMonitor layer (DASF's `ResourceMonitor`): every `interval` (default 100 ms) a
 * `Resource Usage` instant event with DASF's args — cpu, memory, time,
 * host_net_io.read_bps, host_net_io.write_bps, host_disk_io.read_bps,
 * host_disk_io.write_bps, num_fds, gpu_utilization, gpu_memory_used — measured for the
 * whole process (main thread and worker threads), with the cluster worker processes this
 * process runs on its host (`processes`), and the host (internal/hostSampler). Beyond
 * DASF's, two args a DASF reader ignores: `host_memory.total` and `host_memory.available`
 * (bytes: the host's memory, and what it can still give without swapping, Linux's
 * MemAvailable through `os.freemem()`), which the diagnosis's `memory-pressure` reads.
 *
 * The first sample is taken immediately when the layer starts, a last one when its scope
 * closes; sampling stops with the scope. `timestamp` is on the engine clock
 * (EngineClock, the same clock as task events, so samples line up with tasks);
 * `time` is the Effect `Clock`'s wall time in seconds. `process_id` is the host,
 * `thread_id` null (DASF writes nil: a host-wide event).
 *
 * @since 0.1.0
 */
import { freemem, hostname, totalmem } from "node:os"
import { Clock, Duration, Effect, Layer } from "effect"
import * as EngineClock from "../engine/EngineClock.ts"
import * as WorkerPlugin from "../engine/WorkerPlugin.ts"
import { EventNames, type TraceEvent } from "../trace/TraceEvent.ts"
import type { DatabaseError, EventDatabase } from "./EventDatabase.ts"
import type { GpuSource } from "./internal/gpu.ts"
import { HostSampler, type ResourceArgs } from "./internal/hostSampler.ts"
import { openDatabase, type TraceOptions } from "./Trace.ts"

/**
 * How the resource monitor samples.
 *
 * @since 0.1.0
 * @category models
 */
export interface SamplingOptions {
  /** sampling period (default 100 millis) */
  readonly interval?: Duration.Input
  /** process_id of the events (default os.hostname()) */
  readonly host?: string
  /** GPU readings: nvidia-smi's CSV (default: nvidia-smi when on PATH; null: no GPU) */
  readonly gpu?: GpuSource | null
  /**
   * other processes measured with this one (their cpu, memory and fds added; default:
   * the cluster worker processes on this host that this process runs, `WorkerPlugin.hostProcesses`)
   */
  readonly processes?: () => ReadonlyArray<number>
  /** the clock of the events' timestamps, epoch seconds (default the engine's, `EngineClock.nowSeconds`) */
  readonly now?: () => number
}

/**
 * Options of the resource monitor: where to write (a database, or a file with
 * `commitThreshold`, `overwrite`, `warn`: see Trace's `FileTarget`), plus the sampling
 * period and host name.
 *
 * @since 0.1.0
 * @category models
 */
export type ResourceMonitorOptions = TraceOptions & SamplingOptions

/**
 * The args Tessera adds to DASF's in each sample: the host's memory (bytes), in total and
 * available (what it can still give without swapping: Linux's MemAvailable).
 *
 * @since 0.1.0
 * @category models
 */
export type HostMemoryArgs = {
  readonly "host_memory.total": number
  readonly "host_memory.available": number
}

/**
 * The host's memory now (`os.totalmem()`, `os.freemem()`: MemAvailable on Linux).
 *
 * @since 0.1.0
 * @category constructors
 */
export const hostMemoryArgs = (): HostMemoryArgs => ({ "host_memory.total": totalmem(), "host_memory.available": freemem() })

/**
 * The `Resource Usage` event for one sample.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resourceEvent = (timestamp: number, host: string, args: ResourceArgs | (ResourceArgs & HostMemoryArgs)): TraceEvent => ({
  name: EventNames.resourceUsage,
  timestamp,
  phase: "I",
  scope: "g",
  process_id: host,
  thread_id: null,
  args
})

/**
 * Starts sampling into `db` in the current scope; returns nothing. The sampling fibers
 * stop when the scope closes (after one last sample).
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = Effect.fnUntraced(function*(
  db: EventDatabase,
  options: SamplingOptions = {}
) {
  const interval = Duration.fromInputUnsafe(options.interval ?? 100)
  if (Duration.toMillis(interval) <= 0) return yield* Effect.die(new RangeError("ResourceMonitor interval must be positive"))
  const host = options.host ?? hostname()
  const now = options.now ?? EngineClock.nowSeconds
  const sampler = new HostSampler({
    ...(options.gpu !== undefined ? { gpu: options.gpu } : {}),
    processes: options.processes ?? WorkerPlugin.hostProcesses
  })
  const tick = Effect.flatMap(Clock.currentTimeMillis, (ms) =>
    Effect.sync(() => db.record(resourceEvent(now(), host, { ...sampler.sampleUnsafe(ms / 1000), ...hostMemoryArgs() }))))
  yield* Effect.addFinalizer(() => Effect.ignore(tick).pipe(Effect.ensuring(Effect.sync(() => sampler.close()))))
  yield* tick
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(interval), tick)))
  if (sampler.needsSystemInformation) {
    // in the background, so that starting the monitor stays synchronous (the first
    // samples read 0 B/s host I/O until the first reading arrives)
    yield* Effect.forkScoped(
      Effect.forever(Effect.andThen(Effect.promise(() => sampler.pollSystemInformation()), Effect.sleep(interval)))
    )
  }
  if (sampler.hasGpu) {
    // in the background (nvidia-smi can take a second to start): samples read 0 until
    // the first reading arrives, then the latest one; at most one query a second
    const gpuPeriod = Duration.max(interval, Duration.seconds(1))
    yield* Effect.forkScoped(
      Effect.forever(Effect.andThen(Effect.promise(() => sampler.pollGpu()), Effect.sleep(gpuPeriod)))
    )
  }
})

/**
 * The resource monitor as a layer: samples for the layer's lifetime; a file database is
 * flushed and closed when the layer's scope closes.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ResourceMonitorOptions): Layer.Layer<never, DatabaseError> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const db = yield* openDatabase(options)
    yield* run(db, {
      ...(options.interval !== undefined ? { interval: options.interval } : {}),
      ...(options.host !== undefined ? { host: options.host } : {}),
      ...(options.gpu !== undefined ? { gpu: options.gpu } : {}),
      ...(options.processes !== undefined ? { processes: options.processes } : {})
    })
  }))

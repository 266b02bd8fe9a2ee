/**
 * Trace layer (DASF's `TracePlugin`): turns the engine's task and memory records into
 * trace events.
 *
 * - `Compute` (X) per task: `timestamp` = the task's END (its result in memory), as
 *   DASF means it, and `duration` = end - start of the whole task (gather start), so
 *   the task ran exactly in `[timestamp - duration, timestamp]`. `process_id` = host,
 *   `thread_id` = `worker-{host}-{i}`. args: key, name (function name: the task's group
 *   name, which the engine derives with dask's `key_split` rules, right for every key
 *   shape — DASF-NOTES 8), state, size (bytes), shape, dtype, type, dependencies,
 *   dependents (from the graph, never `[]` when there are some — DASF-NOTES 13), plus
 *   Tessera's own: stage (when set), startstops (gather / compute / transfer phases,
 *   as distributed's `startstops`), cpu_time (thread CPU seconds), peak_memory (bytes:
 *   the worker's heap + external high-water mark while the task ran, docs/engine.md) and
 *   io_bytes (bytes its kernel read from files) when the engine measured them. A task
 *   that failed has state "erred", error (the message: task key, kernel, the kernel's
 *   `file:line:column`) and traceback (the stack on the thread that ran it); its timings
 *   run to the failure (docs/engine.md "Failures").
 * - `Managed Memory` (I) after each change of a worker's held chunks (a result entering
 *   memory, or released): key, state, size (bytes held by that worker), tasks (chunks held),
 *   and on a GPU worker's rows device (bytes it holds on the device).
 * - `Transfer` (X) per copy between host and a GPU worker's device (docs/gpu.md).
 * - `Driver` (X) per segment of the driver's (main thread's) time: pool start, setup,
 *   graph build, between computes, submit, wait; and each worker's start-up on its row.
 * - `Transfer` (X) per peer fetch between cluster workers, on the receiving worker's row.
 * - `Clock Offset` (I) per cluster worker and compute: its measured clock offset and
 *   uncertainty (the other events' timestamps are already on the scheduler's clock).
 *
 * One trace is one run (`Lineage`): keys are unique within it (`key#2` for a key executed
 * again), and dependencies cross computes (a task that reads a chunk persisted by an
 * earlier compute lists the task that made it).
 *
 * The engine never imports this module: the layer adds engine callbacks to the Effect
 * context (`Hooks.layerEffect`), so only computes run under the layer are traced. It
 * commits the database at the end of a compute when the last commit is at least
 * `commitInterval` old, 1 s by default (an iterative pipeline runs hundreds of small
 * computes, and a write per compute sits on its critical path), and closes it when the
 * layer's scope closes. A database with a `records` sink (FileDatabase) takes the
 * engine's records through it; exit, signal and fatal-error flushes
 * come from the database itself. A file is created when the layer starts; an existing
 * one is appended to, with one warning line, unless `overwrite` is set.
 *
 * @since 0.1.0
 */
import { Effect, type Layer, type Scope } from "effect"
import type { ClockRecord, DriverRecord, MemoryRecord, TaskRecord, TransferRecord } from "../engine/EngineEvents.ts"
import * as Hooks from "../engine/Hooks.ts"
import { keySplit } from "../trace/KeySplit.ts"
import * as Lineage from "../engine/Lineage.ts"
import { EventNames, type TraceEvent } from "../trace/TraceEvent.ts"
import type { DatabaseError, EventDatabase } from "./EventDatabase.ts"
import { attempt } from "./EventDatabase.ts"
import * as FileDatabase from "./FileDatabase.ts"

/**
 * The `Compute` event of a finished (or erred) task.
 *
 * @since 0.1.0
 * @category constructors
 */
export const computeEvent = (r: TaskRecord): TraceEvent => {
  const { gather, compute, transfer } = r.phases
  const start = gather[0]
  const end = transfer[1]
  const args: Record<string, unknown> = {
    key: r.key,
    name: r.name !== "" ? r.name : keySplit(r.key),
    state: r.state,
    size: r.nbytes,
    shape: r.shape,
    dtype: r.dtype,
    type: r.type,
    dependencies: r.dependencies,
    dependents: r.dependents,
    startstops: [
      { action: "gather", start: gather[0], stop: gather[1] },
      { action: "compute", start: compute[0], stop: compute[1] },
      { action: "transfer", start: transfer[0], stop: transfer[1] }
    ],
    cpu_time: r.cpuTime
  }
  if (r.peakMemory !== undefined) args.peak_memory = r.peakMemory
  if (r.ioBytes !== undefined) args.io_bytes = r.ioBytes
  if (r.gpuTime !== undefined) args.gpu_time = r.gpuTime
  if (r.stage !== undefined) args.stage = r.stage
  if (r.error !== undefined) args.error = r.error
  if (r.traceback !== undefined) args.traceback = r.traceback
  return {
    name: EventNames.compute,
    timestamp: end,
    phase: "X",
    process_id: r.host,
    thread_id: r.threadId,
    args,
    duration: Math.max(0, end - start)
  }
}

/**
 * The `Managed Memory` event after a worker's held data changed.
 *
 * @since 0.1.0
 * @category constructors
 */
export const memoryEvent = (m: MemoryRecord): TraceEvent => ({
  name: EventNames.managedMemory,
  timestamp: m.timestamp,
  phase: "I",
  scope: "g",
  process_id: m.host,
  thread_id: m.threadId,
  args: m.device === undefined
    ? { key: m.key, state: m.state, size: m.bytes, tasks: m.chunks }
    : { key: m.key, state: m.state, size: m.bytes, tasks: m.chunks, device: m.device }
})

/**
 * Name of the driver's events (`Driver`, phase X).
 *
 * @since 0.1.0
 * @category constants
 */
export const driverEventName = EventNames.driver

/**
 * The `Driver` event of one segment of the driver's time: phase X, `timestamp` = the
 * segment's end, `duration`, `thread_id` = `driver` (or the worker's, for `worker
 * start`); args: key, activity, compute (its number in the run), dependencies, tasks
 * (for `wait`: tasks the compute ran). DASF's reader takes it (phase X, DASF's fields)
 * and its analyser ignores the name.
 *
 * @since 0.1.0
 * @category constructors
 */
export const driverEvent = (d: DriverRecord): TraceEvent => ({
  name: driverEventName,
  timestamp: d.end,
  phase: "X",
  process_id: d.host,
  thread_id: d.threadId,
  args: { key: d.key, activity: d.activity, compute: d.compute, dependencies: d.dependencies, tasks: d.tasks },
  duration: Math.max(0, d.end - d.start)
})

/**
 * Name of the transfer events (`Transfer`, phase X): cluster peer fetches and GPU
 * workers' host↔device copies.
 *
 * @since 0.1.0
 * @category constants
 */
export const transferEventName = "Transfer"

/**
 * The `Transfer` event of data moved for tasks: phase X on the receiving worker's row (a
 * GPU worker's row for its copies both ways), `timestamp` = the end, `duration`; args:
 * keys, bytes, worker (the row's thread id), start, stop, and peer, serialize and
 * deserialize seconds for a cluster peer fetch, or direction (`host-to-device` |
 * `device-to-host`) for a device copy. DASF's reader takes it and its analyser ignores
 * the name.
 *
 * @since 0.1.0
 * @category constructors
 */
export const transferEvent = (t: TransferRecord): TraceEvent => ({
  name: transferEventName,
  timestamp: t.stop,
  phase: "X",
  process_id: t.host,
  thread_id: t.threadId,
  args: {
    keys: t.keys,
    bytes: t.bytes,
    worker: t.threadId,
    ...(t.peer !== undefined ? { peer: t.peer } : {}),
    start: t.start,
    stop: t.stop,
    ...(t.serialize !== undefined ? { serialize: t.serialize } : {}),
    ...(t.deserialize !== undefined ? { deserialize: t.deserialize } : {}),
    ...(t.direction !== undefined ? { direction: t.direction } : {})
  },
  duration: Math.max(0, t.stop - t.start)
})

/**
 * Name of the clock events (`Clock Offset`, phase I).
 *
 * @since 0.1.0
 * @category constants
 */
export const clockEventName = "Clock Offset"

/**
 * The `Clock Offset` event of a cluster worker: phase I on the worker's row; args:
 * worker, offset (its clock minus the scheduler's, seconds; the trace's timestamps are
 * already corrected by it), uncertainty (seconds).
 *
 * @since 0.1.0
 * @category constructors
 */
export const clockEvent = (c: ClockRecord): TraceEvent => ({
  name: clockEventName,
  timestamp: c.timestamp,
  phase: "I",
  scope: "t",
  process_id: c.host,
  thread_id: c.threadId,
  args: { worker: c.worker, offset: c.offset, uncertainty: c.uncertainty }
})

/**
 * Engine callbacks that record into `db` (for one compute: `compute(graph, { callbacks })`),
 * through the database's `records` sink when it has one. The database is committed at
 * the end of a compute when its last commit by these callbacks is at least
 * `commitInterval` milliseconds old (default 1000; 0: every compute).
 *
 * The callbacks carry a `Lineage.Run`, made here: every compute they see belongs to
 * one run, so task keys are unique within the trace (a key executed again is written
 * `key#2`, ...), tasks list the tasks of earlier computes whose results they take as
 * dependencies, and the driver's segments (`Driver` events) tile the run's time.
 *
 * @since 0.1.0
 * @category constructors
 */
export const callbacks = (db: EventDatabase, commitInterval = 1000): Hooks.Callbacks => {
  // the sink's own functions (no wrapper): these run once per task
  const sink = db.records ?? { task: (r: TaskRecord) => db.record(computeEvent(r)), memory: (m: MemoryRecord) => db.record(memoryEvent(m)) }
  // an erred task's event carries its error and traceback, which a records sink's fast
  // path does not write: it goes through `computeEvent` (one per failed compute)
  const fast = sink.task
  const task = db.records === undefined ? fast : (r: TaskRecord) => (r.state === "erred" ? db.record(computeEvent(r)) : fast(r))
  let last = -Infinity
  return {
    lineage: Lineage.makeRun(),
    task,
    memory: sink.memory,
    driver: sink.driver ?? ((d) => db.record(driverEvent(d))),
    transfer: (t) => db.record(transferEvent(t)),
    clock: (c) => db.record(clockEvent(c)),
    finish: () => {
      const now = performance.now()
      if (now - last < commitInterval) return
      last = now
      db.commit()
    }
  }
}

/**
 * A trace layer writing into an existing database.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatabaseTarget {
  readonly database: EventDatabase
}

/**
 * A trace layer writing into a file: opened (created) when the layer starts, appended to
 * when it exists (with a warning naming the file and its size) unless `overwrite`. The
 * layer holds the file's lock (`{file}.lock`) while it lives: a file another live run
 * writes fails the layer with `DatabaseError` (`Locked`) naming that run; and a write that
 * fails (a full disk) stops the file with one warning, never the program (FileDatabase).
 *
 * @since 0.1.0
 * @category models
 */
export interface FileTarget {
  readonly file: string
  /** events buffered before a batch is written (default 5000) */
  readonly commitThreshold?: number
  /** truncate the file when it is opened instead of appending to it (default false) */
  readonly overwrite?: boolean
  /** DASF's name for `overwrite` */
  readonly removeOldOutputFile?: boolean
  /** where the warnings go (appending to a non-empty file, a stale lock taken over, a failed write; default: a line on stderr) */
  readonly warn?: (line: string) => void
}

/**
 * Where the trace layer writes: an existing database, or a file.
 *
 * @since 0.1.0
 * @category models
 */
export type TraceOptions = DatabaseTarget | FileTarget

/**
 * Opens (scoped) the database the options name; a file database is opened (created)
 * now, warning through `warn` when it already holds events and is appended to, and
 * closed with the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const openDatabase = (options: TraceOptions): Effect.Effect<EventDatabase, DatabaseError, Scope.Scope> =>
  "database" in options
    ? Effect.succeed(options.database)
    : Effect.tap(
      FileDatabase.make(options.file, {
        ...(options.commitThreshold !== undefined ? { commitThreshold: options.commitThreshold } : {}),
        ...(options.overwrite !== undefined ? { overwrite: options.overwrite } : {}),
        ...(options.removeOldOutputFile !== undefined ? { removeOldOutputFile: options.removeOldOutputFile } : {}),
        // one writer per file, and a failed write stops this profiler, not the program
        lock: true,
        stopOnWriteError: true,
        ...(options.warn !== undefined ? { warn: options.warn } : {})
      }),
      (db) => attempt(() => FileDatabase.openAnnounced(db, options.warn))
    )

/**
 * The trace callbacks as a layer: computes run under it are traced (`Hooks.layerEffect`);
 * a file database is flushed and closed when the layer's scope closes.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: TraceOptions): Layer.Layer<never, DatabaseError> =>
  Hooks.layerEffect(Effect.map(openDatabase(options), (db) => callbacks(db)))

/**
 * The profiler layers' worker plugins (engine `WorkerPlugin`, dask's `WorkerPlugin`):
 * what each cluster worker process runs for a profile, so that every host gets DASF's
 * files, written on that host by its own Tessera processes:
 *
 * - `trace` (DefaultProfiler's Trace layer): `{name}-TracePlugin-{host}.msgpack`, one
 *   file per host that all its workers (and the driver, on its host) append to — each
 *   writer its own `FileDatabase`, each batch one `O_APPEND` write of whole records (see
 *   FileDatabase: several writers, nothing torn) — with the `Compute`, `Managed Memory`
 *   and `Transfer` events of that worker; and on the host's monitor worker (one per host
 *   without the driver) `{name}-ResourceMonitor-{host}.msgpack`, sampling that worker
 *   with the host's other worker processes, and the host's net and disk.
 * - `statistical` (StatisticalProfiler): `{name}-StatisticalProfiler-{host}.msgpack`,
 *   the worker's threads' samples attributed to its tasks.
 *
 * A host's files are truncated first only by its monitor worker, when the profile asks
 * for `overwrite`; the driver's host's files were started by the driver.
 *
 * Leaves out: a host where several drivers' profiles of the same name run at once.
 *
 * @since 0.1.0
 */
import { Effect, Exit, Scope } from "effect"
import type { WorkerPluginContext, WorkerPluginFactory } from "../engine/WorkerPlugin.ts"
import * as DefaultProfiler from "./DefaultProfiler.ts"
import { FileDatabase } from "./FileDatabase.ts"
import * as ResourceMonitor from "./ResourceMonitor.ts"
import * as StatisticalProfiler from "./StatisticalProfiler.ts"
import { computeEvent, transferEvent } from "./Trace.ts"

/**
 * Options of the `trace` plugin (what DefaultProfiler sends).
 *
 * @since 0.1.0
 * @category models
 */
export interface TracePluginOptions {
  /** the profile's file name prefix, time suffix included */
  readonly name: string
  /** absolute folder of the files (the same path on every host) */
  readonly directory: string
  readonly commitThreshold?: number
  readonly overwrite?: boolean
  /** resource sampling period, milliseconds (default 100) */
  readonly interval?: number
}

/**
 * Options of the `statistical` plugin (what StatisticalProfiler sends).
 *
 * @since 0.1.0
 * @category models
 */
export interface StatisticalPluginOptions {
  readonly name: string
  readonly directory: string
  readonly overwrite?: boolean
  /** milliseconds between samples */
  readonly interval: number
  readonly root?: string
}

const database = (path: string, o: { readonly commitThreshold?: number; readonly overwrite?: boolean }, ctx: WorkerPluginContext) => {
  const db = new FileDatabase(path, {
    ...(o.commitThreshold !== undefined ? { commitThreshold: o.commitThreshold } : {}),
    overwrite: o.overwrite === true && ctx.truncate,
    // a full disk stops this worker's file with one warning on its stderr, not its tasks;
    // no lock: the file belongs to the run whose driver locked its own host's files
    stopOnWriteError: true
  })
  db.open()
  return db
}

/**
 * The `trace` plugin's factory.
 *
 * @since 0.1.0
 * @category constructors
 */
export const trace: WorkerPluginFactory = async (raw, ctx) => {
  const o = raw as TracePluginOptions
  const f = DefaultProfiler.files({ name: o.name, directory: o.directory, host: ctx.host }, 0)
  const db = database(f.traceFile, o, ctx)
  const scope = Scope.makeUnsafe()
  if (ctx.monitor) {
    const rdb = database(f.resourceFile, o, ctx)
    Effect.runSync(Scope.addFinalizer(scope, Effect.sync(() => rdb.close())))
    await Effect.runPromise(
      ResourceMonitor.run(rdb, { host: ctx.host, processes: ctx.peers, now: ctx.now, ...(o.interval !== undefined ? { interval: o.interval } : {}) }).pipe(
        Effect.provideService(Scope.Scope, scope)
      )
    )
  }
  return {
    callbacks: {
      // an erred task's event carries its error and traceback (the fast path writes neither)
      task: (r) => (r.state === "erred" ? db.record(computeEvent(r)) : db.records.task(r)),
      memory: db.records.memory,
      transfer: (t) => db.record(transferEvent(t))
    },
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      db.close()
    }
  }
}

/**
 * The `statistical` plugin's factory.
 *
 * @since 0.1.0
 * @category constructors
 */
export const statistical: WorkerPluginFactory = async (raw, ctx) => {
  const o = raw as StatisticalPluginOptions
  const db = database(StatisticalProfiler.fileFor(o.name, ctx.host, o.directory), o, ctx)
  const scope = Scope.makeUnsafe()
  const callbacks = await Effect.runPromise(
    StatisticalProfiler.make(db, { interval: o.interval, driver: false, host: ctx.host, ...(o.root !== undefined ? { root: o.root } : {}) }).pipe(
      Effect.provideService(Scope.Scope, scope)
    )
  )
  return {
    callbacks,
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      db.close()
    }
  }
}

/**
 * Worker plugins (dask's `WorkerPlugin`): the part of a hook that runs where the tasks
 * run, when that is another process. A hook (`Hooks.Callbacks`) names one with
 * `workerPlugin`: a module URL and export (like a kernel reference) and JSON-able
 * options. An executor whose tasks run in other processes (the cluster executor) starts
 * it in each worker process — `import(module)[name](options, context)` — and from then
 * on gives the records of that worker's tasks to the plugin's callbacks there, not to
 * the hook in the driver: task and memory records, peer transfers and statistical
 * samples, already moved onto the scheduler's clock, with the worker's trace rows
 * (`worker-{host}-{index × 16 + thread}`) and the run's execution keys. The driver's hook
 * keeps everything the driver makes (driver segments, clock offsets). Executors that run
 * tasks in this process ignore `workerPlugin`: the hook sees every record, as before.
 *
 * This is how the profiler layers write DASF's per-host files (`{name}-TracePlugin-{host}`,
 * `{name}-ResourceMonitor-{host}`, `{name}-StatisticalProfiler-{host}`) from the worker
 * processes of each host, and stay the same layers on every executor.
 *
 * The module URL passes the same check as a kernel's before it is imported: a `file:` URL
 * inside the folders the worker allows (its working directory, Tessera's install,
 * `tessera worker --allow-modules`; see `Executor.allowModules`); any other (`data:`,
 * `http:`, a file elsewhere) fails the compute with `WorkerPluginFailed` naming the URL.
 *
 * Lifetime: a plugin starts in a worker when the worker first runs a task of a compute
 * that carries it, and is closed (its files flushed) when the hook's owner calls
 * {@link close} (the profiler layers do, when they close), or when the worker process
 * ends. `attach`/`close` follow `Sampling`'s: executors attach a closer per owner.
 *
 * Imports no `node:` builtin (the DSL reaches it through Hooks).
 *
 * @since 0.1.0
 */
import type { Callbacks } from "./Hooks.ts"
import * as OwnerRegistry from "./internal/ownerRegistry.ts"

/**
 * What a hook asks a worker process to run: `import(module)[name](options, context)`,
 * which returns a {@link WorkerPluginInstance}. `id` is unique per hook (two profiles of
 * one worker are two plugins).
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerPlugin {
  readonly id: string
  /** the factory's module URL (`file:///…`): every host needs it at the same path, in a folder its workers allow */
  readonly module: string
  /** the factory's export name */
  readonly name: string
  /** JSON-able options for the factory */
  readonly options: unknown
}

/**
 * Where a plugin runs, as the scheduler sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerPluginContext {
  /** the worker's host name (its trace rows' `process_id`) */
  readonly host: string
  /** the worker's name (`tessera-worker@HOST:PORT`) */
  readonly worker: string
  /**
   * whether this worker measures its host (one per host that has no driver: the host's
   * `ResourceMonitor`); the driver's own process measures the driver's host
   */
  readonly monitor: boolean
  /** whether this worker starts the host's files afresh (overwrite asked, and it is the host's first) */
  readonly truncate: boolean
  /** the other Tessera worker processes on this host (pids), as the scheduler knows them now */
  readonly peers: () => ReadonlyArray<number>
  /**
   * the scheduler's clock now (epoch seconds), by this worker's clock and its last
   * measured offset: what a plugin stamps events of its own with (the records it is given
   * are on that clock already)
   */
  readonly now: () => number
}

/**
 * A started plugin: the callbacks the worker gives its tasks' records to (`task`,
 * `memory`, `transfer`, `sampling` + `samples` are used), and how to close it (flush
 * and close its files).
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerPluginInstance {
  readonly callbacks: Callbacks
  readonly close: () => Promise<void>
}

/**
 * The shape of a plugin's factory export.
 *
 * @since 0.1.0
 * @category models
 */
export type WorkerPluginFactory = (options: unknown, context: WorkerPluginContext) => Promise<WorkerPluginInstance>

/**
 * Something running plugins for an owner (an executor): `close` closes them everywhere
 * and resolves when their files are flushed.
 *
 * @since 0.1.0
 * @category models
 */
export interface PluginHost {
  readonly close: () => Promise<void>
}

const hosts = OwnerRegistry.make<PluginHost>()

/**
 * Registers `host` as running the plugin of `owner` (the hook carrying it) until the
 * returned function is called.
 *
 * @since 0.1.0
 * @category layers
 */
export const attach = (owner: object, host: PluginHost): () => void => hosts.attach(owner, host)

/**
 * Closes the plugin of `owner` wherever it runs; resolves when every worker has flushed
 * (a profiler layer calls it when it closes). Never rejects: a worker that cannot be
 * reached flushes at its own exit.
 *
 * @since 0.1.0
 * @category layers
 */
export const close = async (owner: object): Promise<void> => {
  await Promise.all(hosts.of(owner).map((h) => h.close().catch(() => undefined)))
}

/**
 * Whether some executor runs the plugin of `owner` now (then {@link close} has work to do).
 *
 * @since 0.1.0
 * @category getters
 */
export const attached = (owner: object): boolean => hosts.of(owner).length > 0

/**
 * A fresh plugin id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeId = (prefix: string): string => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`

const processSources = new Set<() => ReadonlyArray<number>>()

/**
 * Registers a source of process ids of Tessera worker processes on this host that this
 * process started or schedules (the cluster executor registers its own), so this
 * process's resource monitor measures them with it. Returns the unregister.
 *
 * @since 0.1.0
 * @category layers
 */
export const registerHostProcesses = (f: () => ReadonlyArray<number>): () => void => {
  processSources.add(f)
  return () => {
    processSources.delete(f)
  }
}

/**
 * The process ids of the Tessera worker processes on this host known to this process
 * (see {@link registerHostProcesses}), without duplicates or this process.
 *
 * @since 0.1.0
 * @category getters
 */
export const hostProcesses = (): ReadonlyArray<number> => {
  const out = new Set<number>()
  for (const f of processSources) for (const p of f()) if (p > 0) out.add(p)
  return [...out]
}

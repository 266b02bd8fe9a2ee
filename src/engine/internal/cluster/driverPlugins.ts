/**
 * Worker plugins as the cluster scheduler runs them (`WorkerPlugin`): the part of a hook
 * that records in the worker processes (the profiler's trace and resource monitor)
 * started on each worker before its first batch of a compute that has that hook (per
 * host without the driver, the first worker measures the host and starts its files),
 * closed — their files flushed — when the hook's owner closes it, and on every worker
 * when the cluster closes. The workers' side: pluginRunner.ts.
 *
 * @since 0.1.0
 * @internal
 */
import { Effect, Exit, type Scope } from "effect"
import * as EngineError from "../../EngineError.ts"
import type { Callbacks } from "../../Hooks.ts"
import * as WorkerPlugin from "../../WorkerPlugin.ts"
import type { Job } from "../job.ts"
import type { Members, WorkerClient, WorkerView } from "./members.ts"
import { encodeValue, type PluginsRequest } from "./protocol.ts"

/** A worker plugin as this scheduler runs it: the workers and hosts it started on. */
interface PluginState {
  readonly plugin: WorkerPlugin.WorkerPlugin
  readonly started: Set<string>
  /** hosts where it started (their files are started; later workers there append) */
  readonly hosts: Set<string>
  detach: () => void
}

/**
 * The hooks of `job` that carry a worker plugin.
 *
 * @since 0.1.0
 * @internal
 */
export const pluginHooks = (job: Job): Array<Callbacks> => {
  const out: Array<Callbacks> = []
  for (const cb of [...job.taskCbs, ...job.memoryCbs, ...job.transferCbs, ...(job.sampler !== undefined ? [job.sampler] : [])]) {
    if (cb.workerPlugin !== undefined && !out.includes(cb)) out.push(cb)
  }
  return out
}

/**
 * A scheduler's worker plugins.
 *
 * @since 0.1.0
 * @internal
 */
export interface DriverPlugins {
  /** Whether every plugin of `hooked` runs on worker `name` already. */
  readonly started: (hooked: ReadonlyArray<Callbacks>, name: string) => boolean
  /** The plugins of `job`'s hooks, each started on every live worker of `ws` (the host's monitor first): their ids. */
  readonly start: (job: Job, ws: ReadonlyArray<WorkerView>) => Effect.Effect<Array<string>, EngineError.ComputeError>
}

/**
 * The worker plugins of a scheduler on `host` (the driver's: its own resource monitor
 * measures the worker processes there), closed on every worker when `scope` closes.
 *
 * @since 0.1.0
 * @internal
 */
export const makeDriverPlugins = (o: {
  readonly members: Members
  readonly clientFor: WorkerClient
  readonly host: string
}): Effect.Effect<DriverPlugins, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { members, clientFor, host } = o
    const workers = members.workers
    // the driver's resource monitor measures the worker processes on its host with itself
    const unregisterPids = WorkerPlugin.registerHostProcesses(() =>
      [...workers.values()].filter((w) => w.alive && w.host === host).map((w) => w.pid)
    )
    const plugins = new Map<string, PluginState>()
    /** Closes plugins on every worker they started on (flushing their files). */
    const closePlugins = (ps: ReadonlyArray<PluginState>) =>
      Effect.forEach(
        [...workers.values()].filter((w) => w.alive && ps.some((p) => p.started.has(w.name))),
        (w) => {
          const ids = ps.filter((p) => p.started.has(w.name)).map((p) => p.plugin.id)
          for (const p of ps) p.started.delete(w.name)
          const blob = encodeValue({ start: [], close: ids, offset: w.offset } satisfies PluginsRequest)
          return Effect.ignore(Effect.timeout(clientFor(w.name).Plugins({ blob }), "30 seconds"))
        },
        { concurrency: "unbounded", discard: true }
      )
    // before the local workers are stopped (finalizers run in reverse): their files flushed
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        unregisterPids()
        const ps = [...plugins.values()]
        for (const p of ps) p.detach()
        return closePlugins(ps)
      })
    )
    const started = (hooked: ReadonlyArray<Callbacks>, name: string): boolean =>
      hooked.every((cb) => plugins.get(cb.workerPlugin!.id)?.started.has(name) === true)
    const start = (job: Job, ws: ReadonlyArray<WorkerView>) =>
      Effect.gen(function*() {
        const ps: Array<PluginState> = []
        for (const cb of pluginHooks(job)) {
          const plugin = cb.workerPlugin!
          let p = plugins.get(plugin.id)
          if (p === undefined) {
            const state: PluginState = { plugin, started: new Set(), hosts: new Set(), detach: () => {} }
            // the hook's owner closes it (a profiler layer closing): flushed on every worker
            state.detach = WorkerPlugin.attach(cb, {
              close: () => {
                state.detach()
                plugins.delete(plugin.id)
                return Effect.runPromise(closePlugins([state]))
              }
            })
            plugins.set(plugin.id, p = state)
          }
          ps.push(p)
        }
        for (const p of ps) {
          const todo = ws.filter((w) => w.alive && !p.started.has(w.name))
          // per host without the driver, the first worker measures it and starts its files
          const first = new Map<string, WorkerView>()
          for (const w of todo) {
            if (w.host === host || p.hosts.has(w.host)) continue
            const f = first.get(w.host)
            if (f === undefined || w.index < f.index) first.set(w.host, w)
          }
          const startOn = (w: WorkerView) => {
            const monitor = first.get(w.host) === w
            const blob = encodeValue({ start: [{ plugin: p.plugin, monitor, truncate: monitor }], close: [], offset: w.offset } satisfies PluginsRequest)
            return Effect.exit(clientFor(w.name).Plugins({ blob })).pipe(Effect.flatMap((e) => {
              // unreachable: lost like any worker that does not answer
              if (Exit.isFailure(e)) return members.markDead(w)
              if (e.value !== null) {
                return Effect.fail(EngineError.workerPluginFailed(w.name, `${p.plugin.module}#${p.plugin.name}`, e.value))
              }
              p.started.add(w.name)
              p.hosts.add(w.host)
              return Effect.void
            }))
          }
          yield* Effect.forEach(first.values(), startOn, { concurrency: "unbounded", discard: true })
          yield* Effect.forEach(todo.filter((w) => first.get(w.host) !== w), startOn, { concurrency: "unbounded", discard: true })
        }
        return ps.map((p) => p.plugin.id)
      })
    return { started, start }
  })

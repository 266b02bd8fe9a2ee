/**
 * The standalone scheduler's dashboard (`tessera scheduler --dashboard`): the records
 * drivers forward to their scheduler (`Cluster.serveScheduler`'s `dashboard`, one batch
 * per driver per tick) fed into a live state, served by the same server and pages as a
 * run's own dashboard (`Dashboard.serve`: loopback by default, the token off loopback,
 * read-only).
 *
 * One run at a time: a run is a driver's cluster, from its start to its close. The page
 * shows the current run; when a driver starts while no run is going on (the previous
 * ones closed, or silent for `idleSeconds`; the first run too), the page starts again
 * with a fresh state whose time axis starts at the run's first record (the server
 * restarts on the same address and token: open pages reconnect and start from the new
 * snapshot). Drivers whose runs overlap share one state (their rows are
 * their workers; counts add up). The counts carry `runs` (runs seen since the scheduler
 * started), `drivers` (runs in the state shown) and `dropped` (records those drivers did
 * not forward: the scheduler was slow or failing).
 *
 * A driver's computes arrive as groups with totals; each becomes a stand-in graph and
 * scheduler state that the live state reads (its totals; its running tasks, set from the
 * driver's per-group counts every tick), so progress bars work as for a local run.
 *
 * @since 0.1.0
 */
import { hostname } from "node:os"
import { Effect, Exit, Scope } from "effect"
import type { FeedBatch, FeedCompute } from "../engine/Cluster.ts"
import { nowSeconds } from "../engine/EngineClock.ts"
import type { SchedulerState } from "../engine/State.ts"
import type { TaskGraph } from "../engine/TaskGraph.ts"
import { type DashboardOptions, serve } from "./Dashboard.ts"
import { type Counts, LiveState } from "./LiveState.ts"
import type { DashboardError, DashboardServer } from "./Server.ts"

/**
 * The counts of a scheduler's page: a run's, and the forwarding's.
 *
 * @since 0.1.0
 * @category models
 */
export interface SchedulerCounts extends Counts {
  /** runs (drivers' clusters) seen since the scheduler started */
  readonly runs: number
  /** runs in the state shown */
  readonly drivers: number
  /** records the drivers of the state shown did not forward (see docs/cluster.md) */
  readonly dropped: number
}

/**
 * A live state that also counts what the drivers forwarded and dropped.
 *
 * @since 0.1.0
 * @category models
 */
export class SchedulerLiveState extends LiveState {
  /** runs seen since the scheduler started (set by the feed) */
  runsSeen = 0
  /** each run of this state: records it dropped so far */
  readonly dropped = new Map<string, number>()
  override counts(): SchedulerCounts {
    let dropped = 0
    for (const n of this.dropped.values()) dropped += n
    return { ...super.counts(), runs: this.runsSeen, drivers: this.dropped.size, dropped }
  }
}

/**
 * A driver's compute as the live state reads it: a stand-in graph and scheduler state.
 *
 * @since 0.1.0
 * @category models
 */
export interface Shadow {
  readonly graph: TaskGraph
  readonly state: ShadowState
  /** first task of each group */
  readonly lo: Int32Array
  readonly totals: ReadonlyArray<number>
}
/**
 * What `LiveState` reads of a scheduler state.
 *
 * @since 0.1.0
 * @category models
 */
export interface ShadowState {
  readonly needed: Uint8Array
  readonly running: Uint8Array
  runningCount: number
}

/**
 * The graph and scheduler state a compute's groups stand for: tasks ordered by group,
 * each task's stage and function its group's; all needed. Only what `LiveState` reads
 * of them (`size`, `specs[i].stage`, `names[i]`; `needed`, `running`, `runningCount`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const shadowOf = (c: FeedCompute): Shadow => {
  const size = c.groups.reduce((a, g) => a + g.total, 0)
  const specs: Array<{ readonly stage: string | undefined }> = new Array(size)
  const names: Array<string> = new Array(size)
  const lo = new Int32Array(c.groups.length)
  let i = 0
  c.groups.forEach((g, k) => {
    lo[k] = i
    const spec = { stage: g.stage }
    for (let j = 0; j < g.total; j++, i++) {
      specs[i] = spec
      names[i] = g.name
    }
  })
  const state: ShadowState = { needed: new Uint8Array(size).fill(1), running: new Uint8Array(size), runningCount: 0 }
  return { graph: { size, specs, names } as unknown as TaskGraph, state, lo, totals: c.groups.map((g) => g.total) }
}

/**
 * Sets a stand-in compute's running tasks from the driver's per-group counts (each at
 * most its group's total).
 *
 * @since 0.1.0
 * @category utils
 */
export const setRunning = (sh: Shadow, counts: ReadonlyArray<number>): void => {
  const r = sh.state.running
  r.fill(0)
  let n = 0
  sh.totals.forEach((total, k) => {
    const c = Math.min(total, counts[k] ?? 0)
    r.fill(1, sh.lo[k]!, sh.lo[k]! + c)
    n += c
  })
  sh.state.runningCount = n
}

/**
 * Options of a scheduler's dashboard.
 *
 * @since 0.1.0
 * @category models
 */
export interface SchedulerDashboardOptions extends DashboardOptions {
  /** seconds without a batch after which a run that did not say it ended counts as ended (default 30) */
  readonly idleSeconds?: number
}

/**
 * A scheduler's dashboard: `feed` takes each batch (what `serveScheduler`'s `dashboard` is given).
 *
 * @since 0.1.0
 * @category models
 */
export interface SchedulerDashboard {
  readonly url: string
  readonly feed: (batch: FeedBatch) => void
  /** the state shown now */
  readonly state: () => SchedulerLiveState
}

interface Run {
  readonly computes: Map<number, Shadow>
  last: number
  over: boolean
}

/**
 * Starts a scheduler's dashboard for the current scope (the server stops with it) and
 * prints its URL (`log`, default stderr).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: SchedulerDashboardOptions = {}): Effect.Effect<SchedulerDashboard, DashboardError, Scope.Scope> =>
  Effect.gen(function*() {
    const fresh = (t0?: number) => new SchedulerLiveState({ host: hostname(), ...options.live, ...(t0 !== undefined ? { t0 } : {}) })
    let state = fresh()
    const first = yield* serveIn(state, options)
    let scope = first.scope
    // later servers on the same address and token: the pages' URL stays good
    const again: DashboardOptions = { ...options, host: first.server.host, port: first.server.port, ...(first.server.token !== undefined ? { token: first.server.token } : {}) }
    const log = options.log ?? ((line: string) => void process.stderr.write(line + "\n"))
    log(`dashboard: ${first.server.url}${first.server.token === undefined ? "" : " (the token is required: bound off loopback)"}`)
    // restarts one after another, off the feed's call (the RPC handler never waits on a server)
    let restarting: Promise<unknown> = Promise.resolve()
    let closed = false
    // the restart under way finished first: its server is the one to close
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        return Effect.andThen(Effect.promise(() => restarting), Effect.suspend(() => Scope.close(scope, Exit.void)))
      })
    )
    const runs = new Map<string, Run>()
    let runsSeen = 0
    const idle = (options.idleSeconds ?? 30) * 1000
    const restart = (next: SchedulerLiveState) => {
      restarting = restarting.then(() =>
        Effect.runPromise(Effect.gen(function*() {
          if (closed) return
          yield* Scope.close(scope, Exit.void)
          const s = yield* serveIn(next, again)
          scope = s.scope
        })).catch((e: unknown) => log(`dashboard: could not serve the new run's page: ${e instanceof Error ? e.message : String(e)}`))
      )
    }

    const feed = (b: FeedBatch): void => {
      const now = performance.now()
      let r = runs.get(b.run)
      if (r === undefined) {
        // a run that finds none going on starts a new page, its time axis from the run's
        // first record (not from the scheduler's start, which may be hours before)
        for (const [k, o] of runs) if (o.over || now - o.last > idle) runs.delete(k)
        runsSeen++
        if (runs.size === 0) {
          state.close()
          state = fresh(firstTime(b))
          restart(state)
        }
        runs.set(b.run, r = { computes: new Map(), last: now, over: false })
        state.runsSeen = runsSeen
      }
      r.last = now
      state.dropped.set(b.run, b.dropped)
      for (const c of b.computes) {
        const sh = shadowOf(c)
        r.computes.set(c.id, sh)
        state.startState(sh.graph, sh.state as unknown as SchedulerState)
      }
      for (const t of b.tasks) state.task(t)
      for (const m of b.memory) state.memory(m)
      for (const x of b.transfers) state.transfer(x)
      for (const { id, counts } of b.running) {
        const sh = r.computes.get(id)
        if (sh !== undefined) setRunning(sh, counts)
      }
      for (const { id, failed } of b.finished) {
        const sh = r.computes.get(id)
        if (sh === undefined) continue
        setRunning(sh, [])
        state.finish(sh.graph, sh.state as unknown as SchedulerState, failed)
        r.computes.delete(id)
      }
      if (b.over) {
        r.over = true
        // the page shows the run's final state while no other run goes on
        if ([...runs.values()].every((o) => o.over)) state.close()
      }
    }
    return { url: first.server.url, feed, state: () => state }
  })

/** The earliest time in a batch's records (epoch seconds), else now. */
const firstTime = (b: FeedBatch): number => {
  const now = nowSeconds()
  let t = now
  // a task without timings has its phases at 0: not a time of this run
  const see = (v: number) => {
    if (v > now - 3600 && v < t) t = v
  }
  for (const x of b.tasks) see(x.phases.gather[0])
  for (const m of b.memory) see(m.timestamp)
  for (const x of b.transfers) see(x.start)
  return t
}

/** Serves `state` in a scope of its own (closed when the next run's page replaces it). */
const serveIn = (state: LiveState, options: DashboardOptions): Effect.Effect<{ readonly scope: Scope.Closeable; readonly server: DashboardServer }, DashboardError> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const server = yield* serve(state, options).pipe(Scope.provide(scope), Effect.onError(() => Scope.close(scope, Exit.void)))
    return { scope, server }
  })

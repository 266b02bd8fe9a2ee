/**
 * The cluster scheduler's workers: who is in (the runner registry read each heartbeat),
 * who is alive (a `Time` ping each heartbeat; a worker that does not answer within
 * `heartbeatTimeout`, or that PostgreSQL's runner health drops, is dead: unregistered,
 * its waiters woken), and each one's clock offset to the scheduler (NTP-style: the
 * fastest of several `Time` round trips kept, 8 when it joins and one each heartbeat; its
 * timestamps are moved onto the scheduler's clock before any hook sees them).
 *
 * @since 0.1.0
 * @internal
 */
import { Clock, Deferred, Effect, Exit, type Scope } from "effect"
import type { RunnerAddress, RunnerStorage } from "effect/cluster"
import * as EngineClock from "../../EngineClock.ts"
import type { ClockRecord } from "../../EngineEvents.ts"
import type { Callbacks } from "../../Hooks.ts"
import type { TransferInfo, WorkerStats } from "../../Cluster.ts"
import type { LocalWorker } from "./localCluster.ts"
import type { TesseraWorker } from "./protocol.ts"

/**
 * One worker as the scheduler sees it.
 *
 * @since 0.1.0
 * @internal
 */
export interface WorkerView {
  readonly name: string
  readonly address: string
  readonly runner: RunnerAddress.RunnerAddress
  readonly index: number
  host: string
  threads: number
  pid: number
  alive: boolean
  /** worker clock minus scheduler clock (s), and half the round trip it was measured by */
  offset: number
  uncertainty: number
  lastSeen: number
  readonly lost: Deferred.Deferred<void>
}

/**
 * The RPC client of a worker's entity, by name.
 *
 * @since 0.1.0
 * @internal
 */
export type WorkerClient = Effect.Success<typeof TesseraWorker.client>

/**
 * The workers of one scheduler (see the module header).
 *
 * @since 0.1.0
 * @internal
 */
export interface Members {
  readonly workers: Map<string, WorkerView>
  /** the live workers */
  readonly alive: () => Array<WorkerView>
  readonly aliveCount: () => number
  /** since when (epoch ms) the registry has not answered, if it does not */
  readonly registryDown: () => number | undefined
  /** Marks a worker dead: unregisters it and wakes whoever waits on it. */
  readonly markDead: (w: WorkerView) => Effect.Effect<void>
  /** Adds workers that registered since the last look; pings the known ones when `ping`. */
  readonly refresh: (ping: boolean) => Effect.Effect<void>
  /** For the scope's life: membership and liveness each heartbeat (and PostgreSQL's runner health). */
  readonly watch: (scope: Scope.Scope, postgres: boolean) => Effect.Effect<void>
  /**
   * Waits (looking every 50 ms) until a worker is alive; after `seconds` fails with
   * `why(registryDown)`.
   */
  readonly waitForWorker: (seconds: number, why: (down: number | undefined) => string) => Effect.Effect<void, string>
  /** Each live worker's clock offset, to the hooks that take clock records (the row of each worker by `rowOf`). */
  readonly clocks: (cbs: ReadonlyArray<Callbacks>, rowOf: (w: WorkerView) => string) => void
}

/**
 * The workers of a scheduler that reads `storage` and reaches them by `clientFor`.
 * `driver` names this scheduler to the workers (their `Time` pings); `forget`, `onDead`
 * and `onJoined` are told of each death and join.
 *
 * @since 0.1.0
 * @internal
 */
export const makeMembers = (o: {
  readonly storage: RunnerStorage.RunnerStorage["Service"]
  readonly clientFor: WorkerClient
  readonly driver: string
  /** seconds between pings */
  readonly heartbeat: number
  /** seconds without an answer before a worker is dead */
  readonly heartbeatTimeout: number
  /** told first of a death (before it is unregistered) */
  readonly forget: (w: WorkerView) => void
  /** told last of a death (once it is unregistered and its waiters woken) */
  readonly onDead: (w: WorkerView) => void
  readonly onJoined: () => void
}): Members => {
  const { storage, clientFor } = o
  const workers = new Map<string, WorkerView>()
  const alive = () => [...workers.values()].filter((w) => w.alive)
  const aliveCount = () => {
    let n = 0
    for (const w of workers.values()) if (w.alive) n++
    return n
  }

  const markDead = (w: WorkerView) =>
    Effect.gen(function*() {
      if (!w.alive) return
      w.alive = false
      o.forget(w)
      yield* Effect.ignore(storage.unregister(w.runner))
      yield* Deferred.succeed(w.lost, undefined)
      o.onDead(w)
    })

  /** The fastest of `n` Time round trips: offset and uncertainty (half its round trip). */
  const sampleClock = (w: WorkerView, n: number) =>
    Effect.gen(function*() {
      let best = Infinity
      for (let k = 0; k < n; k++) {
        const t0 = EngineClock.nowSeconds()
        const tw = yield* clientFor(w.name).Time({ driver: o.driver, every: o.heartbeat })
        const t1 = EngineClock.nowSeconds()
        const rtt = t1 - t0
        if (rtt < best) {
          best = rtt
          if (rtt / 2 <= w.uncertainty || k === 0 && w.uncertainty === Infinity) {
            w.offset = tw - (t0 + t1) / 2
            w.uncertainty = rtt / 2
          }
        }
      }
      w.lastSeen = EngineClock.nowSeconds()
    })

  let nextIndex = 0
  let registryDown: number | undefined
  const refresh = (ping: boolean): Effect.Effect<void> =>
    Effect.gen(function*() {
      // a registry that does not answer (a killed scheduler) is said by the compute that
      // finds no worker (waitForWorker), naming it: not a defect
      const listed = yield* Effect.exit(Effect.timeout(storage.getRunners, "5 seconds"))
      if (Exit.isFailure(listed)) {
        registryDown ??= Date.now()
        if (ping) yield* pingAll
        return
      }
      registryDown = undefined
      const runners = listed.value
      for (const [runner] of runners) {
        const name = runner.groups[0]
        if (name === undefined || workers.has(name)) continue
        const address = `${runner.address.host}:${runner.address.port}`
        const w: WorkerView = {
          name,
          address,
          runner: runner.address,
          index: nextIndex++,
          host: runner.address.host,
          threads: 1,
          pid: 0,
          alive: false,
          offset: 0,
          uncertainty: Infinity,
          lastSeen: 0,
          lost: Deferred.makeUnsafe<void>()
        }
        workers.set(name, w)
        const ok = yield* Effect.exit(Effect.timeout(
          Effect.gen(function*() {
            const info = yield* clientFor(name).Info()
            w.host = info.host
            w.threads = info.threads
            w.pid = info.pid
            yield* sampleClock(w, 8)
          }),
          "10 seconds"
        ))
        if (Exit.isSuccess(ok)) {
          w.alive = true
          o.onJoined()
        } else {
          // registered but not answering: gone without unregistering (killed), or
          // unreachable from here; either way no use to this scheduler
          workers.delete(name)
          nextIndex--
          yield* Effect.ignore(storage.unregister(runner.address))
        }
      }
      if (ping) yield* pingAll
    })
  const pingAll = Effect.suspend(() =>
    Effect.forEach(
      alive(),
      (w) =>
        Effect.exit(Effect.timeout(sampleClock(w, 1), `${o.heartbeatTimeout} seconds`)).pipe(
          Effect.flatMap((e) => Exit.isFailure(e) ? markDead(w) : Effect.void)
        ),
      { concurrency: "unbounded", discard: true }
    )
  )

  const watch = (scope: Scope.Scope, postgres: boolean) =>
    Effect.gen(function*() {
      yield* Effect.forkIn(Effect.forever(Effect.andThen(Effect.sleep(`${o.heartbeat} seconds`), refresh(true))), scope)
      // PostgreSQL's runner health: a worker whose heartbeats stopped drops out of the list
      // (after shardLockExpiration), dead without waiting for a ping to time out
      if (postgres) {
        yield* Effect.forkIn(
          Effect.forever(Effect.andThen(
            Effect.sleep(`${o.heartbeat} seconds`),
            Effect.gen(function*() {
              const rs = yield* Effect.orElseSucceed(storage.getRunners, () => null)
              const listed = new Set(rs?.map(([r]) => r.groups[0]))
              if (rs !== null) for (const w of workers.values()) if (w.alive && !listed.has(w.name)) yield* markDead(w)
            })
          )),
          scope
        )
      }
    })

  const waitForWorker = (seconds: number, why: (down: number | undefined) => string) =>
    Effect.gen(function*() {
      const until = (yield* Clock.currentTimeMillis) + seconds * 1000
      while (aliveCount() === 0) {
        if ((yield* Clock.currentTimeMillis) > until) return yield* Effect.fail(why(registryDown))
        yield* Effect.sleep("50 millis")
        yield* refresh(false)
      }
    })

  const clocks = (cbs: ReadonlyArray<Callbacks>, rowOf: (w: WorkerView) => string) => {
    const now = EngineClock.nowSeconds()
    for (const w of alive()) {
      for (const cb of cbs) {
        const c: ClockRecord = { timestamp: now, host: w.host, threadId: rowOf(w), worker: w.name, offset: w.offset, uncertainty: w.uncertainty }
        cb.clock!(c)
      }
    }
  }

  return { workers, alive, aliveCount, registryDown: () => registryDown, markDead, refresh, watch, waitForWorker, clocks }
}

/**
 * What the cluster executor exposes beyond `ExecutorShape`.
 *
 * @since 0.1.0
 * @internal
 */
export interface ClusterHandle {
  /** the registry's `host:port`, what `tessera worker --scheduler` takes */
  readonly address: string
  readonly workers: () => ReadonlyArray<WorkerView>
  readonly locals: () => ReadonlyArray<LocalWorker>
  /** starts one more local worker process (it joins within a heartbeat) */
  readonly addLocal: Effect.Effect<void>
  /** each live worker's counters (see protocol.ts `Stats`) */
  readonly stats: Effect.Effect<ReadonlyArray<WorkerStats>>
  /** calls `cb` with each peer transfer of every compute; returns the unsubscribe */
  readonly onTransfer: (cb: (t: TransferInfo) => void) => () => void
}

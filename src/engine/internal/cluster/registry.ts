/**
 * Where a Tessera cluster's runners register: Effect Cluster's `RunnerStorage` (runners,
 * their health, shard locks), in one of two places.
 *
 * - The default, no server to run: kept in the scheduler's memory and served to the
 *   workers over Effect RPC (`RunnerStorageRpcs`). The scheduler is the one state record
 *   anyway (as dask's is); when it goes, the compute is gone with it, so nothing here
 *   needs to outlive it. Shard locks are first come, first served and freed when their
 *   runner unregisters (the scheduler unregisters a worker it finds dead).
 * - PostgreSQL (`postgres://…`): Effect's `SqlRunnerStorage` over `@effect/sql-pg`, for
 *   runners that span hosts and a registry that outlives any one process. Runners
 *   heartbeat into the table; one silent for `shardLockExpiration` drops out of
 *   `getRunners`, and its shard lock (a row, see {@link layerPostgres}) expires.
 *   Tables are `{prefix}_runners`, `{prefix}_locks` (prefix `tessera` unless the URL's
 *   `prefix` parameter names another), so clusters can share a database.
 *
 * Leaves out: SQLite (no `@effect/sql-sqlite-node` release works with effect 4.1) and
 * message storage (messages stay volatile: the scheduler sends lost work again).
 *
 * @since 0.1.0
 * @internal
 */
import { Effect, Layer, Redacted, References } from "effect"
import type * as Cause from "effect/Cause"
import { ClusterError, RunnerStorage, ShardingConfig, SqlRunnerStorage } from "effect/cluster"
import * as PgClient from "@effect/sql-pg/PgClient"
import { ClusterStorageError, hidePassword } from "../../Cluster.ts"
import type { FeedBatch, PostgresStorage } from "../../Cluster.ts"
import { nowSeconds } from "../../EngineClock.ts"
import { type DashboardLink, decodeBatch } from "./feed.ts"
import { RpcClient, RpcSerialization, RpcServer } from "effect/rpc"
import * as Socket from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"
import { type LinkSecurity, plain } from "./security.ts"
import { socketServer, socketTo } from "./transport.ts"
import { formatBytes } from "./heldStore.ts"
import { RunnerStorageRpcs } from "./protocol.ts"
import type { HeldReporter } from "./workerProcess.ts"

/**
 * The registry's state and its encoded-storage operations (all synchronous).
 *
 * @since 0.1.0
 * @internal
 */
export class Registry {
  readonly runners = new Map<string, { runner: string; healthy: boolean }>()
  readonly locks = new Map<string, string>()
  /** what each worker said of itself (`announce`), by runner address */
  readonly about = new Map<string, { readonly pid: number; readonly host: string; readonly threads: number }>()
  /** when each registered runner last called (performance.now() ms): its lock refreshes are its heartbeat */
  private readonly seen = new Map<string, number>()
  private nextId = 0
  /** `log`: told a line when a worker joins or leaves (`tessera scheduler`'s stderr) */
  private readonly log: ((line: string) => void) | undefined
  /** the scheduler's dashboard, when it serves one: drivers forward their records to it (feed.ts) */
  dashboard: ((batch: FeedBatch) => void) | undefined
  /** feed batches refused as malformed (said once in the log) */
  private refusedFeeds = 0
  constructor(log?: (line: string) => void) {
    this.log = log
  }
  /** A driver's feed batch: decoded and given to the dashboard; a malformed one refused (an error for the driver, said once here). */
  feed(blob: Uint8Array): string | undefined {
    if (this.dashboard === undefined) return "this scheduler serves no dashboard"
    const b = decodeBatch(blob)
    if (typeof b === "string") {
      if (this.refusedFeeds++ === 0) this.log?.(`dashboard: a driver's records refused: ${b}`)
      return b
    }
    this.dashboard(b)
    return undefined
  }
  private who(address: string): string {
    const a = this.about.get(address)
    return a === undefined
      ? `tessera-worker@${address}`
      : `tessera-worker@${address} (pid ${a.pid} on ${a.host}, ${a.threads} thread${a.threads === 1 ? "" : "s"})`
  }
  private count(): string {
    return `${this.runners.size} worker${this.runners.size === 1 ? "" : "s"} now`
  }
  private touch(address: string): void {
    if (this.runners.has(address)) this.seen.set(address, performance.now())
  }
  announce(address: string, about: { readonly pid: number; readonly host: string; readonly threads: number }): void {
    this.about.set(address, about)
  }
  /** what each registered worker last said it holds (`held`): bytes and results */
  readonly holding = new Map<string, { readonly bytes: number; readonly results: number }>()
  /** A worker's bytes held now (its results and drivers' literals), logged when they change. */
  holds(address: string, bytes: number, results: number): void {
    if (!this.runners.has(address)) return
    const before = this.holding.get(address)
    if (before !== undefined && before.bytes === bytes && before.results === results) return
    this.holding.set(address, { bytes, results })
    let total = 0
    for (const h of this.holding.values()) total += h.bytes
    this.log?.(
      `worker holds ${formatBytes(bytes)} in ${results} result${results === 1 ? "" : "s"}: ${this.who(address)} (was ${
        formatBytes(before?.bytes ?? 0)
      }); all workers ${formatBytes(total)}`
    )
  }
  getRunners(): Array<readonly [string, boolean]> {
    return Array.from(this.runners.values(), (r) => [r.runner, r.healthy] as const)
  }
  register(address: string, runner: string, healthy: boolean): number {
    const fresh = !this.runners.has(address)
    this.runners.set(address, { runner, healthy })
    this.seen.set(address, performance.now())
    if (fresh) this.log?.(`worker joined: ${this.who(address)}; ${this.count()}`)
    return this.nextId++
  }
  unregister(address: string, why = "left"): void {
    const was = this.runners.delete(address)
    this.seen.delete(address)
    this.holding.delete(address)
    this.releaseAll(address)
    if (was) this.log?.(`worker ${why}: ${this.who(address)}; ${this.count()}`)
    this.about.delete(address)
  }
  /** Drops the runners that have not called for `seconds` (killed without unregistering). */
  sweep(seconds: number): void {
    const now = performance.now()
    for (const [address, t] of this.seen) {
      if (now - t > seconds * 1000) this.unregister(address, `lost (no word for ${seconds} s)`)
    }
  }
  setRunnerHealth(address: string, healthy: boolean): void {
    this.touch(address)
    const r = this.runners.get(address)
    if (r !== undefined) r.healthy = healthy
  }
  acquire(address: string, shardIds: ReadonlyArray<string>): Array<string> {
    this.touch(address)
    for (const s of shardIds) {
      const holder = this.locks.get(s)
      if (holder === undefined || !this.runners.has(holder)) this.locks.set(s, address)
    }
    return this.held(address)
  }
  refresh(address: string, shardIds: ReadonlyArray<string>): Array<string> {
    this.touch(address)
    return shardIds.filter((s) => this.locks.get(s) === address)
  }
  release(address: string, shardId: string): void {
    if (this.locks.get(shardId) === address) this.locks.delete(shardId)
  }
  releaseAll(address: string): void {
    for (const [s, a] of this.locks) if (a === address) this.locks.delete(s)
  }
  private held(address: string): Array<string> {
    const out: Array<string> = []
    for (const [s, a] of this.locks) if (a === address) out.push(s)
    return out
  }
}

/**
 * `RunnerStorage` over the scheduler's registry, in its own process.
 *
 * @since 0.1.0
 * @internal
 */
export const localStorage = (reg: Registry): RunnerStorage.RunnerStorage["Service"] =>
  RunnerStorage.makeEncoded({
    getRunners: Effect.sync(() => reg.getRunners()),
    register: (a, r, h) => Effect.sync(() => reg.register(a, r, h)),
    unregister: (a) => Effect.sync(() => reg.unregister(a)),
    setRunnerHealth: (a, h) => Effect.sync(() => reg.setRunnerHealth(a, h)),
    acquire: (a, s) => Effect.sync(() => reg.acquire(a, s)),
    refresh: (a, s) => Effect.sync(() => reg.refresh(a, s)),
    release: (a, s) => Effect.sync(() => reg.release(a, s)),
    releaseAll: (a) => Effect.sync(() => reg.releaseAll(a))
  })

/**
 * Serves the registry on `host:port` (port 0: any free port) for the scope's life.
 *
 * @since 0.1.0
 * @internal
 */
export const serve = (reg: Registry, host: string, port: number, security: LinkSecurity = plain, log: (line: string) => void = () => {}) =>
  RpcServer.layer(RunnerStorageRpcs).pipe(
    Layer.provide(
      RunnerStorageRpcs.toLayer({
        getRunners: () => Effect.sync(() => reg.getRunners()),
        register: ({ address, healthy, runner }) => Effect.sync(() => reg.register(address, runner, healthy)),
        unregister: ({ address }) => Effect.sync(() => reg.unregister(address)),
        setRunnerHealth: ({ address, healthy }) => Effect.sync(() => reg.setRunnerHealth(address, healthy)),
        acquire: ({ address, shardIds }) => Effect.sync(() => reg.acquire(address, shardIds)),
        refresh: ({ address, shardIds }) => Effect.sync(() => reg.refresh(address, shardIds)),
        release: ({ address, shardId }) => Effect.sync(() => reg.release(address, shardId)),
        releaseAll: ({ address }) => Effect.sync(() => reg.releaseAll(address)),
        announce: ({ address, host, pid, threads }) => Effect.sync(() => reg.announce(address, { pid, host, threads })),
        held: ({ address, bytes, results }) => Effect.sync(() => reg.holds(address, bytes, results)),
        dashboard: () => Effect.sync(() => ({ on: reg.dashboard !== undefined, clock: nowSeconds() })),
        feed: ({ blob }) => Effect.suspend(() => {
          const why = reg.feed(blob)
          return why === undefined ? Effect.void : Effect.fail(why)
        })
      })
    ),
    Layer.provide(RpcServer.layerProtocolSocketServer),
    Layer.provide(Layer.effect(SocketServer.SocketServer)(socketServer(security, host, port, log, `registry port ${host}:${port}`))),
    Layer.provide(RpcSerialization.layerSchemaBinary()),
    // a worker that dies resets its connection: the scheduler notices that itself, so the
    // socket server's error log of the reset would only be noise on the user's terminal
    Layer.provide(Layer.succeed(References.MinimumLogLevel, "Fatal"))
  )

const persistence = (cause: unknown) => new ClusterError.PersistenceError({ cause })

/**
 * What a worker tells the registry of itself before it registers.
 *
 * @since 0.1.0
 * @internal
 */
export interface Hello {
  /** its runner address, `HOST:PORT` (contact host) */
  readonly address: string
  readonly pid: number
  readonly host: string
  readonly threads: number
}

/**
 * `RunnerStorage` for a worker process: the scheduler's registry at `host:port`; `hello`
 * (workers only) is announced first.
 *
 * @since 0.1.0
 * @internal
 */
export const layerRemote = (host: string, port: number, security: LinkSecurity, hello?: Hello, reporter?: HeldReporter, link?: DashboardLink) =>
  Layer.effect(RunnerStorage.RunnerStorage)(
    Effect.gen(function*() {
      const c = yield* RpcClient.make(RunnerStorageRpcs)
      const w = <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.mapError(e, persistence)
      // before registering: the scheduler names the worker by it in its log (a scheduler
      // that does not know the call only logs less)
      if (hello !== undefined) yield* Effect.ignore(Effect.timeout(c.announce(hello), "5 seconds"))
      // what the worker holds, said when it changes (a scheduler that does not know the call logs less)
      if (hello !== undefined && reporter !== undefined) {
        reporter.held = (bytes, results) => Effect.ignore(c.held({ address: hello.address, bytes, results }))
      }
      // a driver: its scheduler's dashboard, over this connection (a scheduler that does not know the calls has none)
      if (link !== undefined) {
        link.ask = Effect.orElseSucceed(Effect.timeout(c.dashboard(), "5 seconds"), () => undefined)
        link.send = (blob) => Effect.orElseSucceed(Effect.as(Effect.timeout(c.feed({ blob }), "10 seconds"), true), () => false)
      }
      return RunnerStorage.makeEncoded({
        getRunners: w(Effect.map(c.getRunners(), (xs) => xs.map(([r, h]) => [r, h] as const))),
        register: (address, runner, healthy) => w(c.register({ address, runner, healthy })),
        unregister: (address) => w(c.unregister({ address })),
        setRunnerHealth: (address, healthy) => w(c.setRunnerHealth({ address, healthy })),
        acquire: (address, shardIds) => w(Effect.map(c.acquire({ address, shardIds }), (xs) => [...xs])),
        refresh: (address, shardIds) => w(c.refresh({ address, shardIds })),
        release: (address, shardId) => w(c.release({ address, shardId })),
        releaseAll: (address) => w(c.releaseAll({ address }))
      })
    })
  ).pipe(
    Layer.provide(RpcClient.layerProtocolSocket({ retryTransientErrors: true })),
    Layer.provide(Layer.effect(Socket.Socket)(socketTo(security, host, port))),
    Layer.provide(RpcSerialization.layerSchemaBinary())
  )

/**
 * `RunnerStorage` in PostgreSQL (Effect's `SqlRunnerStorage`, which creates its tables
 * when missing), for a process with sharding settings `config`.
 *
 * Shard locks are rows of `{prefix}_locks` (`shardLockDisableAdvisory`), not advisory
 * locks: Effect numbers an advisory lock by the group's index in the runner's own
 * `availableShardGroups`, and every Tessera worker has one group of its own (its name), so
 * all of them would contend for lock 1000001 and only one would ever own its shard. A
 * row is keyed by the shard's name; a killed worker's row expires after
 * `shardLockExpiration`, and nobody else wants that shard anyway.
 *
 * @since 0.1.0
 * @internal
 */
export const layerPostgres = (pg: PostgresStorage, config: Partial<ShardingConfig.ShardingConfig["Service"]>) =>
  SqlRunnerStorage.layerWith({ prefix: pg.prefix }).pipe(
    Layer.provide(PgClient.layer({ url: Redacted.make(pg.url), applicationName: "tessera", maxConnections: 4 })),
    Layer.provide(ShardingConfig.layer({ ...config, shardLockDisableAdvisory: true })),
    Layer.catchCause((cause) => Layer.effect(RunnerStorage.RunnerStorage)(storageFailure(pg, cause)))
  )

/**
 * A SQL error anywhere in `cause` (failure, or defect: Effect's migrator dies with it) as
 * a `ClusterStorageError` naming the URL and each distinct message down its causes;
 * anything else as it was.
 */
const storageFailure = (pg: PostgresStorage, cause: Cause.Cause<unknown>): Effect.Effect<never, ClusterStorageError> => {
  for (const r of cause.reasons) {
    const e = r._tag === "Fail" ? r.error : r._tag === "Die" ? r.defect : undefined
    if (typeof e !== "object" || e === null || (e as { _tag?: unknown })._tag !== "SqlError") continue
    const messages: Array<string> = []
    for (let c: unknown = e; c instanceof Error; c = c.cause) {
      if (c.message !== "" && !messages.includes(c.message)) messages.push(c.message)
    }
    return Effect.fail(new ClusterStorageError({ message: `PostgreSQL runner storage at ${hidePassword(pg.url)}: ${messages.join(": ")}` }))
  }
  return Effect.failCause(cause as Cause.Cause<never>)
}

/**
 * Only the tables (`tessera scheduler --storage`): creates them when missing.
 *
 * @since 0.1.0
 * @internal
 */
export const migratePostgres = (pg: PostgresStorage): Effect.Effect<void, ClusterStorageError> =>
  Layer.build(Layer.provide(
    SqlRunnerStorage.layerMigrations({ prefix: pg.prefix }),
    PgClient.layer({ url: Redacted.make(pg.url), applicationName: "tessera", maxConnections: 1 })
  )).pipe(Effect.scoped, Effect.asVoid, Effect.catchCause((cause) => storageFailure(pg, cause)))

/**
 * A worker's runner storage: PostgreSQL where `postgres` is given, else the scheduler's
 * registry at `scheduler`.
 *
 * @since 0.1.0
 * @internal
 */
export const layerFor = (
  where: { readonly postgres?: PostgresStorage | undefined; readonly scheduler?: { readonly host: string; readonly port: number } | undefined },
  config: Partial<ShardingConfig.ShardingConfig["Service"]>,
  security: LinkSecurity,
  hello?: Hello,
  reporter?: HeldReporter
): Layer.Layer<RunnerStorage.RunnerStorage, ClusterStorageError | Socket.SocketError> => {
  if (where.postgres !== undefined) return layerPostgres(where.postgres, config)
  if (where.scheduler === undefined) throw new Error("a worker needs a scheduler address or PostgreSQL storage")
  return layerRemote(where.scheduler.host, where.scheduler.port, security, hello, reporter)
}

/**
 * Tessera across processes and hosts, on Effect Cluster: the options of
 * `Executor.layerCluster`, and `LocalCluster`, N worker processes on this machine with a
 * scheduler in this process, stopped with the scope (like `dask.distributed.LocalCluster`).
 *
 * Workers are Effect Cluster runners (`@effect/platform-node`'s `NodeClusterSocket`), each
 * hosting a `TesseraWorker` entity; the scheduler keeps the one state record and, by
 * default, serves the runner registry, so a cluster needs no database; with
 * `storage: { postgres }` runners register in PostgreSQL instead (runners across hosts,
 * no scheduler process to reach). Results stay on the worker that made them and move
 * worker to worker. See docs/cluster.md.
 *
 * Loads anywhere (no `node:` import at load time); the scheduler is imported when a
 * cluster starts.
 *
 * `layer` is the cluster with its start's expected failures typed (`ClusterError`).
 *
 * Leaves out: a scheduler that keeps the computes' state in a process of its own.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as References from "effect/References"
import type * as Scope from "effect/Scope"
import type { MemoryRecord, TaskRecord, TransferRecord } from "./EngineEvents.ts"
import { Executor } from "./Executor.ts"
import type { ExecutorShape } from "./Executor.ts"
import type { WorkerCountRefused } from "./EngineError.ts"
import { checkLocalCounts } from "./WorkerCount.ts"

/**
 * Options of the cluster executor.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClusterOptions {
  /** start this many worker processes on this machine */
  readonly local?: number
  /**
   * `HOST:PORT` of a running `tessera scheduler` (its runner registry) to use; absent, this
   * process serves the registry on `host`:`port`
   */
  readonly scheduler?: string
  /**
   * runner storage in PostgreSQL (`postgres://USER@HOST:PORT/DB`, optional `?prefix=NAME`
   * for the tables, default `tessera`): the workers registered there are this cluster's,
   * and local workers register there too; absent, the registry is the scheduler's
   * (`scheduler`, or served from this process)
   */
  readonly storage?: { readonly postgres: string }
  /** where the scheduler's registry listens for workers (default 127.0.0.1) */
  readonly host?: string
  /** its port (default: any free port) */
  readonly port?: number
  /** kernel threads of each local worker (default 1) */
  readonly threads?: number
  /** workers to wait for before the executor is ready (default `local`, else 0) */
  readonly minWorkers?: number
  /**
   * seconds to wait for them (default 60); with `scheduler`, also the most it waits for the
   * scheduler to answer at all before failing with {@link ClusterUnreachable}
   */
  readonly startTimeout?: number
  /**
   * told each failed attempt to reach `scheduler` (its address, why: `ECONNREFUSED`, the
   * attempt number, from 1), about once a second until it answers or `startTimeout` passes
   */
  readonly onRetry?: (address: string, reason: string, attempt: number) => void
  /**
   * told, every 5 s while the executor waits for `minWorkers`, how many have joined so far
   * and the seconds waited (a scheduler that answers but has no workers)
   */
  readonly onWaiting?: (joined: number, wanted: number, seconds: number) => void
  /** seconds a compute waits for a worker when none is alive, then fails with `NoWorkers` (default 5) */
  readonly noWorkerWait?: number
  /** seconds between liveness pings and clock samples (default 1) */
  readonly heartbeat?: number
  /** seconds without an answer before a worker counts as dead (default 10) */
  readonly heartbeatTimeout?: number
  /** test only: seconds added to each local worker's clock, by worker index */
  readonly clockShift?: ReadonlyArray<number>
  /**
   * module URLs each local worker process imports before it joins (worker plugins'
   * modules: importing one at a compute's start blocks a worker for as long as it takes)
   */
  readonly preload?: ReadonlyArray<string>
  /** test only: the host name each local worker reports, by worker index (as if on other hosts) */
  readonly hostNames?: ReadonlyArray<string>
  /** each local worker's bound on the bytes it holds (see `WorkerProcessOptions.maxHeldBytes`) */
  readonly maxHeldBytes?: number
  /**
   * the cluster's token (`newClusterToken`, `readClusterTokenFile`): every link — to the
   * registry, the workers' runner sockets, their data planes — is TLS 1.3 keyed by it, and
   * local workers get it through their environment. Needed where any address is not
   * loopback (else the start fails saying so), unless `insecure`.
   */
  readonly token?: Redacted.Redacted<string>
  /** plain TCP beyond loopback without a token (said on stderr at every start) */
  readonly insecure?: boolean
}

/**
 * A worker as the scheduler sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerInfo {
  /** entity id and shard group: `tessera-worker@HOST:PORT` */
  readonly name: string
  readonly host: string
  readonly pid: number
  readonly threads: number
  readonly alive: boolean
  /** worker clock minus scheduler clock, seconds, and its uncertainty (half the fastest round trip) */
  readonly offset: number
  readonly uncertainty: number
}

/**
 * One peer fetch (scheduler clock, epoch seconds).
 *
 * @since 0.1.0
 * @category models
 */
export interface TransferInfo {
  readonly keys: ReadonlyArray<string>
  readonly bytes: number
  /** the sending worker */
  readonly peer: string
  /** the receiving worker */
  readonly worker: string
  readonly start: number
  readonly stop: number
  /** seconds spent serialising (sender) and deserialising (receiver) */
  readonly serialize: number
  readonly deserialize: number
}

/**
 * A worker's counters since it started.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerStats {
  readonly name: string
  readonly sent: number
  readonly received: number
  readonly tasks: number
  readonly running: number
  /** results held now (made here or fetched, of every compute not yet released) */
  readonly held: number
  /** drivers' large literal arguments held now */
  readonly literals: number
  /** bytes of those results, and of those literals */
  readonly heldBytes: number
  readonly literalBytes: number
  /** results refused so far by its `maxHeldBytes` (tasks failed with `HeldBytesExceeded`) */
  readonly refused: number
  /** its bound on results and literals held, bytes, when it has one */
  readonly maxHeldBytes?: number | undefined
}

/**
 * One compute of a driver as its scheduler's dashboard sees it: its tasks' groups (stage
 * and function) and how many tasks each has.
 *
 * @since 0.1.0
 * @category models
 */
export interface FeedCompute {
  /** the compute's number within its driver's run (from 0) */
  readonly id: number
  readonly groups: ReadonlyArray<{ readonly stage: string | undefined; readonly name: string; readonly total: number }>
}

/**
 * What a driver forwarded to its scheduler's dashboard in one tick (`serveScheduler`'s
 * `dashboard`): the records its own hooks saw for its cluster tasks, on the scheduler's
 * clock. The records are read during the call only.
 *
 * @since 0.1.0
 * @category models
 */
export interface FeedBatch {
  /** the driver's run: one id for a driver's cluster, from its start to its close */
  readonly run: string
  /** who sent it (`pid N on HOST`) */
  readonly driver: string
  /** records this driver did not forward so far (the scheduler slow or failing; see docs/cluster.md) */
  readonly dropped: number
  /** the driver's cluster closed: nothing follows from this run */
  readonly over: boolean
  /** computes begun since the last batch */
  readonly computes: ReadonlyArray<FeedCompute>
  /** each running compute's tasks running now, per group (its `groups`' order) */
  readonly running: ReadonlyArray<{ readonly id: number; readonly counts: ReadonlyArray<number> }>
  /** computes ended since the last batch (after their records) */
  readonly finished: ReadonlyArray<{ readonly id: number; readonly failed: boolean }>
  /** task records (`shape`, `dtype`, `type`, dependencies and dependents not forwarded: empty) */
  readonly tasks: ReadonlyArray<TaskRecord>
  readonly memory: ReadonlyArray<MemoryRecord>
  readonly transfers: ReadonlyArray<TransferRecord>
}

/**
 * A running cluster.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClusterShape {
  /**
   * the scheduler registry's `HOST:PORT`, what `tessera worker --scheduler` takes; with
   * PostgreSQL storage, its URL (password hidden), what `tessera worker --storage` takes
   */
  readonly address: string
  readonly workers: () => ReadonlyArray<WorkerInfo>
  /** process ids of the local worker processes, by start order */
  readonly localPids: () => ReadonlyArray<number>
  /** calls `f` with every peer transfer; returns the unsubscribe */
  readonly onTransfer: (f: (t: TransferInfo) => void) => () => void
  /**
   * each live worker's counters: bytes sent to and received from peers (encoded), tasks
   * completed, batches running now, results and literals held now
   */
  readonly stats: Effect.Effect<ReadonlyArray<WorkerStats>>
  /** starts one more worker process on this machine; it joins within a heartbeat and gets work */
  readonly addLocalWorker: Effect.Effect<void>
  /** the executor running on this cluster */
  readonly executor: ExecutorShape
}

/**
 * The running cluster, where a layer provides one.
 *
 * @since 0.1.0
 * @category layers
 */
export class Cluster extends Context.Service<Cluster, ClusterShape>()("tessera/engine/Cluster") {}

/**
 * Starts a scheduler and `options.local` worker processes (default 2) in the current
 * scope; they stop when it closes. `local`, `threads` and the two multiplied out of
 * `Executor.maxWorkers()` are a defect (`WorkerCountRefused`), before any process starts
 * (`Executor.layerCluster` fails with it as a typed error).
 *
 * @since 0.1.0
 * @category constructors
 */
export const LocalCluster = (options: ClusterOptions = {}): Effect.Effect<ClusterShape, never, Scope.Scope> =>
  Effect.gen(function*() {
    const refused = checkLocalCounts(options.local ?? 2, options.threads)
    if (refused !== undefined) return yield* Effect.die(refused) // typed in layerCluster; kept off this signature
    const m = yield* Effect.promise(() => import("./internal/cluster/scheduler.ts"))
    return shapeOf(yield* m.make({ ...options, local: options.local ?? 2 }))
  })

/**
 * A cluster as layers, the cluster and the executor on it, with its expected failures
 * typed ({@link ClusterError}): `local`/`threads` refused, a bad `scheduler` address or
 * `storage` URL, link security refused (a token missing or not the scheduler's), the
 * scheduler or PostgreSQL unreachable or unusable, fewer than `minWorkers` joined within
 * `startTimeout`. Unlike `layerLocal`, starts no local worker unless `local` says so (the
 * options as `Executor.layerCluster` reads them).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ClusterOptions = {}): Layer.Layer<Cluster | Executor, ClusterError> =>
  Layer.effectContext(Effect.gen(function*() {
    const refused = checkLocalCounts(options.local, options.threads)
    if (refused !== undefined) return yield* refused
    const m = yield* Effect.promise(() => import("./internal/cluster/scheduler.ts"))
    const c = shapeOf(yield* m.makeTyped(options))
    return Context.make(Cluster, c).pipe(Context.add(Executor, c.executor))
  }))

/** The public view of the scheduler's executor. */
const shapeOf = (ex: ExecutorShape & { readonly cluster: import("./internal/cluster/members.ts").ClusterHandle }): ClusterShape => {
  const c = ex.cluster
  return {
    address: c.address,
    workers: () => c.workers().map((w) => ({ ...w })),
    localPids: () => c.locals().map((l) => l.process.pid ?? 0),
    onTransfer: c.onTransfer,
    stats: c.stats,
    addLocalWorker: c.addLocal,
    executor: ex
  }
}

/**
 * A `LocalCluster` as layers: the cluster, and the executor on it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLocal = (options: ClusterOptions = {}): Layer.Layer<Cluster | Executor> =>
  Layer.effectContext(Effect.map(LocalCluster(options), (c) => Context.make(Cluster, c).pipe(Context.add(Executor, c.executor))))

/**
 * Options of a worker process (`tessera worker`).
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerProcessOptions {
  /** `HOST:PORT` of the scheduler's registry (this or `storage`) */
  readonly scheduler?: string
  /** a PostgreSQL URL to register in instead (see {@link ClusterOptions} `storage`) */
  readonly storage?: string
  /**
   * `HOST:PORT` this worker listens on (its runner socket; its data plane takes another
   * port on the same host). A wildcard host (`0.0.0.0`, `::`) listens on every interface.
   * Default: the contact host (below), on a free port.
   */
  readonly listen?: string
  /**
   * the host the scheduler, drivers and other workers reach this worker at (dask's
   * contact address). Default: `listen`'s host unless it is a wildcard, else (and when
   * `listen` is absent too) this machine's address on the route to the scheduler or the
   * PostgreSQL server, as dask's worker picks its address
   */
  readonly advertise?: string
  /** told the listen `HOST:PORT` and the contact `HOST:PORT` once chosen, before joining */
  readonly onAddress?: (listen: string, contact: string) => void
  /** kernel threads (default 1) */
  readonly threads?: number
  /** module URLs to import before joining (see `ClusterOptions.preload`) */
  readonly preload?: ReadonlyArray<string>
  /**
   * seconds the worker keeps trying to reach its scheduler (or PostgreSQL server), at
   * start and whenever it stops answering later, before it fails with
   * {@link ClusterUnreachable} (default 60)
   */
  readonly connectTimeout?: number
  /** told each failed attempt to reach it (address, why: `ECONNREFUSED`, attempt number from 1) */
  readonly onRetry?: (address: string, reason: string, attempt: number) => void
  /** seconds the worker's own shutdown may take once interrupted before it is left unfinished (default 3) */
  readonly stopTimeout?: number
  /**
   * the most bytes of results (and drivers' literals) this worker holds: a task whose
   * result would take it past fails with `EngineError.HeldBytesExceeded` naming the
   * limit (the result is refused: not kept, not spilled to disk). Default: no bound.
   */
  readonly maxHeldBytes?: number
  /** the cluster's token (see {@link ClusterOptions} `token`): needed where an address is not loopback */
  readonly token?: Redacted.Redacted<string>
  /** plain TCP although an address is not loopback */
  readonly insecure?: boolean
}

/**
 * Runs this process as a worker until interrupted. Fails with a message naming the bad
 * address when one is not `HOST:PORT` or `storage` is not a PostgreSQL URL, when
 * `advertise` cannot be reached (a wildcard, a port given) or no address of this machine
 * routes to the scheduler (with `advertise` absent), and when
 * there is not exactly one of `scheduler` and `storage`; with `ClusterStorageError`
 * when PostgreSQL cannot be used; with {@link ClusterUnreachable} when the scheduler (or
 * the PostgreSQL server) does not answer for `connectTimeout` seconds, at start or later.
 *
 * Interrupted (SIGINT, SIGTERM), it stops within `stopTimeout` seconds whatever the
 * scheduler's state: its unregistering is tried, not waited for.
 *
 * @since 0.1.0
 * @category constructors
 */
export const runWorker = (
  options: WorkerProcessOptions
): Effect.Effect<never, ClusterAddressError | ClusterStorageError | ClusterUnreachable> =>
  Effect.gen(function*() {
    const [{ parseAddress }, worker, reach] = yield* Effect.promise(() =>
      Promise.all([
        import("./internal/cluster/protocol.ts"),
        import("./internal/cluster/workerProcess.ts"),
        import("./internal/cluster/reach.ts")
      ])
    )
    if ((options.scheduler === undefined) === (options.storage === undefined)) {
      return yield* new ClusterAddressError({ message: "a worker needs exactly one of --scheduler HOST:PORT and --storage postgres://…" })
    }
    const where = options.storage !== undefined
      ? { postgres: yield* storageOf(options.storage, "--storage") }
      : { scheduler: yield* address(() => parseAddress(options.scheduler!, "--scheduler")) }
    // what must answer: the scheduler's registry, or the PostgreSQL server (not on a local socket)
    const pgUrl = where.postgres !== undefined ? new URL(where.postgres.url) : undefined
    const target = where.scheduler ??
      (pgUrl !== undefined && pgUrl.hostname !== "" ? { host: pgUrl.hostname, port: Number(pgUrl.port || 5432) } : undefined)
    const probe = {
      what: where.scheduler !== undefined ? "scheduler" : "PostgreSQL server",
      timeout: options.connectTimeout ?? 60,
      onRetry: options.onRetry
    }
    const at = yield* Effect.promise(() => import("./internal/cluster/addresses.ts"))
    const bound = options.listen !== undefined ? yield* address(() => parseAddress(options.listen!, "--listen", { port0: true })) : undefined
    const listenHost = bound?.host.replace(/^\[(.*)\]$/, "$1")
    if (options.advertise !== undefined) {
      const why = contactProblem(options.advertise)
      if (why !== undefined) return yield* new ClusterAddressError({ message: `--advertise: ${why}` })
    }
    // a PostgreSQL server on a local socket (no host in its URL): its runners are all on
    // this machine, reached on loopback
    const toward = where.scheduler?.host ?? (new URL(where.postgres!.url).hostname || "127.0.0.1")
    const advertise = options.advertise ??
      (listenHost !== undefined && !isWildcardHost(listenHost) ? listenHost : yield* Effect.tryPromise({
        try: () => at.routeTo(toward),
        catch: (e) =>
          new ClusterAddressError({
            message: `--advertise: no address of this machine reaches ${toward} (${(e as Error).message}); give --advertise HOST`
          })
      }))
    const host = listenHost ?? advertise
    const listen = {
      host,
      // port 0 (`--listen HOST:0`), or none given: a free one, said by onAddress
      port: bound !== undefined && bound.port !== 0 ? bound.port : (yield* Effect.tryPromise({
        try: () => freePort(host),
        // `--advertise` alone is also where the worker listens: not an address of this
        // machine (behind NAT, say) it needs `--listen` too
        catch: (e) =>
          new ClusterAddressError({
            message: `--advertise: cannot listen on ${host} (${(e as Error).message}); give --listen HOST:PORT for the local address`
          })
      }))
    }
    // then TLS where a token is given; plain only where every address is loopback, or --insecure
    const security = yield* Effect.promise(() => import("./internal/cluster/security.ts"))
    const decided = security.decide({
      hosts: [host, advertise, ...(target !== undefined ? [target.host] : [])],
      token: options.token,
      insecure: options.insecure
    })
    if ("problem" in decided) return yield* new ClusterAddressError({ message: decided.problem })
    if (decided._tag === "plain" && decided.insecure) {
      process.stderr.write("tessera worker: --insecure: plain TCP beyond loopback; anyone who reaches this worker's ports can run code on it and read its results\n")
    }
    // the addresses checked first (none needs the scheduler); then whether it answers
    if (target !== undefined) yield* reach.reach(target.host, target.port, probe)
    options.onAddress?.(`${host}:${listen.port}`, `${advertise}:${listen.port}`)
    // each URL through the one module check (internal/kernels.ts): file: URLs under the allowed folders
    yield* Effect.promise(() => import("./internal/kernels.ts").then((k) => Promise.all((options.preload ?? []).map((u) => k.importChecked(u, "preload")))))
    // the worker runs in a fiber of its own, so that neither a signal nor a scheduler gone
    // for good waits on its shutdown (which talks to that scheduler) for longer than
    // stopTimeout
    // Effect Cluster's own log lines (a lost registry: an error and a stack a second) only
    // at debug and below; the worker says what matters in lines of its own (onRetry)
    const level = yield* References.MinimumLogLevel
    const quiet = level !== "All" && level !== "Trace" && level !== "Debug"
    const running = yield* Effect.forkDetach(Layer.launch(
      worker.layer({
        ...where,
        listen,
        advertise,
        ...(options.threads !== undefined ? { threads: options.threads } : {}),
        ...(options.maxHeldBytes !== undefined ? { maxHeldBytes: options.maxHeldBytes } : {}),
        ...(decided._tag === "plain" && decided.insecure ? { insecure: true } : {})
      }, options.token)
    ).pipe(
      Effect.catch((e) => e instanceof ClusterStorageError ? Effect.fail(e) : Effect.die(e)),
      quiet ? Effect.provideService(References.MinimumLogLevel, "None") : (e) => e
    ))
    // whether the scheduler's link security matches this worker's, asked beside the join
    // (Effect's client would retry a refused handshake unseen for ever)
    const transport = yield* Effect.promise(() => import("./internal/cluster/transport.ts"))
    const sched = where.scheduler
    const matches = sched === undefined ? Effect.never : Effect.flatMap(
      Effect.promise(() => transport.handshakeWith(decided, sched.host, sched.port, "scheduler")),
      (why) => why === undefined ? Effect.never : Effect.fail(new ClusterAddressError({ message: why }))
    )
    const joined = Effect.raceFirst(Fiber.join(running), matches)
    return yield* (target === undefined ? joined : Effect.raceFirst(joined, reach.watch(target.host, target.port, probe))).pipe(
      Effect.onExit(() => reach.stopWithin(running, options.stopTimeout ?? 3))
    )
  })

/**
 * Serves a cluster's runner registry on `host:port` until interrupted (`tessera
 * scheduler`): workers register there, drivers find them there.
 *
 * @since 0.1.0
 * @category constructors
 */
export const serveScheduler = (options: {
  readonly host: string
  /** 0: a free port, told to `onListen` */
  readonly port: number
  /** told the `HOST:PORT` it listens on, once it does */
  readonly onListen?: (address: string) => void
  /**
   * told a line when a worker joins or leaves (unregistering, or silent for `lostAfter`
   * seconds, then dropped from the registry): its name, pid, host, threads, and how many remain
   */
  readonly log?: (line: string) => void
  /** seconds without a word from a registered worker before it counts as lost (default 15) */
  readonly lostAfter?: number
  /** the cluster's token: the registry serves TLS keyed by it (see {@link ClusterOptions} `token`) */
  readonly token?: Redacted.Redacted<string>
  /** plain TCP on a host that is not loopback */
  readonly insecure?: boolean
  /**
   * the scheduler serves a dashboard: drivers that ask are told so, and forward each
   * tick's records of their cluster tasks, given here (off: drivers forward nothing)
   */
  readonly dashboard?: (batch: FeedBatch) => void
}): Effect.Effect<never, ClusterAddressError> =>
  Effect.gen(function*() {
    const reg = yield* Effect.promise(() => import("./internal/cluster/registry.ts"))
    const security = yield* Effect.promise(() => import("./internal/cluster/security.ts"))
    const decided = security.decide({ hosts: [options.host], token: options.token, insecure: options.insecure })
    if ("problem" in decided) return yield* new ClusterAddressError({ message: decided.problem })
    const port = options.port !== 0 ? options.port : yield* Effect.promise(() => freePort(options.host))
    const registry = new reg.Registry(options.log)
    if (options.dashboard !== undefined) registry.dashboard = options.dashboard
    // listening first (the layer provided), then said, then swept
    return yield* Effect.orDie(Layer.launch(
      Layer.effectDiscard(Effect.gen(function*() {
        options.onListen?.(`${options.host.includes(":") && !options.host.startsWith("[") ? `[${options.host}]` : options.host}:${port}`)
        yield* Effect.forkScoped(Effect.forever(Effect.andThen(
          Effect.sleep("1 second"),
          Effect.sync(() => registry.sweep(options.lostAfter ?? 15))
        )))
      })).pipe(Layer.provide(reg.serve(registry, options.host, port, decided, options.log)))
    ))
  })

/**
 * A cluster token, where one is given: read from `file` (which must hold one and be
 * readable by its owner only), or made there when `create` is set and the file is
 * missing (mode 0600); without `file`, the `TESSERA_CLUSTER_TOKEN` environment variable.
 * `fingerprint` tells tokens apart in messages without showing them. Fails with a
 * sentence naming the file and what is wrong with it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const clusterToken = (o: { readonly file?: string | undefined; readonly create?: boolean }): Effect.Effect<
  { readonly token: Redacted.Redacted<string>; readonly created: boolean; readonly fingerprint: string } | undefined,
  ClusterAddressError
> =>
  Effect.gen(function*() {
    const s = yield* Effect.promise(() => import("./internal/cluster/security.ts"))
    const { existsSync } = yield* Effect.promise(() => import("node:fs"))
    const found = (token: Redacted.Redacted<string>, created: boolean) => ({ token, created, fingerprint: s.fingerprint(token) })
    if (o.file === undefined) {
      const env = s.tokenFromEnv()
      if (env === undefined) return undefined
      if ("problem" in env) return yield* new ClusterAddressError({ message: env.problem })
      return found(env.token, false)
    }
    if (o.create === true && !existsSync(o.file)) {
      return yield* Effect.try({
        try: () => found(s.writeTokenFile(o.file!), true),
        catch: (e) => new ClusterAddressError({ message: `--token-file: cannot create ${o.file}: ${(e as Error).message}` })
      })
    }
    const r = s.readTokenFile(o.file)
    if ("problem" in r) return yield* new ClusterAddressError({ message: `--token-file: ${r.problem}` })
    return found(r.token, false)
  })

/**
 * Whether `host` is a loopback address (links to and on it may stay plain TCP).
 *
 * @since 0.1.0
 * @category utils
 */
export const isLoopbackHost = (host: string): boolean => {
  const h = host.replace(/^\[(.*)\]$/, "$1").toLowerCase()
  return h === "localhost" || h.endsWith(".localhost") || /^127\.\d+\.\d+\.\d+$/.test(h) || h === "::1" || /^::ffff:127\./.test(h)
}

/**
 * Creates PostgreSQL runner storage's tables where missing (`tessera scheduler
 * --storage`, a set-up step; workers and drivers also create them when missing); fails
 * with a message naming the bad URL when it is not one.
 *
 * @since 0.1.0
 * @category constructors
 */
export const setupStorage = (postgres: string): Effect.Effect<void, ClusterAddressError | ClusterStorageError> =>
  Effect.gen(function*() {
    const pg = yield* storageOf(postgres, "--storage")
    const reg = yield* Effect.promise(() => import("./internal/cluster/registry.ts"))
    return yield* reg.migratePostgres(pg)
  })

/**
 * PostgreSQL runner storage: the server's URL (without Tessera's `prefix` parameter) and
 * the table prefix.
 *
 * @since 0.1.0
 * @category models
 */
export interface PostgresStorage {
  readonly url: string
  readonly prefix: string
}

/**
 * Reads a `postgres://` / `postgresql://` URL; its optional `prefix` query parameter (a
 * lower-case SQL identifier, default `tessera`) names the tables and is taken out of the
 * URL the server sees. Not one: an error naming `what` and the URL (password hidden).
 *
 * @since 0.1.0
 * @category encoding
 */
export const parsePostgres = (s: string, what: string): PostgresStorage | ClusterAddressError => {
  let u: URL | undefined
  try {
    u = new URL(s.trim())
  } catch {
    u = undefined
  }
  if (u === undefined || (u.protocol !== "postgres:" && u.protocol !== "postgresql:") || u.hostname === "") {
    return new ClusterAddressError({
      message: `${what}: expected a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE), got ${JSON.stringify(hidePassword(s))}`
    })
  }
  const prefix = u.searchParams.get("prefix") ?? "tessera"
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(prefix)) {
    return new ClusterAddressError({
      message: `${what}: the prefix parameter must be a lower-case SQL identifier (letters, digits, _), got ${JSON.stringify(prefix)}`
    })
  }
  u.searchParams.delete("prefix")
  return { url: u.href, prefix }
}

/**
 * A URL with its password replaced by `***`, for messages.
 *
 * @since 0.1.0
 * @category getters
 */
export const hidePassword = (s: string): string => {
  try {
    const u = new URL(s)
    if (u.password !== "") u.password = "***"
    return u.href
  } catch {
    return s.replace(/:[^:@/]*@/, ":***@")
  }
}

/**
 * Whether `host` binds every interface (`0.0.0.0`, `::`, `[::]`, empty): a listen host
 * only, never one to reach a worker at.
 *
 * @since 0.1.0
 * @category encoding
 */
export const isWildcardHost = (host: string): boolean => host === "" || host === "0.0.0.0" || host === "::" || host === "[::]"

/**
 * Why `host` cannot be a worker's contact host (`advertise`): empty, a wildcard, with a
 * port, with spaces; `undefined` when it can.
 *
 * @since 0.1.0
 * @category encoding
 */
export const contactProblem = (host: string): string | undefined => {
  if (host.trim() === "") return "expected a host name or IP address, got an empty string"
  if (isWildcardHost(host)) return `${host} listens on every interface but reaches none: give an address of this machine that the others can reach`
  if (/\s/.test(host)) return `expected a host name or IP address, got ${JSON.stringify(host)}`
  // an IPv6 address has colons; anything else with one has a port
  if (host.includes(":") && !/^[0-9a-fA-F:.]+$/.test(host)) return `expected a host without a port (the port is --listen's), got ${JSON.stringify(host)}`
  if (/^[^:]+:\d+$/.test(host)) return `expected a host without a port (the port is --listen's), got ${JSON.stringify(host)}`
  return undefined
}

/**
 * A cluster address that is not `HOST:PORT`, or a storage URL that is not PostgreSQL's.
 *
 * @since 0.1.0
 * @category errors
 */
export class ClusterAddressError extends Data.TaggedError("ClusterAddressError")<{ readonly message: string }> {}

/**
 * A cluster's scheduler (or PostgreSQL server) that did not answer: a worker or driver
 * kept trying for its timeout (`connectTimeout`, `startTimeout`). The message names the
 * address, the last reason and the attempts.
 *
 * @since 0.1.0
 * @category errors
 */
export class ClusterUnreachable extends Data.TaggedError("ClusterUnreachable")<{ readonly address: string; readonly message: string }> {}

/**
 * A cluster whose workers did not all start or join within `startTimeout`: the message
 * says how many did, and what the local workers that failed wrote.
 *
 * @since 0.1.0
 * @category errors
 */
export class ClusterStartError extends Data.TaggedError("ClusterStartError")<{ readonly message: string }> {}

/**
 * Runner storage that could not be used: PostgreSQL unreachable, refusing the login, or
 * the tables not creatable. The message names the URL (password hidden) and the cause.
 *
 * @since 0.1.0
 * @category errors
 */
export class ClusterStorageError extends Data.TaggedError("ClusterStorageError")<{ readonly message: string }> {}

/**
 * Any failure a cluster's start may end in (`layer`, `Executor.layerCluster`): a bad
 * address or storage URL, link security refused, the scheduler or PostgreSQL unreachable
 * or unusable, workers not joined in time, local counts refused.
 *
 * @since 0.1.0
 * @category errors
 */
export type ClusterError = ClusterAddressError | ClusterStartError | ClusterStorageError | ClusterUnreachable | WorkerCountRefused

/**
 * The workers that did not start or join in time: how many did, where, and what the
 * local workers that failed wrote.
 *
 * @since 0.1.0
 * @category constructors
 */
export const workersNotStarted = (o: {
  readonly joined: number
  readonly wanted: number
  readonly seconds: number
  /** ` at scheduler HOST:PORT`, or empty */
  readonly where: string
  /** what the local workers wrote on stderr */
  readonly stderr: string
}): ClusterStartError =>
  new ClusterStartError({
    message: `cluster: ${o.joined} of ${o.wanted} workers started${o.where} within ${o.seconds} s${o.stderr !== "" ? `:\n${o.stderr}` : ""}`
  })

/**
 * A link the cluster's security refuses (an address beyond loopback without a token, a
 * scheduler whose token differs): the sentence says which and what to do.
 *
 * @since 0.1.0
 * @category constructors
 */
export const linkRefused = (problem: string): ClusterStartError => new ClusterStartError({ message: problem })

/**
 * The registry this process serves could not listen at `address` (taken, not this
 * machine's): why.
 *
 * @since 0.1.0
 * @category constructors
 */
export const cannotListen = (address: string, why: string): ClusterStartError =>
  new ClusterStartError({ message: `cluster: cannot serve the scheduler's registry at ${address}: ${why}` })

/**
 * An address that is not `HOST:PORT`, named by `what`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const badAddress = (what: string, given: string): ClusterAddressError =>
  new ClusterAddressError({ message: `${what}: expected HOST:PORT (e.g. 127.0.0.1:8786), got ${JSON.stringify(given)}` })

const storageOf = (s: string, what: string): Effect.Effect<PostgresStorage, ClusterAddressError> => {
  const pg = parsePostgres(s, what)
  return pg instanceof ClusterAddressError ? Effect.fail(pg) : Effect.succeed(pg)
}

const address = <A>(f: () => A): Effect.Effect<A, ClusterAddressError> =>
  Effect.try({ try: f, catch: (e) => new ClusterAddressError({ message: (e as Error).message }) })

/**
 * A free TCP port on `host` (for a worker's `listen` address).
 *
 * @since 0.1.0
 * @category getters
 */
export const freePort = (host: string): Promise<number> =>
  import("./internal/cluster/localCluster.ts").then((m) => m.freePort(host))

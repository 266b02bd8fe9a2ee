/**
 * `tessera scheduler [--host H] [--port P] [--dashboard [HOST:]PORT]` and `tessera worker --scheduler HOST:PORT
 * [--listen HOST:PORT] [--advertise HOST] [--threads N]`, as dask's `dask scheduler` / `dask worker`: the
 * scheduler process serves the cluster's runner registry; each worker process is an
 * Effect Cluster runner that registers there and runs the tasks drivers send it
 * (`--cluster HOST:PORT` on `demo`/`run`). Both run until interrupted (Ctrl-C, SIGTERM:
 * exit 130 / 143 at once, also while a worker waits for its scheduler).
 *
 * A worker that cannot reach its scheduler says so on stderr within a second or two and
 * once a second after (`cannot reach scheduler HOST:PORT (ECONNREFUSED); retrying (N)…`),
 * and exits 1 after `--connect-timeout` seconds (default 60), at start or when the
 * scheduler stops answering later. The scheduler logs each worker's join and leave on
 * stderr, and what each worker holds (bytes of results) when that changes. `--port 0` /
 * `--listen HOST:0` take a free port and print it. `--max-held-bytes` bounds what a worker
 * holds: a task whose result would take it past fails with `HeldBytesExceeded`.
 *
 * With PostgreSQL runner storage the registry is the database: `tessera worker --storage
 * postgres://…` registers there (drivers use `--cluster postgres://…`), and `tessera
 * scheduler --storage postgres://…` only creates the tables and exits (a set-up step; no
 * process to keep running). See docs/cluster.md.
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Command, Flag } from "effect/cli"
import { insecureFlag, securityOptions, tokenFileFlag, tokenOrUsage, workerPlugins } from "../cluster.ts"
import { UsageError } from "../errors.ts"
import { intAtLeast, threadsFlag, withDefaultShown } from "../flags.ts"
import { info, warn } from "../output.ts"
import { schedulerDashboard, schedulerDashboardFlag } from "./scheduler.ts"

const usage = (flag: string, value: string, expected: string) => new UsageError({ flag, value, expected })

const storageFlag = (description: string) =>
  Flag.String("storage").pipe(Flag.withDescription(description), Flag.optional)

/** `--storage`'s URL, checked (a usage error naming it, password hidden, when it is not one). */
const checkedStorage = (Cluster: typeof import("../../engine/Cluster.ts"), url: string) => {
  const pg = Cluster.parsePostgres(url, "--storage")
  return pg instanceof Cluster.ClusterAddressError
    ? Effect.fail(usage("--storage", Cluster.hidePassword(url), pg.message.replace(/^--storage: /, "")))
    : Effect.succeed(url)
}

/** `HOST:PORT` checked; `port0`: port 0 (a free port, chosen and printed) allowed. */
const hostPort = (flag: string, v: string, port0 = false): UsageError | undefined => {
  const m = /^(.+):(\d+)$/.exec(v)
  return m !== null && Number(m[2]) >= (port0 ? 0 : 1) && Number(m[2]) <= 65535
    ? undefined
    : new UsageError({ flag, value: v, expected: `expected HOST:PORT (e.g. 127.0.0.1:8786${port0 ? "; port 0: a free one" : ""})` })
}

/**
 * `--connect-timeout SECONDS`: how long a worker keeps trying to reach its scheduler.
 *
 * @since 0.1.0
 * @category cli
 */
export const connectTimeoutFlag = intAtLeast(
  "connect-timeout",
  1,
  "seconds to keep trying to reach the scheduler (at start, and when it stops answering) before exiting 1",
  60
)

/**
 * `--max-held-bytes SIZE`: bytes (`1000000`) or with a unit (`500MB`, `2GiB`, `1.5GB`;
 * decimal KB MB GB TB, binary KiB MiB GiB TiB); a positive whole number of bytes, or
 * undefined when it is not one.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseBytes = (v: string): number | undefined => {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?\s*$/i.exec(v)
  if (m === null) return undefined
  const unit = (m[2] ?? "B").toLowerCase()
  const scale: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 }
  const n = Math.floor(Number(m[1]) * scale[unit]!)
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined
}

/**
 * The stderr line of a failed attempt to reach `address`
 * (`cannot reach scheduler 127.0.0.1:8786 (ECONNREFUSED); retrying (3)…`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const retryLine = (command: string, what: string) => (address: string, reason: string, attempt: number): void =>
  warn(`${command}: cannot reach ${what} ${address} (${reason}); retrying (${attempt})…`)

/**
 * The `scheduler` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const scheduler = Command.make(
  "scheduler",
  {
    host: Flag.String("host").pipe(withDefaultShown("address to listen on (0.0.0.0: every interface)", "127.0.0.1")),
    port: intAtLeast("port", 0, "port workers and drivers connect to (0: a free one, printed)", 8786),
    storage: storageFlag("create PostgreSQL runner storage's tables at this URL and exit (no registry to serve)"),
    tokenFile: tokenFileFlag(
      "the cluster's token: read from PATH, or made there (mode 0600) if missing; every link is then TLS keyed by it. Default beyond loopback: ~/.tessera/cluster.token (made if missing); on loopback: none, plain TCP"
    ),
    insecure: insecureFlag,
    dashboard: schedulerDashboardFlag
  },
  (c) =>
    Effect.gen(function*() {
      if (c.port > 65535) return yield* new UsageError({ flag: "--port", value: String(c.port), expected: "a TCP port, 1 to 65535" })
      const Cluster = yield* Effect.promise(() => import("../../engine/Cluster.ts"))
      if (Option.isSome(c.storage)) {
        if (Option.isSome(c.dashboard)) return yield* usage("--dashboard", c.dashboard.value, "no dashboard with --storage (it only creates the tables); drivers of PostgreSQL storage serve their own (--dashboard on demo/run)")
        const url = yield* checkedStorage(Cluster, c.storage.value)
        yield* Cluster.setupStorage(url)
        const shown = Cluster.hidePassword(url)
        return yield* Console.log(
          `tessera scheduler: runner tables ready in ${shown}; workers join with  tessera worker --storage ${shown}, drivers use --cluster ${shown}`
        )
      }
      // a wildcard host is no address to give workers: this machine's name is
      const os = yield* Effect.promise(() => import("node:os"))
      const reach = Cluster.isWildcardHost(c.host) ? os.hostname() : c.host
      // beyond loopback: TLS keyed by a token, made in ~/.tessera/cluster.token unless given
      // (kept across restarts, so the workers' copies stay good); --insecure: plain, said
      const loopback = Cluster.isLoopbackHost(c.host)
      const file = Option.isSome(c.tokenFile)
        ? c.tokenFile.value
        : !loopback && !c.insecure && process.env.TESSERA_CLUSTER_TOKEN === undefined
        ? (yield* Effect.promise(() => import("node:path"))).join(os.homedir(), ".tessera", "cluster.token")
        : undefined
      if (Option.isSome(c.tokenFile) && c.insecure) return yield* usage("--insecure", "with --token-file", "one of --token-file (TLS) and --insecure (plain TCP)")
      const t = yield* tokenOrUsage(file, true)
      if (c.insecure && !loopback) warn("tessera scheduler: --insecure: plain TCP beyond loopback; anyone who reaches this port can join the cluster, and through it run code and read results")
      const join = (port: string) =>
        t === undefined
          ? `tessera worker --scheduler ${reach}:${port}${c.insecure && !loopback ? " --insecure" : ""}`
          : `tessera worker --scheduler ${reach}:${port} ${file !== undefined ? `--token-file ${file}` : "(with TESSERA_CLUSTER_TOKEN set)"}`
      // the dashboard's URL said before the scheduler listens; the page stays up with it
      const dashboard = yield* schedulerDashboard(c.dashboard)
      return yield* Cluster.serveScheduler({
        ...(dashboard !== undefined ? { dashboard } : {}),
        host: c.host,
        port: c.port,
        ...(t !== undefined ? { token: t.token } : {}),
        insecure: c.insecure,
        // said once listening (with the port chosen, for --port 0)
        onListen: (at) => {
          if (t !== undefined) {
            info(`tessera scheduler: TLS on every link, keyed by the cluster token ${t.created ? "made in" : "in"} ${file ?? "TESSERA_CLUSTER_TOKEN"} (fingerprint ${t.fingerprint}); copy that file to each worker's and driver's machine (mode 600)`)
          }
          console.log(`tessera scheduler: workers join with  ${join(at.slice(at.lastIndexOf(":") + 1))}`)
        },
        log: (line) => info(`tessera scheduler: ${line}`)
      }).pipe(Effect.mapError((e) => new UsageError({ flag: "--host", value: c.host, expected: e.message })))
    }).pipe(Effect.scoped)
).pipe(Command.withDescription("Serve a cluster's runner registry, where workers register and drivers find them (and with --dashboard, the drivers' runs live)."))

/**
 * The `worker` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const worker = Command.make(
  "worker",
  {
    scheduler: Flag.String("scheduler").pipe(
      Flag.withDescription("HOST:PORT of the tessera scheduler (or --storage)"),
      Flag.optional
    ),
    storage: storageFlag("register in PostgreSQL runner storage at this URL instead of a scheduler (docs/cluster.md)"),
    listen: Flag.String("listen").pipe(
      Flag.withDescription(
        "HOST:PORT this worker listens on (0.0.0.0: every interface; port 0: a free one, printed); default: the --advertise host, a free port"
      ),
      Flag.optional
    ),
    advertise: Flag.String("advertise").pipe(
      Flag.withDescription(
        "the host the scheduler, drivers and other workers reach this worker at; default: --listen's host, else this machine's address on the route to the scheduler (docs/cluster.md)"
      ),
      Flag.optional
    ),
    threads: threadsFlag("threads", "kernel threads", 1),
    allowModules: Flag.String("allow-modules").pipe(
      Flag.withMetavar("DIR[,DIR]"),
      Flag.withDescription(
        "folders kernel, plugin and preload modules may also be imported from (default: only this worker's working directory and Tessera's install; data:, http: and other non-file URLs are always refused)"
      ),
      Flag.optional
    ),
    connectTimeout: connectTimeoutFlag,
    tokenFile: tokenFileFlag("the file holding the cluster's token (tessera scheduler prints where it is); default: TESSERA_CLUSTER_TOKEN; needed beyond loopback"),
    insecure: insecureFlag,
    maxHeldBytes: Flag.String("max-held-bytes").pipe(
      Flag.withDescription(
        "most bytes of results this worker holds (e.g. 2GB, 512MiB); a task whose result would take it past fails with HeldBytesExceeded (refused, not spilled); default: no bound"
      ),
      Flag.optional
    )
  },
  (c) =>
    Effect.gen(function*() {
      if (Option.isSome(c.scheduler) === Option.isSome(c.storage)) {
        return yield* usage(
          Option.isSome(c.scheduler) ? "--storage" : "--scheduler",
          Option.isSome(c.scheduler) ? "with --scheduler" : "missing",
          "a worker takes exactly one of --scheduler HOST:PORT and --storage postgres://…"
        )
      }
      for (const [flag, v, port0] of [["--scheduler", Option.getOrElse(c.scheduler, () => "x:1"), false], ["--listen", Option.getOrElse(c.listen, () => "x:1"), true]] as const) {
        const e = hostPort(flag, v, port0)
        if (e !== undefined) return yield* e
      }
      const Cluster = yield* Effect.promise(() => import("../../engine/Cluster.ts"))
      if (Option.isSome(c.advertise)) {
        const why = Cluster.contactProblem(c.advertise.value)
        if (why !== undefined) return yield* usage("--advertise", c.advertise.value, why)
      }
      if (Option.isSome(c.storage)) yield* checkedStorage(Cluster, c.storage.value)
      if (Option.isSome(c.allowModules)) {
        const { statSync } = yield* Effect.promise(() => import("node:fs"))
        const dirs = c.allowModules.value.split(",").filter((d) => d !== "")
        const bad = dirs.find((d) => !(statSync(d, { throwIfNoEntry: false })?.isDirectory() ?? false))
        if (dirs.length === 0 || bad !== undefined) return yield* usage("--allow-modules", bad ?? c.allowModules.value, "existing folders, separated by commas")
        const { allowModules } = yield* Effect.promise(() => import("../../engine/Executor.ts"))
        allowModules(dirs)
      }
      const maxHeld = Option.map(c.maxHeldBytes, parseBytes)
      if (Option.isSome(maxHeld) && maxHeld.value === undefined) {
        return yield* usage("--max-held-bytes", Option.getOrThrow(c.maxHeldBytes), "a positive size in bytes, e.g. 2000000000, 2GB or 512MiB")
      }
      const limit = Option.isSome(maxHeld) ? maxHeld.value : undefined
      const secure = yield* securityOptions(c)
      const where = Option.isSome(c.storage) ? { storage: c.storage.value } : { scheduler: Option.getOrThrow(c.scheduler) }
      const via = where.storage !== undefined ? `storage ${Cluster.hidePassword(where.storage)}` : `scheduler ${where.scheduler}`
      const threads = `${c.threads} thread${c.threads === 1 ? "" : "s"}`
      return yield* Cluster.runWorker({
        ...where,
        ...secure,
        // the default contact address is found by the engine; said once chosen
        onAddress: (listen, contact) =>
          console.log(
            `tessera worker at ${contact}${listen === contact ? "" : ` (listening on ${listen})`}, ${via}, ${threads}${
              limit !== undefined ? `, holding at most ${limit} bytes` : ""
            }`
          ),
        ...(limit !== undefined ? { maxHeldBytes: limit } : {}),
        ...(Option.isSome(c.listen) ? { listen: c.listen.value } : {}),
        ...(Option.isSome(c.advertise) ? { advertise: c.advertise.value } : {}),
        threads: c.threads,
        preload: [workerPlugins],
        connectTimeout: c.connectTimeout,
        onRetry: retryLine("tessera worker", where.storage !== undefined ? "PostgreSQL server" : "scheduler")
      })
    })
).pipe(Command.withDescription("Run a worker process of a tessera scheduler's cluster."))

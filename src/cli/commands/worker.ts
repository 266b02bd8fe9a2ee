/**
 * `tessera scheduler [--host H] [--port P]` and `tessera worker --scheduler HOST:PORT
 * [--listen HOST:PORT] [--advertise HOST] [--threads N]`, as dask's `dask scheduler` / `dask worker`: the
 * scheduler process serves the cluster's runner registry; each worker process is an
 * Effect Cluster runner that registers there and runs the tasks drivers send it
 * (`--cluster HOST:PORT` on `demo`/`run`). Both run until interrupted (Ctrl-C).
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
import { workerPlugins } from "../cluster.ts"
import { UsageError } from "../errors.ts"
import { intAtLeast, withDefaultShown } from "../flags.ts"

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

const hostPort = (flag: string, v: string): UsageError | undefined => {
  const m = /^(.+):(\d+)$/.exec(v)
  return m !== null && Number(m[2]) >= 1 && Number(m[2]) <= 65535
    ? undefined
    : new UsageError({ flag, value: v, expected: "expected HOST:PORT (e.g. 127.0.0.1:8786)" })
}

/**
 * The `scheduler` subcommand.
 *
 * @since 0.1.0
 * @category commands
 */
export const scheduler = Command.make(
  "scheduler",
  {
    host: Flag.String("host").pipe(withDefaultShown("address to listen on (0.0.0.0: every interface)", "127.0.0.1")),
    port: intAtLeast("port", 1, "port workers and drivers connect to", 8786),
    storage: storageFlag("create PostgreSQL runner storage's tables at this URL and exit (no registry to serve)")
  },
  (c) =>
    Effect.gen(function*() {
      if (c.port > 65535) return yield* new UsageError({ flag: "--port", value: String(c.port), expected: "a TCP port, 1 to 65535" })
      const Cluster = yield* Effect.promise(() => import("../../engine/Cluster.ts"))
      if (Option.isSome(c.storage)) {
        const url = yield* checkedStorage(Cluster, c.storage.value)
        yield* Cluster.setupStorage(url)
        const shown = Cluster.hidePassword(url)
        return yield* Console.log(
          `tessera scheduler: runner tables ready in ${shown}; workers join with  tessera worker --storage ${shown}, drivers use --cluster ${shown}`
        )
      }
      // a wildcard host is no address to give workers: this machine's name is
      const reach = Cluster.isWildcardHost(c.host) ? (yield* Effect.promise(() => import("node:os"))).hostname() : c.host
      yield* Console.log(`tessera scheduler: workers join with  tessera worker --scheduler ${reach}:${c.port}`)
      return yield* Cluster.serveScheduler({ host: c.host, port: c.port })
    })
).pipe(Command.withDescription("Serve a cluster's runner registry, where workers register and drivers find them."))

/**
 * The `worker` subcommand.
 *
 * @since 0.1.0
 * @category commands
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
        "HOST:PORT this worker listens on (0.0.0.0: every interface); default: the --advertise host, a free port"
      ),
      Flag.optional
    ),
    advertise: Flag.String("advertise").pipe(
      Flag.withDescription(
        "the host the scheduler, drivers and other workers reach this worker at; default: --listen's host, else this machine's address on the route to the scheduler (docs/cluster.md)"
      ),
      Flag.optional
    ),
    threads: intAtLeast("threads", 1, "kernel threads", 1)
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
      for (const [flag, v] of [["--scheduler", Option.getOrElse(c.scheduler, () => "x:1")], ["--listen", Option.getOrElse(c.listen, () => "x:1")]] as const) {
        const e = hostPort(flag, v)
        if (e !== undefined) return yield* e
      }
      const Cluster = yield* Effect.promise(() => import("../../engine/Cluster.ts"))
      if (Option.isSome(c.advertise)) {
        const why = Cluster.contactProblem(c.advertise.value)
        if (why !== undefined) return yield* usage("--advertise", c.advertise.value, why)
      }
      if (Option.isSome(c.storage)) yield* checkedStorage(Cluster, c.storage.value)
      const where = Option.isSome(c.storage) ? { storage: c.storage.value } : { scheduler: Option.getOrThrow(c.scheduler) }
      const via = where.storage !== undefined ? `storage ${Cluster.hidePassword(where.storage)}` : `scheduler ${where.scheduler}`
      const threads = `${c.threads} thread${c.threads === 1 ? "" : "s"}`
      return yield* Cluster.runWorker({
        ...where,
        // the default contact address is found by the engine; said once chosen
        onAddress: (listen, contact) =>
          console.log(`tessera worker at ${contact}${listen === contact ? "" : ` (listening on ${listen})`}, ${via}, ${threads}`),
        ...(Option.isSome(c.listen) ? { listen: c.listen.value } : {}),
        ...(Option.isSome(c.advertise) ? { advertise: c.advertise.value } : {}),
        threads: c.threads,
        preload: [workerPlugins]
      })
    })
).pipe(Command.withDescription("Run a worker process of a tessera scheduler's cluster."))

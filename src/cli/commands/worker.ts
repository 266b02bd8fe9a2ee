/**
 * `tessera scheduler [--host H] [--port P]` and `tessera worker --scheduler HOST:PORT
 * [--listen HOST:PORT] [--threads N]`, as dask's `dask scheduler` / `dask worker`: the
 * scheduler process serves the cluster's runner registry; each worker process is an
 * Effect Cluster runner that registers there and runs the tasks drivers send it
 * (`--cluster HOST:PORT` on `demo`/`run`). Both run until interrupted (Ctrl-C).
 * See docs/cluster.md.
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { workerPlugins } from "../cluster.ts"
import { UsageError } from "../errors.ts"
import { intAtLeast, withDefaultShown } from "../flags.ts"

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
    port: intAtLeast("port", 1, "port workers and drivers connect to", 8786)
  },
  (c) =>
    Effect.gen(function*() {
      if (c.port > 65535) return yield* new UsageError({ flag: "--port", value: String(c.port), expected: "a TCP port, 1 to 65535" })
      const Cluster = yield* Effect.promise(() => import("../../engine/Cluster.ts"))
      yield* Console.log(`tessera scheduler: workers join with  tessera worker --scheduler ${c.host}:${c.port}`)
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
    scheduler: Flag.String("scheduler").pipe(Flag.withDescription("HOST:PORT of the tessera scheduler")),
    listen: Flag.String("listen").pipe(
      Flag.withDescription("HOST:PORT this worker listens on, reachable by the drivers and the other workers"),
      Flag.optional
    ),
    threads: intAtLeast("threads", 1, "kernel threads", 1)
  },
  (c) =>
    Effect.gen(function*() {
      for (const [flag, v] of [["--scheduler", c.scheduler], ["--listen", c.listen._tag === "Some" ? c.listen.value : "x:1"]] as const) {
        const e = hostPort(flag, v)
        if (e !== undefined) return yield* e
      }
      const Cluster = yield* Effect.promise(() => import("../../engine/Cluster.ts"))
      const listen = c.listen._tag === "Some" ? c.listen.value : `127.0.0.1:${yield* Effect.promise(() => Cluster.freePort("127.0.0.1"))}`
      yield* Console.log(`tessera worker at ${listen}, scheduler ${c.scheduler}, ${c.threads} thread${c.threads === 1 ? "" : "s"}`)
      return yield* Effect.orDie(Cluster.runWorker({ scheduler: c.scheduler, listen, threads: c.threads, preload: [workerPlugins] }))
    })
).pipe(Command.withDescription("Run a worker process of a tessera scheduler's cluster."))

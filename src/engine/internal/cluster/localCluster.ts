/**
 * Worker processes on this machine (like `dask.distributed.LocalCluster`): each is
 * `node workerMain '<options>'` listening on a free loopback port and registering with
 * the scheduler's registry. They are stopped (SIGTERM, then SIGKILL after 2 s) when the
 * scope closes.
 *
 * @since 0.1.0
 * @internal
 */
import { Clock, Effect, Queue, Redacted, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { type LinkSecurity, plain, TOKEN_ENV } from "./security.ts"
import * as Kernel from "../../Kernel.ts"
import { ALLOW_MODULES_ENV, moduleRoots } from "../kernels.ts"
import type { WorkerOptions } from "./workerProcess.ts"
import { type ClusterOptions, type ClusterStartError, workersNotStarted } from "../../Cluster.ts"
import type { Members } from "./members.ts"

/**
 * A free TCP port on `host` (asked of the OS; another process could take it before use,
 * which on loopback in practice does not happen).
 *
 * @since 0.1.0
 * @internal
 */
export const freePort = (host: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once("error", reject)
    srv.listen(0, host, () => {
      const a = srv.address()
      const port = typeof a === "object" && a !== null ? a.port : 0
      srv.close(() => resolve(port))
    })
  })

/**
 * One started worker process.
 *
 * @since 0.1.0
 * @internal
 */
export interface LocalWorker {
  readonly process: ChildProcess
  readonly options: WorkerOptions
  /** what the process wrote to stderr (last 8 KiB), for error messages */
  readonly stderr: () => string
}

/**
 * Starts one worker process; `onExit` is called when it ends.
 *
 * @since 0.1.0
 * @internal
 */
export const spawnWorker = async (
  base: Omit<WorkerOptions, "listen">,
  onExit: (w: LocalWorker, code: number | null, signal: string | null) => void,
  security: LinkSecurity = plain
): Promise<LocalWorker> => {
  const host = "127.0.0.1"
  const port = await freePort(host)
  // the token in the environment, never in the arguments (which ps shows to every user)
  const options: WorkerOptions = {
    ...base,
    listen: { host, port },
    ...(security._tag === "tls" ? { tls: true } : security.insecure ? { insecure: true } : {})
  }
  const token = security._tag === "tls" ? { [TOKEN_ENV]: Redacted.value(security.token) } : {}
  const main = Kernel.sibling(import.meta.url, "./workerMain")
  const child = spawn(process.execPath, [main.pathname, JSON.stringify(options)], {
    stdio: ["ignore", "ignore", "pipe"],
    // the folders this driver's workers may import modules from (its main script's too)
    env: { ...process.env, ...token, NODE_OPTIONS: "", [ALLOW_MODULES_ENV]: moduleRoots().join(process.getBuiltinModule("node:path").delimiter) }
  })
  let err = ""
  child.stderr!.setEncoding("utf8")
  child.stderr!.on("data", (d: string) => {
    err = (err + d).slice(-8192)
  })
  const w: LocalWorker = { process: child, options, stderr: () => err }
  child.once("exit", (code, signal) => onExit(w, code, signal))
  return w
}

/**
 * Stops worker processes: SIGTERM, SIGKILL after `graceMs`.
 *
 * @since 0.1.0
 * @internal
 */
export const stopWorkers = (ws: ReadonlyArray<LocalWorker>, graceMs = 2000): Effect.Effect<void> =>
  Effect.promise(() =>
    Promise.all(ws.map((w) =>
      new Promise<void>((resolve) => {
        const c = w.process
        if (c.exitCode !== null || c.signalCode !== null) return resolve()
        const t = setTimeout(() => c.kill("SIGKILL"), graceMs)
        c.once("exit", () => {
          clearTimeout(t)
          resolve()
        })
        c.kill("SIGTERM")
      })
    )).then(() => undefined)
  )

/**
 * A cluster's local worker processes for the scope's life (`options.local` started now;
 * `addLocal` starts one more), and the start's wait: until `options.minWorkers` (default
 * `local`) are alive, telling `onWaiting` every 5 s, failing with `ClusterStartError`
 * after `startTimeout` or as soon as a local worker exits. A local worker's exit marks it
 * dead. `at` says where the workers register, for the message (` at scheduler H:P`).
 *
 * @since 0.1.0
 * @internal
 */
export const startLocals = (o: {
  readonly options: ClusterOptions
  readonly where: Pick<WorkerOptions, "postgres" | "scheduler">
  readonly security: LinkSecurity
  readonly members: Members
  readonly at: string
}): Effect.Effect<{ readonly locals: Array<LocalWorker>; readonly addLocal: Effect.Effect<void> }, ClusterStartError, Scope.Scope> =>
  Effect.gen(function*() {
    const { options, members } = o
    const locals: Array<LocalWorker> = []
    // a child process's exit (a Node callback) is queued; a fiber of the scope marks its worker dead
    const exited = yield* Queue.unbounded<LocalWorker>()
    const onExit = (lw: LocalWorker) => void Queue.offerUnsafe(exited, lw)
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(exited), (lw) => {
      const w = [...members.workers.values()].find((w) => w.address === `${lw.options.listen.host}:${lw.options.listen.port}`)
      return w !== undefined ? members.markDead(w) : Effect.void
    })))
    const addLocal = Effect.promise(async () => {
      const k = locals.length
      const lw = await spawnWorker({
        ...o.where,
        ...(options.threads !== undefined ? { threads: options.threads } : {}),
        ...(options.clockShift?.[k] !== undefined ? { clockShift: options.clockShift[k] } : {}),
        ...(options.hostNames?.[k] !== undefined ? { hostName: options.hostNames[k] } : {}),
        ...(options.preload !== undefined ? { preload: options.preload } : {}),
        ...(options.maxHeldBytes !== undefined ? { maxHeldBytes: options.maxHeldBytes } : {})
      }, onExit, o.security)
      locals.push(lw)
    })
    yield* Effect.addFinalizer(() => Effect.suspend(() => stopWorkers(locals)))
    for (let k = 0; k < (options.local ?? 0); k++) yield* addLocal
    const minWorkers = options.minWorkers ?? options.local ?? 0
    const began = yield* Clock.currentTimeMillis
    const deadline = began + (options.startTimeout ?? 60) * 1000
    let said = began
    while (members.aliveCount() < minWorkers) {
      const now = yield* Clock.currentTimeMillis
      if (now > deadline || locals.some((l) => l.process.exitCode !== null)) {
        return yield* workersNotStarted({
          joined: members.aliveCount(),
          wanted: minWorkers,
          seconds: options.startTimeout ?? 60,
          where: o.at,
          stderr: locals.map((l) => l.stderr()).filter((e) => e !== "").join("\n")
        })
      }
      if (now - said >= 5000) {
        said = now
        options.onWaiting?.(members.aliveCount(), minWorkers, Math.round((said - began) / 1000))
      }
      // bounded: a scheduler that stops answering must not hold the start past its deadline
      yield* Effect.ignore(Effect.timeout(members.refresh(false), "5 seconds"))
      yield* Effect.sleep("50 millis")
    }
    return { locals, addLocal }
  })

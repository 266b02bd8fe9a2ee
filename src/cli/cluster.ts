/**
 * The `--cluster` flag of `tessera demo` and `tessera run`, and the executor it picks:
 * absent, the worker-thread pool of `--workers` threads; `local:N`, a LocalCluster of N
 * worker processes on this machine (scheduler in this process); `HOST:PORT`, the workers
 * registered with the `tessera scheduler` there (at least one must be, within 60 s; a
 * scheduler that does not answer is said on stderr once a second, `cannot reach scheduler
 * HOST:PORT (ECONNREFUSED); retrying (N)…`, and fails the run after 60 s);
 * `postgres://…`, the workers registered in that PostgreSQL runner storage (likewise).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Flag } from "effect/cli"
import type { GpuUnavailable } from "../engine/EngineError.ts"
import type { Executor } from "../engine/Executor.ts"
import { ClusterAddressError, type ClusterError, hidePassword, parsePostgres } from "../engine/Cluster.ts"
import { checkWorkerCount } from "../engine/WorkerCount.ts"
import { UsageError } from "./errors.ts"
import { withDefaultShown } from "./flags.ts"
import { warn } from "./output.ts"
import { executorLayer } from "./gpu.ts"

/**
 * The profiler's worker plugins module (what `--profile` runs in each worker process),
 * which the CLI's workers import before they join, so a profiled compute's first batch
 * does not wait for it.
 */
export const workerPlugins: string = new URL(`../profiler/WorkerPlugins${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url).href

/**
 * `--cluster local:N | HOST:PORT`.
 *
 * @since 0.1.0
 * @category cli
 */
export const clusterFlag = Flag.String("cluster").pipe(
  Flag.withDescription(
    "run on worker processes: local:N starts N on this machine; HOST:PORT uses the workers of the `tessera scheduler` there; postgres://… those registered in that database (docs/cluster.md)"
  ),
  Flag.optional
)

/**
 * What `--cluster` says, checked.
 *
 * @since 0.1.0
 * @category encoding
 */
/**
 * `--token-file PATH`: the file holding the cluster's token (made by `tessera scheduler`).
 *
 * @since 0.1.0
 * @category cli
 */
export const tokenFileFlag = (what: string) =>
  Flag.String("token-file").pipe(Flag.withMetavar("PATH"), Flag.withDescription(what), Flag.optional)

/**
 * `--insecure`: plain TCP beyond loopback, without a token.
 *
 * @since 0.1.0
 * @category cli
 */
export const insecureFlag = Flag.Boolean("insecure").pipe(
  withDefaultShown("plain TCP links beyond loopback without the cluster's token: anyone who reaches the ports can join, read results and run code (said at every start; docs/cluster.md)", false)
)

/** `Cluster.clusterToken`, its problem a usage error of `--token-file` */
export const tokenOrUsage = (file: string | undefined, create = false) =>
  Effect.flatMap(Effect.promise(() => import("../engine/Cluster.ts")), (Cluster) =>
    Cluster.clusterToken({ file, create }).pipe(
      Effect.mapError((e) => new UsageError({ flag: "--token-file", value: file ?? "", expected: e.message.replace(/^--token-file: /, "") }))
    ))

/** the token a driver or worker was given (`--token-file`, else TESSERA_CLUSTER_TOKEN), as layer options */
export const securityOptions = (c: { readonly tokenFile?: Option.Option<string>; readonly insecure?: boolean }) =>
  Effect.gen(function*() {
    const t = yield* tokenOrUsage(c.tokenFile !== undefined ? Option.getOrUndefined(c.tokenFile) : undefined)
    return { ...(t !== undefined ? { token: t.token } : {}), ...(c.insecure === true ? { insecure: true } : {}) }
  })

export const parseCluster = (
  s: string
): { readonly local: number } | { readonly scheduler: string } | { readonly postgres: string } | UsageError => {
  if (/^postgres(ql)?:/i.test(s)) {
    const pg = parsePostgres(s, "--cluster")
    return pg instanceof ClusterAddressError
      ? new UsageError({ flag: "--cluster", value: hidePassword(s), expected: pg.message.replace(/^--cluster: /, "") })
      : { postgres: s }
  }
  const local = /^local:(\d+)$/.exec(s)
  if (local !== null) {
    // the engine's own bound (Executor.maxWorkers), so the flag and layerCluster agree
    const refused = checkWorkerCount("local", Number(local[1]))
    return refused === undefined
      ? { local: Number(local[1]) }
      : new UsageError({
        flag: "--cluster",
        value: s,
        expected: `local:N needs 1 <= N <= ${refused.bound}${refused.asked < 1 ? "" : `, ${refused.why}`}`
      })
  }
  const m = /^(.+):(\d+)$/.exec(s)
  if (m !== null && Number(m[2]) >= 1 && Number(m[2]) <= 65535) return { scheduler: s }
  return new UsageError({ flag: "--cluster", value: s, expected: "expected local:N, HOST:PORT of a tessera scheduler or postgres://… runner storage" })
}

/**
 * Seconds a driver waits for its cluster (the scheduler answering, a worker joined):
 * `TESSERA_CLUSTER_START_TIMEOUT` when it is a positive number (tests), else 60.
 */
const startTimeout = (): number => {
  const v = Number(process.env.TESSERA_CLUSTER_START_TIMEOUT)
  return Number.isFinite(v) && v > 0 ? v : 60
}

/** What a run's executor layer may fail with. */
type RunLayer = Layer.Layer<Executor, GpuUnavailable | ClusterError>

/**
 * The executor layer of a run, and how to describe it ("4 worker threads", "2 worker
 * threads and a GPU worker", "a local cluster of 2 worker processes"). `--gpu` with
 * `--cluster` is a usage error: cluster workers have no GPU workers yet. `log` gets one
 * line per GPU worker naming its adapter.
 *
 * @since 0.1.0
 * @category layers
 */
export const executorFor = (
  c: {
    readonly cluster: Option.Option<string>
    readonly workers: number
    readonly gpu: boolean
    readonly tokenFile?: Option.Option<string>
    readonly insecure?: boolean
  },
  log: (line: string) => void
) =>
  Effect.gen(function*() {
    const Executor = yield* Effect.promise(() => import("../engine/Executor.ts"))
    if (Option.isNone(c.cluster)) {
      return {
        layer: executorLayer(Executor, c, log) as RunLayer,
        what: `${c.workers} worker threads${c.gpu ? " and a GPU worker" : ""}`
      }
    }
    if (c.gpu) return yield* new UsageError({ flag: "--gpu", value: "with --cluster", expected: "--gpu runs on worker threads only (no GPU workers on a cluster yet)" })
    const parsed = parseCluster(c.cluster.value)
    if (parsed instanceof UsageError) return yield* parsed
    const secure = yield* securityOptions(c)
    if ("local" in parsed) {
      return { layer: Executor.layerCluster({ local: parsed.local, preload: [workerPlugins], startTimeout: startTimeout(), ...secure }) as RunLayer, what: `a local cluster of ${parsed.local} worker processes` }
    }
    if ("postgres" in parsed) {
      return {
        layer: Executor.layerCluster({ storage: { postgres: parsed.postgres }, minWorkers: 1, startTimeout: startTimeout(), ...secure }) as RunLayer,
        what: `the cluster registered in ${hidePassword(parsed.postgres)}`
      }
    }
    // a scheduler beyond loopback serves TLS only: a driver without its token is told so now
    const host = parsed.scheduler.slice(0, parsed.scheduler.lastIndexOf(":"))
    const Cluster = yield* Effect.promise(() => import("../engine/Cluster.ts"))
    if (secure.token === undefined && secure.insecure !== true && !Cluster.isLoopbackHost(host)) {
      return yield* new UsageError({
        flag: "--cluster",
        value: parsed.scheduler,
        expected: "a scheduler beyond loopback needs the cluster's token: --token-file PATH (the file tessera scheduler printed) or TESSERA_CLUSTER_TOKEN; or --insecure for a plain-TCP cluster"
      })
    }
    const layer = Executor.layerCluster({
      ...secure,
      scheduler: parsed.scheduler,
      minWorkers: 1,
      startTimeout: startTimeout(),
      // one line within a second or two, one a second after, until it answers or 60 s pass
      onRetry: (address, reason, attempt) => warn(`cannot reach scheduler ${address} (${reason}); retrying (${attempt})…`),
      onWaiting: (joined, wanted, seconds) =>
        warn(`waiting for workers at scheduler ${parsed.scheduler}: ${joined} of ${wanted} joined after ${seconds} s (start one: tessera worker --scheduler ${parsed.scheduler})`)
    })
    return { layer, what: `the cluster of scheduler ${parsed.scheduler}` }
  })

/**
 * The `--cluster` flag of `tessera demo` and `tessera run`, and the executor it picks:
 * absent, the worker-thread pool of `--workers` threads; `local:N`, a LocalCluster of N
 * worker processes on this machine (scheduler in this process); `HOST:PORT`, the workers
 * registered with the `tessera scheduler` there (at least one must be, within 60 s).
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type { Layer } from "effect"
import { Flag } from "effect/cli"
import type { Executor } from "../engine/Executor.ts"
import { UsageError } from "./errors.ts"

/**
 * `--cluster local:N | HOST:PORT`.
 *
 * @since 0.1.0
 * @category flags
 */
export const clusterFlag = Flag.String("cluster").pipe(
  Flag.withDescription(
    "run on worker processes: local:N starts N on this machine; HOST:PORT uses the workers of the `tessera scheduler` there (docs/cluster.md)"
  ),
  Flag.optional
)

/**
 * What `--cluster` says, checked.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseCluster = (s: string): { readonly local: number } | { readonly scheduler: string } | UsageError => {
  const local = /^local:(\d+)$/.exec(s)
  if (local !== null) {
    const n = Number(local[1])
    return n >= 1 && n <= 256 ? { local: n } : new UsageError({ flag: "--cluster", value: s, expected: "local:N needs 1 <= N <= 256" })
  }
  const m = /^(.+):(\d+)$/.exec(s)
  if (m !== null && Number(m[2]) >= 1 && Number(m[2]) <= 65535) return { scheduler: s }
  return new UsageError({ flag: "--cluster", value: s, expected: "expected local:N or HOST:PORT of a tessera scheduler" })
}

/**
 * The executor layer of a run, and how to describe it ("4 worker threads", "a local
 * cluster of 2 worker processes").
 *
 * @since 0.1.0
 * @category layers
 */
export const executorFor = (cluster: Option.Option<string>, workers: number) =>
  Effect.gen(function*() {
    const Executor = yield* Effect.promise(() => import("../engine/Executor.ts"))
    if (Option.isNone(cluster)) {
      return { layer: Executor.layerWorkers({ workers }) as Layer.Layer<Executor>, what: `${workers} worker threads` }
    }
    const c = parseCluster(cluster.value)
    if (c instanceof UsageError) return yield* c
    if ("local" in c) {
      return { layer: Executor.layerCluster({ local: c.local }), what: `a local cluster of ${c.local} worker processes` }
    }
    return { layer: Executor.layerCluster({ scheduler: c.scheduler, minWorkers: 1 }), what: `the cluster of scheduler ${c.scheduler}` }
  })

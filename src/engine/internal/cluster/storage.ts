/**
 * Where a cluster scheduler finds its workers, and how it reaches them: the runner
 * registry — PostgreSQL (`storage`), a separate `tessera scheduler`'s (`scheduler`:
 * reached first, its link security checked, said within a second when it does not
 * answer), or served from this process — and the Effect Cluster client to the workers'
 * `TesseraWorker` entities (`NodeClusterSocket`, client only). Every link is TLS keyed by
 * the token where one is given; plain only on loopback or with `insecure`.
 *
 * @since 0.1.0
 * @internal
 */
import { Context, Effect, Layer, type Scope } from "effect"
import { MessageStorage, RunnerStorage } from "effect/cluster"
import {
  badAddress,
  cannotListen,
  ClusterAddressError,
  type ClusterOptions,
  type ClusterStartError,
  type ClusterStorageError,
  type ClusterUnreachable,
  hidePassword,
  linkRefused,
  parsePostgres,
  type PostgresStorage
} from "../../Cluster.ts"
import type { DashboardLink } from "./feed.ts"
import { freePort } from "./localCluster.ts"
import type { WorkerClient } from "./members.ts"
import { parseAddress, TesseraWorker } from "./protocol.ts"
import * as Registry from "./registry.ts"
import * as Security from "./security.ts"
import * as Transport from "./transport.ts"
import { shardingConfig } from "./workerProcess.ts"

/**
 * A scheduler's connection to its registry and workers.
 *
 * @since 0.1.0
 * @internal
 */
export interface Connection {
  readonly storage: RunnerStorage.RunnerStorage["Service"]
  readonly clientFor: WorkerClient
  readonly postgres: PostgresStorage | undefined
  /** a separate `tessera scheduler`'s address */
  readonly remote: { readonly host: string; readonly port: number } | undefined
  /** where the registry is (the remote scheduler's, or served here) */
  readonly bindHost: string
  readonly port: number
  readonly security: Security.LinkSecurity
  /** the registry in words, for messages */
  readonly registryAt: string
  /** a separate scheduler's dashboard, over the registry connection (feed.ts) */
  readonly link: DashboardLink
  /** a line on stderr */
  readonly say: (line: string) => void
}

/**
 * Connects a scheduler to its registry and workers for the scope's life.
 *
 * @since 0.1.0
 * @internal
 */
export const connect = (
  options: ClusterOptions
): Effect.Effect<Connection, ClusterAddressError | ClusterStartError | ClusterStorageError | ClusterUnreachable, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const pg = options.storage !== undefined ? parsePostgres(options.storage.postgres, "cluster storage") : undefined
    if (pg instanceof ClusterAddressError) return yield* pg
    const postgres = pg
    const given = options.scheduler
    const remote = given !== undefined
      ? yield* Effect.try({ try: () => parseAddress(given, "cluster scheduler address"), catch: () => badAddress("cluster scheduler address", given) })
      : undefined
    const bindHost = remote?.host ?? options.host ?? "127.0.0.1"
    const port = remote?.port ?? options.port ?? (yield* Effect.promise(() => freePort(bindHost)))
    const security = Security.decide({ hosts: remote !== undefined ? [remote.host] : postgres !== undefined ? [] : [bindHost], token: options.token, insecure: options.insecure })
    if ("problem" in security) return yield* linkRefused(security.problem)
    const say = (line: string) => void process.stderr.write(`tessera cluster: ${line}\n`)
    if (security._tag === "plain" && security.insecure) say("--insecure: plain TCP beyond loopback; anyone who reaches these ports can join, read results and run code")
    let storage: RunnerStorage.RunnerStorage["Service"]
    const link: DashboardLink = {}
    if (postgres !== undefined) {
      const rctx = yield* Layer.buildWithScope(Registry.layerPostgres(postgres, shardingConfig({})), scope)
      storage = Context.get(rctx, RunnerStorage.RunnerStorage)
    } else if (remote === undefined) {
      const reg = new Registry.Registry()
      yield* Layer.buildWithScope(Registry.serve(reg, bindHost, port, security, say), scope).pipe(
        Effect.mapError((e) => cannotListen(`${bindHost}:${port}`, e.message))
      )
      storage = Registry.localStorage(reg)
    } else {
      // said within a second when nothing answers there (Effect's client would retry
      // silently for ever), given up after startTimeout
      const reach = yield* Effect.promise(() => import("./reach.ts"))
      yield* reach.reach(remote.host, remote.port, { what: "scheduler", timeout: options.startTimeout ?? 60, onRetry: options.onRetry })
      // a token refused (or one missing where TLS is served) said now, not after startTimeout
      // (a plain driver on loopback is not asked: a plain server never answers the question)
      if (security._tag === "tls" || !Security.isLoopback(remote.host)) {
        const mismatch = yield* Effect.promise(() => Transport.handshakeWith(security, remote.host, remote.port, "scheduler"))
        if (mismatch !== undefined) return yield* linkRefused(mismatch)
      }
      const rctx = yield* Layer.buildWithScope(Registry.layerRemote(remote.host, remote.port, security, undefined, undefined, link), scope)
      storage = Context.get(rctx, RunnerStorage.RunnerStorage)
    }
    const ctx = yield* Layer.buildWithScope(
      Transport.layerRunner({ security, clientOnly: true, sharding: shardingConfig({}), log: say }).pipe(
        Layer.provide(MessageStorage.layerNoop),
        Layer.provide(Layer.succeed(RunnerStorage.RunnerStorage, storage))
      ),
      scope
    ).pipe(Effect.mapError((e) => cannotListen("the driver's runner client", e.message)))
    const clientFor = yield* Effect.provide(TesseraWorker.client, ctx)
    const registryAt = postgres !== undefined
      ? `runners registered in PostgreSQL at ${hidePassword(options.storage!.postgres)}`
      : `scheduler registry at ${bindHost}:${port}`
    return { storage, clientFor, postgres, remote, bindHost, port, security, registryAt, link, say }
  })

/**
 * Why a compute finds no live worker after `waited` seconds: the registry down since
 * `down` (epoch ms) — a standalone scheduler stopped or killed, said with how to start
 * it again — or no worker registered.
 *
 * @since 0.1.0
 * @internal
 */
export const noWorkerMessage = (c: Connection, down: number | undefined, waited: number): string =>
  down !== undefined && c.postgres === undefined
    ? `the cluster has no live worker: its scheduler at ${c.bindHost}:${c.port} does not answer (for ${
      Math.round((Date.now() - down) / 1000)
    } s; stopped or killed?), so its workers cannot be found; start it again (tessera scheduler --port ${c.port}) and its workers`
    : down !== undefined
    ? `the cluster has no live worker: ${c.registryAt} does not answer (for ${Math.round((Date.now() - down) / 1000)} s)`
    : `the cluster has no live worker (${c.registryAt}, waited ${waited} s)`

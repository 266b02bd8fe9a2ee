/**
 * The runner registry a Tessera cluster needs instead of a database: Effect Cluster's
 * `RunnerStorage` (runners, their health, shard locks) kept in the scheduler's memory and
 * served to the workers over Effect RPC (`RunnerStorageRpcs`). The scheduler is the one
 * state record anyway (as dask's is); when it goes, the compute is gone with it, so
 * nothing here needs to outlive it. Shard locks are first come, first served and freed
 * when their runner unregisters (the scheduler unregisters a worker it finds dead).
 *
 * Leaves out: persistence (Effect's `SqlRunnerStorage` on PostgreSQL is the durable
 * alternative; not wired here).
 *
 * @since 0.1.0
 * @internal
 */
import { Effect, Layer, References } from "effect"
import { ClusterError, RunnerStorage } from "effect/cluster"
import { RpcClient, RpcSerialization, RpcServer } from "effect/rpc"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import { RunnerStorageRpcs } from "./protocol.ts"

/**
 * The registry's state and its encoded-storage operations (all synchronous).
 *
 * @since 0.1.0
 * @internal
 */
export class Registry {
  readonly runners = new Map<string, { runner: string; healthy: boolean }>()
  readonly locks = new Map<string, string>()
  private nextId = 0
  getRunners(): Array<readonly [string, boolean]> {
    return Array.from(this.runners.values(), (r) => [r.runner, r.healthy] as const)
  }
  register(address: string, runner: string, healthy: boolean): number {
    this.runners.set(address, { runner, healthy })
    return this.nextId++
  }
  unregister(address: string): void {
    this.runners.delete(address)
    this.releaseAll(address)
  }
  setRunnerHealth(address: string, healthy: boolean): void {
    const r = this.runners.get(address)
    if (r !== undefined) r.healthy = healthy
  }
  acquire(address: string, shardIds: ReadonlyArray<string>): Array<string> {
    for (const s of shardIds) {
      const holder = this.locks.get(s)
      if (holder === undefined || !this.runners.has(holder)) this.locks.set(s, address)
    }
    return this.held(address)
  }
  refresh(address: string, shardIds: ReadonlyArray<string>): Array<string> {
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
export const serve = (reg: Registry, host: string, port: number) =>
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
        releaseAll: ({ address }) => Effect.sync(() => reg.releaseAll(address))
      })
    ),
    Layer.provide(RpcServer.layerProtocolSocketServer),
    Layer.provide(NodeSocketServer.layer({ host, port })),
    Layer.provide(RpcSerialization.layerSchemaBinary()),
    // a worker that dies resets its connection: the scheduler notices that itself, so the
    // socket server's error log of the reset would only be noise on the user's terminal
    Layer.provide(Layer.succeed(References.MinimumLogLevel, "Fatal"))
  )

const persistence = (cause: unknown) => new ClusterError.PersistenceError({ cause })

/**
 * `RunnerStorage` for a worker process: the scheduler's registry at `host:port`.
 *
 * @since 0.1.0
 * @internal
 */
export const layerRemote = (host: string, port: number) =>
  Layer.effect(RunnerStorage.RunnerStorage)(
    Effect.gen(function*() {
      const c = yield* RpcClient.make(RunnerStorageRpcs)
      const w = <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.mapError(e, persistence)
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
    Layer.provide(NodeSocket.layerNet({ host, port })),
    Layer.provide(RpcSerialization.layerSchemaBinary())
  )

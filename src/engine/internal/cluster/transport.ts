/**
 * The cluster's sockets, each secured by one `LinkSecurity` (security.ts): the socket
 * server behind the registry's and each worker's runner RPCs, the client sockets the
 * scheduler and workers open to them, and Effect Cluster's socket runner layers built on
 * those (what `NodeClusterSocket.layer` builds, with these sockets in place of its plain
 * ones).
 *
 * Every server here bounds what an unauthenticated peer can hold: connections still in
 * their TLS handshake are closed after `HANDSHAKE_SECONDS`, at most `MAX_CONNECTIONS`
 * are open at once (more are closed as they arrive), and refusals are logged in a summary at
 * most every 10 s, never a line per connection.
 *
 * @since 0.1.0
 * @internal
 */
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { pipe } from "effect/Function"
import { MessageStorage, RunnerHealth, Runners, RunnerStorage, ShardingConfig, SocketRunner } from "effect/cluster"
import { RpcClient, RpcSerialization } from "effect/rpc"
import * as NetAddress from "effect/net/NetAddress"
import * as Socket from "effect/socket/Socket"
import * as SocketServer from "effect/socket/SocketServer"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as Net from "node:net"
import * as Tls from "node:tls"
import { MAX_HEAD_BYTES } from "./frames.ts"
import { clientTls, handshakeProblem, type LinkSecurity, RefusalLog, serverTls } from "./security.ts"

/**
 * Connections a server keeps at once, authenticated or not; more are closed as they
 * arrive (Node's `maxConnections`), and said in the refusal summary.
 *
 * @since 0.1.0
 * @internal
 */
export const MAX_CONNECTIONS = 8192

/** A TLS server keyed by `token`; each failed handshake goes to `refusals` with the peer's address. */
const tlsServer = (token: Parameters<typeof serverTls>[0], refusals: RefusalLog, onSocket: (socket: Net.Socket) => void): Tls.Server => {
  const server = Tls.createServer(serverTls(token), (s) => onSocket(s))
  // the peer's address, kept while the raw connection lives (gone from a socket once reset)
  server.on("connection", (raw: Net.Socket & { tesseraFrom?: string | undefined }) => {
    raw.tesseraFrom = raw.remoteAddress
  })
  server.on("tlsClientError", (e: Error & { code?: string }, s: Tls.TLSSocket & { _parent?: { tesseraFrom?: string | undefined } }) => {
    refusals.refuse(s.remoteAddress ?? s._parent?.tesseraFrom ?? "?", handshakeProblem(e))
    s.destroy()
  })
  return server
}

/**
 * A Node server for `security`: `net` for plain links, `tls` keyed by the token, whose
 * refused handshakes (and connections past `MAX_CONNECTIONS`) go to `refusals`;
 * `onSocket` gets each connection once it may talk.
 *
 * @since 0.1.0
 * @internal
 */
export const nodeServer = (
  security: LinkSecurity,
  refusals: RefusalLog,
  onSocket: (socket: Net.Socket) => void
): Net.Server => {
  const server = security._tag === "plain" ? Net.createServer(onSocket) : tlsServer(security.token, refusals, onSocket)
  server.maxConnections = MAX_CONNECTIONS
  server.on("drop", (d?: { remoteAddress?: string }) =>
    refusals.refuse(d?.remoteAddress ?? "?", `more than ${MAX_CONNECTIONS.toLocaleString("en-US")} connections open`))
  return server
}

/**
 * Opens a client connection under `security` (resolves once it may talk: connected, or
 * its TLS handshake done).
 *
 * @since 0.1.0
 * @internal
 */
export const connectNode = (security: LinkSecurity, host: string, port: number, extra: Pick<Net.TcpNetConnectOpts, "onread"> = {}): Net.Socket =>
  security._tag === "plain"
    ? Net.connect({ ...extra, host, port })
    : Tls.connect({ ...extra, ...clientTls(security.token), host, port })

/**
 * An Effect `SocketServer` on `host:port` whose connections are secured by `security`
 * (Effect's own `NodeSocketServer.make`, with a server of ours under it).
 *
 * @since 0.1.0
 * @internal
 */
export const socketServer = (
  security: LinkSecurity,
  host: string,
  port: number,
  log: (line: string) => void,
  what: string
): Effect.Effect<SocketServer.SocketServer["Service"], SocketServer.SocketServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const refusals = new RefusalLog(what, log)
    const errorDeferred = Deferred.makeUnsafe<never, Error>()
    const pending = new Map<Net.Socket, () => void>()
    const park = (conn: Net.Socket) => {
      const remove = () => {
        pending.delete(conn)
        conn.off("close", remove)
        conn.off("error", remove)
      }
      pending.set(conn, remove)
      conn.on("close", remove)
      conn.on("error", remove)
    }
    let onConnection: (conn: Net.Socket) => void = park
    // paused at once, so nothing is dropped before a handler takes the socket's reader
    const server = nodeServer(security, refusals, (conn) => {
      conn.pause()
      onConnection(conn)
    })
    yield* Effect.addFinalizer(() =>
      Effect.callback<void>((resume) => {
        refusals.close()
        pending.forEach((remove, conn) => {
          remove()
          conn.destroy()
        })
        server.close(() => resume(Effect.void))
      })
    )
    server.on("error", (err) => Deferred.doneUnsafe(errorDeferred, Exit.fail(err)))
    yield* Effect.callback<void, SocketServer.SocketServerError>((resume) => {
      server.listen({ host, port }, () => resume(Effect.void))
    }).pipe(
      Effect.raceFirst(Effect.mapError(Deferred.await(errorDeferred), (cause) =>
        new SocketServer.SocketServerError({ reason: new SocketServer.SocketServerOpenError({ cause }) })))
    )
    const run = Effect.fnUntraced(function*<R, E, _>(handler: (socket: Socket.Socket) => Effect.Effect<_, E, R>) {
      const scope = yield* Scope.make()
      const services = Context.omit(Scope.Scope)(yield* Effect.context<R>()) as Context.Context<R>
      const trackFiber = Fiber.runIn(scope)
      const prev = onConnection
      onConnection = (conn) => {
        let error: Error | undefined
        conn.on("error", (err) => {
          error = err
        })
        pipe(
          NodeSocket.fromDuplex(
            Effect.acquireRelease(
              Effect.suspend((): Effect.Effect<Net.Socket, Socket.SocketError> =>
                error !== undefined
                  ? Effect.fail(new Socket.SocketError({ reason: new Socket.SocketOpenError({ kind: "Unknown", cause: error }) }))
                  : conn.closed
                  ? Effect.fail(new Socket.SocketError({ reason: new Socket.SocketCloseError({ code: 1000 }) }))
                  : Effect.succeed(conn)
              ),
              (c) => Effect.sync(() => c.closed === false && c.destroySoon())
            ),
            { tlsServer: true }
          ),
          Effect.flatMap(handler),
          Effect.ignoreCause({ log: "Debug", message: "a cluster connection ended with an error" }),
          Effect.runForkWith(Context.add(services, NodeSocket.NetSocket, conn)),
          trackFiber
        )
      }
      pending.forEach((remove, conn) => {
        remove()
        onConnection(conn)
      })
      return yield* Effect.callback<never>(() =>
        Effect.suspend(() => {
          onConnection = prev
          return Scope.close(scope, Exit.void)
        })
      )
    })
    const a = server.address() as Net.AddressInfo
    const address = yield* Effect.fromResult(NetAddress.inetAddressFromIpString(a.address, a.port)).pipe(
      Effect.mapError((cause) => new SocketServer.SocketServerError({ reason: new SocketServer.SocketServerOpenError({ cause }) }))
    )
    return SocketServer.SocketServer.of({ address, run })
  })

/**
 * An Effect `Socket` to `host:port` under `security`.
 *
 * @since 0.1.0
 * @internal
 */
export const socketTo = (
  security: LinkSecurity,
  host: string,
  port: number,
  options: { readonly openTimeout?: number; readonly timeout?: number } = {}
): Effect.Effect<Socket.Socket> =>
  security._tag === "plain"
    ? NodeSocket.makeNet({ host, port, ...options })
    : NodeSocket.makeTls({ ...clientTls(security.token), host, port, ...options })

/**
 * Effect Cluster's client protocol to runners (as `NodeClusterSocket.layerClientProtocol`)
 * over sockets secured by `security`.
 *
 * @since 0.1.0
 * @internal
 */
export const layerClientProtocol = (security: LinkSecurity): Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization> =>
  Layer.effect(Runners.RpcClientProtocol)(
    Effect.gen(function*() {
      const serialization = yield* RpcSerialization.RpcSerialization
      return {
        codecFor: serialization.codecFor,
        make: Effect.fnUntraced(function*(address) {
          // Effect's own 1 s to open, 3 s where a TLS handshake comes with it (a loaded machine
          // took over 1 s for one, and the client gave up and started again)
          const socket = yield* socketTo(security, address.host, address.port, { openTimeout: security._tag === "tls" ? 3000 : 1000, timeout: 5500 })
          return yield* RpcClient.makeProtocolSocket().pipe(
            Effect.provideService(Socket.Socket, socket),
            Effect.provideService(RpcSerialization.RpcSerialization, serialization)
          )
        }, Effect.orDie)
      }
    })
  )

/**
 * Effect Cluster's socket runner over `security`'s sockets, as `NodeClusterSocket.layer`
 * with `storage: "byo"` and binary serialization: a runner that serves its entities
 * (`clientOnly` false: a worker, listening on `sharding.runnerListenAddress`), or only
 * a client of runners (the driver's scheduler). Message and runner storage come from
 * the caller.
 *
 * @since 0.1.0
 * @internal
 */
export const layerRunner = (o: {
  readonly security: LinkSecurity
  readonly clientOnly: boolean
  readonly sharding: Partial<ShardingConfig.ShardingConfig["Service"]>
  readonly log: (line: string) => void
}) => {
  const client = layerClientProtocol(o.security)
  const server = Layer.effect(SocketServer.SocketServer)(Effect.gen(function*() {
    const config = yield* ShardingConfig.ShardingConfig
    const at = Option.getOrUndefined(Option.orElse(config.runnerListenAddress, () => config.runnerAddress))
    if (at === undefined) return yield* Effect.die("a runner needs a listen address")
    return yield* socketServer(o.security, at.host, at.port, o.log, `runner port ${at.host}:${at.port}`)
  }))
  const runner: Layer.Layer<any, any, any> = o.clientOnly
    ? Layer.provide(SocketRunner.layerClientOnly, client)
    : Layer.provide(SocketRunner.layer, [server, client])
  const health: Layer.Layer<any, any, any> = o.clientOnly
    ? Layer.empty as unknown as Layer.Layer<any, any, any>
    : RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(client))
  return runner.pipe(
    Layer.provide(health),
    Layer.provide(ShardingConfig.layer(o.sharding)),
    // one RPC message (a batch and its small literals) at most MAX_HEAD_BYTES: a longer
    // length prefix closes the connection before anything is buffered
    Layer.provide(RpcSerialization.layerSchemaBinary({ maxFrameSize: MAX_HEAD_BYTES }))
  ) as Layer.Layer<
    import("effect/cluster").Sharding.Sharding | Runners.Runners,
    SocketServer.SocketServerError,
    MessageStorage.MessageStorage | RunnerStorage.RunnerStorage
  >
}

/**
 * Whether `host:port` speaks to a client of `security` (asked once it accepts TCP, before
 * a worker or driver joins): undefined where it does, else the sentence saying why not —
 * the token refused (another cluster's, or none where TLS is served). A plain client
 * tells a TLS server by the alert it answers a ClientHello with.
 *
 * @since 0.1.0
 * @internal
 */
export const handshakeWith = (security: LinkSecurity, host: string, port: number, what: string): Promise<string | undefined> =>
  new Promise((resolve) => {
    const s = security._tag === "tls"
      ? Tls.connect({ ...clientTls(security.token), host, port })
      : Tls.connect({ host, port, minVersion: "TLSv1.3", rejectUnauthorized: false, checkServerIdentity: () => undefined })
    const done = (why: string | undefined) => {
      clearTimeout(timer)
      s.destroy()
      resolve(why)
    }
    // a plain server says nothing to a ClientHello: that is the answer
    const timer = setTimeout(() => done(security._tag === "tls" ? `the ${what} at ${host}:${port} did not finish a TLS handshake in 10 s (is it a plain-TCP cluster? then drop the token)` : undefined), security._tag === "tls" ? 10_000 : 3_000)
    s.once("secureConnect", () => done(security._tag === "tls" ? undefined : `the ${what} at ${host}:${port} serves TLS: give the cluster's token (--token-file PATH or TESSERA_CLUSTER_TOKEN)`))
    s.once("error", (e: Error & { code?: string }) => {
      if (security._tag === "tls") return done(`the ${what} at ${host}:${port} refused this process's cluster token (${handshakeProblem(e)}): is it another cluster's? use the file tessera scheduler printed`)
      // an alert from a TLS server (it wanted a PSK); anything else is a plain server
      done(/alert|handshake failure|SSL routines/i.test(e.message) && !/wrong version number|packet length/i.test(e.message)
        ? `the ${what} at ${host}:${port} serves TLS: give the cluster's token (--token-file PATH or TESSERA_CLUSTER_TOKEN)`
        : undefined)
    })
  })

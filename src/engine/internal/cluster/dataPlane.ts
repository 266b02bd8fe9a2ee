/**
 * The data plane: how worker processes move results to each other, beside Effect Cluster
 * (which keeps the control messages). Every worker listens on a plain TCP port of its own
 * (`serve`; the port is told to peers by the `DataPort` RPC on its entity); a peer fetch
 * (`DataClient.fetch`) takes a pooled connection to the holder (or opens one), writes the
 * wanted keys and reads one reply frame (frames.ts: typed arrays as their raw bytes, the
 * rest v8-serialised). Writing and reading are asynchronous, chunk by chunk, so the event
 * loop keeps answering heartbeats while 64 MiB move.
 *
 * A connection carries one request at a time; a fetch whose connection closes or fails
 * before the whole reply came fails (`DataPlaneError`), and its connection is dropped.
 *
 * Lengths from a peer are checked before anything is buffered (frames.ts: a request of at
 * most `MAX_REQUEST_BYTES`, a reply's head and buffers within `MAX_HEAD_BYTES` and
 * `MAX_REPLY_BYTES`). A connection that sends a request over the limit, or one that is not
 * a request, is closed at once and logged once (a line on stderr naming the peer's
 * address and the length); a reply over a limit fails its fetch. A list of keys too long for one
 * request goes as several.
 *
 * Leaves out: TLS, authentication (a worker answers whoever connects, as its runner
 * socket does), limits on concurrent connections per peer, idle timeouts (a peer that
 * claims a request within the limit and sends it slowly holds at most that buffer).
 *
 * @since 0.1.0
 * @internal
 */
import { Data, Effect } from "effect"
import type { Server, Socket } from "node:net"
import { handshakeProblem, type LinkSecurity, plain, RefusalLog } from "./security.ts"
import { connectNode, nodeServer } from "./transport.ts"
import { type Decoded, Decoder, encode, encodeRequest, FrameError, MAX_REQUEST_BYTES, RequestReader, setKey } from "./frames.ts"

/**
 * A fetch over the data plane that did not complete: the peer closed, refused, or sent
 * something that is not a frame.
 *
 * @since 0.1.0
 * @internal
 */
export class DataPlaneError extends Data.TaggedError("DataPlaneError")<{
  readonly peer: string
  readonly message: string
  /** a pooled connection that had closed before this fetch got a byte (worth one retry) */
  readonly stale: boolean
}> {}

/**
 * Serves `lookup(keys)` (the values held, by key) on `host`, on a free port; `sent` is
 * told every reply's length. A connection that breaks the framing (a request over
 * `MAX_REQUEST_BYTES`, or not a list of keys) is closed and logged once, a line on stderr
 * (`tessera worker: data plane: closed the connection from HOST:PORT: …`). Closed with
 * the scope.
 *
 * @since 0.1.0
 * @internal
 */
export const serve = (
  host: string,
  lookup: (keys: ReadonlyArray<string>) => Record<string, unknown>,
  sent: (bytes: number) => void,
  security: LinkSecurity = plain
) =>
  Effect.suspend(() => {
    const open = new Set<Socket>()
    // straight to stderr, as the worker's other lines of its own: a worker process runs its
    // layer with Effect's log level at None (Cluster.ts), which would hide this one
    const log = (line: string) => void process.stderr.write(`tessera worker: ${line}\n`)
    const refusals = new RefusalLog(`data-plane port of ${host}`, log)
    return Effect.acquireRelease(
      Effect.callback<Server, DataPlaneError>((resume) => {
        const server = nodeServer(security, refusals, (socket) => {
          open.add(socket)
          socket.once("close", () => open.delete(socket))
          socket.setNoDelay(true)
          const reader = new RequestReader()
          const peer = `${socket.remoteAddress}:${socket.remotePort}`
          socket.on("data", (chunk) => {
            if (socket.destroyed) return
            try {
              for (const keys of reader.push(chunk)) {
                const t0 = performance.now()
                const values = lookup(keys)
                const frame = encode(values, () => (performance.now() - t0) / 1000)
                sent(frame.bytes)
                for (const p of frame.parts) socket.write(p)
              }
            } catch (e) {
              // once per connection: it is closed now, and sends nothing more here
              socket.destroy()
              const why = e instanceof Error ? e.message : String(e)
              log(e instanceof FrameError && why.startsWith("data-plane request")
                ? `data plane: closed the connection from ${peer}: ${why}`
                : `data plane: closed the connection from ${peer}, whose request could not be answered: ${why}`)
            }
          })
          socket.on("error", () => socket.destroy())
        })
        server.once("error", (e) => resume(Effect.fail(new DataPlaneError({ peer: host, message: e.message, stale: false }))))
        server.listen(0, host, () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          refusals.close()
          server.close(() => resume(Effect.void))
          for (const s of open) s.destroy()
        })
    )
  }).pipe(Effect.map((server) => {
    const a = server.address()
    return { port: typeof a === "object" && a !== null ? a.port : 0 }
  }))

/** A request's length for `keys` (their JSON, as `encodeRequest` writes it). */
const requestBytes = (keys: ReadonlyArray<string>): number => Buffer.byteLength(JSON.stringify(keys), "utf8")

/** Two replies of one split fetch as one. */
const merge = (a: Decoded, b: Decoded): Decoded => {
  const value: Record<string, unknown> = {}
  for (const part of [a.value, b.value]) {
    if (typeof part === "object" && part !== null) for (const k of Object.keys(part)) setKey(value, k, (part as Record<string, unknown>)[k])
  }
  return { value, bytes: a.bytes + b.bytes, serialize: a.serialize + b.serialize, deserialize: a.deserialize + b.deserialize }
}

/** One pooled connection: its socket and the fetch reading from it now, if any. */
interface Conn {
  readonly socket: Socket
  readonly now: Reader
}

/** The fetch reading from a connection now. */
interface Reader {
  /** its decoder; reads land in its `target()` */
  decoder: Decoder | undefined
  /** its read handler */
  read: ((n: number, into: Uint8Array) => void) | undefined
}

/**
 * Connections to peers' data planes, pooled per peer (`host:port`). Each reads through
 * `net`'s `onread`, into the running fetch's receive buffer (`Decoder.target`), so the
 * raw bytes of typed arrays land where the arrays will live, without a copy.
 *
 * @since 0.1.0
 * @internal
 */
export class DataClient {
  private readonly idle = new Map<string, Array<Conn>>()
  private closed = false
  private readonly security: LinkSecurity

  constructor(security: LinkSecurity = plain) {
    this.security = security
  }

  /**
   * Fetches `keys` from the data plane at `host:port` (peer `peer`, for errors); a pooled
   * connection found closed is replaced by a new one once.
   */
  fetch(peer: string, host: string, port: number, keys: ReadonlyArray<string>): Effect.Effect<Decoded, DataPlaneError> {
    // a list too long for one request (MAX_REQUEST_BYTES) goes as two halves, each split again if need be
    if (keys.length > 1 && requestBytes(keys) > MAX_REQUEST_BYTES) {
      const half = keys.length >> 1
      return Effect.zipWith(this.fetch(peer, host, port, keys.slice(0, half)), this.fetch(peer, host, port, keys.slice(half)), merge)
    }
    return this.attempt(peer, host, port, keys, false).pipe(
      Effect.catch((e) => e.stale ? this.attempt(peer, host, port, keys, true) : Effect.fail(e))
    )
  }

  private open(host: string, port: number): Conn {
    const spare = new Uint8Array(65536)
    const now: Reader = { decoder: undefined, read: undefined }
    // decrypted (TLS) or not, each read lands in the decoder's buffer: no copy
    const socket = connectNode(this.security, host, port, {
      onread: {
        // never empty (a read into no room fails with ENOBUFS)
        buffer: () => now.decoder?.target() ?? spare,
        callback: (n: number, into: Uint8Array) => {
          if (now.read === undefined) socket.destroy()
          else now.read(n, into)
          return true
        }
      }
    })
    socket.setNoDelay(true)
    // an idle pooled connection that fails has no fetch listening
    socket.on("error", () => {})
    return { socket, now }
  }

  private attempt(peer: string, host: string, port: number, keys: ReadonlyArray<string>, forceNew: boolean) {
    return Effect.callback<Decoded, DataPlaneError>((resume, signal) => {
      const id = `${host}:${port}`
      let conn: Conn | undefined
      const pool = this.idle.get(id)
      while (!forceNew && pool !== undefined && pool.length > 0 && conn === undefined) {
        const c = pool.pop()!
        if (c.socket.destroyed || c.socket.readyState !== "open") c.socket.destroy()
        else conn = c
      }
      const fresh = conn === undefined
      const c = conn ?? this.open(host, port)
      const s = c.socket
      const decoder = new Decoder()
      let done = false
      let got = 0
      const finish = (e: Effect.Effect<Decoded, DataPlaneError>, keep: boolean) => {
        if (done) return
        done = true
        c.now.decoder = undefined
        c.now.read = undefined
        s.off("error", onError)
        s.off("close", onClose)
        signal.removeEventListener("abort", onAbort)
        if (keep && !this.closed) {
          let p = this.idle.get(id)
          if (p === undefined) this.idle.set(id, p = [])
          p.push(c)
        } else s.destroy()
        resume(e)
      }
      const fail = (message: string) =>
        finish(Effect.fail(new DataPlaneError({ peer, message, stale: !fresh && got === 0 })), false)
      c.now.decoder = decoder
      c.now.read = (n, into) => {
        got += n
        let r: Decoded | undefined
        try {
          r = decoder.wrote(into, n)
        } catch (e) {
          return fail(e instanceof Error ? e.message : String(e))
        }
        if (r !== undefined) finish(Effect.succeed(r), !decoder.busy)
      }
      const onError = (e: Error) => fail(this.security._tag === "tls" && s.readyState !== "open" ? `${id}: ${handshakeProblem(e)}` : e.message)
      const onClose = () => fail(`connection to ${id} closed mid-fetch`)
      const onAbort = () => finish(Effect.fail(new DataPlaneError({ peer, message: "interrupted", stale: false })), false)
      s.on("error", onError)
      s.on("close", onClose)
      signal.addEventListener("abort", onAbort)
      s.write(encodeRequest(keys))
    })
  }

  /** Closes every pooled connection. */
  close(): void {
    this.closed = true
    for (const p of this.idle.values()) for (const c of p) c.socket.destroy()
    this.idle.clear()
  }
}

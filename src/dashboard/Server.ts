/**
 * The dashboard's HTTP server: Node's `http`, server-sent events, no dependency.
 *
 * Routes (all GET or HEAD; anything else is 405):
 *
 * - `/` the page, `/app.js` its script, `/vega.js` the Vega runtime (the report's);
 * - `/api/snapshot` the whole state a page starts from (`LiveState.snapshot`);
 * - `/api/events` server-sent events: one `delta` every `tickMs` (default 200 ms),
 *   built once per tick for every page, whatever their number;
 * - `/api/specs?w=W` the charts' compiled Vega specs for the run's current rows,
 *   functions and activities (the report's chart definitions, `report/Charts.ts`),
 *   cached per shape;
 * - `/api/dag` the pipeline's stage DAG as inert SVG (Graphviz, the report's allow-list), when known;
 * - `/api/findings` the Findings tab: `tessera diagnose`'s findings once the run is over
 *   (`Diagnosis.ts`), or why there are none (yet);
 * - `/api/flame` the Profile tab: the statistical profiler's samples as the report's flame
 *   payload and chart (`Flame.ts`, `report/FlameGraph.ts`), or why there are none (yet);
 *   during a run, when the dashboard samples, `/api/flame?from=S&to=S&fn=NAME&stage=LABEL` the
 *   live samples' bins in the window, of the function or stage (`LiveFlame.ts`; `live=1`: these even
 *   once a database's samples are read);
 * - `/api/detail?from=S&to=S&limit=N` the rectangles of a window (zooming into the
 *   past): from the ring while it holds the window, else from the run's trace databases
 *   (`traceFiles`, read in a worker thread: `TraceDetail.ts`); at most N (20,000) an
 *   answer, `count` of all, `cut` how many were left out, `source` "memory" or "trace";
 *   `/api/task?id=N` one rectangle of the ring with its key.
 *
 * Safe by default: bound to loopback (127.0.0.1) unless told otherwise; bound to any
 * other address every request needs the token (generated with 128 random bits, or
 * given; `?token=` on every URL, compared in constant time), else 401. Read-only: no
 * route changes anything. Requests with a body (413), URLs over 2,048 bytes (414),
 * headers over 16 KiB (431, Node's limit) are refused; an `Origin` header must be this
 * server's own origin (403: another site's page cannot read the events), and on loopback
 * without a token the `Host` must name the loopback (403: DNS rebinding). At most
 * `maxClients` event streams (503 beyond) and 64 connections; a page that stops reading
 * (more than 4 MiB queued) is disconnected, so a stuck tab costs no memory; idle
 * connections close after 30 s, slow requests after 10 s. Every response carries a
 * Content-Security-Policy without inline scripts, `nosniff`, `no-store`, no framing, no
 * referrer.
 *
 * Nothing here runs on the engine's hooks: a tick builds one delta (a few
 * milliseconds at most) and writes it to each socket without waiting for it.
 *
 * @since 0.1.0
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { cpus, freemem, hostname, totalmem } from "node:os"
import { Data } from "effect"
import type { LiveState, RectColumns } from "./LiveState.ts"
import { traceDetail, type TraceWindow } from "./TraceDetail.ts"
import { vegaSource } from "../report/Html.ts"
import { flameSpec } from "../report/FlameGraph.ts"
import { appScript, pageHtml } from "./Page.ts"

/**
 * The dashboard could not start: the address (bad, or in use) and why.
 *
 * @since 0.1.0
 * @category errors
 */
export class DashboardError extends Data.TaggedError("DashboardError")<{ readonly address: string; readonly reason: string }> {
  override get message(): string {
    return `dashboard ${this.address}: ${this.reason}`
  }
}

/**
 * Where to listen: `[HOST:]PORT` (`8787`, `0.0.0.0:8787`, `[::1]:8787`; port 0: any free
 * port).
 *
 * @since 0.1.0
 * @category models
 */
export interface Address {
  readonly host: string
  readonly port: number
}

/**
 * The default address: loopback, port 8787 (Dask's).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultAddress: Address = { host: "127.0.0.1", port: 8787 }

/**
 * Parses `[HOST:]PORT`; a bad one is a `DashboardError` naming it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const parseAddress = (text: string): Address | DashboardError => {
  const bad = (reason: string) => new DashboardError({ address: text, reason })
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):)?(\d{1,5})$/.exec(text.trim())
  if (m === null) return bad("expected [HOST:]PORT, e.g. 8787, 127.0.0.1:8787, 0.0.0.0:8787 or [::1]:8787")
  const port = Number(m[2])
  if (!(port >= 0 && port <= 65535)) return bad(`port ${port} is not in 0..65535`)
  const host = m[1] === undefined ? defaultAddress.host : m[1].startsWith("[") ? m[1].slice(1, -1) : m[1]
  return { host, port }
}

/**
 * Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
 *
 * @since 0.1.0
 * @category guards
 */
export const isLoopback = (host: string): boolean =>
  host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)

/**
 * Options of the server.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerOptions extends Partial<Address> {
  /** required when bound off loopback: generated when absent; given on loopback, required there too */
  readonly token?: string
  /** the page's title */
  readonly title?: string
  /** most event streams at once (default 16) */
  readonly maxClients?: number
  /** cadence of the deltas, ms (default 200; at most 250) */
  readonly tickMs?: number
  /** sample this host's CPU and memory every 500 ms (default true) */
  readonly sampleHost?: boolean
  /**
   * the run's trace databases (or how to get them; `--profile`'s): a window the ring no
   * longer holds is read from them (`TraceDetail.ts`, off the engine's thread)
   */
  readonly traceFiles?: ReadonlyArray<string> | (() => ReadonlyArray<string>)
}

/**
 * A running dashboard server.
 *
 * @since 0.1.0
 * @category models
 */
export interface DashboardServer {
  /** the page's URL, with the token when one is required */
  readonly url: string
  readonly host: string
  readonly port: number
  readonly token: string | undefined
  /** event streams open now */
  readonly clients: () => number
  /** bytes written to event streams so far */
  readonly bytesSent: () => number
  /** stops ticking, closes every connection */
  readonly close: () => Promise<void>
}

const securityHeaders = {
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
  "Cross-Origin-Resource-Policy": "same-origin"
} as const

const digest = (s: string) => createHash("sha256").update(s).digest()

const urlHost = (host: string) => (host.includes(":") ? `[${host}]` : host)

/** Charts' specs, compiled per shape (lazily: vega-lite loads on the first page). */
type SpecMaker = (state: LiveState, width: number) => Promise<unknown>

/**
 * Starts the server for `state`. Fails with `DashboardError` when the address is taken
 * or cannot be bound.
 *
 * @since 0.1.0
 * @category constructors
 */
export const startServer = (state: LiveState, options: ServerOptions, specs: SpecMaker, dag?: () => Promise<string | undefined>): Promise<DashboardServer> => {
  const host = options.host ?? defaultAddress.host
  const port = options.port ?? defaultAddress.port
  const loopback = isLoopback(host)
  const token = options.token ?? (loopback ? undefined : randomBytes(16).toString("base64url"))
  const tokenDigest = token === undefined ? undefined : digest(token)
  const maxClients = options.maxClients ?? 16
  const tickMs = Math.min(250, Math.max(20, options.tickMs ?? 200))
  const title = options.title ?? "Tessera"
  const app = appScript()
  const clients = new Set<ServerResponse>()
  let sent = 0
  let boundPort = port
  let flameJson: { panel: unknown; text: string } = { panel: undefined, text: "" }
  const trace = options.traceFiles === undefined ? undefined : traceDetail(options.traceFiles)
  // a trace window as the page's rectangles: rows and functions in the state's
  // dictionaries, times from t0, ids negative (no single-task lookup: /api/task is the ring's)
  const fromTrace = (w: TraceWindow, limit: number) => {
    const out: RectColumns = { id: [], s: [], e: [], r: [], f: [], k: [] }
    w.rects.forEach((x, i) => {
      out.id.push(-1 - i)
      out.s.push(Math.round((x.start - state.t0) * 1e4) / 1e4)
      out.e.push(Math.round((x.end - state.t0) * 1e4) / 1e4)
      out.r.push(state.rows.id(x.worker))
      out.f.push(x.kind === 2 ? -1 : state.functions.id(x.function))
      out.k.push(x.kind)
    })
    return { rects: out, count: w.count, complete: w.complete && w.count <= limit, cut: Math.max(0, w.count - limit), source: "trace" }
  }
  const known = { rows: 0, functions: 0, stages: 0, activities: 0, hosts: 0, binEpoch: 0, resources: [] as Array<number> }

  const refuse = (res: ServerResponse, status: number, why: string) => {
    res.writeHead(status, { ...securityHeaders, "Content-Type": "text/plain; charset=utf-8", Connection: "close" })
    res.end(`${why}\n`)
  }
  const send = (res: ServerResponse, type: string, body: string | Buffer) => {
    res.writeHead(200, { ...securityHeaders, "Content-Type": type })
    res.end(body)
  }
  const json = (res: ServerResponse, u: unknown) => send(res, "application/json; charset=utf-8", JSON.stringify(u))

  const allowedHosts = () => new Set([`${urlHost(host)}:${boundPort}`, `localhost:${boundPort}`, `127.0.0.1:${boundPort}`, `[::1]:${boundPort}`])

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== "GET" && req.method !== "HEAD") return refuse(res, 405, "read-only: GET only")
    const length = req.headers["content-length"]
    if ((length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined) return refuse(res, 413, "no request bodies")
    if ((req.url ?? "").length > 2048) return refuse(res, 414, "URL too long")
    const origin = req.headers.origin
    if (origin !== undefined && origin !== `http://${req.headers.host ?? ""}`) return refuse(res, 403, "cross-origin requests are refused")
    if (token === undefined && !allowedHosts().has(req.headers.host ?? "")) return refuse(res, 403, "unknown Host")
    let url: URL
    try {
      url = new URL(req.url ?? "/", "http://dashboard")
    } catch {
      return refuse(res, 400, "bad URL")
    }
    if (tokenDigest !== undefined) {
      const given = url.searchParams.get("token") ?? ""
      if (!timingSafeEqual(digest(given), tokenDigest)) return refuse(res, 401, "token required: open the URL the dashboard printed")
    }
    const num = (name: string, fallback: number) => {
      const v = Number(url.searchParams.get(name) ?? fallback)
      return Number.isFinite(v) ? v : fallback
    }
    switch (url.pathname) {
      case "/":
        return send(res, "text/html; charset=utf-8", pageHtml(title, token))
      case "/app.js":
        return send(res, "text/javascript; charset=utf-8", app)
      case "/vega.js":
        return send(res, "text/javascript; charset=utf-8", vegaSource())
      case "/api/snapshot":
        return json(res, { ...state.snapshot(), t0: state.t0, title, tickMs })
      case "/api/specs": {
        const w = Math.min(4000, Math.max(300, Math.round(num("w", 940))))
        specs(state, w).then((s) => json(res, s), (e) => refuse(res, 500, `specs: ${e instanceof Error ? e.message : String(e)}`))
        return
      }
      case "/api/findings":
        return json(res, state.findings)
      case "/api/flame": {
        // during a run (and after it when no database's samples follow; `live=1`: always):
        // the live samples of the window and function asked for (`LiveFlame.ts`), bounded by its bins
        const wantLive = state.flame.status === "none" || url.searchParams.get("live") === "1"
        if (wantLive && state.liveFlame !== null && state.liveFlame.samples + state.liveFlame.pendingRecords() > 0) {
          const opt = (name: string) => {
            const v = url.searchParams.get(name)
            return v === null || v === "" || !Number.isFinite(Number(v)) ? {} : { [name]: Number(v) }
          }
          const fn = url.searchParams.get("fn")
          const stage = url.searchParams.get("stage")
          const f = state.liveFlame
          const payload = f.payload({ ...opt("from"), ...opt("to"), ...(fn === null || fn === "" ? {} : { fn }), ...(stage === null ? {} : { stage }) })
          return json(res, {
            status: "ready",
            live: true,
            over: state.over,
            source: "the dashboard's samples so far",
            samples: f.samples,
            seconds: f.seconds,
            cutSamples: f.cutSamples,
            flushSeconds: f.flushSeconds,
            payload,
            spec: flameSpec()
          })
        }
        // the payload (up to the report's bound of rows) serialised once per panel
        if (flameJson.panel !== state.flame) flameJson = { panel: state.flame, text: JSON.stringify({ ...state.flame, spec: state.flame.status === "ready" ? flameSpec() : null }) }
        return send(res, "application/json; charset=utf-8", flameJson.text)
      }
      case "/api/dag": {
        if (dag === undefined) return json(res, { svg: null })
        dag().then((svg) => json(res, { svg: svg ?? null }), (e) => json(res, { svg: null, error: e instanceof Error ? e.message : String(e) }))
        return
      }
      case "/api/detail": {
        state.drain()
        const limit = Math.min(20_000, Math.max(1, Math.round(num("limit", 5000))))
        const from = num("from", 0), to = num("to", Infinity)
        const d = state.detailIn(from, to, limit)
        const ring = { rects: state.rectColumns(d.ids), count: d.count, complete: d.complete && d.count <= limit, cut: Math.max(0, d.count - limit), source: "memory" }
        // older than the ring: from the trace database, when the run writes one
        if (d.complete || trace === undefined) return json(res, ring)
        trace.window(state.t0 + from, state.t0 + to, limit).then(
          (w) => json(res, fromTrace(w, limit)),
          (e) => json(res, { ...ring, traceError: e instanceof Error ? e.message : String(e) })
        )
        return
      }
      case "/api/task": {
        const r = state.rect(Math.round(num("id", -1)))
        if (r === undefined) return json(res, null)
        return json(res, {
          ...r,
          row: state.rows.names[r.row] ?? "",
          function: r.fn >= 0 && r.kind !== 3 ? state.functions.names[r.fn] ?? "" : "",
          activity: r.kind === 3 ? state.activities.names[r.fn] ?? "" : "",
          stage: r.stage >= 0 ? state.stages.names[r.stage] ?? "" : ""
        })
      }
      case "/api/events": {
        if (clients.size >= maxClients) return refuse(res, 503, `at most ${maxClients} pages at once`)
        res.writeHead(200, { ...securityHeaders, "Content-Type": "text/event-stream; charset=utf-8", Connection: "keep-alive" })
        res.write(`retry: 1000\n\n`)
        clients.add(res)
        const drop = () => clients.delete(res)
        req.on("close", drop)
        res.on("error", drop)
        return
      }
      default:
        return refuse(res, 404, "not found")
    }
  }

  const tick = () => {
    if (clients.size === 0) {
      // nobody watching: nothing is shed, a page that opens starts from a snapshot
      state.drain()
      state.sentUpTo = state.written
      return
    }
    const body = `event: delta\ndata: ${JSON.stringify(state.delta(known))}\n\n`
    const bytes = Buffer.byteLength(body)
    for (const res of clients) {
      if (res.writableLength > 4 * 2 ** 20) {
        // a page that does not read: dropped, it reconnects from a snapshot
        clients.delete(res)
        res.destroy()
        continue
      }
      res.write(body)
      sent += bytes
    }
  }

  // this host's CPU (share of all cores busy since the last sample) and memory used
  const me = hostname()
  let last = cpus().map((c) => c.times)
  const sampleHost = () => {
    const now = cpus().map((c) => c.times)
    let busy = 0
    let all = 0
    now.forEach((t, i) => {
      const p = last[i]
      if (p === undefined) return
      const total = t.user + t.nice + t.sys + t.idle + t.irq - (p.user + p.nice + p.sys + p.idle + p.irq)
      busy += total - (t.idle - p.idle)
      all += total
    })
    last = now
    state.resourceSample(me, (performance.timeOrigin + performance.now()) / 1000, all > 0 ? (100 * busy) / all : 0, totalmem() - freemem())
  }

  return new Promise((resolve, reject) => {
    const server = createServer({ maxHeaderSize: 16 * 1024, requestTimeout: 10_000, headersTimeout: 5_000, keepAliveTimeout: 5_000 }, handle)
    server.maxConnections = 64
    server.setTimeout(30_000)
    server.once("error", (e: NodeJS.ErrnoException) =>
      reject(new DashboardError({ address: `${urlHost(host)}:${port}`, reason: e.code === "EADDRINUSE" ? "address in use (another dashboard? give another port)" : e.message }))
    )
    server.listen(port, host, () => {
      const a = server.address()
      boundPort = typeof a === "object" && a !== null ? a.port : port
      const timer = setInterval(tick, tickMs)
      timer.unref()
      const hostTimer = options.sampleHost === false ? undefined : setInterval(sampleHost, 500)
      hostTimer?.unref()
      const shown = host === "0.0.0.0" || host === "::" ? hostname() : host
      resolve({
        url: `http://${urlHost(shown)}:${boundPort}/${token === undefined ? "" : `?token=${encodeURIComponent(token)}`}`,
        host,
        port: boundPort,
        token,
        clients: () => clients.size,
        bytesSent: () => sent,
        close: () =>
          new Promise<void>((done) => {
            clearInterval(timer)
            if (hostTimer !== undefined) clearInterval(hostTimer)
            trace?.close()
            // a last delta: the pages see the final state before the streams end
            tick()
            for (const res of clients) res.end()
            clients.clear()
            server.close(() => done())
            server.closeAllConnections()
          })
      })
    })
  })
}

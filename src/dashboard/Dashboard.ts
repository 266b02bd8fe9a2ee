/**
 * Dashboard: the live view of a run in a browser, as one more consumer of the engine's
 * hooks.
 *
 * ```ts
 * program.pipe(Effect.provide(Dashboard.layer({ port: 8787 })), Effect.provide(Executor.layerWorkers()))
 * ```
 *
 * `layer(options)` starts the server (`Server.ts`) when the layer is built, prints its
 * URL (to stderr by default), adds the live state's callbacks (`LiveState.ts`) to the
 * engine's for the effects it is provided to, and stops the server when the layer's
 * scope closes; it stacks with the profiler's layers like any hook layer (provide one
 * inside the other, see `engine/Hooks.ts`), with or without them. `make(options)` is the
 * same in an Effect, for code that keeps the page up after its program (the CLI's
 * `--dashboard`: the page shows the final state until Ctrl-C). `serve(state, options)`
 * serves a state filled some other way (`tessera dashboard -d DB…`, `Replay.ts`).
 *
 * The hooks copy numbers into preallocated arrays and return: the engine never waits
 * for a page, a socket or a chart (see docs/dashboard.md for the measured cost).
 *
 * @since 0.1.0
 */
import { hostname } from "node:os"
import { Worker } from "node:worker_threads"
import { Effect, Layer, type Scope } from "effect"
import * as Hooks from "../engine/Hooks.ts"
import * as Charts from "../report/Charts.ts"
import { type LiveOptions, LiveState } from "./LiveState.ts"
import { DashboardError, type DashboardServer, type ServerOptions, startServer } from "./Server.ts"

export { DashboardError, defaultAddress, isLoopback, parseAddress } from "./Server.ts"
export type { Address, DashboardServer, ServerOptions } from "./Server.ts"

/**
 * Options of a dashboard.
 *
 * @since 0.1.0
 * @category models
 */
export interface DashboardOptions extends ServerOptions {
  /** bounds of the live state (detail kept, bins, rectangles per tick) */
  readonly live?: LiveOptions
  /** where the URL line goes (default stderr) */
  readonly log?: (line: string) => void
  /**
   * feed on the engine's task and memory records (each task's own times, CPU time, held
   * bytes), which the engine builds at a cost on tiny tasks unless a profiler already
   * asks for them; default false: the scheduler's light hooks (the driver's view; see
   * `LiveState.callbacks`)
   */
  readonly records?: boolean
  /**
   * sample the worker threads' stacks for the Profile tab's live flame graph
   * (`LiveState.LiveSampling`; true: the defaults); default off: sampling costs the
   * engine (V8's profiler in every worker thread: docs/dashboard.md), and `--profile`'s
   * flame graph comes after the run anyway
   */
  readonly sample?: boolean | import("./LiveState.ts").LiveSampling
  /** the pipeline's stage DAG (Graphviz DOT, or how to get it: `pipeline.visualize`), drawn on the Stages tab coloured by state */
  readonly dot?: string | (() => string | undefined)
}

/**
 * A started dashboard: its state, server and the callbacks that feed it.
 *
 * @since 0.1.0
 * @category models
 */
export interface LiveDashboard {
  readonly state: LiveState
  readonly server: DashboardServer
  readonly url: string
  readonly callbacks: Hooks.Callbacks
}

const natural = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true })

/**
 * The report's chart definitions (report/Charts.ts) for the state's current shape:
 * compiled to Vega once per page width in a worker thread (`SpecWorker.ts`: never on
 * the engine's thread), the task stream reshaped for the run's rows, functions and
 * activities (`Charts.reshapeStreamVega`: a copy with new domains, no compile); the
 * worker ends with `close`.
 */
const specMaker = () => {
  const templates = new Map<number, Promise<{ readonly stream: unknown; readonly timelines: unknown }>>()
  const waiting = new Map<number, { resolve: (u: never) => void; reject: (e: Error) => void }>()
  let worker: Worker | undefined
  let next = 0
  let markReady = () => {}
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  const start = () => {
    const self = import.meta.url
    const w = new Worker(new URL(`./SpecWorker${self.slice(self.lastIndexOf("."))}`, self))
    w.unref()
    w.on("message", (m: { id: number; ok: boolean; specs?: never; error?: string; ready?: boolean }) => {
      if (m.ready === true) return markReady()
      const p = waiting.get(m.id)
      waiting.delete(m.id)
      if (p !== undefined) m.ok ? p.resolve(m.specs!) : p.reject(new Error(m.error))
    })
    w.on("error", (e) => {
      markReady()
      for (const p of waiting.values()) p.reject(e)
      waiting.clear()
      worker = undefined
    })
    return w
  }
  const template = (width: number) => {
    let t = templates.get(width)
    if (t === undefined) {
      worker ??= start()
      const id = next++
      t = new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject })
        worker!.postMessage({ id, width })
      })
      t.catch(() => templates.delete(width))
      if (templates.size > 16) templates.clear()
      templates.set(width, t)
    }
    return t
  }
  const make = async (state: LiveState, width: number): Promise<unknown> => {
    const t = await template(width)
    const workers = state.rows.names.filter((r) => r !== "driver").sort(natural)
    const rows = [...state.rows.names.filter((r) => r === "driver"), ...workers]
    const functions = [...state.functions.names]
    const top = functions.length > Charts.maxStreamColours ? Int32Array.from({ length: Charts.maxStreamColours - 1 }, (_, i) => i) : undefined
    // the axis is set by the page (`xdom`)
    const shape = { functions, activities: [...state.activities.names], rows, wall: 1, moved: state.transfers > 0, failed: state.tasksErred > 0, top }
    return {
      rows,
      functions,
      top: top === undefined ? null : Array.from(top),
      labels: { transfer: Charts.transferLabel, dataTransfer: Charts.dataTransferLabel, erred: Charts.erredLabel, other: Charts.otherFunctionsLabel, driver: Charts.driverLabel("") },
      stream: Charts.reshapeStreamVega(t.stream as never, shape),
      timelines: t.timelines
    }
  }
  // started with the server, its modules loaded before the run starts
  worker = start()
  // the stage DAG laid out once per DOT text
  const dags = new Map<string, Promise<string>>()
  const dag = (dot: string): Promise<string> => {
    let d = dags.get(dot)
    if (d === undefined) {
      worker ??= start()
      const id = next++
      d = new Promise<string>((resolve, reject) => {
        waiting.set(id, { resolve: resolve as (u: never) => void, reject })
        worker!.postMessage({ id, dot })
      })
      d.catch(() => dags.delete(dot))
      if (dags.size > 8) dags.clear()
      dags.set(dot, d)
    }
    return d
  }
  // ended by a message, not terminate(): the thread finishes what it runs and exits
  return { make, dag, ready, close: () => void worker?.postMessage({ quit: true }) }
}

/**
 * Serves `state` until the current scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const serve = (state: LiveState, options: DashboardOptions = {}): Effect.Effect<DashboardServer, DashboardError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => {
        const specs = specMaker()
        const dot = options.dot
        const started = startServer(state, options, specs.make, dot === undefined ? undefined : () => {
          const text = typeof dot === "string" ? dot : dot()
          return text === undefined ? Promise.resolve(undefined) : specs.dag(text)
        }).then((server) => ({ ...server, close: () => (specs.close(), server.close()) }))
        // the charts' compiler loaded (at most 30 s) before the caller's run starts
        return Promise.all([started, Promise.race([specs.ready, new Promise((r) => setTimeout(r, 30_000).unref())])]).then(([s]) => s, (e: unknown) => {
          specs.close()
          throw e
        })
      },
      catch: (e) => e instanceof DashboardError ? e : new DashboardError({ address: `${options.host ?? ""}:${options.port ?? ""}`, reason: String(e) })
    }),
    (server) => Effect.promise(() => server.close())
  )

/**
 * Starts a dashboard for the current scope and prints its URL.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: DashboardOptions = {}): Effect.Effect<LiveDashboard, DashboardError, Scope.Scope> =>
  Effect.gen(function*() {
    const state = new LiveState({ host: hostname(), ...options.live })
    const server = yield* serve(state, options)
    const log = options.log ?? ((line: string) => void process.stderr.write(line + "\n"))
    log(`dashboard: ${server.url}${server.token === undefined ? "" : " (the token is required: bound off loopback)"}`)
    return { state, server, url: server.url, callbacks: state.callbacks({ records: options.records === true, ...(options.sample === undefined || options.sample === false ? {} : { sample: options.sample === true ? {} : options.sample }) }) }
  })

/**
 * The dashboard as a layer: started when built, its callbacks added to the engine's,
 * stopped (the run marked over, a last delta sent) when the layer closes.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: DashboardOptions = {}): Layer.Layer<never, DashboardError> =>
  Hooks.layerEffect(
    Effect.gen(function*() {
      const d = yield* make(options)
      yield* Effect.addFinalizer(() => Effect.sync(() => d.state.close()))
      return d.callbacks
    })
  )

/**
 * The cluster executor's scheduler, in the driver's process: it keeps the one state
 * record (`State`), serves the runner registry to the workers, and talks to each worker's
 * `TesseraWorker` entity through an Effect Cluster client (`NodeClusterSocket`,
 * client only). Results stay on the workers that made them; the scheduler only knows
 * who holds what (`holders`) and sends each batch with the holders of its inputs, so
 * workers fetch inputs from each other.
 *
 * What runs where is the dispatcher's (dispatch/dispatcher.ts, the state machine every
 * executor shares; a worker is its slot `index`): this module carries its instructions
 * out over RPC and reports replies, joins and deaths to it. Its settings here:
 * placement: a ready task goes to the free worker holding the most bytes of its inputs,
 * ties to the worker the previous task went to while its batch has room (siblings
 * together), else to the least loaded one; at most `MAX_INFLIGHT` batches per worker,
 * each of about `BATCH_SECONDS` of work by the seconds per task the workers measured so
 * far (no-op tasks travel 512 to a batch, 40 ms tasks 2 or 3), so work stays spread and
 * joiners find some. A batch also carries the tasks all of whose unfinished inputs are
 * in it (fused: one round trip for a chain or a subtree; while a worker is idle, no wider
 * than its lines plus a round trip's worth of work, so idle workers get the rest), the requested results come
 * back in its reply, large literal arguments go to each worker once (literals.ts), and
 * pending releases for its worker ride along.
 *
 * Faults: a worker is dead when its process exits (local workers), or when a `Time`
 * ping fails or goes unanswered for `heartbeatTimeout`. Its batches are requeued, it is
 * unregistered, and every result only it held that is still needed is recomputed on
 * another worker from the graph (the task and, recursively, its released inputs, in one
 * batch). A compute fails with `NoWorkers` when no worker is alive for `noWorkerWait`.
 *
 * Clocks: each worker's offset to the scheduler is measured by `Time` round trips
 * (NTP-style, the fastest of several kept) when it joins and on each heartbeat; its
 * timestamps are moved onto the scheduler's clock before any hook sees them.
 *
 * Leaves out: work stealing, and TaskRecords for recomputed tasks (the trace shows each
 * key once, from its first successful run).
 *
 * @since 0.1.0
 * @internal
 */
import { Clock, Context, Deferred, Effect, Exit, Layer, Queue } from "effect"
import { MessageStorage, type RunnerAddress, RunnerStorage } from "effect/cluster"
import { hostname } from "node:os"
import * as EngineClock from "../../EngineClock.ts"
import { type ClockRecord, threadId, type TransferRecord } from "../../EngineEvents.ts"
import * as EngineError from "../../EngineError.ts"
import { ClusterStartError, hidePassword } from "../../Cluster.ts"
import type { ClusterOptions, TransferInfo, WorkerStats } from "../../Cluster.ts"
import type { ExecutorShape } from "../../Executor.ts"
import type { Callbacks } from "../../Hooks.ts"
import * as Kernel from "../../Kernel.ts"
import * as State from "../../State.ts"
import * as WorkerPlugin from "../../WorkerPlugin.ts"
import type { Job } from "../job.ts"
import { erredInfo, execKeyOf, MemoryBook, post, pre, record, taskLineage } from "../job.ts"
import { shareResult } from "../kernels.ts"
import { CLOCK_FIELDS, copyRow, hasRow, newRows, TIMING_FLOATS } from "../taskTiming.ts"
import { Dispatcher } from "../dispatch/dispatcher.ts"
import { freePort, type LocalWorker, spawnWorker, stopWorkers } from "./localCluster.ts"
import { decodeValue, encodeValue, parseAddress, ROW_STRIDE, TesseraWorker, workerRow } from "./protocol.ts"
import type { PluginsRequest, RunReply, RunRequest, RunTrace } from "./protocol.ts"
import { LiteralBook } from "./literals.ts"
import { type DashboardLink, type Forwarder, startForwarding } from "./feed.ts"
import { notSendable, TASK_FAILURES, toComputeError } from "./workerErrors.ts"
import * as Registry from "./registry.ts"
import * as Security from "./security.ts"
import * as Transport from "./transport.ts"
import { shardingConfig } from "./workerProcess.ts"

/**
 * One worker as the scheduler sees it.
 *
 * @since 0.1.0
 * @internal
 */
export interface WorkerView {
  readonly name: string
  readonly address: string
  readonly runner: RunnerAddress.RunnerAddress
  readonly index: number
  host: string
  threads: number
  pid: number
  alive: boolean
  /** worker clock minus scheduler clock (s), and half the round trip it was measured by */
  offset: number
  uncertainty: number
  lastSeen: number
  readonly lost: Deferred.Deferred<void>
}

/** the thread id stride between worker processes (workerId = index * STRIDE + thread) */
const STRIDE = ROW_STRIDE
const MAX_INFLIGHT = 2
const BATCH_MAX = 512
/** `LiteralsMissing` answers a compute takes before it fails (each resends the values) */
const LITERAL_RETRIES = 64
const BATCH_SECONDS = 0.1

/** `wall`: seconds from sending the batch to its reply (the round trip and the work) */
type Msg =
  | {
    readonly kind: "run" | "recover"
    readonly w: string
    /** the dispatcher's id of the batch */
    readonly batch: number
    readonly tasks: ReadonlyArray<number>
    readonly exit: Exit.Exit<Uint8Array, unknown>
    readonly wall: number
  }
  | { readonly kind: "dead"; readonly w: string }
  | { readonly kind: "joined" }

/**
 * A worker's first row: `workerRow` (host, address, pid), whether its worker plugin or the
 * driver's process records it.
 */
const rowFor = (_cb: Callbacks, w: WorkerView): string => workerRow(w.host, w.address, w.pid, w.index * STRIDE)

/** A result that lives on a worker (what `state.cache` holds until the final gather). */
const REMOTE = Symbol.for("tessera/cluster/remote")

/**
 * Starts the scheduler (and the local workers) in the current scope.
 *
 * @since 0.1.0
 * @internal
 */
export const make = (options: ClusterOptions) => Effect.orDie(makeCluster(options))

const makeCluster = Effect.fnUntraced(function*(options: ClusterOptions) {
  const scope = yield* Effect.scope
  // the runner registry: PostgreSQL, a separate `tessera scheduler`'s, or served from here
  const postgres = options.storage !== undefined ? Registry.postgresOrThrow(options.storage.postgres, "cluster storage") : undefined
  const remote = options.scheduler !== undefined ? parseAddress(options.scheduler, "cluster scheduler address") : undefined
  const bindHost = remote?.host ?? options.host ?? "127.0.0.1"
  const port = remote?.port ?? options.port ?? (yield* Effect.promise(() => freePort(bindHost)))
  // every link TLS keyed by the token where one is given; plain only on loopback or --insecure
  const security = Security.decide({ hosts: remote !== undefined ? [remote.host] : postgres !== undefined ? [] : [bindHost], token: options.token, insecure: options.insecure })
  if ("problem" in security) return yield* Effect.die(new ClusterStartError({ message: security.problem }))
  const say = (line: string) => void process.stderr.write(`tessera cluster: ${line}\n`)
  if (security._tag === "plain" && security.insecure) say("--insecure: plain TCP beyond loopback; anyone who reaches these ports can join, read results and run code")
  let storage: RunnerStorage.RunnerStorage["Service"]
  /** a standalone scheduler's dashboard, reached over its registry connection (feed.ts) */
  const link: DashboardLink = {}
  if (postgres !== undefined) {
    const rctx = yield* Layer.buildWithScope(Registry.layerPostgres(postgres, shardingConfig({})), scope)
    storage = Context.get(rctx, RunnerStorage.RunnerStorage)
  } else if (remote === undefined) {
    const reg = new Registry.Registry()
    yield* Layer.buildWithScope(Registry.serve(reg, bindHost, port, security, say), scope)
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
      if (mismatch !== undefined) return yield* Effect.die(new ClusterStartError({ message: mismatch }))
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
  )
  const clientFor = yield* Effect.provide(TesseraWorker.client, ctx)
  const registryAt = postgres !== undefined
    ? `runners registered in PostgreSQL at ${hidePassword(options.storage!.postgres)}`
    : `scheduler registry at ${bindHost}:${port}`
  const host = hostname()
  const heartbeat = options.heartbeat ?? 1
  const heartbeatTimeout = options.heartbeatTimeout ?? 10

  const workers = new Map<string, WorkerView>()
  /** large literal arguments, sent to each worker once (literals.ts) */
  const literalPrefix = `~tessera/lit/${Math.floor(Math.random() * 2 ** 40).toString(36)}`
  // the scheduler's dashboard, when it has one: this driver's records forwarded there
  // (asked once; without one nothing of this runs)
  const forward: Forwarder | undefined = yield* startForwarding(link, {
    run: literalPrefix.slice(literalPrefix.lastIndexOf("/") + 1),
    driver: `pid ${process.pid} on ${hostname()}`
  })
  const literalBook = new LiteralBook(literalPrefix)
  let current: Queue.Queue<Msg> | null = null
  const notify = (m: Msg) => {
    if (current !== null) Queue.offerUnsafe(current, m)
  }

  /** Marks a worker dead: unregisters it and wakes whoever waits on it. */
  const markDead = (w: WorkerView) =>
    Effect.gen(function*() {
      if (!w.alive) return
      w.alive = false
      literalBook.forgetWorker(w.name)
      yield* Effect.ignore(storage.unregister(w.runner))
      yield* Deferred.succeed(w.lost, undefined)
      notify({ kind: "dead", w: w.name })
    })

  /** The fastest of `n` Time round trips: offset and uncertainty (half its round trip). */
  const sampleClock = (w: WorkerView, n: number) =>
    Effect.gen(function*() {
      let best = Infinity
      for (let k = 0; k < n; k++) {
        const t0 = EngineClock.nowSeconds()
        const tw = yield* clientFor(w.name).Time({ driver: literalPrefix, every: heartbeat })
        const t1 = EngineClock.nowSeconds()
        const rtt = t1 - t0
        if (rtt < best) {
          best = rtt
          if (rtt / 2 <= w.uncertainty || k === 0 && w.uncertainty === Infinity) {
            w.offset = tw - (t0 + t1) / 2
            w.uncertainty = rtt / 2
          }
        }
      }
      w.lastSeen = EngineClock.nowSeconds()
    })

  let nextIndex = 0
  /** since when (Date.now()) the registry has not answered, if it does not */
  let registryDown: number | undefined
  /** Adds workers that registered since the last look; pings the known ones. */
  const refresh = (ping: boolean) =>
    Effect.gen(function*() {
      // a registry that does not answer (a killed scheduler) is said by the compute that
      // finds no worker (waitForWorker), naming it: not a defect
      const listed = yield* Effect.exit(Effect.timeout(storage.getRunners, "5 seconds"))
      if (Exit.isFailure(listed)) {
        registryDown ??= Date.now()
        if (ping) yield* pingAll
        return
      }
      registryDown = undefined
      const runners = listed.value
      for (const [runner] of runners) {
        const name = runner.groups[0]
        if (name === undefined || workers.has(name)) continue
        const address = `${runner.address.host}:${runner.address.port}`
        const w: WorkerView = {
          name,
          address,
          runner: runner.address,
          index: nextIndex++,
          host: runner.address.host,
          threads: 1,
          pid: 0,
          alive: false,
          offset: 0,
          uncertainty: Infinity,
          lastSeen: 0,
          lost: Deferred.makeUnsafe<void>()
        }
        workers.set(name, w)
        const ok = yield* Effect.exit(Effect.timeout(
          Effect.gen(function*() {
            const info = yield* clientFor(name).Info()
            w.host = info.host
            w.threads = info.threads
            w.pid = info.pid
            yield* sampleClock(w, 8)
          }),
          "10 seconds"
        ))
        if (Exit.isSuccess(ok)) {
          w.alive = true
          notify({ kind: "joined" })
        } else {
          // registered but not answering: gone without unregistering (killed), or
          // unreachable from here; either way no use to this scheduler
          workers.delete(name)
          nextIndex--
          yield* Effect.ignore(storage.unregister(runner.address))
        }
      }
      if (ping) yield* pingAll
    })
  const pingAll = Effect.suspend(() =>
    Effect.forEach(
      [...workers.values()].filter((w) => w.alive),
      (w) =>
        Effect.exit(Effect.timeout(sampleClock(w, 1), `${heartbeatTimeout} seconds`)).pipe(
          Effect.flatMap((e) => Exit.isFailure(e) ? markDead(w) : Effect.void)
        ),
      { concurrency: "unbounded", discard: true }
    )
  )

  // local worker processes
  const locals: Array<LocalWorker> = []
  // a child process's exit (a Node callback) marks its worker dead with this scope's services
  const runFork = Effect.runForkWith(yield* Effect.context<never>())
  const onExit = (lw: LocalWorker) => {
    const name = [...workers.values()].find((w) => w.address === `${lw.options.listen.host}:${lw.options.listen.port}`)
    if (name !== undefined) runFork(markDead(name))
  }
  const addLocal = Effect.promise(async () => {
    const k = locals.length
    const lw = await spawnWorker({
      ...(postgres !== undefined ? { postgres } : { scheduler: { host: bindHost, port } }),
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
      ...(options.clockShift?.[k] !== undefined ? { clockShift: options.clockShift[k] } : {}),
      ...(options.hostNames?.[k] !== undefined ? { hostName: options.hostNames[k] } : {}),
      ...(options.preload !== undefined ? { preload: options.preload } : {}),
      ...(options.maxHeldBytes !== undefined ? { maxHeldBytes: options.maxHeldBytes } : {})
    }, onExit, security)
    locals.push(lw)
  })
  yield* Effect.addFinalizer(() => Effect.suspend(() => stopWorkers(locals)))
  for (let k = 0; k < (options.local ?? 0); k++) yield* addLocal
  const minWorkers = options.minWorkers ?? options.local ?? 0
  const began = Date.now()
  const deadline = began + (options.startTimeout ?? 60) * 1000
  let said = began
  while (aliveCount(workers) < minWorkers) {
    if (Date.now() > deadline || locals.some((l) => l.process.exitCode !== null)) {
      const errs = locals.map((l) => l.stderr()).filter((e) => e !== "").join("\n")
      const where = remote !== undefined ? ` at scheduler ${remote.host}:${remote.port}` : ""
      return yield* Effect.die(
        new ClusterStartError({
          message: `cluster: ${aliveCount(workers)} of ${minWorkers} workers started${where} within ${options.startTimeout ?? 60} s${errs !== "" ? `:\n${errs}` : ""}`
        })
      )
    }
    if (Date.now() - said >= 5000) {
      said = Date.now()
      options.onWaiting?.(aliveCount(workers), minWorkers, Math.round((said - began) / 1000))
    }
    // bounded: a scheduler that stops answering must not hold the start past its deadline
    yield* Effect.ignore(Effect.timeout(refresh(false), "5 seconds"))
    yield* Effect.sleep("50 millis")
  }
  // membership and liveness, for the scope's life
  yield* Effect.forkIn(
    Effect.forever(Effect.andThen(Effect.sleep(`${heartbeat} seconds`), refresh(true))),
    scope
  )
  // PostgreSQL's runner health: a worker whose heartbeats stopped drops out of the list
  // (after shardLockExpiration), dead without waiting for a ping to time out
  if (postgres !== undefined) yield* Effect.forkIn(Effect.forever(Effect.andThen(Effect.sleep(`${heartbeat} seconds`), Effect.gen(function*() {
    const rs = yield* Effect.orElseSucceed(storage.getRunners, () => null)
    const listed = new Set(rs?.map(([r]) => r.groups[0]))
    if (rs !== null) for (const w of workers.values()) if (w.alive && !listed.has(w.name)) yield* markDead(w)
  }))), scope)

  // the driver's resource monitor measures the worker processes on its host with itself
  const unregisterPids = WorkerPlugin.registerHostProcesses(() =>
    [...workers.values()].filter((w) => w.alive && w.host === host).map((w) => w.pid)
  )
  const plugins = new Map<string, PluginState>()
  /** Closes plugins on every worker they started on (flushing their files). */
  const closePlugins = (ps: ReadonlyArray<PluginState>) =>
    Effect.forEach(
      [...workers.values()].filter((w) => w.alive && ps.some((p) => p.started.has(w.name))),
      (w) => {
        const ids = ps.filter((p) => p.started.has(w.name)).map((p) => p.plugin.id)
        for (const p of ps) p.started.delete(w.name)
        const blob = encodeValue({ start: [], close: ids, offset: w.offset } satisfies PluginsRequest)
        return Effect.ignore(Effect.timeout(clientFor(w.name).Plugins({ blob }), "30 seconds"))
      },
      { concurrency: "unbounded", discard: true }
    )
  // before the local workers are stopped: long-lived workers drop everything of this
  // driver (its literals, its computes' results: a release still in flight when the
  // driver exits right after its compute is not needed)
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() =>
      Effect.forEach(
        [...workers.values()].filter((w) => w.alive),
        (w) => Effect.ignore(Effect.timeout(clientFor(w.name).Bye({ driver: literalPrefix }), "2 seconds")),
        { concurrency: "unbounded", discard: true }
      )
    )
  )
  // before the local workers are stopped (finalizers run in reverse): their files flushed
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      unregisterPids()
      const ps = [...plugins.values()]
      for (const p of ps) p.detach()
      return closePlugins(ps)
    })
  )
  /** Whether every plugin of `hooked` runs on worker `name` already. */
  const pluginsStarted = (hooked: ReadonlyArray<Callbacks>, name: string): boolean =>
    hooked.every((cb) => plugins.get(cb.workerPlugin!.id)?.started.has(name) === true)
  /** The plugins of `job`'s hooks, each started on every live worker (the host's monitor first). */
  const startPlugins = (job: Job, ws: ReadonlyArray<WorkerView>) =>
    Effect.gen(function*() {
      const ps: Array<PluginState> = []
      for (const cb of pluginHooks(job)) {
        const plugin = cb.workerPlugin!
        let p = plugins.get(plugin.id)
        if (p === undefined) {
          const state: PluginState = { plugin, started: new Set(), hosts: new Set(), detach: () => {} }
          // the hook's owner closes it (a profiler layer closing): flushed on every worker
          state.detach = WorkerPlugin.attach(cb, {
            close: () => {
              state.detach()
              plugins.delete(plugin.id)
              return Effect.runPromise(closePlugins([state]))
            }
          })
          plugins.set(plugin.id, p = state)
        }
        ps.push(p)
      }
      for (const p of ps) {
        const todo = ws.filter((w) => w.alive && !p.started.has(w.name))
        // per host without the driver, the first worker measures it and starts its files
        const first = new Map<string, WorkerView>()
        for (const w of todo) {
          if (w.host === host || p.hosts.has(w.host)) continue
          const f = first.get(w.host)
          if (f === undefined || w.index < f.index) first.set(w.host, w)
        }
        const start = (w: WorkerView) => {
          const monitor = first.get(w.host) === w
          const blob = encodeValue({ start: [{ plugin: p.plugin, monitor, truncate: monitor }], close: [], offset: w.offset } satisfies PluginsRequest)
          return Effect.exit(clientFor(w.name).Plugins({ blob })).pipe(Effect.flatMap((e) => {
            // unreachable: lost like any worker that does not answer
            if (Exit.isFailure(e)) return markDead(w)
            if (e.value !== null) {
              return Effect.fail(EngineError.workerPluginFailed(w.name, `${p.plugin.module}#${p.plugin.name}`, e.value))
            }
            p.started.add(w.name)
            p.hosts.add(w.host)
            return Effect.void
          }))
        }
        yield* Effect.forEach(first.values(), start, { concurrency: "unbounded", discard: true })
        yield* Effect.forEach(todo.filter((w) => first.get(w.host) !== w), start, { concurrency: "unbounded", discard: true })
      }
      return ps.map((p) => p.plugin.id)
    })

  let busy = () => 0
  const built = EngineClock.nowSeconds()
  let computes = 0
  /** seconds per task, smoothed over the batches of every compute (batch sizing) */
  let perTask = BATCH_SECONDS / 16
  /**
   * seconds a batch's trip costs beyond its work (its wall time less the seconds it ran on
   * the worker's pool), smoothed; until a batch has come back, the fastest `Time` ping
   */
  let tripCost = -1
  /** seconds per task by kernel (`module#name`), smoothed: what fusing wider would cost */
  const kernelCost = new Map<string, number>()
  const kernelOf = (sp: { readonly kernel: Kernel.KernelRef }) => `${sp.kernel.module}#${sp.kernel.name}`
  const computeBase = Math.floor(Math.random() * 2 ** 40) * 1024
  const transferCbs: Array<(t: TransferInfo) => void> = []

  const execute = (job: Job): Effect.Effect<void, EngineError.ComputeError> =>
    Effect.scoped(Effect.gen(function*() {
      const inner = yield* Effect.scope
      // unique across schedulers too: a long-lived worker serves one driver after another
      const compute = computeBase + ++computes
      const s = job.state
      const g = job.graph
      const queue = yield* Queue.unbounded<Msg>()
      current = queue
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        if (current === queue) current = null
      }))
      literalBook.beginCompute()
      /** the driver's outputs: their values come back with the batch that makes them */
      const isRequested = new Uint8Array(g.size)
      for (const i of s.requested) isRequested[i] = 1
      // hooks with a worker plugin get the workers' records there, not here
      const hooked = pluginHooks(job)
      const pluginIds = hooked.length > 0 ? yield* startPlugins(job, [...workers.values()]) : []
      const local = (cbs: ReadonlyArray<Callbacks>) => cbs.filter((c) => !hooked.includes(c))
      // the driver's records name a worker's rows as its worker plugins do (workerRow)
      const rowNames = new Map<number, string>()
      const rowName = (h: string, wid: number): string => {
        let r = rowNames.get(wid)
        if (r === undefined) {
          const v = [...workers.values()].find((x) => x.index === Math.floor(wid / STRIDE))
          rowNames.set(wid, r = v !== undefined ? workerRow(v.host, v.address, v.pid, wid) : threadId(h, wid))
        }
        return r
      }
      // the scheduler's dashboard takes the records the driver's own hooks see
      const fwd = forward !== undefined && !forward.stopped ? [forward.callbacks] : []
      const view: Job = hooked.length === 0 && fwd.length === 0
        ? { ...job, rowName }
        : {
          ...job,
          rowName,
          taskCbs: [...local(job.taskCbs), ...fwd],
          memoryCbs: [...local(job.memoryCbs), ...fwd],
          transferCbs: [...local(job.transferCbs), ...fwd]
        }
      // the task records come back only for the driver's own task and memory callbacks
      // (those no worker plugin records): with none, a profiled batch's reply leaves them out
      const localRecords = view.taskCbs.length > 0 || view.memoryCbs.length > 0
      const profiled = job.profile || fwd.length > 0
      const book = profiled && localRecords ? new MemoryBook(view, STRIDE * workers.size, host) : null
      if (fwd.length > 0) {
        const id = forward!.begin(g, s)
        yield* Effect.addFinalizer((exit) => Effect.sync(() => forward!.end(id, Exit.isFailure(exit))))
      }
      const releases = new Map<string, Array<string>>()
      /**
       * What runs where (readiness, placement by inputs held, fusion, batch sizes, releases,
       * recovery): the dispatcher decides, this loop carries it out over RPC. A worker is
       * its slot `index`. Made after the MemoryBook (it chains the state's onRelease).
       */
      const d = new Dispatcher(s, {
        batchSeconds: BATCH_SECONDS,
        maxBatch: BATCH_MAX,
        maxInflight: MAX_INFLIGHT,
        initialTaskSeconds: perTask,
        smoothing: 0.3,
        maxRetries: 0,
        shared: false,
        fuseLimit: BATCH_MAX,
        fusable: (t, member) => !mixedRefs(t, member),
        fuseWidth: (idle) => widthFor(idle),
        taskCost: (t) => kernelCost.get(kernelOf(g.specs[t]!)) ?? BATCH_SECONDS / 16
      })
      const alive = () => [...workers.values()].filter((w) => w.alive)
      /** the worker of dispatcher slot `index` */
      const workerAt = (index: number): WorkerView | undefined => {
        for (const w of workers.values()) if (w.index === index) return w
        return undefined
      }
      /** every live worker takes work (joining is idempotent for one already in) */
      const joinAlive = () => {
        for (const w of alive()) d.join(w.index)
      }
      const now = EngineClock.nowSeconds()
      for (const w of alive()) {
        for (const cb of job.clockCbs) {
          const c: ClockRecord = {
            timestamp: now,
            host: w.host,
            threadId: rowFor(cb, w),
            worker: w.name,
            offset: w.offset,
            uncertainty: w.uncertainty
          }
          cb.clock!(c)
        }
      }
      const isAlive = (name: string) => workers.get(name)?.alive === true
      busy = () => {
        let n = 0
        for (const w of workers.values()) if (w.alive && d.inflight(w.index) > 0) n++
        return n
      }
      /** the live workers holding task `i`'s result */
      const holderNames = (i: number): Array<string> => {
        const out: Array<string> = []
        for (const h of d.holdersOf(i)) {
          const w = workerAt(h)
          if (w !== undefined && w.alive) out.push(w.name)
        }
        return out
      }
      let outstanding = 0
      /** `LiteralsMissing` answers this compute (a batch overtaken, a worker restarted) */
      let literalRetries = 0

      const send = (kind: "run" | "recover", w: WorkerView, batch: number, tasks: ReadonlyArray<number>, profile: boolean) => {
        const inBatch = new Set(tasks)
        const inputs = new Map<string, ReadonlyArray<string>>()
        for (const i of tasks) {
          for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) {
            const dep = g.depList[j]!
            if (inBatch.has(dep)) continue
            const hs = holderNames(dep)
            inputs.set(g.keys[dep]!, hs.includes(w.name) ? [w.name] : hs)
          }
        }
        const want: Array<string> = []
        for (const i of tasks) if (isRequested[i]) want.push(g.keys[i]!)
        const literals = new Map<string, unknown>()
        const drop = literalBook.takeDropped(w.name)
        // this worker's pending releases travel with the batch (one message, not two)
        const release = releases.get(w.name)
        releases.delete(w.name)
        const req: RunRequest = {
          compute,
          driver: literalPrefix,
          profile,
          tasks: tasks.map((i) => {
            const sp = g.specs[i]!
            return {
              key: sp.key,
              module: sp.kernel.module,
              name: sp.kernel.name,
              args: literalBook.prepare(sp.args, w.name, literals),
              ...(sp.output !== undefined ? { output: sp.output } : {}),
              ...(sp.stage !== undefined ? { stage: sp.stage } : {})
            }
          }),
          inputs: [...inputs],
          ...(literals.size > 0 ? { literals: [...literals] } : {}),
          ...(drop.length > 0 ? { drop } : {}),
          ...(want.length > 0 ? { want } : {}),
          ...(release !== undefined ? { release } : {}),
          ...(kind === "run" && pluginIds.length > 0 ? { trace: runTrace(w, tasks, inputs) } : {}),
          ...(profile && !localRecords ? { recs: false } : {})
        }
        let blob: Uint8Array
        try {
          blob = encodeValue(req)
        } catch (e) {
          // an argument the wire cannot carry (a function, ...): the task named, never sent
          return Effect.fail(notSendable(g, tasks, e))
        }
        outstanding++
        const sent = performance.now()
        return Effect.forkIn(
          clientFor(w.name).Run({ blob }).pipe(
            Effect.raceFirst(Effect.andThen(Deferred.await(w.lost), Effect.fail("worker lost" as const))),
            Effect.exit,
            Effect.flatMap((exit) => Queue.offer(queue, { kind, w: w.name, batch, tasks, exit, wall: (performance.now() - sent) / 1000 }))
          ),
          inner
        )
      }

      /** What `w` needs to record a batch for the plugins (see protocol.ts `RunTrace`). */
      const runTrace = (w: WorkerView, tasks: ReadonlyArray<number>, inputs: ReadonlyMap<string, ReadonlyArray<string>>): RunTrace => {
        const rows = new Map<string, string>()
        for (const hs of inputs.values()) {
          for (const h of hs) {
            const v = workers.get(h)
            if (v !== undefined) rows.set(h, workerRow(v.host, v.address, v.pid, v.index * STRIDE))
          }
        }
        return {
          plugins: pluginIds,
          index: w.index,
          offset: w.offset,
          tasks: tasks.map((i) => [...taskLineage(job, i), g.specs[i]!.stage ?? ""] as const),
          inputs: [...inputs.keys()].map((k) => [k, execKeyOf(job, g.index.get(k)!)] as const),
          rows: [...rows],
          peers: [...workers.values()].filter((v) => v.alive && v !== w && v.host === w.host).map((v) => v.pid)
        }
      }

      /**
       * True when a list argument of `t` (`TaskGraph.refs`) names tasks both in the batch
       * (flagged in `member`) and outside it: the worker's batch graph cannot mix results
       * it makes with fetched values in one list, so `t` is not fused (it waits for its
       * own round).
       */
      const mixedRefs = (t: number, member: Uint8Array) => {
        const plan = g.argPlan[t]
        if (plan === null || plan === undefined) return false
        for (const slot of plan) {
          if (typeof slot === "number") continue
          let inside = 0
          for (const x of slot) inside += member[x]!
          if (inside > 0 && inside < slot.length) return true
        }
        return false
      }

      /**
       * The seconds of work fusing may add to a batch beyond continuing its lines, while
       * `idle` workers get nothing this round: fusing tasks of w seconds in all saves a
       * round trip but runs them on one worker, where spread they would finish about
       * w·idle/(idle+1) sooner; so fuse while that is under the trip's cost. A task's
       * seconds are its kernel's measured so far (unknown: `BATCH_SECONDS / 16`). No idle
       * worker: no limit.
       */
      const widthFor = (idle: number): number => {
        if (idle === 0) return Infinity
        if (tripCost < 0) {
          // no batch back yet: the fastest ping of the live workers
          let ping = Infinity
          for (const w of alive()) ping = Math.min(ping, 2 * w.uncertainty)
          tripCost = Number.isFinite(ping) ? ping : 0
        }
        return tripCost * (idle + 1) / idle
      }

      /**
       * Carries out the dispatcher's instructions: batches sent (`pretask` for each of a
       * batch's tasks; a worker that joined since the compute began starts its plugins
       * first), releases queued for their workers (they ride with the next batch, or
       * `flushReleases`).
       */
      const carryOut = Effect.gen(function*() {
        for (const x of d.take()) {
          if (x._tag === "Finish") continue
          const w = workerAt(x.slot)
          if (w === undefined || !w.alive) continue
          if (x._tag === "Release") {
            for (const i of x.tasks) push(releases, w.name, g.keys[i]!)
            continue
          }
          const tasks = [...x.tasks]
          if (x.recover) {
            yield* send("recover", w, x.batch, tasks, false)
            continue
          }
          if (job.pre.length > 0) for (const i of tasks) pre(job, i)
          // checked here, not in startPlugins: an Effect per batch for nothing to start was measurable (docs/engine.md)
          if (hooked.length > 0 && !pluginsStarted(hooked, w.name)) yield* startPlugins(job, [w])
          yield* send("run", w, x.batch, tasks, profiled)
        }
      })

      const fail = (e: EngineError.ComputeError) => Effect.fail(e)

      const handle = (m: Msg): Effect.Effect<void, EngineError.ComputeError> =>
        Effect.gen(function*() {
          if (m.kind === "joined") return joinAlive()
          if (m.kind === "dead") {
            // its batches go back to ready; results only it held are recomputed
            const dead = workers.get(m.w)
            if (dead !== undefined) d.lose(dead.index)
            return
          }
          outstanding--
          const w = workers.get(m.w)!
          if (Exit.isFailure(m.exit)) {
            d.lose(w.index)
            yield* markDead(w)
            return
          }
          const reply = decodeValue<RunReply>(m.exit.value)
          for (const t of reply.transfers) {
            const rec: TransferInfo = { ...t, start: t.start - w.offset, stop: t.stop - w.offset, worker: m.w }
            for (const cb of transferCbs) cb(rec)
            if (view.transferCbs.length > 0) {
              // the sender as a row of the trace (like the receiver's), so transfers join the tasks
              const sender = workers.get(t.peer)
              const tr: TransferRecord = {
                keys: t.keys,
                bytes: t.bytes,
                host: w.host,
                threadId: workerRow(w.host, w.address, w.pid, w.index * STRIDE),
                peer: sender !== undefined ? workerRow(sender.host, sender.address, sender.pid, sender.index * STRIDE) : t.peer,
                start: rec.start,
                stop: rec.stop,
                serialize: t.serialize,
                deserialize: t.deserialize
              }
              for (const cb of view.transferCbs) cb.transfer!(tr)
            }
            for (const k of t.keys) {
              const i = g.index.get(k)
              if (i !== undefined) d.arrived(w.index, i)
            }
          }
          const values = reply.values
          // batch sizing by what the tasks cost on the worker, not by the round trip (a
          // loaded machine's latency would shrink batches and add round trips)
          if (m.kind === "run" && reply.done.length > 0) {
            const each = reply.seconds / reply.done.length
            perTask = 0.7 * perTask + 0.3 * each
            // the batch's seconds shared evenly by its kernels' tasks (exact for one kernel)
            const seen = new Set<string>()
            for (const d of reply.done) {
              const kn = kernelOf(g.specs[g.index.get(d.key)!]!)
              if (seen.has(kn)) continue
              seen.add(kn)
              const c = kernelCost.get(kn)
              kernelCost.set(kn, c === undefined ? each : 0.7 * c + 0.3 * each)
            }
            const trip = Math.max(0, m.wall - reply.seconds)
            tripCost = tripCost < 0 ? trip : 0.7 * tripCost + 0.3 * trip
          }
          const rec = newRows(1)
          const recs = reply.recs
          // each completed task by its position in the batch (what the dispatcher knows it by)
          const position = new Map<number, number>()
          for (let q = 0; q < m.tasks.length; q++) position.set(m.tasks[q]!, q)
          for (let j = 0; j < reply.done.length; j++) {
            const done = reply.done[j]!
            const i = g.index.get(done.key)!
            const q = position.get(i)!
            // a recomputed result, or one made twice (its copy here released): the dispatcher sorts it out
            if (m.kind === "recover" || s.finished[i]) {
              d.taskDone(w.index, m.batch, q, REMOTE, done.nbytes)
              continue
            }
            const workerId = w.index * STRIDE + done.thread
            if (book !== null) {
              const p = j * TIMING_FLOATS
              // a task the worker did not record: no timings (phases at 0, amounts absent)
              if (recs !== undefined && hasRow(recs, p)) copyRow(recs, p, rec, 0, -w.offset)
              else rec.fill(NaN).fill(0, 0, CLOCK_FIELDS)
              record(view, book, i, undefined, workerId, w.host, rec, 0, "memory", {
                nbytes: done.nbytes,
                chunks: done.chunks,
                shape: done.shape,
                dtype: done.dtype,
                type: done.type
              })
            }
            d.taskDone(w.index, m.batch, q, values !== undefined && Object.hasOwn(values, done.key) ? shareResult(values[done.key]) : REMOTE, done.nbytes)
            if (job.post.length > 0) post(job, i, undefined, workerId)
          }
          const err = reply.error
          // sent again, with the literals, by the next dispatch (or recovery)
          if (err?.tag === "LiteralsMissing") {
            literalBook.forget(m.w, err.lost)
            // each answer makes the next batch carry the values: a worker that still lacks
            // them after that many sends is not going to get them
            if (++literalRetries > LITERAL_RETRIES) {
              const reason = new EngineError.WorkerCrashed({
                key: err.key,
                attempts: literalRetries,
                message: `${m.w} still lacks literal arguments it was sent (${err.lost.join(", ")}) after ${LITERAL_RETRIES} sends`
              })
              return yield* fail(new EngineError.ComputeError({ reason, message: reason.message }))
            }
          }
          if (err?.tag === "InputLost") {
            // every holder it was sent to failed to give these: they hold them no more
            // (else the batch would come back to the same answer forever)
            for (const k of err.lost) {
              const i = g.index.get(k)
              if (i !== undefined) d.dataLost(i)
            }
          }
          // what did not complete goes back to ready (a recover batch: what is still lost, again)
          d.batchDone(w.index, m.batch, m.kind === "run" && reply.done.length > 0 ? reply.seconds : -1)
          if (err === null) return
          if (TASK_FAILURES.has(err.tag)) {
            const e = toComputeError(err)
            // the failed task's record, as the pool writes it: state erred, its error and traceback
            const i = g.index.get(err.key)
            if (book !== null && err.erred !== undefined && i !== undefined) {
              copyRow(err.erred.rec, 0, rec, 0, -w.offset)
              record(view, book, i, undefined, w.index * STRIDE + err.erred.thread, w.host, rec, 0, "erred", erredInfo, {
                error: e.message,
                traceback: err.erred.traceback
              })
            }
            return yield* fail(e)
          }
        })

      const flushReleases = Effect.gen(function*() {
        for (const [name, keys] of releases) {
          releases.delete(name)
          if (!isAlive(name)) continue
          yield* Effect.forkIn(Effect.ignore(clientFor(name).Release({ compute, keys })), scope)
        }
      })

      const waitForWorker = Effect.gen(function*() {
        const until = (yield* Clock.currentTimeMillis) + (options.noWorkerWait ?? 5) * 1000
        while (alive().length === 0) {
          if ((yield* Clock.currentTimeMillis) > until) {
            return yield* fail(EngineError.noWorkers(
              registryDown !== undefined && postgres === undefined
                ? `the cluster has no live worker: its scheduler at ${bindHost}:${port} does not answer (for ${
                  Math.round((Date.now() - registryDown) / 1000)
                } s; stopped or killed?), so its workers cannot be found; start it again (tessera scheduler --port ${port}) and its workers`
                : registryDown !== undefined
                ? `the cluster has no live worker: ${registryAt} does not answer (for ${Math.round((Date.now() - registryDown) / 1000)} s)`
                : `the cluster has no live worker (${registryAt}, waited ${options.noWorkerWait ?? 5} s)`
            ))
          }
          yield* Effect.sleep("50 millis")
          yield* refresh(false)
        }
      })

      // the workers alive when the compute ends (a worker may have joined since it began)
      const cancelAll = Effect.suspend(() =>
        Effect.forEach(alive(), (w) => Effect.ignore(Effect.timeout(clientFor(w.name).Cancel({ compute }), "2 seconds")), {
          concurrency: "unbounded",
          discard: true
        })
      )

      const loop = Effect.gen(function*() {
        if (s.total > 0) yield* waitForWorker
        joinAlive()
        d.start()
        while (!State.isDone(s)) {
          yield* carryOut
          // what the batches did not carry to their workers
          yield* flushReleases
          if (outstanding === 0) {
            if (alive().length === 0) {
              yield* waitForWorker
              joinAlive()
              continue
            }
            if (s.readyCount === 0 && !d.hasLost()) {
              return yield* Effect.die(new Error("cluster scheduler stalled: nothing ready, nothing running"))
            }
            d.dispatch()
            yield* carryOut
            if (outstanding === 0) {
              yield* Effect.sleep("20 millis")
              continue
            }
          }
          const m = yield* Queue.take(queue)
          yield* handle(m)
          for (const more of yield* Queue.clear(queue)) yield* handle(more)
        }
        // the batch-size estimate outlives the compute
        perTask = d.taskSeconds
        // the requested results, from their holders
        for (let attempt = 0;; attempt++) {
          const byHolder = new Map<string, Array<number>>()
          for (const i of s.requested) {
            if (s.cache[i] !== REMOTE) continue
            const h = holderNames(i)[0]
            if (h !== undefined) push(byHolder, h, i)
          }
          const want = s.requested.filter((i) => s.cache[i] === REMOTE).length
          if (want === 0) break
          if (byHolder.size === 0 || attempt > 20) {
            // lost ones are being recomputed (the dispatcher keeps results on workers recovered until gathered)
            yield* waitForWorker
            joinAlive()
            yield* carryOut
            if (outstanding > 0) yield* handle(yield* Queue.take(queue))
            yield* carryOut
            continue
          }
          yield* Effect.forEach(byHolder, ([name, idx]) =>
            Effect.gen(function*() {
              const got = yield* Effect.exit(clientFor(name).Get({ compute, keys: idx.map((i) => g.keys[i]!), from: "scheduler" }).pipe(
                Effect.raceFirst(Effect.andThen(Deferred.await(workers.get(name)!.lost), Effect.fail("worker lost" as const)))
              ))
              if (Exit.isFailure(got)) return yield* markDead(workers.get(name)!)
              const values = decodeValue<Record<string, unknown>>(got.value.blob)
              for (const i of idx) if (Object.hasOwn(values, g.keys[i]!)) s.cache[i] = shareResult(values[g.keys[i]!])
            }), { concurrency: "unbounded", discard: true })
          for (const more of yield* Queue.clear(queue)) yield* handle(more)
          yield* carryOut
        }
        // nothing of this compute stays on the workers
        yield* carryOut
        for (let i = 0; i < g.size; i++) for (const h of holderNames(i)) push(releases, h, g.keys[i]!)
        yield* flushReleases
      })

      yield* loop.pipe(Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : cancelAll))
    }))

  const shape: ExecutorShape & { readonly cluster: ClusterHandle } = {
    kind: "cluster",
    get size() {
      return [...workers.values()].filter((w) => w.alive).reduce((n, w) => n + w.threads, 0)
    },
    host,
    execute,
    // workers with a batch of the running compute
    busyWorkers: () => busy(),
    startup: () => ({ built: [built, built], workers: [] }),
    cluster: {
      address: postgres !== undefined ? hidePassword(options.storage!.postgres) : `${bindHost}:${port}`,
      workers: () => [...workers.values()],
      locals: () => locals,
      addLocal,
      stats: Effect.forEach(
        [...workers.values()].filter((w) => w.alive),
        (w) => Effect.map(Effect.orDie(clientFor(w.name).Stats()), (st) => ({ name: w.name, ...st })),
        { concurrency: "unbounded" }
      ),
      onTransfer: (cb) => {
        transferCbs.push(cb)
        return () => {
          const k = transferCbs.indexOf(cb)
          if (k >= 0) transferCbs.splice(k, 1)
        }
      }
    }
  }
  return shape
})

/**
 * What the cluster executor exposes beyond `ExecutorShape`.
 *
 * @since 0.1.0
 * @internal
 */
export interface ClusterHandle {
  /** the registry's `host:port`, what `tessera worker --scheduler` takes */
  readonly address: string
  readonly workers: () => ReadonlyArray<WorkerView>
  readonly locals: () => ReadonlyArray<LocalWorker>
  /** starts one more local worker process (it joins within a heartbeat) */
  readonly addLocal: Effect.Effect<void>
  /** each live worker's counters (see protocol.ts `Stats`) */
  readonly stats: Effect.Effect<ReadonlyArray<WorkerStats>>
  /** calls `cb` with each peer transfer of every compute; returns the unsubscribe */
  readonly onTransfer: (cb: (t: TransferInfo) => void) => () => void
}

/** A worker plugin as this scheduler runs it: the workers and hosts it started on. */
interface PluginState {
  readonly plugin: WorkerPlugin.WorkerPlugin
  readonly started: Set<string>
  /** hosts where it started (their files are started; later workers there append) */
  readonly hosts: Set<string>
  detach: () => void
}

/** The hooks of `job` that carry a worker plugin. */
const pluginHooks = (job: Job): Array<Callbacks> => {
  const out: Array<Callbacks> = []
  for (const cb of [...job.taskCbs, ...job.memoryCbs, ...job.transferCbs, ...(job.sampler !== undefined ? [job.sampler] : [])]) {
    if (cb.workerPlugin !== undefined && !out.includes(cb)) out.push(cb)
  }
  return out
}

const aliveCount = (ws: ReadonlyMap<string, WorkerView>): number => {
  let n = 0
  for (const w of ws.values()) if (w.alive) n++
  return n
}

const push = <K, V>(m: Map<K, Array<V>>, k: K, ...v: Array<V>): void => {
  const a = m.get(k)
  if (a === undefined) m.set(k, v)
  else a.push(...v)
}

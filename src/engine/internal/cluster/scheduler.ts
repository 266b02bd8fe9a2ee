/**
 * The cluster executor's scheduler, in the driver's process: the shell around the
 * dispatcher (dispatch/dispatcher.ts, the state machine every executor shares; a worker
 * is its slot `index`), which decides what runs where — placement by inputs held, fusion,
 * batch sizes by the costs replies teach (replies.ts), releases, recovery — while this
 * module carries its instructions out over RPC (batchRequest.ts: what a batch carries)
 * and reports replies, joins and deaths to it. Results stay on the workers that made
 * them; workers fetch inputs from each other (dataPlane.ts); the requested ones come
 * back in the reply that makes them, or by `Get` at the end.
 *
 * The rest is by concept: the registry and the client to the workers (storage.ts), who
 * is in, alive, and each one's clock offset (members.ts), worker plugins
 * (driverPlugins.ts), local worker processes (localCluster.ts), large literal arguments
 * (literals.ts), a standalone scheduler's dashboard (feed.ts). A compute fails with
 * `NoWorkers` when no worker is alive for `noWorkerWait`; a dead worker's batches are
 * requeued and results only it held recomputed elsewhere.
 *
 * Leaves out: work stealing, and TaskRecords for recomputed tasks (the trace shows each
 * key once, from its first successful run).
 *
 * @since 0.1.0
 * @internal
 */
import { Deferred, Effect, Exit, Queue } from "effect"
import { hostname } from "node:os"
import * as EngineClock from "../../EngineClock.ts"
import * as EngineError from "../../EngineError.ts"
import { hidePassword } from "../../Cluster.ts"
import type { ClusterOptions, TransferInfo } from "../../Cluster.ts"
import type { ExecutorShape } from "../../Executor.ts"
import type { Callbacks } from "../../Hooks.ts"
import * as State from "../../State.ts"
import type { Job } from "../job.ts"
import { MemoryBook, post, pre } from "../job.ts"
import { shareResult } from "../kernels.ts"
import { newRows } from "../taskTiming.ts"
import { Dispatcher } from "../dispatch/dispatcher.ts"
import { type BatchContext, batchRequest, mixedRefs } from "./batchRequest.ts"
import { makeDriverPlugins, pluginHooks } from "./driverPlugins.ts"
import { type Forwarder, startForwarding } from "./feed.ts"
import { LiteralBook } from "./literals.ts"
import { startLocals } from "./localCluster.ts"
import { type ClusterHandle, makeMembers, type WorkerView } from "./members.ts"
import { decodeValue, encodeValue, ROW_STRIDE } from "./protocol.ts"
import type { RunReply } from "./protocol.ts"
import { BatchCosts, literalsNotTaken, recordDone, recordErred, reportTransfers, rowNamer, rowOf } from "./replies.ts"
import { connect, noWorkerMessage } from "./storage.ts"
import { notSendable, TASK_FAILURES, toComputeError } from "./workerErrors.ts"

/** the thread id stride between worker processes (workerId = index * STRIDE + thread) */
const STRIDE = ROW_STRIDE
/** batches in flight per worker: work stays spread, and joiners find some */
const MAX_INFLIGHT = 2
/** tasks in a batch at most, and the seconds of work a batch aims at (by the costs measured) */
const BATCH_MAX = 512
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

/** A result that lives on a worker (what `state.cache` holds until the final gather). */
const REMOTE = Symbol.for("tessera/cluster/remote")

/**
 * Starts the scheduler (and the local workers) in the current scope.
 *
 * @since 0.1.0
 * @internal
 */
export const make = (options: ClusterOptions) => Effect.orDie(makeTyped(options))

/**
 * {@link make} with its expected failures typed (`Cluster.ClusterError`): a bad address
 * or storage URL, link security refused, the scheduler or PostgreSQL unreachable or
 * unusable, workers not joined within `startTimeout`.
 *
 * @since 0.1.0
 * @internal
 */
export const makeTyped = Effect.fnUntraced(function*(options: ClusterOptions) {
  const scope = yield* Effect.scope
  const connection = yield* connect(options)
  const { storage, clientFor, postgres, remote, bindHost, port, security, link } = connection
  const host = hostname()
  /** large literal arguments, sent to each worker once (literals.ts) */
  const literalPrefix = `~tessera/lit/${Math.floor(Math.random() * 2 ** 40).toString(36)}`
  // the scheduler's dashboard, when it has one: this driver's records forwarded there
  // (asked once; without one nothing of this runs)
  const forward: Forwarder | undefined = yield* startForwarding(link, {
    run: literalPrefix.slice(literalPrefix.lastIndexOf("/") + 1),
    driver: `pid ${process.pid} on ${host}`
  })
  const literalBook = new LiteralBook(literalPrefix)
  let current: Queue.Queue<Msg> | null = null
  const notify = (m: Msg) => {
    if (current !== null) Queue.offerUnsafe(current, m)
  }
  const members = makeMembers({
    storage,
    clientFor,
    driver: literalPrefix,
    heartbeat: options.heartbeat ?? 1,
    heartbeatTimeout: options.heartbeatTimeout ?? 10,
    forget: (w) => literalBook.forgetWorker(w.name),
    onDead: (w) => notify({ kind: "dead", w: w.name }),
    onJoined: () => notify({ kind: "joined" })
  })
  const { workers, markDead } = members

  // local worker processes, and the workers the start waits for
  const { locals, addLocal } = yield* startLocals({
    options,
    where: postgres !== undefined ? { postgres } : { scheduler: { host: bindHost, port } },
    security,
    members,
    at: remote !== undefined ? ` at scheduler ${remote.host}:${remote.port}` : ""
  })
  // membership and liveness, for the scope's life
  yield* members.watch(scope, postgres !== undefined)
  // before the local workers are stopped: long-lived workers drop everything of this
  // driver (its literals, its computes' results: a release still in flight when the
  // driver exits right after its compute is not needed)
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() =>
      Effect.forEach(
        members.alive(),
        (w) => Effect.ignore(Effect.timeout(clientFor(w.name).Bye({ driver: literalPrefix }), "2 seconds")),
        { concurrency: "unbounded", discard: true }
      )
    )
  )
  // closed before the Bye and the local workers' stop (finalizers run in reverse)
  const plugins = yield* makeDriverPlugins({ members, clientFor, host })

  let busy = () => 0
  const built = EngineClock.nowSeconds()
  let computes = 0
  /** what batches cost, learnt from their replies across computes (batch sizing, fusion) */
  const costs = new BatchCosts(BATCH_SECONDS / 16)
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
      const pluginIds = hooked.length > 0 ? yield* plugins.start(job, [...workers.values()]) : []
      const local = (cbs: ReadonlyArray<Callbacks>) => cbs.filter((c) => !hooked.includes(c))
      // the driver's records name a worker's rows as its worker plugins do (workerRow)
      const rowName = rowNamer(workers)
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
        initialTaskSeconds: costs.perTask,
        smoothing: 0.3,
        maxRetries: 0,
        shared: false,
        fuseLimit: BATCH_MAX,
        fusable: (t, member) => !mixedRefs(g, t, member),
        fuseWidth: (idle) => costs.widthFor(idle, alive),
        taskCost: (t) => costs.taskCost(g.specs[t]!.kernel)
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
      // a worker's first row, whether its worker plugin or the driver's process records it
      members.clocks(job.clockCbs, rowOf)
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

      const batches: BatchContext = { job, compute, driver: literalPrefix, literalBook, isRequested, releases, pluginIds, localRecords, holderNames, workers }
      const send = (kind: "run" | "recover", w: WorkerView, batch: number, tasks: ReadonlyArray<number>, profile: boolean) => {
        const req = batchRequest(batches, kind, w, tasks, profile)
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
          if (hooked.length > 0 && !plugins.started(hooked, w.name)) yield* plugins.start(job, [w])
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
          reportTransfers(reply, w, workers, transferCbs, view.transferCbs)
          for (const t of reply.transfers) {
            for (const k of t.keys) {
              const i = g.index.get(k)
              if (i !== undefined) d.arrived(w.index, i)
            }
          }
          const values = reply.values
          if (m.kind === "run" && reply.done.length > 0) costs.learn(g, reply, m.wall)
          const rec = newRows(1)
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
            if (book !== null) recordDone(view, book, reply, j, i, w, rec)
            d.taskDone(w.index, m.batch, q, values !== undefined && Object.hasOwn(values, done.key) ? shareResult(values[done.key]) : REMOTE, done.nbytes)
            if (job.post.length > 0) post(job, i, undefined, workerId)
          }
          const err = reply.error
          // sent again, with the literals, by the next dispatch (or recovery)
          if (err?.tag === "LiteralsMissing") {
            literalBook.forget(m.w, err.lost)
            const given = literalsNotTaken(m.w, err, ++literalRetries)
            if (given !== undefined) return yield* fail(given)
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
            if (book !== null && err.erred !== undefined && i !== undefined) recordErred(view, book, err.erred, i, w, e.message, rec)
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

      const waitForWorker = Effect.mapError(
        members.waitForWorker(options.noWorkerWait ?? 5, (down) => noWorkerMessage(connection, down, options.noWorkerWait ?? 5)),
        EngineError.noWorkers
      )

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
        costs.perTask = d.taskSeconds
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

const push = <K, V>(m: Map<K, Array<V>>, k: K, ...v: Array<V>): void => {
  const a = m.get(k)
  if (a === undefined) m.set(k, v)
  else a.push(...v)
}

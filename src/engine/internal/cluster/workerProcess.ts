/**
 * A Tessera worker process: an Effect Cluster runner (`NodeClusterSocket`) that hosts
 * one `TesseraWorker` entity, named after the runner. It keeps the results it makes in
 * its own store, fetches inputs it lacks from the peers that hold them (worker to
 * worker, over the data plane: a plain TCP socket per peer, dataPlane.ts, whose port a
 * peer learns once by `DataPort` on the entity), and runs each batch on its own worker-thread pool
 * (`Executor.makeWorkers`, `threads` threads) through the same job code as one process.
 *
 * Runner storage is the scheduler's registry or PostgreSQL (registry.ts); messages are volatile
 * (`MessageStorage.layerNoop`): the scheduler keeps the one state record and sends work
 * again when a worker is lost.
 *
 * `clockShift` (seconds, tests only) is added to every timestamp the worker reports, as
 * if its host clock were off; `hostName` (tests only) is the host it reports, as if it
 * ran on another host.
 *
 * Worker plugins (the profiler layers' per-host files) run here, fed by `PluginRunner`
 * (pluginRunner.ts) with this worker's records.
 *
 * What it holds is counted (`HeldStore`): said to the scheduler's registry when it
 * changes, bounded by `maxHeldBytes` (a result past it is refused: `HeldBytesExceeded`),
 * and dropped per driver when that driver says `Bye` or stops pinging.
 *
 * Leaves out: spilling to disk.
 *
 * @since 0.1.0
 * @internal
 */
import { Deferred, Effect, Exit, Layer, Option, type Redacted } from "effect"
import { MessageStorage, RunnerAddress, RunnerStorage } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { hostname } from "node:os"
import * as Transport from "./transport.ts"
import type { LinkSecurity } from "./security.ts"
import type { PostgresStorage } from "../../Cluster.ts"
import * as EngineClock from "../../EngineClock.ts"
import * as EngineError from "../../EngineError.ts"
import * as Executor from "../../Executor.ts"
import type { Callbacks } from "../../Hooks.ts"
import * as State from "../../State.ts"
import * as TaskGraph from "../../TaskGraph.ts"
import { erredInfo, makeJob } from "../job.ts"
import { describeResult, type ResultInfo } from "../kernels.ts"
import { DataClient, serve } from "./dataPlane.ts"
import { formatBytes, HeldStore } from "./heldStore.ts"
import { keepLiteral, restoreLiterals } from "./literals.ts"
import * as Registry from "./registry.ts"
import { decodeValue, encodeValue, storeKey, TesseraWorker } from "./protocol.ts"
import type { PluginsRequest, RunReply, RunRequest, WireTransfer } from "./protocol.ts"
import { BatchTimings } from "./batchTimings.ts"
import { copyRow, newRows, TIMING_FLOATS } from "../taskTiming.ts"
import { PluginRunner } from "./pluginRunner.ts"

/**
 * How to start a worker process.
 *
 * @since 0.1.0
 * @internal
 */
export interface WorkerOptions {
  /** the scheduler's registry address (unless `postgres` is given) */
  readonly scheduler?: { readonly host: string; readonly port: number }
  /** runner storage in PostgreSQL instead of the scheduler's registry */
  readonly postgres?: PostgresStorage
  /** where this runner and its data plane listen (a wildcard host: every interface) */
  readonly listen: { readonly host: string; readonly port: number }
  /** the host the scheduler and peers reach it at, in its name (default `listen.host`; addresses.ts) */
  readonly advertise?: string
  /** kernel threads (default 1) */
  readonly threads?: number
  /** test only: seconds added to every timestamp this worker reports */
  readonly clockShift?: number
  /** module URLs imported before the worker joins (workerMain) */
  readonly preload?: ReadonlyArray<string>
  /** test only: the host name this worker reports (as if it ran on another host) */
  readonly hostName?: string
  /**
   * the most bytes of results and literals this worker holds (`--max-held-bytes`): a
   * task whose result would take it past fails with `HeldBytesExceeded` (the result is
   * refused, not kept, not spilled); default none
   */
  readonly maxHeldBytes?: number
  /** the token is given (`layer`'s second argument; a local worker's comes in its environment) */
  readonly tls?: boolean
  /** plain TCP although an address is not loopback (`--insecure`) */
  readonly insecure?: boolean
}

/**
 * Where a worker says what it holds: set by its runner storage when that is the
 * scheduler's registry (which logs it); PostgreSQL storage has none.
 *
 * @since 0.1.0
 * @internal
 */
export interface HeldReporter {
  held?: (bytes: number, results: number) => Effect.Effect<void>
}

/**
 * The shard group, entity id and worker name of the runner at `host:port`.
 *
 * @since 0.1.0
 * @internal
 */
export const workerName = (host: string, port: number): string => `tessera-worker@${host}:${port}`

/**
 * The runner host in a worker's name (`workerName`): where its data plane listens too.
 */
const peerHost = (peer: string): string => {
  const at = peer.slice(peer.indexOf("@") + 1)
  return at.slice(0, at.lastIndexOf(":"))
}

const refKeys = (args: ReadonlyArray<unknown>, out: Set<string>): void => {
  for (const a of args) {
    if (TaskGraph.isRef(a)) out.add(a["~tessera/ref" as keyof typeof a] as unknown as string)
    else if (TaskGraph.isRefs(a)) for (const k of (a as unknown as Record<string, Array<string>>)["~tessera/refs"]!) out.add(k)
  }
}

const refKeyOf = (a: unknown): string => (a as Record<string, string>)["~tessera/ref"]!
const refsKeysOf = (a: unknown): ReadonlyArray<string> => (a as Record<string, Array<string>>)["~tessera/refs"]!

/**
 * The entity's handlers, given this worker's name and pool.
 *
 * @since 0.1.0
 * @internal
 */
const handlers = (
  name: string,
  pool: Executor.ExecutorShape,
  shift: number,
  threads: number,
  host: string,
  listenHost: string,
  maxHeldBytes: number | undefined,
  reporter: HeldReporter,
  security: LinkSecurity
) =>
  Effect.gen(function*() {
    /** results by {@link storeKey} (compute and key): a compute's late release never drops the next one's */
    const store = new HeldStore()
    /** the driver's large literal arguments, by key (literals.ts) */
    const literals = new HeldStore()
    /** each driver's computes (by its literals' key prefix): dropped when it says `Bye` or stops pinging */
    const driverComputes = new Map<string, Set<number>>()
    /** what was last reported to the scheduler's registry: [bytes, results] */
    let reported = [0, 0]
    /**
     * Drivers by their literals' key prefix: when one last pinged (`Time`) and how often
     * it pings. A driver that has not pinged for {@link DRIVER_MISSED_PINGS} of its
     * periods (and at least {@link DRIVER_GONE_MIN_SECONDS}) is gone, killed without
     * closing its cluster: its literals are dropped here.
     */
    const drivers = new Map<string, { seen: number; every: number }>()
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep("1 second"), Effect.sync(() => {
      const t = performance.now()
      for (const [driver, d] of drivers) {
        if (t - d.seen < Math.max(DRIVER_MISSED_PINGS * d.every, DRIVER_GONE_MIN_SECONDS) * 1000) continue
        forgetDriver(driver, false)
      }
      // what this worker holds, said to the scheduler's registry when it changed
      const bytes = store.bytes + literals.bytes
      if (reporter.held !== undefined && (bytes !== reported[0] || store.size !== reported[1])) {
        reported = [bytes, store.size]
        Effect.runFork(Effect.ignore(Effect.timeout(reporter.held(bytes, store.size), "5 seconds")))
      }
    }))))
    /**
     * Drops everything of `driver`: its literals and every result of its computes. Its
     * clean close says `Bye` (`bye`): its computes end here, so a batch still running
     * keeps nothing. A driver killed, or gone without closing, stops pinging: its results
     * are dropped, and what its running batches make after is not kept while it stays
     * silent (a driver that was only late pings again, and its next batches find their
     * inputs lost and have them recomputed).
     */
    const forgetDriver = (driver: string, bye: boolean) => {
      drivers.delete(driver)
      for (const k of literals.keys()) if (k.startsWith(driver + "-")) literals.delete(k)
      const cs = driverComputes.get(driver)
      driverComputes.delete(driver)
      if (bye) {
        silent.delete(driver)
        if (cs !== undefined) for (const c of cs) Effect.runFork(end(c))
        return
      }
      silent.add(driver)
      if (cs !== undefined) for (const c of cs) dropCompute(c)
    }
    /** drivers that stopped pinging (see `forgetDriver`) */
    const silent = new Set<string>()
    const stats = { sent: 0, received: 0, tasks: 0, running: 0, refused: 0 }
    const data = yield* serve(listenHost, (keys) => {
      const out: Record<string, unknown> = {}
      for (const k of keys) if (store.has(k)) out[k] = store.get(k)
      return out
    }, (bytes) => void (stats.sent += bytes), security).pipe(Effect.orDie)
    const client = new DataClient(security)
    yield* Effect.addFinalizer(() => Effect.sync(() => client.close()))
    /** Peers' data-plane ports, asked once each. */
    const ports = new Map<string, number>()
    const portOf = (peer: string) =>
      ports.has(peer) ? Effect.succeed(ports.get(peer)!) : Effect.tap(
        peers(peer).DataPort(),
        (p) => Effect.sync(() => ports.set(peer, p))
      )
    /** A peer's data-plane fetch: its entity's runner host (from its name), its data port. */
    const fetchFrom = (peer: string, keys: ReadonlyArray<string>) =>
      Effect.flatMap(portOf(peer), (port) => client.fetch(peer, peerHost(peer), port, keys))
    /**
     * Per compute: its cancel signal, and whether it ended here (cancelled: the driver's
     * compute failed or was interrupted). An ended compute keeps nothing: a batch still
     * running or arriving late drops what it made or fetched. Kept for the last
     * {@link COMPUTES_KEPT} computes only (insertion order; a worker serves drivers for
     * as long as it lives).
     */
    const computes = new Map<number, { readonly cancel: Deferred.Deferred<void>; ended: boolean }>()
    const peers = yield* TesseraWorker.client
    const registry = yield* RunnerStorage.RunnerStorage
    /** Completes when `peer` is no longer registered (the scheduler found it dead). */
    const gone = (peer: string) =>
      Effect.gen(function*() {
        for (;;) {
          yield* Effect.sleep("200 millis")
          const rs = yield* Effect.orElseSucceed(registry.getRunners, () => null)
          if (rs !== null && !rs.some(([r]) => r.groups[0] === peer)) return
        }
      })
    const now = () => EngineClock.nowSeconds() + shift
    const plugins = new PluginRunner(name, shift, host)
    yield* Effect.addFinalizer(() => Effect.promise(() => plugins.closeAll()))
    const computeOf = (c: number) => {
      let e = computes.get(c)
      if (e === undefined) {
        computes.set(c, e = { cancel: Deferred.makeUnsafe<void>(), ended: false })
        if (computes.size > COMPUTES_KEPT) computes.delete(computes.keys().next().value!)
      }
      return e
    }
    const ended = (c: number) => computes.get(c)?.ended === true

    /** Drops results of `compute` (and literals by these keys). */
    const release = (compute: number, keys: ReadonlyArray<string>) => {
      for (const k of keys) {
        store.delete(storeKey(compute, k))
        literals.delete(k)
      }
      if (plugins.active) plugins.release(keys)
    }

    /** Drops every result of `compute` held here (made or fetched). */
    const dropCompute = (compute: number) => {
      const prefix = storeKey(compute, "")
      const keys: Array<string> = []
      for (const sk of store.keys()) if (sk.startsWith(prefix)) keys.push(sk.slice(prefix.length))
      // results only: the driver's literals outlive its computes
      for (const k of keys) store.delete(prefix + k)
      if (plugins.active && keys.length > 0) plugins.release(keys)
    }

    /**
     * Ends `compute` here (it failed or was interrupted in the driver): its running batch
     * stops, and every result of it, made here or fetched, is dropped.
     */
    const end = (compute: number) => {
      const e = computeOf(compute)
      e.ended = true
      dropCompute(compute)
      return Deferred.succeed(e.cancel, undefined)
    }

    /** Fetches `keys` from their holders; the keys no holder could give are returned. */
    const fetchInputs = (compute: number, inputs: RunRequest["inputs"], need: ReadonlySet<string>) =>
      Effect.gen(function*() {
        const transfers: Array<WireTransfer> = []
        let missing = inputs.filter(([k]) => need.has(k) && !store.has(storeKey(compute, k)))
        const lost: Array<string> = []
        for (let attempt = 0; missing.length > 0; attempt++) {
          const byPeer = new Map<string, Array<string>>()
          const next: typeof missing = []
          for (const m of missing) {
            const h = m[1][attempt]
            if (h === undefined) lost.push(m[0])
            else {
              let ks = byPeer.get(h)
              if (ks === undefined) byPeer.set(h, ks = [])
              ks.push(m[0])
            }
          }
          yield* Effect.forEach(byPeer, ([peer, keys]) =>
            Effect.gen(function*() {
              const start = now()
              const got = yield* Effect.exit(fetchFrom(peer, keys.map((k) => storeKey(compute, k))).pipe(
                Effect.raceFirst(Effect.andThen(gone(peer), Effect.fail("peer gone" as const)))
              ))
              const stop = now()
              if (Exit.isFailure(got)) {
                ports.delete(peer)
                for (const k of keys) next.push(missing.find((m) => m[0] === k)!)
                return
              }
              stats.received += got.value.bytes
              const values = got.value.value as Record<string, unknown>
              const have: Array<string> = []
              const keep = !ended(compute)
              for (const k of keys) {
                const sk = storeKey(compute, k)
                if (Object.hasOwn(values, sk)) {
                  if (keep) store.set(sk, values[sk])
                  have.push(k)
                } else next.push(missing.find((m) => m[0] === k)!)
              }
              if (have.length > 0) {
                transfers.push({
                  keys: have,
                  bytes: got.value.bytes,
                  peer,
                  start,
                  stop,
                  serialize: got.value.serialize,
                  deserialize: got.value.deserialize
                })
              }
            }), { concurrency: "unbounded", discard: true })
          missing = next
        }
        return { transfers, lost }
      })

    const run = (req: RunRequest) =>
      Effect.gen(function*() {
        if (ended(req.compute)) return interrupted(req)
        if (req.driver !== undefined) {
          let cs = driverComputes.get(req.driver)
          if (cs === undefined) driverComputes.set(req.driver, cs = new Set())
          cs.add(req.compute)
          // the driver's computes this worker no longer remembers hold nothing here
          if (cs.size > COMPUTES_KEPT) for (const c of cs) if (!computes.has(c)) cs.delete(c)
        }
        if (req.release !== undefined) release(req.compute, req.release)
        for (const k of req.drop ?? []) literals.delete(k)
        for (const [k, v] of req.literals ?? []) literals.set(k, keepLiteral(v))
        const missingLiterals = new Set<string>()
        const taskArgs = req.tasks.map((t) => restoreLiterals(t.args, literals, missingLiterals))
        if (missingLiterals.size > 0) {
          return {
            done: [],
            transfers: [],
            seconds: 0,
            error: {
              key: req.tasks[0]!.key,
              tag: "LiteralsMissing",
              message: `literal arguments this worker does not hold: ${[...missingLiterals].join(", ")}`,
              stack: "",
              module: "",
              name: "",
              lost: [...missingLiterals]
            }
          } satisfies RunReply
        }
        const inBatch = new Set(req.tasks.map((t) => t.key))
        const need = new Set<string>()
        for (const t of req.tasks) refKeys(t.args, need)
        for (const k of inBatch) need.delete(k)
        const at = (k: string) => storeKey(req.compute, k)
        const { lost, transfers } = yield* fetchInputs(req.compute, req.inputs, need)
        const trace = req.trace
        if (trace !== undefined) {
          for (const t of transfers) plugins.transfer(trace, t, new Map(t.keys.map((k) => [k, describeResult(store.get(at(k))).nbytes])))
        }
        // ended while it fetched: nothing of it runs
        if (ended(req.compute)) return { ...interrupted(req), transfers }
        if (lost.length > 0) {
          return {
            done: [],
            transfers,
            seconds: 0,
            error: {
              key: req.tasks[0]!.key,
              tag: "InputLost",
              message: `inputs held by no live worker: ${lost.join(", ")}`,
              stack: "",
              module: "",
              name: "",
              lost
            }
          } satisfies RunReply
        }
        const resolve = (a: unknown): unknown => {
          if (TaskGraph.isRef(a)) {
            const k = refKeyOf(a)
            return inBatch.has(k) ? a : store.get(at(k))
          }
          if (TaskGraph.isRefs(a)) {
            const ks = refsKeysOf(a)
            return ks.some((k) => inBatch.has(k)) ? a : ks.map((k) => store.get(at(k)))
          }
          return a
        }
        const specs: Array<TaskGraph.TaskSpec> = req.tasks.map((t, j) => ({
          key: t.key,
          kernel: { module: t.module, name: t.name },
          args: taskArgs[j]!.map(resolve),
          ...(t.output !== undefined ? { output: t.output } : {}),
          ...(t.stage !== undefined ? { stage: t.stage } : {})
        }))
        const graph = TaskGraph.makeUnsafe(specs)
        const all = new Int32Array(graph.size)
        for (let i = 0; i < all.length; i++) all[i] = i
        const state = State.init(graph, all)
        const records = req.profile ? new BatchTimings(graph) : null
        const cbs: Array<Callbacks> = records !== null ? [records.callbacks] : []
        if (trace !== undefined) cbs.push(...plugins.begin(trace))
        const job = makeJob(graph, state, cbs)
        stats.running++
        const began = performance.now()
        const exit = yield* Effect.exit(pool.execute(job).pipe(
          Effect.raceFirst(Effect.andThen(Deferred.await(computeOf(req.compute).cancel), Effect.interrupt)),
          Effect.ensuring(Effect.sync(() => stats.running--))
        ))
        const seconds = (performance.now() - began) / 1000
        const done: Array<RunReply["done"][number]> = []
        const want = req.want !== undefined && req.want.length > 0 ? new Set(req.want) : null
        const values: Record<string, unknown> = {}
        const recs = records !== null && req.recs !== false ? newRows(graph.size) : null
        /** the first task whose result would take this worker past `maxHeldBytes`: it and the rest are not kept */
        let over: { readonly key: string; readonly held: number } | undefined
        /** what the plugins record of each completed task's result (given after the reply: PluginRunner.batch) */
        const infos = trace !== undefined && records !== null ? new Array<ResultInfo | undefined>(graph.size) : null
        /** the failed task's record (its kernel started, the batch profiled): recorded as erred */
        let erred: { i: number; rec: Float64Array; thread: number; error: string; traceback: string } | undefined
        for (let i = 0; i < graph.size; i++) {
          // the pool records finished tasks only (every task of the batch is requested, so
          // its result stays in the cache): a record describes the cache's result; and the
          // failed task, as erred
          if (!state.finished[i]) {
            if (records !== null && records.state[i] === 2 && erred === undefined) {
              const failure = records.failures.get(i)
              const rec = newRows(1)
              copyRow(records.rows, i * TIMING_FLOATS, rec, 0, shift)
              erred = {
                i,
                rec,
                thread: records.thread[i]!,
                error: failure?.error ?? "",
                traceback: failure?.traceback ?? ""
              }
              if (infos !== null) infos[i] = erredInfo
            }
            continue
          }
          if (over !== undefined) continue
          const r = records !== null && records.has(i)
          const key = graph.keys[i]!
          const v = state.cache[i]
          const info = describeResult(v)
          const heldWith = store.bytes + literals.bytes + info.nbytes
          if (maxHeldBytes !== undefined && heldWith > maxHeldBytes && !store.has(at(key))) {
            over = { key, held: heldWith }
            stats.refused++
            continue
          }
          if (infos !== null && r) infos[i] = info
          stats.tasks++
          store.set(at(key), v, info.nbytes)
          if (want?.has(key)) values[key] = v
          if (recs !== null) {
            // a row left NaN: no record
            if (r) copyRow(records!.rows, i * TIMING_FLOATS, recs, done.length * TIMING_FLOATS, shift)
          }
          done.push({
            key,
            nbytes: info.nbytes,
            chunks: info.chunks,
            shape: info.shape,
            dtype: info.dtype,
            type: info.type,
            thread: r ? records!.thread[i]! : 0
          })
        }
        if (infos !== null) plugins.batch(trace!, records!, infos)
        // ended while it ran, or its driver went silent: what it made is recorded (above) but not kept
        if (ended(req.compute) || (req.driver !== undefined && silent.has(req.driver))) release(req.compute, done.map((d) => d.key))
        let error: RunReply["error"] = null
        if (over !== undefined) {
          const e = heldBytesExceeded(name, over.key, maxHeldBytes!, over.held)
          const task = req.tasks.find((t) => t.key === over!.key)
          error = {
            key: over.key,
            tag: "HeldBytesExceeded",
            message: e.message,
            stack: "",
            module: task?.module ?? "",
            name: task?.name ?? "",
            lost: [],
            fields: { key: over.key, worker: name, limit: maxHeldBytes!, held: over.held }
          }
        } else if (Exit.isFailure(exit)) {
          const e = exit.cause.reasons.find((r) => r._tag === "Fail")
          const ce = e?._tag === "Fail" ? e.error : undefined
          const reason = ce?.reason
          const key = reason !== undefined && "key" in reason ? reason.key : req.tasks.find((t) => !store.has(at(t.key)))?.key ?? ""
          const task = req.tasks.find((t) => t.key === key)
          const forwarded = reason !== undefined && FORWARDED.has(reason._tag)
          error = {
            key,
            tag: forwarded ? reason._tag as "KernelFailed" : "Interrupted",
            message: reason?.message ?? ce?.message ?? "interrupted",
            stack: reason?._tag === "KernelFailed" ? reason.stack : "",
            module: reason?._tag === "KernelNotFound" ? reason.module : task?.module ?? "",
            name: reason?._tag === "KernelNotFound" ? reason.name : task?.name ?? "",
            lost: [],
            ...(forwarded ? { fields: reasonFields(reason) } : {}),
            ...(erred !== undefined && graph.keys[erred.i] === key
              ? { erred: { rec: erred.rec, thread: erred.thread, error: erred.error, traceback: erred.traceback } }
              : {})
          }
        }
        return {
          done,
          error,
          transfers,
          seconds,
          ...(want !== null ? { values } : {}),
          ...(recs !== null ? { recs: recs.length === done.length * TIMING_FLOATS ? recs : recs.slice(0, done.length * TIMING_FLOATS) } : {})
        } satisfies RunReply
      })

    return TesseraWorker.of({
      Run: ({ payload }) => Rpc.fork(Effect.map(run(decodeValue<RunRequest>(payload.blob)), (r) => encodeValue(r))),
      Get: ({ payload }) =>
        Rpc.fork(Effect.sync(() => {
          const t0 = performance.now()
          const out: Record<string, unknown> = {}
          for (const k of payload.keys) {
            const sk = storeKey(payload.compute, k)
            if (store.has(sk)) out[k] = store.get(sk)
          }
          const blob = encodeValue(out)
          if (payload.from !== "scheduler") stats.sent += blob.byteLength
          return { blob, serialize: (performance.now() - t0) / 1000 }
        })),
      DataPort: () => Rpc.fork(Effect.succeed(data.port)),
      Release: ({ payload }) => Rpc.fork(Effect.sync(() => release(payload.compute, payload.keys))),
      Plugins: ({ payload }) =>
        Rpc.fork(Effect.promise(() =>
          plugins.apply(decodeValue<PluginsRequest>(payload.blob)).then(
            () => null,
            (e: unknown) => e instanceof Error ? e.message : String(e)
          )
        )),
      Cancel: ({ payload }) => Rpc.fork(Effect.asVoid(Effect.suspend(() => end(payload.compute)))),
      Bye: ({ payload }) => Rpc.fork(Effect.sync(() => forgetDriver(payload.driver, true))),
      Time: ({ payload }) =>
        Rpc.fork(Effect.sync(() => {
          drivers.set(payload.driver, { seen: performance.now(), every: payload.every })
          silent.delete(payload.driver)
          return now()
        })),
      Stats: () =>
        Rpc.fork(Effect.sync(() => ({
          ...stats,
          held: store.size,
          literals: literals.size,
          heldBytes: store.bytes,
          literalBytes: literals.bytes,
          ...(maxHeldBytes !== undefined ? { maxHeldBytes } : {})
        }))),
      Info: () => Rpc.fork(Effect.sync(() => ({ host, threads, pid: process.pid })))
    })
  })

/** The worker's `HeldBytesExceeded`: the task, the limit, what it would have held. */
const heldBytesExceeded = (worker: string, key: string, limit: number, held: number) =>
  new EngineError.HeldBytesExceeded({
    key,
    worker,
    limit,
    held,
    message: `task "${key}": worker ${worker} would hold ${formatBytes(held)} of results with its result, over its limit of ${
      formatBytes(limit)
    } (tessera worker --max-held-bytes ${limit}); the result is refused (not kept, not spilled): compute less at once, or raise the limit`
  })

/** Typed failures a worker forwards as themselves (other failures read "Interrupted"). */
const FORWARDED: ReadonlySet<string> = new Set(["KernelFailed", "KernelNotFound", "BadOutput", "ArgumentNotSendable", "ModuleRefused", "WorkerMemoryExceeded"])

/** The fields of a typed reason that travel (the scheduler rebuilds the error from them). */
const REASON_FIELDS = ["key", "kernel", "stack", "at", "message", "stage", "declared", "actual", "argument", "what", "module", "name", "limit", "held", "why"] as const

const reasonFields = (reason: object): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const f of REASON_FIELDS) {
    const v = (reason as Record<string, unknown>)[f]
    if (typeof v === "string" || typeof v === "number") out[f] = v
  }
  return out
}

/** A driver whose pings stopped for this many of its periods is gone (its literals dropped). */
const DRIVER_MISSED_PINGS = 10
/** ... and for at least this many seconds (a loaded machine delays pings). */
const DRIVER_GONE_MIN_SECONDS = 5

/** How many computes a worker remembers (whether each ended: see `handlers`). */
const COMPUTES_KEPT = 1024

/** The reply to a batch of a compute that ended here: nothing done, interrupted. */
const interrupted = (req: RunRequest): RunReply => ({
  done: [],
  transfers: [],
  seconds: 0,
  error: { key: req.tasks[0]?.key ?? "", tag: "Interrupted", message: "interrupted", stack: "", module: "", name: "", lost: [] }
})

/**
 * The worker as a layer: launch it (`Layer.launch`) to run until interrupted.
 *
 * @since 0.1.0
 * @internal
 */
export const layer = (options: WorkerOptions, token?: Redacted.Redacted<string>) => {
  const { host, port } = options.listen
  const security: LinkSecurity = token !== undefined ? { _tag: "tls", token } : { _tag: "plain", insecure: options.insecure === true }
  const say = (line: string) => void process.stderr.write(`tessera worker: ${line}\n`)
  const contact = options.advertise ?? host
  const name = workerName(contact, port)
  const reporter: HeldReporter = {}
  const sharding = {
    ...shardingConfig({ runner: { host: contact, port }, group: name }),
    runnerListenAddress: Option.some(RunnerAddress.make(host, port))
  }
  // the pool, the store and the data plane belong to the process, not to the entity:
  // Effect Cluster restarts an entity when its shard is reassigned (its lock not refreshed
  // in time on a loaded machine), and the results made so far must outlive that
  const entity = Layer.unwrap(Effect.gen(function*() {
    const pool = yield* Executor.makeWorkers({ workers: options.threads ?? 1 })
    const h = yield* handlers(
      name,
      pool,
      options.clockShift ?? 0,
      options.threads ?? 1,
      options.hostName ?? hostname(),
      host,
      options.maxHeldBytes,
      reporter,
      security
    )
    return TesseraWorker.toLayer(Effect.succeed(h), { concurrency: "unbounded", maxIdleTime: "1000 days" })
  }))
  return entity.pipe(
    Layer.provide(
      Transport.layerRunner({ security, clientOnly: false, sharding, log: say })
    ),
    Layer.provide(MessageStorage.layerNoop),
    Layer.provide(Registry.layerFor(options, sharding, security, {
      address: `${contact}:${port}`,
      pid: process.pid,
      host: options.hostName ?? hostname(),
      threads: options.threads ?? 1
    }, reporter))
  )
}

/**
 * The sharding settings every Tessera process uses: one shard per group, fast refresh
 * (workers join and leave mid-run), no join debounce.
 *
 * @since 0.1.0
 * @internal
 */
export const shardingConfig = (o: { readonly runner?: { readonly host: string; readonly port: number }; readonly group?: string }) => ({
  ...(o.runner !== undefined ? { runnerAddress: Option.some(RunnerAddress.make(o.runner.host, o.runner.port)) } : {}),
  ...(o.group !== undefined ? { availableShardGroups: [o.group], assignedShardGroups: [o.group] } : { availableShardGroups: [], assignedShardGroups: [] }),
  shardsPerGroup: 1,
  refreshAssignmentsInterval: "100 millis" as const,
  runnerJoinDebounce: 0,
  sendRetryInterval: "50 millis" as const,
  entityMaxIdleTime: "1000 days" as const,
  entityTerminationTimeout: 0,
  shardLockRefreshInterval: "1 second" as const,
  shardLockExpiration: "5 seconds" as const
})

/**
 * A driver's records forwarded to a standalone scheduler's dashboard (`tessera scheduler
 * --dashboard`), and their wire form.
 *
 * Driver side ({@link Forwarder}): one more local hook of the cluster executor's computes,
 * made only when the scheduler said it serves a dashboard (the `dashboard` call at start;
 * else nothing here runs). Its callbacks copy each task, memory and transfer record's
 * fields into plain arrays (on the scheduler's clock) and return; every `tickMs` one
 * batch — at most `maxPerBatch` records of each kind, the compute starts and ends, each
 * running compute's running tasks per group — goes over the registry's RPC connection
 * (the one the driver already holds, token/TLS as every link: `feed`). A batch is sent
 * only when the previous one was answered: while the scheduler is slow, records wait, up
 * to `maxPending` of each kind; past that they are dropped and counted, and the count
 * travels in every batch. A batch that fails or times out is dropped and counted; after
 * three failures in a row forwarding stops (counting on). Nothing here waits on the
 * scheduler in a compute: the sends run in a fiber of their own; the last records go
 * when the cluster closes, within `closeSeconds`.
 *
 * Scheduler side (feedWire.ts `decodeBatch`, re-exported): the bytes checked field by field (a driver holds
 * the cluster token, but a malformed batch is refused with a message, never half-applied)
 * into the records the dashboard feeds its live state with.
 *
 * @since 0.1.0
 * @internal
 */
import { Effect, type Scope } from "effect"
import type { FeedCompute } from "../../Cluster.ts"
import type { MemoryRecord, TaskRecord, TransferRecord } from "../../EngineEvents.ts"
import type { Callbacks } from "../../Hooks.ts"
import type { SchedulerState } from "../../State.ts"
import type { TaskGraph } from "../../TaskGraph.ts"
import { nowSeconds } from "../../EngineClock.ts"
import { encodeValue } from "./protocol.ts"
import { MEM_NUMS, MEM_STRS, MEMORY_STATES, TASK_NUMS, TASK_STRS, type Wire, XFER_NUMS, XFER_STRS } from "./feedWire.ts"

export { decodeBatch } from "./feedWire.ts"

/**
 * How a driver reaches its scheduler's dashboard: filled by the registry client
 * (registry.ts `layerRemote`) when it connects.
 *
 * @since 0.1.0
 * @internal
 */
export interface DashboardLink {
  /** whether the scheduler serves a dashboard, and its clock (epoch seconds); undefined: no answer */
  ask?: Effect.Effect<{ readonly on: boolean; readonly clock: number } | undefined>
  /** sends one encoded batch: false when it failed or timed out */
  send?: (blob: Uint8Array) => Effect.Effect<boolean>
}

/** Rows of one kind waiting to be sent: strings and floats, appended. */
class Rows {
  readonly s: Array<string | undefined> = []
  readonly n: Array<number> = []
  count = 0
  readonly strs: number
  readonly nums: number
  constructor(strs: number, nums: number) {
    this.strs = strs
    this.nums = nums
  }
  /** Moves the first `k` rows out: their strings as indices into `dict`. */
  take(k: number, intern: (s: string | undefined) => number): { s: Int32Array; n: Float64Array } {
    const s = new Int32Array(k * this.strs)
    for (let j = 0; j < s.length; j++) s[j] = intern(this.s[j])
    const n = Float64Array.from(this.n.slice(0, k * this.nums))
    this.s.splice(0, k * this.strs)
    this.n.splice(0, k * this.nums)
    this.count -= k
    return { s, n }
  }
}

/** One compute of this driver while it runs: its group of each task, for the running counts. */
interface Running {
  readonly id: number
  readonly state: SchedulerState
  readonly groupOf: Int32Array
  readonly groups: number
}

/**
 * Options of a {@link Forwarder}.
 *
 * @since 0.1.0
 * @internal
 */
export interface ForwarderOptions {
  /** the driver's id for this cluster's life (a run, as the scheduler's page counts them) */
  readonly run: string
  /** who the driver is, for the scheduler's log (`pid N on HOST`) */
  readonly driver: string
  /** scheduler clock minus driver clock, seconds: added to every time forwarded */
  readonly offset: number
  /** most records of each kind in one batch (default 16,384) */
  readonly maxPerBatch?: number
  /** most records of each kind waiting while the scheduler is slow; beyond, dropped and counted (default 131,072) */
  readonly maxPending?: number
}

/**
 * A driver's forwarding (see the module header).
 *
 * @since 0.1.0
 * @internal
 */
export class Forwarder {
  readonly run: string
  readonly driver: string
  readonly offset: number
  readonly maxPerBatch: number
  readonly maxPending: number
  /** records not forwarded: over `maxPending`, in a batch that failed, or after forwarding stopped */
  dropped = 0
  /** records sent in batches the scheduler took */
  forwarded = 0
  /** forwarding stopped (the scheduler failed three batches in a row) */
  stopped = false
  /** the driver's cluster closed: the last batch says so */
  over = false
  /** the batch saying so was taken: nothing follows */
  done = false
  private failures = 0
  private readonly tasks = new Rows(TASK_STRS, TASK_NUMS)
  private readonly memory = new Rows(MEM_STRS, MEM_NUMS)
  private readonly transfers = new Rows(XFER_STRS, XFER_NUMS)
  /** each waiting transfer's keys */
  private readonly xferKeys: Array<ReadonlyArray<string>> = []
  private readonly started: Array<FeedCompute> = []
  private readonly ended: Array<readonly [number, boolean]> = []
  private readonly computes = new Map<number, Running>()
  private nextCompute = 0

  constructor(options: ForwarderOptions) {
    this.run = options.run
    this.driver = options.driver
    this.offset = options.offset
    this.maxPerBatch = Math.max(1, options.maxPerBatch ?? 16_384)
    this.maxPending = Math.max(this.maxPerBatch, options.maxPending ?? 131_072)
  }

  /** Whether a row of `rows` may be kept (else it is counted dropped). */
  private room(rows: Rows): boolean {
    if (!this.stopped && rows.count < this.maxPending) return true
    this.dropped++
    return false
  }

  /** A task record (read during the call only). */
  task(t: TaskRecord): void {
    const r = this.tasks
    if (!this.room(r)) return
    const o = this.offset
    const p = t.phases
    r.s.push(t.key, t.name, t.stage, t.host, t.threadId)
    r.n.push(
      p.gather[0] + o,
      p.gather[1] + o,
      p.compute[0] + o,
      p.compute[1] + o,
      p.transfer[0] + o,
      p.transfer[1] + o,
      t.cpuTime,
      t.nbytes,
      t.peakMemory ?? NaN,
      t.ioBytes ?? NaN,
      t.workerId,
      t.state === "erred" ? 1 : 0
    )
    r.count++
  }

  /** A memory record (read during the call only). */
  memoryRecord(m: MemoryRecord): void {
    const r = this.memory
    if (!this.room(r)) return
    r.s.push(m.host, m.threadId, m.key)
    r.n.push(m.timestamp + this.offset, m.bytes, m.chunks, m.device ?? NaN, m.workerId, MEMORY_STATES.indexOf(m.state))
    r.count++
  }

  /** A transfer record. */
  transfer(x: TransferRecord): void {
    const r = this.transfers
    if (!this.room(r)) return
    r.s.push(x.host, x.threadId, x.peer)
    r.n.push(x.bytes, x.start + this.offset, x.stop + this.offset, x.serialize ?? NaN, x.deserialize ?? NaN)
    this.xferKeys.push([...x.keys])
    r.count++
  }

  /** The callbacks a compute's records reach this forwarder by. */
  readonly callbacks: Callbacks = {
    task: (t) => this.task(t),
    memory: (m) => this.memoryRecord(m),
    transfer: (x) => this.transfer(x),
    transientRecords: true
  }

  /** A compute starts: its groups (stage, function) and their task counts. Returns its id. */
  begin(graph: TaskGraph, state: SchedulerState): number {
    const id = this.nextCompute++
    const index = new Map<string, number>()
    const groups: Array<{ stage: string | undefined; name: string; total: number }> = []
    const groupOf = new Int32Array(graph.size).fill(-1)
    for (let i = 0; i < graph.size; i++) {
      if (!state.needed[i]) continue
      const stage = graph.specs[i]!.stage
      const name = graph.names[i]!
      const k = (stage ?? "") + "\u0000" + (stage === undefined ? "0" : "1") + name
      let g = index.get(k)
      if (g === undefined) {
        index.set(k, g = groups.length)
        groups.push({ stage, name, total: 0 })
      }
      groups[g]!.total++
      groupOf[i] = g
    }
    this.started.push({ id, groups })
    this.computes.set(id, { id, state, groupOf, groups: groups.length })
    return id
  }

  /** A compute ended (`failed`: it failed or was interrupted). */
  end(id: number, failed: boolean): void {
    this.computes.delete(id)
    this.ended.push([id, failed])
  }

  /** Records and events waiting. */
  get pending(): number {
    return this.tasks.count + this.memory.count + this.transfers.count + this.started.length + this.ended.length
  }

  /**
   * The next batch, encoded: at most `maxPerBatch` records of each kind (oldest first),
   * the computes begun and ended since the last, each running compute's running tasks
   * per group; undefined when there is nothing to say.
   */
  take(): { readonly blob: Uint8Array; readonly records: number } | undefined {
    if (this.done || (this.pending === 0 && this.computes.size === 0 && !this.over)) return undefined
    const dict = new Map<string, number>()
    const strs: Array<string> = []
    const intern = (s: string | undefined): number => {
      if (s === undefined) return -1
      let k = dict.get(s)
      if (k === undefined) {
        dict.set(s, k = strs.length)
        strs.push(s)
      }
      return k
    }
    const nt = Math.min(this.tasks.count, this.maxPerBatch)
    const nm = Math.min(this.memory.count, this.maxPerBatch)
    const nx = Math.min(this.transfers.count, this.maxPerBatch)
    const keys = this.xferKeys.splice(0, nx)
    const running: Array<readonly [number, Array<number>]> = []
    for (const c of this.computes.values()) {
      const counts = new Array<number>(c.groups).fill(0)
      if (c.state.runningCount > 0) {
        for (let i = 0; i < c.groupOf.length; i++) if (c.state.running[i] && c.groupOf[i]! >= 0) counts[c.groupOf[i]!]!++
      }
      running.push([c.id, counts])
    }
    const last = this.over && this.pending - this.started.length - this.ended.length === nt + nm + nx
    this.done = last
    const wire: Wire = {
      v: 1,
      run: this.run,
      driver: this.driver,
      dropped: this.dropped,
      over: last,
      strs,
      computes: this.started.splice(0),
      running,
      finished: this.ended.splice(0),
      tasks: this.tasks.take(nt, intern),
      memory: this.memory.take(nm, intern),
      transfers: { ...this.transfers.take(nx, intern), keys: keys.map((ks) => ks.length), k: Int32Array.from(keys.flat(), intern) }
    }
    return { blob: encodeValue(wire), records: nt + nm + nx }
  }

  /** What became of a batch of `records` records: taken, or failed (dropped; the third failure in a row stops forwarding). */
  sent(records: number, ok: boolean): void {
    if (ok) {
      this.failures = 0
      this.forwarded += records
      return
    }
    this.dropped += records
    if (++this.failures >= 3 && !this.stopped) {
      this.stopped = true
      this.dropped += this.tasks.count + this.memory.count + this.transfers.count
      this.tasks.take(this.tasks.count, () => 0)
      this.memory.take(this.memory.count, () => 0)
      this.transfers.take(this.transfers.count, () => 0)
      this.xferKeys.length = 0
    }
  }
}

/**
 * A driver's forwarding to its scheduler's dashboard, for the current scope: asks the
 * scheduler (over `link`) whether it serves one; when it does, a {@link Forwarder}
 * (its clock offset measured by that call), a fiber sending a batch every `tickMs`
 * (each waited for: never two at once), and at the scope's close the records left,
 * within `closeSeconds`, then the run's end. Undefined, and nothing running, when the
 * scheduler has no dashboard or does not answer.
 *
 * @since 0.1.0
 * @internal
 */
export const startForwarding = (
  link: DashboardLink,
  options: Omit<ForwarderOptions, "offset"> & { readonly tickMs?: number; readonly closeSeconds?: number }
): Effect.Effect<Forwarder | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { ask, send } = link
    if (ask === undefined || send === undefined) return undefined
    const t0 = nowSeconds()
    const said = yield* ask
    const t1 = nowSeconds()
    if (said === undefined || !said.on) return undefined
    const fwd = new Forwarder({ ...options, offset: said.clock - (t0 + t1) / 2 })
    // one batch at a time: the ticker's, then the close's
    let busy = false
    let closing = false
    const once = Effect.suspend(() => {
      const b = fwd.take()
      if (b === undefined) return Effect.void
      busy = true
      return Effect.map(send(b.blob), (ok) => fwd.sent(b.records, ok)).pipe(Effect.ensuring(Effect.sync(() => (busy = false))))
    })
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(options.tickMs ?? 200), Effect.suspend(() => closing ? Effect.void : once))))
    // what is left, and the run's end (its own timeout: the scope's close is not held past it)
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closing = true
        while (busy) yield* Effect.sleep(5)
        fwd.over = true
        while (!fwd.done && !fwd.stopped) yield* once
      }).pipe(Effect.timeout(`${options.closeSeconds ?? 5} seconds`), Effect.ignore)
    )
    return fwd
  })

/**
 * The dispatcher: one pure, synchronous state machine that decides, for every executor,
 * what runs where — in the style of distributed's `worker_state_machine.py`
 * (`handle_stimulus(events) → instructions`). It owns no thread, socket or timer: a shell
 * (the worker-thread pool, the in-process runner, a cluster scheduler) reports events by
 * calling its methods, and carries out the instructions it returns ({@link Instruction}).
 *
 * Over the scheduler's state record (`State.ts`, which it drives: `popReady`,
 * `markFused`, `finishTask`, `requeue`) it keeps, per slot (a worker thread, a GPU
 * worker, a worker process), its kind and the batches it holds; per task, the slots that
 * hold its result (`shared: false`: the cluster, where results stay where they were made)
 * and how often it was lost with its slot. It decides:
 *
 * - readiness: a task runs once its inputs have finished (State's `waiting` count), and,
 *   where results live on slots, once every input has a live holder;
 * - placement: a ready task goes to the slot that holds the most bytes of its inputs;
 *   ties to the slot the previous task went to while its batch has room (siblings land
 *   together, so their dependents fuse), else to the slot with the smaller batch; a slot
 *   only runs tasks of its kind (a GPU task on a GPU slot);
 * - batch size: about `batchSeconds` of work by the measured seconds per task (one rule
 *   for every executor), at most `maxBatch`, and the ready tasks split evenly over the
 *   slots with room; at most `maxInflight` batches per slot (one for a slow slot);
 * - fusion: a not-yet-ready task all of whose unfinished inputs are in a batch joins it
 *   (the slot runs the batch in order, so a chain costs one round trip, not one a level);
 * - release: where results live on slots, a result nobody needs any more is released on
 *   every slot holding it ({@link Release});
 * - recovery: a lost slot's batches go back to ready (the task it was running, when the
 *   shell knows it, counts an attempt: past `maxRetries` the compute fails); results only
 *   it held that are still needed are recomputed, once, with whatever of their inputs
 *   was lost too, on the least loaded live slot ({@link Run} with `recover`);
 * - the end: exactly one {@link Finish}, when every needed task has finished, a task
 *   failed, a task exhausted its retries, or the compute was interrupted. After it the
 *   machine ignores every event.
 *
 * Hooks (dask's five) stay with the shells: they are I/O from the machine's view, and
 * each shell calls them where it always did (`pretask` for a batch's first `fusedFrom`
 * tasks as it sends the batch, for fused ones as their results arrive; `finish` always).
 *
 * Tested with no threads and no processes: `test/engine/Dispatcher.test.ts`.
 *
 * @since 0.1.0
 * @internal
 */
import * as State from "../../State.ts"

/**
 * Runs `tasks` on `slot`, in order; positions from `fusedFrom` on were fused (not ready
 * when sent: their inputs are earlier in the batch). A `recover` batch recomputes
 * results a lost slot held (their tasks are finished already in the state record).
 *
 * @since 0.1.0
 * @internal
 */
export interface Run {
  readonly _tag: "Run"
  readonly slot: number
  readonly batch: number
  readonly tasks: Int32Array
  readonly fusedFrom: number
  readonly recover: boolean
}

/**
 * Drops the results of `tasks` held on `slot` (nobody needs them any more). Only where
 * results live on slots (`shared: false`).
 *
 * @since 0.1.0
 * @internal
 */
export interface Release {
  readonly _tag: "Release"
  readonly slot: number
  readonly tasks: ReadonlyArray<number>
}

/**
 * Why a compute stopped early.
 *
 * @since 0.1.0
 * @internal
 */
export type Failure =
  | { readonly _tag: "TaskFailed"; readonly task: number; readonly cause: unknown }
  | { readonly _tag: "RetriesExhausted"; readonly task: number; readonly attempts: number; readonly cause: unknown }
  | { readonly _tag: "Interrupted" }

/**
 * The compute is over: `failure` null when every needed task finished. Emitted once.
 *
 * @since 0.1.0
 * @internal
 */
export interface Finish {
  readonly _tag: "Finish"
  readonly failure: Failure | null
}

/** @since 0.1.0 @internal */
export type Instruction = Run | Release | Finish

/**
 * Events, for shells (and tests) that hand them over as values; each is one method of
 * {@link Dispatcher}.
 *
 * @since 0.1.0
 * @internal
 */
export type Event =
  | { readonly _tag: "SlotJoined"; readonly slot: number; readonly kind?: number }
  | { readonly _tag: "SlotLost"; readonly slot: number; readonly blame?: { readonly batch: number; readonly index: number }; readonly retry?: boolean; readonly cause?: unknown }
  | { readonly _tag: "SlotSlow"; readonly slot: number; readonly slow: boolean }
  | { readonly _tag: "TaskDone"; readonly slot: number; readonly batch: number; readonly index: number; readonly result?: unknown; readonly bytes?: number }
  | { readonly _tag: "BatchDone"; readonly slot: number; readonly batch: number; readonly seconds: number }
  | { readonly _tag: "TaskFailed"; readonly task: number; readonly cause: unknown }
  | { readonly _tag: "DataArrived"; readonly slot: number; readonly task: number }
  | { readonly _tag: "Interrupt" }
  | { readonly _tag: "Tick" }

/**
 * Dispatcher options.
 *
 * @since 0.1.0
 * @internal
 */
export interface DispatcherOptions {
  /** seconds of work a batch aims at */
  readonly batchSeconds: number
  /** most tasks in a batch */
  readonly maxBatch: number
  /** most batches a slot holds at once */
  readonly maxInflight: number
  /** seconds per task assumed before any batch came back */
  readonly initialTaskSeconds: number
  /** retries of a task whose slot was lost while it ran */
  readonly maxRetries: number
  /**
   * true: results live where every slot reads them (worker threads' shared memory): no
   * holders, no releases, nothing lost with a slot but its running batches
   */
  readonly shared: boolean
  /** merge one batch's seconds per task into the estimate with this weight (0..1) */
  readonly smoothing?: number
  /** false: no fusion (default true) */
  readonly fuse?: boolean
  /** per task, the kind of slot that runs it (default: every task kind 0) */
  readonly kindOf?: Uint8Array | null
  /**
   * whether task `d` may be fused into a batch whose members are flagged in `member`
   * (the cluster refuses a list argument that mixes batch results with fetched ones)
   */
  readonly fusable?: (d: number, member: Uint8Array) => boolean
  /** most tasks a batch grows to by fusion (default: the batch's size target) */
  readonly fuseLimit?: number
  /**
   * seconds of work fusion may add to a batch beyond continuing its lines (a task's first
   * fused dependent), while `idle` slots get nothing this round (default: no limit). With
   * `taskCost`, the seconds a task is expected to take.
   */
  readonly fuseWidth?: (idle: number) => number
  readonly taskCost?: (task: number) => number
}

interface SlotState {
  readonly id: number
  readonly kind: number
  alive: boolean
  slow: boolean
  /** batch ids in the order sent */
  readonly inflight: Array<number>
}

interface BatchState {
  readonly id: number
  readonly slot: number
  readonly tasks: Int32Array
  readonly recover: boolean
  /** positions reported done that finished their task (`taskDone`) */
  done: number
}

const noHolders: ReadonlyArray<number> = []

/**
 * The state machine of one compute (see the module header).
 *
 * @since 0.1.0
 * @internal
 */
export class Dispatcher {
  readonly state: State.SchedulerState
  readonly options: DispatcherOptions
  /** seconds of work per task, as batches measured it */
  taskSeconds: number
  /** true once `Finish` was emitted */
  finished = false
  /**
   * true once it ended with a failure: every later event is ignored. After a success,
   * results that live on slots are still tracked (lost ones recomputed) until the shell
   * has gathered them.
   */
  private failed = false
  /** true once `start` ran: slots joined before it get work then */
  private started = false
  private readonly slots = new Map<number, SlotState>()
  /** live slots in join order (what placement walks) */
  private order: Array<SlotState> = []
  private readonly batches = new Map<number, BatchState>()
  /** the batch `taskDone` reported on last */
  private current: BatchState | null = null
  private nextBatch = 1
  private out: Array<Instruction> = []
  /** per task, the live slots holding its result (shared: unused) */
  private readonly holders: Array<Array<number> | undefined>
  /** per task, its result's bytes (placement weight) */
  private readonly bytes: Float64Array
  private readonly attempts: Uint8Array
  /** per task: 1 while a recover batch recomputes it */
  private readonly recovering: Uint8Array
  /** per task: inputs of it in the batch being built (fusion scratch, 0 outside `fuse`) */
  private readonly hits: Int32Array
  /** per task: 1 while in the batch being built */
  private readonly member: Uint8Array
  /** ready tasks by kind, when tasks have kinds (popped from the state's stack) */
  private readonly queues: Array<Array<number>> | null
  /** releases to emit, by slot */
  private readonly pendingRelease = new Map<number, Array<number>>()
  private readonly kindOf: Uint8Array | null

  constructor(state: State.SchedulerState, options: DispatcherOptions) {
    const n = state.graph.size
    this.state = state
    this.options = options
    this.taskSeconds = options.initialTaskSeconds
    this.holders = options.shared ? [] : new Array(n)
    this.bytes = new Float64Array(options.shared ? 0 : n)
    this.attempts = new Uint8Array(n)
    this.recovering = new Uint8Array(options.shared ? 0 : n)
    this.hits = new Int32Array(n)
    this.member = new Uint8Array(n)
    this.kindOf = options.kindOf ?? null
    this.queues = this.kindOf === null ? null : []
    if (!options.shared) {
      const before = state.onRelease
      state.onRelease = (i) => {
        if (before !== null) before(i)
        this.released(i)
      }
    }
  }

  // ---------------------------------------------------------------- events

  /** Hands over the instructions so far (and forgets them). */
  take(): Array<Instruction> {
    const o = this.out
    this.out = []
    return o
  }

  /** One event, by value (each is also a method); returns the instructions so far. */
  handle(e: Event): Array<Instruction> {
    switch (e._tag) {
      case "SlotJoined":
        this.join(e.slot, e.kind ?? 0)
        break
      case "SlotLost":
        this.lose(e.slot, e.blame, e.retry ?? true, e.cause)
        break
      case "SlotSlow":
        this.slow(e.slot, e.slow)
        break
      case "TaskDone":
        this.taskDone(e.slot, e.batch, e.index, e.result, e.bytes ?? 0)
        break
      case "BatchDone":
        this.batchDone(e.slot, e.batch, e.seconds)
        break
      case "TaskFailed":
        this.fail({ _tag: "TaskFailed", task: e.task, cause: e.cause })
        break
      case "DataArrived":
        this.arrived(e.slot, e.task)
        break
      case "Interrupt":
        this.fail({ _tag: "Interrupted" })
        break
      case "Tick":
        this.dispatch()
        break
    }
    return this.take()
  }

  /** Starts the compute: finishes at once when nothing is needed, else dispatches. */
  start(): void {
    this.started = true
    if (State.isDone(this.state)) this.end(null)
    else this.dispatch()
  }

  /** A slot can take work (a worker started or joined). */
  join(slot: number, kind = 0): void {
    const old = this.slots.get(slot)
    if (old !== undefined && old.alive) return
    const s: SlotState = { id: slot, kind, alive: true, slow: false, inflight: [] }
    this.slots.set(slot, s)
    this.order.push(s)
    if (this.failed) return
    this.recoverLost()
    this.dispatch()
  }

  /**
   * A slot is gone (its worker died or left). Its batches go back to ready; the task of
   * `blame` (batch id and position the slot was running, when known) counts an attempt
   * (`retry` false: it fails at once, as a task that hit a heap limit would again).
   */
  lose(slot: number, blame?: { readonly batch: number; readonly index: number }, retry = true, cause?: unknown): void {
    const sl = this.slots.get(slot)
    if (sl === undefined || !sl.alive) return
    sl.alive = false
    this.order = this.order.filter((x) => x !== sl)
    const lost = sl.inflight.splice(0)
    this.current = null
    if (this.failed) {
      for (const b of lost) this.batches.delete(b)
      return
    }
    const s = this.state
    for (const id of lost) {
      const b = this.batches.get(id)!
      this.batches.delete(id)
      for (let q = 0; q < b.tasks.length; q++) {
        const i = b.tasks[q]!
        if (b.recover) {
          this.recovering[i] = 0
          continue
        }
        if (!s.running[i] || this.finished) continue
        if (blame !== undefined && blame.batch === id && blame.index === q) {
          const a = ++this.attempts[i]!
          if (a > (retry ? this.options.maxRetries : 0)) {
            this.fail({ _tag: "RetriesExhausted", task: i, attempts: a, cause })
            return
          }
        }
        State.requeue(s, i)
      }
    }
    if (!this.options.shared) {
      for (let i = 0; i < this.holders.length; i++) {
        const hs = this.holders[i]
        if (hs !== undefined && hs.includes(slot)) this.holders[i] = hs.filter((h) => h !== slot)
      }
      this.pendingRelease.delete(slot)
      this.recoverLost()
    }
    this.dispatch()
  }

  /** A slot answers slowly (or again normally): a slow slot holds one batch at most, and ties avoid it. */
  slow(slot: number, slow: boolean): void {
    const sl = this.slots.get(slot)
    if (sl === undefined) return
    sl.slow = slow
    if (!slow && !this.finished) this.dispatch()
  }

  /**
   * Task at position `index` of `batch` finished on `slot` with `result` (the value the
   * state record caches; a shell whose results stay on slots passes a placeholder) and
   * `bytes`. The shell calls this for each completed position in order, then
   * {@link batchDone}.
   */
  taskDone(slot: number, batch: number, index: number, result: unknown, bytes = 0): void {
    if (this.failed) return
    // a batch's tasks are reported one after another: look it up once
    let b = this.current
    if (b === null || b.id !== batch) b = this.current = this.batches.get(batch) ?? null
    if (b === null || b.slot !== slot) return
    const i = b.tasks[index]!
    const s = this.state
    if (b.recover) {
      // a recomputed result: held here again (unless it was released meanwhile)
      if (this.recovering[i] && s.finished[i] && !s.released[i]) {
        this.recovering[i] = 0
        this.holders[i] = [slot]
        this.bytes[i] = bytes
      } else if (!(this.holders[i]?.includes(slot) ?? false)) this.queueRelease(slot, i)
      return
    }
    if (s.finished[i]) {
      // made twice (a batch sent again after its slot looked lost): this copy is not needed
      if (!this.options.shared) this.queueRelease(slot, i)
      return
    }
    if (!this.options.shared) {
      this.holders[i] = [slot]
      this.bytes[i] = bytes
    }
    b.done++
    State.finishTask(s, i, result)
  }

  /**
   * `batch` came back from `slot` after `seconds` of work: its positions not reported
   * done go back to ready (a batch cut short), and the freed room is filled.
   */
  batchDone(slot: number, batch: number, seconds: number): void {
    const b = this.batches.get(batch)
    if (b === undefined || b.slot !== slot) return
    this.batches.delete(batch)
    if (this.current === b) this.current = null
    const sl = this.slots.get(slot)
    if (sl !== undefined) {
      const k = sl.inflight.indexOf(batch)
      if (k >= 0) sl.inflight.splice(k, 1)
    }
    if (this.failed) return
    const s = this.state
    const done = b.done
    if (b.recover) {
      for (let q = 0; q < b.tasks.length; q++) this.recovering[b.tasks[q]!] = 0
    } else if (done < b.tasks.length) {
      // cut short: what did not finish goes back (requeue skips what is not running)
      for (let q = 0; q < b.tasks.length; q++) State.requeue(s, b.tasks[q]!)
    }
    if (done > 0 && seconds >= 0) {
      const w = this.options.smoothing ?? 0.5
      this.taskSeconds = (1 - w) * this.taskSeconds + w * (seconds / done)
    }
    if (b.recover && !this.options.shared) this.recoverLost()
    this.flushReleases()
    if (this.finished) return
    if (State.isDone(s) && !this.recoveringAny() && !this.anyLost()) this.end(null)
    else this.dispatch()
  }

  /** A copy of `task`'s result now also lives on `slot` (a peer fetch). */
  arrived(slot: number, task: number): void {
    if (this.options.shared || this.failed) return
    const s = this.state
    if (!s.finished[task] || s.released[task]) {
      this.queueRelease(slot, task)
      return
    }
    const hs = this.holders[task] ??= []
    if (!hs.includes(slot)) hs.push(slot)
  }

  /**
   * No slot can give `task`'s result any more (every holder a batch was sent to failed to
   * give it): its holders are forgotten, and it is recomputed if still needed.
   */
  dataLost(task: number): void {
    if (this.options.shared || this.failed) return
    const hs = this.holders[task]
    if (hs === undefined || hs.length === 0) return
    this.holders[task] = []
    this.recoverLost()
  }

  /** The compute fails (a kernel error, interruption): `Finish` with `failure`. */
  fail(failure: Failure): void {
    this.end(failure)
  }

  // ---------------------------------------------------------------- decisions

  /**
   * Fills the live slots' room with batches of ready tasks. Shared results: in rounds,
   * every slot with no batch first, then every slot with one, ... (load spreads evenly).
   * Results on slots: one pass over every slot with room, placement by inputs held.
   */
  dispatch(): void {
    if (this.finished || !this.started) return
    const s = this.state
    const o = this.options
    const target = Math.max(1, Math.min(o.maxBatch, Math.floor(o.batchSeconds / Math.max(this.taskSeconds, 1e-9))))
    if (this.queues !== null) {
      for (let i = State.popReady(s); i >= 0; i = State.popReady(s)) (this.queues[this.kindOf![i]!] ??= []).push(i)
    }
    const rounds = o.shared ? o.maxInflight : 1
    for (let round = 0; round < rounds; round++) {
      const room = o.shared ? round : o.maxInflight - 1
      if (this.queues === null) {
        if (s.readyCount === 0) break
        this.round(room, 0, target, null)
      } else {
        for (let k = 0; k < this.queues.length; k++) {
          const q = this.queues[k]
          if (q !== undefined && q.length > 0) this.round(room, k, target, q)
        }
      }
    }
  }

  /** One round: each slot of `kind` holding at most `room` batches (a slow one: none) gets one. */
  private round(room: number, kind: number, target: number, queue: Array<number> | null): void {
    const s = this.state
    const free: Array<SlotState> = []
    for (const sl of this.order) {
      if (sl.kind === kind && sl.inflight.length <= room && (!sl.slow || sl.inflight.length === 0)) free.push(sl)
    }
    if (free.length === 0) return
    const left = () => (queue === null ? s.readyCount : queue.length)
    if (this.options.shared) {
      // every slot reads every result: by load only, `n` tasks each
      for (const sl of free) {
        const ready = left()
        if (ready === 0) break
        const n = Math.min(ready, target, Math.max(1, Math.ceil(ready / free.length)))
        const list: Array<number> = []
        for (let q = 0; q < n; q++) list.push(queue === null ? State.popReady(s) : queue.pop()!)
        this.send(sl, list, target)
      }
      return
    }
    const cap = Math.max(1, Math.min(target, Math.ceil(left() / free.length)))
    const lists = new Map<SlotState, Array<number>>()
    const back: Array<number> = []
    let last: SlotState | undefined
    while (left() > 0) {
      // popped (running in the state record): put back below when not placed
      const i = queue === null ? State.popReady(s) : queue.pop()!
      const best = this.place(i, free, lists, cap, last)
      if (best === null) {
        back.push(i)
        if (this.inputsLive(i)) break
        continue
      }
      let l = lists.get(best)
      if (l === undefined) lists.set(best, l = [])
      l.push(i)
      last = best
    }
    for (let k = back.length - 1; k >= 0; k--) {
      const i = back[k]!
      if (queue === null) State.requeue(s, i)
      else queue.push(i)
    }
    // free slots with nothing running that this round gives nothing either
    let idle = 0
    for (const sl of free) if (sl.inflight.length === 0 && !lists.has(sl)) idle++
    const width = this.options.fuseWidth?.(idle) ?? Infinity
    for (const [sl, list] of lists) this.send(sl, list, target, width)
  }

  /**
   * The slot for ready task `i`: the one with room holding the most bytes of its inputs
   * (+1 an input, so empty results count), ties to `last` then to the smaller batch;
   * null when no slot has room or an input has no live holder.
   */
  private place(i: number, free: ReadonlyArray<SlotState>, lists: Map<SlotState, Array<number>>, cap: number, last: SlotState | undefined): SlotState | null {
    if (!this.inputsLive(i)) return null
    const g = this.state.graph
    let best: SlotState | null = null
    let bestBytes = -1
    const sizeOf = (sl: SlotState | null) => (sl === null ? 0 : lists.get(sl)?.length ?? 0)
    for (const sl of free) {
      const b = sizeOf(sl)
      if (b >= cap) continue
      let bytes = 0
      for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) {
        const d = g.depList[j]!
        if (this.holders[d]!.includes(sl.id)) bytes += this.bytes[d]! + 1
      }
      if (bytes > bestBytes || (bytes === bestBytes && best !== last && (sl === last || b < sizeOf(best)))) {
        best = sl
        bestBytes = bytes
      }
    }
    return best
  }

  /** Whether every input of `i` has a live holder (always, with shared results). */
  private inputsLive(i: number): boolean {
    if (this.options.shared) return true
    const g = this.state.graph
    for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) {
      const hs = this.holders[g.depList[j]!]
      if (hs === undefined || hs.length === 0) return false
    }
    return true
  }

  /** Emits a batch of `list` (popped, running) for `sl`, fused up to `limit` tasks (and `width` seconds wider). */
  private send(sl: SlotState, list: Array<number>, limit: number, width = Infinity): void {
    const fusedFrom = list.length
    if (this.options.fuse !== false) this.fuse(sl, list, Math.max(this.options.fuseLimit ?? limit, fusedFrom), width)
    const id = this.nextBatch++
    const tasks = Int32Array.from(list)
    this.batches.set(id, { id, slot: sl.id, tasks, recover: false, done: 0 })
    sl.inflight.push(id)
    const rel = this.pendingRelease.get(sl.id)
    if (rel !== undefined) {
      // releases travel ahead of the batch (the cluster sends them with it)
      this.pendingRelease.delete(sl.id)
      this.out.push({ _tag: "Release", slot: sl.id, tasks: rel })
    }
    this.out.push({ _tag: "Run", slot: sl.id, batch: id, tasks, fusedFrom, recover: false })
  }

  /**
   * Appends to `list` the tasks not ready yet all of whose unfinished inputs are in it,
   * of the slot's kind, up to `limit` tasks. A member's first fused dependent continues
   * its line (a chain, a reduction); each further one widens the batch, which idle slots
   * could have shared: those take from `width` seconds (`taskCost` each) while it lasts.
   */
  private fuse(sl: SlotState, list: Array<number>, limit: number, width: number): void {
    const s = this.state
    const { hits, member } = this
    const dependents = s.dependents
    const kindOf = this.kindOf
    const fusable = this.options.fusable
    for (const i of list) member[i] = 1
    const touched: Array<number> = []
    const costOf = this.options.taskCost
    for (let q = 0; q < list.length && list.length < limit; q++) {
      const i = list[q]!
      let continued = false
      for (let j = dependents.start[i]!, e = dependents.start[i + 1]!; j < e && list.length < limit; j++) {
        const d = dependents.list[j]!
        if (!s.needed[d] || s.running[d] || s.finished[d]) continue
        if (kindOf !== null && kindOf[d] !== sl.kind) continue
        if (hits[d] === 0) touched.push(d)
        if (++hits[d]! !== s.waiting[d]) continue
        if (continued && width !== Infinity && (width <= 0 || (costOf?.(d) ?? 0) > width)) continue
        if (!this.options.shared && !this.finishedInputsLive(d)) continue
        if (fusable !== undefined && !fusable(d, member)) continue
        if (continued && width !== Infinity) width -= costOf?.(d) ?? 0
        continued = true
        State.markFused(s, d)
        list.push(d)
        member[d] = 1
      }
    }
    for (const d of touched) hits[d] = 0
    for (const i of list) member[i] = 0
  }

  /** Whether every finished input of `d` has a live holder (fusing `d` fetches them). */
  private finishedInputsLive(d: number): boolean {
    const s = this.state
    const g = s.graph
    for (let k = g.depStart[d]!; k < g.depStart[d + 1]!; k++) {
      const x = g.depList[k]!
      if (s.finished[x] && (this.holders[x]?.length ?? 0) === 0) return false
    }
    return true
  }

  // ---------------------------------------------------------------- memory and recovery

  /** State released `i`: every slot holding it drops it (sent with the slot's next batch, or now). */
  private released(i: number): void {
    const hs = this.holders[i]
    if (hs === undefined) return
    this.holders[i] = undefined
    for (const h of hs) this.queueRelease(h, i)
  }

  private queueRelease(slot: number, i: number): void {
    const l = this.pendingRelease.get(slot)
    if (l === undefined) this.pendingRelease.set(slot, [i])
    else l.push(i)
  }

  /** Emits the releases still waiting (a batch came back: nothing may be sent to carry them). */
  private flushReleases(): void {
    for (const [slot, tasks] of this.pendingRelease) {
      if (this.slots.get(slot)?.alive === true) this.out.push({ _tag: "Release", slot, tasks })
    }
    this.pendingRelease.clear()
  }

  /** Whether a result still needed has no live holder (being recomputed, or waiting for a slot to do it). */
  hasLost(): boolean {
    return this.anyLost()
  }

  /** Whether a result still needed has no live holder (not yet being recomputed: no slot to do it). */
  private anyLost(): boolean {
    if (this.options.shared) return false
    const s = this.state
    for (let i = 0; i < s.graph.size; i++) {
      if (s.finished[i] && !s.released[i] && (this.holders[i]?.length ?? 0) === 0) return true
    }
    return false
  }

  private recoveringAny(): boolean {
    for (let i = 0; i < this.recovering.length; i++) if (this.recovering[i]) return true
    return false
  }

  /**
   * Results no live slot holds that are still needed (finished, not released): each is
   * recomputed once, with the inputs it needs that were lost too, on the least loaded
   * live slot of kind 0.
   */
  private recoverLost(): void {
    if (this.options.shared || this.failed) return
    const s = this.state
    const g = s.graph
    const todo: Array<number> = []
    for (let i = 0; i < g.size; i++) {
      if (s.finished[i] && !s.released[i] && !this.recovering[i] && (this.holders[i]?.length ?? 0) === 0) todo.push(i)
    }
    if (todo.length === 0) return
    let target: SlotState | undefined
    for (const sl of this.order) if (sl.kind === 0 && (target === undefined || sl.inflight.length < target.inflight.length)) target = sl
    if (target === undefined) return
    // each lost result with the lost inputs it needs; one whose closure meets a result
    // being recomputed already waits for that batch (its end calls this again), so no
    // result is recomputed by two batches at once
    const closure = new Set<number>()
    const taken: Array<number> = []
    for (const t of todo) {
      const mine = new Set<number>()
      const stack = [t]
      let blocked = false
      while (stack.length > 0 && !blocked) {
        const i = stack.pop()!
        if (mine.has(i) || closure.has(i)) continue
        mine.add(i)
        for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) {
          const d = g.depList[j]!
          if (this.recovering[d]) blocked = true
          else if ((this.holders[d]?.length ?? 0) === 0) stack.push(d)
        }
      }
      if (blocked) continue
      for (const i of mine) closure.add(i)
      taken.push(t)
    }
    if (taken.length === 0) return
    for (const i of taken) this.recovering[i] = 1
    const id = this.nextBatch++
    const tasks = Int32Array.from([...closure].sort((a, b) => a - b))
    this.batches.set(id, { id, slot: target.id, tasks, recover: true, done: 0 })
    target.inflight.push(id)
    this.out.push({ _tag: "Run", slot: target.id, batch: id, tasks, fusedFrom: tasks.length, recover: true })
  }

  private end(failure: Failure | null): void {
    if (this.finished) return
    this.finished = true
    this.failed = failure !== null
    this.flushReleases()
    this.out.push({ _tag: "Finish", failure })
  }

  // ---------------------------------------------------------------- reads

  /** The live slots holding `task`'s result (with shared results: none are tracked). */
  holdersOf(task: number): ReadonlyArray<number> {
    return this.holders[task] ?? noHolders
  }

  /** Batches `slot` holds. */
  inflight(slot: number): number {
    return this.slots.get(slot)?.inflight.length ?? 0
  }

  /** The tasks of a batch still held (undefined once it came back or its slot was lost). */
  batchTasks(batch: number): Int32Array | undefined {
    return this.batches.get(batch)?.tasks
  }

  /** Attempts counted against task `i` (lost with its slot while it ran). */
  attemptsOf(i: number): number {
    return this.attempts[i]!
  }
}

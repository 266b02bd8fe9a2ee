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
 * Its parts: the events and instructions (instructions.ts), who holds which result
 * (holders.ts: readiness, placement and recovery where results stay on slots), fusion
 * (fusion.ts). Tested with no threads and no processes: `test/engine/Dispatcher.test.ts`.
 *
 * @since 0.1.0
 * @internal
 */
import * as State from "../../State.ts"
import { fuse, type Fuser } from "./fusion.ts"
import { Holders, Releases } from "./holders.ts"
import { deliver, type DispatcherOptions, type Event, type Failure, type Instruction } from "./instructions.ts"

export type { DispatcherOptions, Event, Failure, Finish, Instruction, Release, Run } from "./instructions.ts"

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
  /** per task, the live slots holding its result (shared: none are tracked) */
  private readonly holders: Holders
  private readonly attempts: Uint8Array
  /** per task: 1 while a recover batch recomputes it */
  private readonly recovering: Uint8Array
  /** what fusion reads (fusion.ts) */
  private readonly fuser: Fuser
  /** ready tasks by kind, when tasks have kinds (popped from the state's stack) */
  private readonly queues: Array<Array<number>> | null
  /** releases to emit, by slot */
  private readonly releases = new Releases()
  private readonly kindOf: Uint8Array | null

  constructor(state: State.SchedulerState, options: DispatcherOptions) {
    const n = state.graph.size
    this.state = state
    this.options = options
    this.taskSeconds = options.initialTaskSeconds
    this.holders = new Holders(options.shared ? 0 : n)
    this.attempts = new Uint8Array(n)
    this.recovering = new Uint8Array(options.shared ? 0 : n)
    this.kindOf = options.kindOf ?? null
    this.fuser = {
      state,
      hits: new Int32Array(n),
      member: new Uint8Array(n),
      kindOf: this.kindOf,
      fusable: options.fusable,
      taskCost: options.taskCost,
      inputsHeld: options.shared ? null : (d) => this.holders.finishedInputsLive(state, d)
    }
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
    deliver(this, e)
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
      this.holders.dropSlot(slot)
      this.releases.take(slot)
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
        this.holders.made(i, slot, bytes)
      } else if (!this.holders.of(i).includes(slot)) this.releases.queue(slot, i)
      return
    }
    if (s.finished[i]) {
      // made twice (a batch sent again after its slot looked lost): this copy is not needed
      if (!this.options.shared) this.releases.queue(slot, i)
      return
    }
    if (!this.options.shared) this.holders.made(i, slot, bytes)
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
    if (State.isDone(s) && !this.recovering.includes(1) && !this.hasLost()) this.end(null)
    else this.dispatch()
  }

  /** A copy of `task`'s result now also lives on `slot` (a peer fetch). */
  arrived(slot: number, task: number): void {
    if (this.options.shared || this.failed) return
    const s = this.state
    if (!s.finished[task] || s.released[task]) {
      this.releases.queue(slot, task)
      return
    }
    this.holders.add(task, slot)
  }

  /**
   * No slot can give `task`'s result any more (every holder a batch was sent to failed to
   * give it): its holders are forgotten, and it is recomputed if still needed.
   */
  dataLost(task: number): void {
    if (this.options.shared || this.failed) return
    if (this.holders.count(task) === 0) return
    this.holders.clear(task, true)
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

  /** The slot for ready task `i` (see `Holders.place`); null when no slot has room or an input has no live holder. */
  private place(i: number, free: ReadonlyArray<SlotState>, lists: Map<SlotState, Array<number>>, cap: number, last: SlotState | undefined): SlotState | null {
    return this.inputsLive(i) ? this.holders.place(this.state.graph, i, free, lists, cap, last) : null
  }

  /** Whether every input of `i` has a live holder (always, with shared results). */
  private inputsLive(i: number): boolean {
    return this.options.shared || this.holders.inputsLive(this.state.graph, i)
  }

  /** Emits a batch of `list` (popped, running) for `sl`, fused up to `limit` tasks (and `width` seconds wider). */
  private send(sl: SlotState, list: Array<number>, limit: number, width = Infinity): void {
    const fusedFrom = list.length
    if (this.options.fuse !== false) fuse(this.fuser, sl.kind, list, Math.max(this.options.fuseLimit ?? limit, fusedFrom), width)
    const id = this.nextBatch++
    const tasks = Int32Array.from(list)
    this.batches.set(id, { id, slot: sl.id, tasks, recover: false, done: 0 })
    sl.inflight.push(id)
    // releases travel ahead of the batch (the cluster sends them with it)
    const rel = this.releases.take(sl.id)
    if (rel !== undefined) this.out.push({ _tag: "Release", slot: sl.id, tasks: rel })
    this.out.push({ _tag: "Run", slot: sl.id, batch: id, tasks, fusedFrom, recover: false })
  }

  // ---------------------------------------------------------------- memory and recovery

  /** State released `i`: every slot holding it drops it (sent with the slot's next batch, or now). */
  private released(i: number): void {
    const hs = this.holders.clear(i, false)
    if (hs !== undefined) for (const h of hs) this.releases.queue(h, i)
  }

  /** Emits the releases still waiting (a batch came back: nothing may be sent to carry them). */
  private flushReleases(): void {
    this.releases.flush((slot) => this.slots.get(slot)?.alive === true, this.out)
  }

  /** Whether a result still needed has no live holder (being recomputed, or waiting for a slot to do it). */
  hasLost(): boolean {
    return !this.options.shared && this.holders.anyLost(this.state)
  }

  /**
   * Results no live slot holds that are still needed (finished, not released): each is
   * recomputed once, with the inputs it needs that were lost too, on the least loaded
   * live slot of kind 0.
   */
  private recoverLost(): void {
    if (this.options.shared || this.failed) return
    const todo = this.holders.lost(this.state, this.recovering)
    if (todo.length === 0) return
    let target: SlotState | undefined
    for (const sl of this.order) if (sl.kind === 0 && (target === undefined || sl.inflight.length < target.inflight.length)) target = sl
    if (target === undefined) return
    const { closure, taken } = this.holders.recovery(this.state.graph, todo, this.recovering)
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
    return this.holders.of(task)
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

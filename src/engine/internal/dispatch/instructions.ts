/**
 * What the dispatcher (dispatcher.ts) is told and what it tells: the events a shell
 * reports, the instructions it carries out, and the settings of one dispatcher.
 *
 * @since 0.1.0
 * @internal
 */

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
 * What takes events: the dispatcher's methods, one an event.
 *
 * @since 0.1.0
 * @internal
 */
export interface EventSink {
  join(slot: number, kind?: number): void
  lose(slot: number, blame?: { readonly batch: number; readonly index: number }, retry?: boolean, cause?: unknown): void
  slow(slot: number, slow: boolean): void
  taskDone(slot: number, batch: number, index: number, result: unknown, bytes?: number): void
  batchDone(slot: number, batch: number, seconds: number): void
  fail(failure: Failure): void
  arrived(slot: number, task: number): void
  dispatch(): void
}

/**
 * Hands event `e` to the method of `d` that takes it.
 *
 * @since 0.1.0
 * @internal
 */
export const deliver = (d: EventSink, e: Event): void => {
  switch (e._tag) {
    case "SlotJoined":
      return d.join(e.slot, e.kind ?? 0)
    case "SlotLost":
      return d.lose(e.slot, e.blame, e.retry ?? true, e.cause)
    case "SlotSlow":
      return d.slow(e.slot, e.slow)
    case "TaskDone":
      return d.taskDone(e.slot, e.batch, e.index, e.result, e.bytes ?? 0)
    case "BatchDone":
      return d.batchDone(e.slot, e.batch, e.seconds)
    case "TaskFailed":
      return d.fail({ _tag: "TaskFailed", task: e.task, cause: e.cause })
    case "DataArrived":
      return d.arrived(e.slot, e.task)
    case "Interrupt":
      return d.fail({ _tag: "Interrupted" })
    case "Tick":
      return d.dispatch()
  }
}

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

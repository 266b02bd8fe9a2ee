/**
 * A worker process's records of one batch, as timing rows: the pool job's callback takes
 * each TaskRecord as a transient record (`Callbacks.transientRecords`: one object refilled
 * for every task, no record, phase arrays or key lists built per task) and keeps only what
 * the reply and the worker plugins read from it — its timing row (taskTiming.ts), thread
 * and state, by the task's index in the batch's graph. The rest of a record is the
 * batch's own (its name) or the result's (`describeResult`, as the pool measured it).
 *
 * @since 0.1.0
 * @internal
 */
import type { TaskRecord } from "../../EngineEvents.ts"
import type { Callbacks } from "../../Hooks.ts"
import type { TaskGraph } from "../../TaskGraph.ts"
import { newRows, TIMING_FLOATS, writeRecord } from "../taskTiming.ts"

/**
 * One batch's task records, by task index.
 *
 * @since 0.1.0
 * @internal
 */
export class BatchTimings {
  readonly graph: TaskGraph
  /** one timing row per task (`TIMING_FLOATS` floats at `i * TIMING_FLOATS`); NaN where unmeasured */
  readonly rows: Float64Array
  /** the pool thread that ran each task */
  readonly thread: Int32Array
  /** 0: no record; 1: memory; 2: erred */
  readonly state: Uint8Array
  /** erred tasks' error and worker-side traceback, by task index */
  readonly failures = new Map<number, { readonly error: string; readonly traceback: string }>()
  /** the pool job's callback */
  readonly callbacks: Callbacks

  constructor(graph: TaskGraph) {
    this.graph = graph
    this.rows = newRows(graph.size)
    this.thread = new Int32Array(graph.size)
    this.state = new Uint8Array(graph.size)
    this.callbacks = { transientRecords: true, task: (r) => this.put(r) }
  }

  /** Whether task `i` has a record. */
  has(i: number): boolean {
    return this.state[i] !== 0
  }

  private put(r: TaskRecord): void {
    const i = this.graph.index.get(r.key)
    if (i === undefined) return
    writeRecord(this.rows, i * TIMING_FLOATS, r)
    this.thread[i] = r.workerId
    this.state[i] = r.state === "erred" ? 2 : 1
    if (r.state === "erred") this.failures.set(i, { error: r.error ?? "", traceback: r.traceback ?? "" })
  }
}

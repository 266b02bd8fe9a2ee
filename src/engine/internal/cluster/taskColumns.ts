/**
 * A worker process's records of one batch, as columns: the pool job's callback takes each
 * TaskRecord as a transient record (`Callbacks.transientRecords`: one object refilled for
 * every task, no record, phase arrays or key lists built per task) and keeps only what
 * the reply and the worker plugins read from it — the phases, CPU seconds, peak memory,
 * bytes read, GPU seconds, thread and state, by the task's index in the batch's graph.
 * The rest of a record is the batch's own (its name) or the result's (`describeResult`,
 * as the pool measured it).
 *
 * @since 0.1.0
 * @internal
 */
import type { TaskRecord } from "../../EngineEvents.ts"
import type { Callbacks } from "../../Hooks.ts"
import type { TaskGraph } from "../../TaskGraph.ts"

/**
 * Floats kept per task: gather, compute and transfer spans (6), cpuTime, peakMemory,
 * ioBytes, gpuTime (NaN: none).
 *
 * @since 0.1.0
 * @internal
 */
export const TASK_FLOATS = 10

/**
 * One batch's task records, by task index.
 *
 * @since 0.1.0
 * @internal
 */
export class TaskColumns {
  readonly graph: TaskGraph
  /** {@link TASK_FLOATS} per task; a float absent from the record (peakMemory, ioBytes, gpuTime) is NaN */
  readonly floats: Float64Array
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
    this.floats = new Float64Array(graph.size * TASK_FLOATS)
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
    const f = this.floats
    const o = i * TASK_FLOATS
    const ph = r.phases
    f[o] = ph.gather[0]
    f[o + 1] = ph.gather[1]
    f[o + 2] = ph.compute[0]
    f[o + 3] = ph.compute[1]
    f[o + 4] = ph.transfer[0]
    f[o + 5] = ph.transfer[1]
    f[o + 6] = r.cpuTime
    f[o + 7] = r.peakMemory ?? NaN
    f[o + 8] = r.ioBytes ?? NaN
    f[o + 9] = r.gpuTime ?? NaN
    this.thread[i] = r.workerId
    this.state[i] = r.state === "erred" ? 2 : 1
    if (r.state === "erred") this.failures.set(i, { error: r.error ?? "", traceback: r.traceback ?? "" })
  }
}

/**
 * The "Pipeline Graph" event: the stage DAG of the pipeline a profiler was registered
 * for, as Graphviz DOT, written once into the trace database so that the report can draw
 * the stages next to the tasks.
 *
 * `{ name: "Pipeline Graph", timestamp, phase: "I", scope: "g", process_id: host,
 *    thread_id: "main", args: { pipeline: <name>, dot: <pipeline.visualize()> } }`
 *
 * An instant event, because DASF's reader (`FileDatabase.get_traces`) accepts only
 * phases X, I, B and E (any other phase is a `KeyError`), and DASF's `TraceAnalyser`
 * looks only at events named "Compute", "Managed Memory" and "Resource Usage", so it
 * reads this one and ignores it. Tessera 0.1 files wrote it with phase "M" (metadata);
 * readers accept both (`isGraphEvent`).
 *
 * When it is written: at the start of the first compute after registration (the
 * pipeline is running, so `visualize()` sees every stage, even stages added after the
 * profiler was registered), or, when nothing was computed, when the profiler closes.
 * Exactly once per registration.
 *
 * The profiler does not import the DSL: a pipeline is anything with a name and a
 * `visualize()` returning DOT (src/dsl/Pipeline.ts is one).
 *
 * Leaves out: rendering the DOT (src/report/Graphviz.ts, used by the report).
 *
 * @since 0.1.0
 */
import * as EngineClock from "../engine/EngineClock.ts"
import type * as Hooks from "../engine/Hooks.ts"
import { EventNames, isPipelineGraphEvent, type TraceEvent } from "../trace/TraceEvent.ts"
import type { EventDatabase } from "./EventDatabase.ts"

/**
 * What the profiler needs of a pipeline (structural: src/dsl/Pipeline.ts fits).
 *
 * @since 0.1.0
 * @category models
 */
export interface PipelineLike {
  readonly name: string
  visualize(): string
}

/**
 * The event's name.
 *
 * @since 0.1.0
 * @category constants
 */
export const eventName = EventNames.pipelineGraph

/**
 * Guard: is `e` a pipeline graph event, as written now (phase "I") or by older Tessera
 * versions (phase "M"), with its DOT in `args.dot`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isGraphEvent = isPipelineGraphEvent

/**
 * Guard: does `u` look like a pipeline (a string `name` and a `visualize` method).
 *
 * @since 0.1.0
 * @category guards
 */
export const isPipelineLike = (u: unknown): u is PipelineLike =>
  typeof u === "object" && u !== null && typeof (u as { name?: unknown }).name === "string" &&
  typeof (u as { visualize?: unknown }).visualize === "function"

/**
 * The graph event (instant, global scope) for `pipeline` at `timestamp` (engine-clock seconds) on `host`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const event = (pipeline: PipelineLike, timestamp: number, host: string): TraceEvent => ({
  name: eventName,
  timestamp,
  phase: "I",
  scope: "g",
  process_id: host,
  thread_id: "main",
  args: { pipeline: pipeline.name, dot: pipeline.visualize() }
})

/**
 * Writes the event into a database once: `callbacks` (to register with the engine's
 * hooks) write it when a compute starts; `recordUnsafe` writes it now unless that
 * already happened (call it before closing the database).
 *
 * @since 0.1.0
 * @category models
 */
export interface GraphRecorder {
  readonly callbacks: Hooks.Callbacks
  readonly recordUnsafe: () => void
  /** whether the event has been written */
  readonly recorded: () => boolean
}

/**
 * A recorder of `pipeline`'s graph into `db` (events on `host`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const recorder = (db: EventDatabase, pipeline: PipelineLike, host: string): GraphRecorder => {
  let done = false
  const recordUnsafe = (): void => {
    if (done) return
    done = true
    let e: TraceEvent
    try {
      e = event(pipeline, EngineClock.nowSeconds(), host)
    } catch (error) {
      // a pipeline whose visualize() throws must not fail the compute being profiled
      process.emitWarning(`Pipeline Graph of "${pipeline.name}" not recorded: visualize() threw: ${String(error)}`)
      return
    }
    db.record(e)
  }
  return { callbacks: { start: recordUnsafe }, recordUnsafe, recorded: () => done }
}

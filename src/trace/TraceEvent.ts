/**
 * The one trace event model shared by the profiler (writer), the analysis (reader),
 * the report and the exports. Field names are DASF's (`dasf/profile/event.py`), so a
 * Tessera database is a DASF database and vice versa.
 *
 * On disk DASF writes a complete event's keys in the order
 * `name, timestamp, duration, phase, process_id, thread_id, args` and an instant
 * event's in the order `name, timestamp, phase, scope, process_id, thread_id, args`;
 * `TraceFormat.encodeRecords` reproduces exactly that order per phase. Readers must not
 * depend on key order.
 *
 * Leaves out: framing and I/O (see `TraceFormat.ts`), the meaning of each event's
 * `args` (documented per event name in docs/profiler.md and docs/analysis.md).
 *
 * @since 0.1.0
 */

/**
 * Chrome Trace Event phase letter: X complete, I instant, B/E duration begin/end,
 * C counter, M metadata. Readers accept all six; Tessera's profiler writes only the
 * four DASF's reader accepts (`dasfPhases`). Files written by Tessera 0.1 hold one
 * `M` event (the pipeline graph).
 *
 * @since 0.1.0
 * @category models
 */
export type Phase = "X" | "I" | "B" | "E" | "C" | "M"

/**
 * Every phase letter a trace database may hold.
 *
 * @since 0.1.0
 * @category models
 */
export const phases: ReadonlyArray<Phase> = ["X", "I", "B", "E", "C", "M"]

/**
 * The phases DASF's reader (`FileDatabase.get_traces`) accepts: any other phase is a
 * `KeyError` there. Every event Tessera's profiler writes has one of these.
 *
 * @since 0.1.0
 * @category models
 */
export const dasfPhases: ReadonlyArray<Phase> = ["X", "I", "B", "E"]

/**
 * Guard: can DASF's reader read an event of phase `u`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDasfPhase = (u: unknown): u is "X" | "I" | "B" | "E" => u === "X" || u === "I" || u === "B" || u === "E"

/**
 * Scope of an instant event: g global, p process, t thread.
 *
 * @since 0.1.0
 * @category models
 */
export type Scope = "g" | "p" | "t"

/**
 * One trace event. `timestamp` is in seconds (float); for a complete (`X`) event it is
 * taken when the task ENDS, so the task ran in `[timestamp - duration, timestamp]`.
 * `thread_id` is `null` for host-wide events (DASF's `Resource Usage`).
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceEvent {
  readonly name: string
  readonly timestamp: number
  readonly phase: Phase
  readonly scope?: Scope
  readonly process_id: string | number | null
  readonly thread_id: string | number | null
  readonly args: Readonly<Record<string, unknown>>
  readonly duration?: number
}

/**
 * Event names written by DASF's (and Tessera's default) profiler layers.
 *
 * @since 0.1.0
 * @category models
 */
export const EventNames = {
  compute: "Compute",
  managedMemory: "Managed Memory",
  resourceUsage: "Resource Usage",
  /** Tessera's: the driver's (main thread's) segments of a run (DASF's analyser ignores the name) */
  driver: "Driver",
  /** Tessera's: the pipeline's stage DAG (DASF's analyser ignores the name) */
  pipelineGraph: "Pipeline Graph"
} as const

/**
 * Guard: is `e` a `Pipeline Graph` event holding a stage DAG as DOT (`args.dot`): an
 * instant event (phase "I", as written now) or a metadata event (phase "M", as Tessera
 * 0.1 wrote it).
 *
 * @since 0.1.0
 * @category guards
 */
export const isPipelineGraphEvent = <E extends { readonly name: string; readonly phase: string; readonly args?: unknown }>(
  e: E
): e is E & { readonly args: { readonly dot: string } } =>
  e.name === EventNames.pipelineGraph && (e.phase === "I" || e.phase === "M") && typeof e.args === "object" &&
  e.args !== null && typeof (e.args as { readonly dot?: unknown }).dot === "string"

/**
 * Guard: is `u` a phase letter.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPhase = (u: unknown): u is Phase =>
  u === "X" || u === "I" || u === "B" || u === "E" || u === "C" || u === "M"

/**
 * Guard: is `u` an instant-event scope letter.
 *
 * @since 0.1.0
 * @category guards
 */
export const isScope = (u: unknown): u is Scope => u === "g" || u === "p" || u === "t"

/**
 * A complete (`X`) event: a span with a duration, e.g. DASF's `Compute`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const complete = (fields: {
  readonly name: string
  readonly timestamp: number
  readonly duration: number
  readonly process_id: string | number | null
  readonly thread_id: string | number | null
  readonly args: Readonly<Record<string, unknown>>
}): TraceEvent => ({
  name: fields.name,
  timestamp: fields.timestamp,
  phase: "X",
  process_id: fields.process_id,
  thread_id: fields.thread_id,
  args: fields.args,
  duration: fields.duration
})

/**
 * An instant (`I`) event, e.g. DASF's `Managed Memory` or `Resource Usage`. Scope
 * defaults to `"g"` as DASF writes it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const instant = (fields: {
  readonly name: string
  readonly timestamp: number
  readonly scope?: Scope
  readonly process_id: string | number | null
  readonly thread_id: string | number | null
  readonly args: Readonly<Record<string, unknown>>
}): TraceEvent => ({
  name: fields.name,
  timestamp: fields.timestamp,
  phase: "I",
  scope: fields.scope ?? "g",
  process_id: fields.process_id,
  thread_id: fields.thread_id,
  args: fields.args
})

/**
 * Naive reference implementations of the built-in analyses, straight from the events
 * (no tables, no typed arrays, no shortcuts): what an optimised analysis is compared
 * against in a property test. Each reads `Compute` (and `Transfer`) events as DASF's
 * format defines them; a key computed more than once counts with its latest execution,
 * as the built-in analyses count it.
 *
 * @since 0.1.0
 */
import type { TraceEvent } from "../trace/TraceEvent.ts"

interface Task {
  readonly key: string
  readonly fn: string
  readonly host: string
  readonly worker: string
  readonly start: number
  readonly end: number
  readonly duration: number
  readonly deps: ReadonlyArray<string>
}

const str = (x: unknown): string => (typeof x === "string" ? x : x === undefined || x === null ? "" : String(x))

/**
 * The `Compute` events as tasks, the latest execution of each key.
 *
 * @since 0.1.0
 * @category testing
 */
export const tasksOf = (events: ReadonlyArray<TraceEvent>): Array<Task> => {
  const byKey = new Map<string, Task>()
  for (const e of events) {
    if (e.name !== "Compute" || e.phase !== "X") continue
    const a = (e.args ?? {}) as Record<string, unknown>
    const duration = typeof e.duration === "number" ? e.duration : 0
    const t: Task = {
      key: str(a.key),
      fn: str(a.name),
      host: str(e.process_id),
      worker: str(e.thread_id),
      start: e.timestamp - duration,
      end: e.timestamp,
      duration,
      deps: Array.isArray(a.dependencies) ? a.dependencies.map(str) : []
    }
    const was = byKey.get(t.key)
    if (was === undefined || t.end >= was.end) byKey.set(t.key, t)
  }
  return [...byKey.values()]
}

/**
 * The longest duration-weighted dependency chain's length (seconds), by recursion over
 * the dependencies (inputs not in the trace ignored; a cycle: its keys are left out).
 *
 * @since 0.1.0
 * @category testing
 */
export const criticalPathLength = (events: ReadonlyArray<TraceEvent>): number => {
  const tasks = new Map(tasksOf(events).map((t) => [t.key, t]))
  const memo = new Map<string, number>()
  const onStack = new Set<string>()
  const longest = (key: string): number => {
    const known = memo.get(key)
    if (known !== undefined) return known
    const t = tasks.get(key)
    if (t === undefined || onStack.has(key)) return -Infinity
    onStack.add(key)
    let best = 0
    for (const d of t.deps) best = Math.max(best, longest(d))
    onStack.delete(key)
    const v = best + Math.max(0, t.duration)
    memo.set(key, v)
    return v
  }
  let out = 0
  for (const k of tasks.keys()) out = Math.max(out, longest(k))
  return out
}

/**
 * Seconds of tasks per worker, by `host/worker`.
 *
 * @since 0.1.0
 * @category testing
 */
export const busyTime = (events: ReadonlyArray<TraceEvent>): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const t of tasksOf(events)) out[`${t.host}/${t.worker}`] = (out[`${t.host}/${t.worker}`] ?? 0) + Math.max(0, t.duration)
  return out
}

/**
 * Bytes of all `Transfer` events.
 *
 * @since 0.1.0
 * @category testing
 */
export const bytesMoved = (events: ReadonlyArray<TraceEvent>): number =>
  events.reduce((s, e) => s + (e.name === "Transfer" ? Number((e.args as { bytes?: unknown } | undefined)?.bytes ?? 0) || 0 : 0), 0)

/**
 * Per function: tasks and their summed duration (DASF's function bottleneck, unsorted).
 *
 * @since 0.1.0
 * @category testing
 */
export const functionTotals = (events: ReadonlyArray<TraceEvent>): Record<string, { readonly tasks: number; readonly seconds: number }> => {
  const out: Record<string, { tasks: number; seconds: number }> = {}
  for (const t of tasksOf(events)) {
    const f = (out[t.fn] ??= { tasks: 0, seconds: 0 })
    f.tasks++
    f.seconds += Math.max(0, t.duration)
  }
  return out
}

/**
 * Seconds from the first task's start to the last one's end (0 without tasks).
 *
 * @since 0.1.0
 * @category testing
 */
export const wallTime = (events: ReadonlyArray<TraceEvent>): number => {
  const ts = tasksOf(events)
  return ts.length === 0 ? 0 : Math.max(...ts.map((t) => t.end)) - Math.min(...ts.map((t) => t.start))
}

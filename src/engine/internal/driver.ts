/**
 * The driver's segments of one compute (see `EngineEvents.DriverRecord`), made when the
 * compute ends: the gap since the run's previous compute (or since the run began), cut
 * into the segments whose times the engine knows (the executor's start-up, this graph's
 * validation) and the rest (`setup` before the first compute, `between computes` after);
 * then `submit` and `wait`. Each driver-row segment depends on the one before it, and the
 * first one after a compute on that compute's requested tasks, so the driver's segments
 * and the tasks form one chain of dependencies across the whole run.
 *
 * Worker start-ups (spawn to ready) go on the workers' own rows, once per run.
 *
 * @since 0.1.0
 * @internal
 */
import type { DriverActivity, DriverRecord } from "../EngineEvents.ts"
import { driverThreadId, threadId } from "../EngineEvents.ts"
import type { ExecutorShape } from "../Executor.ts"
import type { Run } from "../Lineage.ts"
import type { SchedulerState } from "../State.ts"
import { buildSpan } from "../TaskGraph.ts"
import type { TaskGraph } from "../TaskGraph.ts"

/** each activity as it appears in a segment's key (spaces as underscores), computed once */
const slugs: Readonly<Record<DriverActivity, string>> = {
  "pool start": "pool_start",
  "worker start": "worker_start",
  "setup": "setup",
  "graph build": "graph_build",
  "between computes": "between_computes",
  "submit": "submit",
  "wait": "wait"
}

/**
 * What one compute's driver segments are made from.
 *
 * @since 0.1.0
 * @internal
 */
export interface ComputeTimes {
  readonly run: Run
  readonly executor: ExecutorShape
  readonly graph: TaskGraph
  readonly state: SchedulerState
  /** execution keys of the tasks that ran (null: their graph keys) */
  readonly exec: ReadonlyArray<string> | null
  /** epoch seconds: compute entered, graph handed to the executor, executor done */
  readonly entered: number
  readonly submitted: number
  readonly done: number
}

/**
 * The compute's driver records (worker start-ups first, then the driver's row in time
 * order); updates the run's driver timeline.
 *
 * @since 0.1.0
 * @internal
 */
export const driverRecords = (c: ComputeTimes): Array<DriverRecord> => {
  const { run, executor, graph, state } = c
  const host = executor.host
  const n = ++run.computes
  const out: Array<DriverRecord> = []
  let prev = run.lastDriverKey
  let waitedFor = run.lastOutputs
  const push = (activity: DriverActivity, start: number, end: number, tid = driverThreadId, tasks = 0): void => {
    const key = `driver-${n}-${out.length}-${slugs[activity]}`
    const onDriver = tid === driverThreadId
    let dependencies: Array<string> = []
    if (onDriver) {
      // [prev, ...waitedFor] as a plain loop (runs once per segment, a few a compute)
      if (prev !== undefined) dependencies.push(prev)
      for (let q = 0; q < waitedFor.length; q++) dependencies.push(waitedFor[q]!)
    }
    out.push({ key, activity, start, end, host, threadId: tid, compute: n, dependencies, tasks })
    if (onDriver) {
      prev = key
      waitedFor = []
    }
  }
  const known: Array<{ readonly activity: DriverActivity; readonly start: number; readonly end: number }> = []
  const startup = executor.startup?.()
  if (startup !== undefined) {
    const seen = run.executors.get(executor)
    if (seen === undefined) known.push({ activity: "pool start", start: startup.built[0], end: startup.built[1] })
    for (let w = seen ?? 0; w < startup.workers.length; w++) {
      const s = startup.workers[w]!
      if (s.end > run.createdAt) push("worker start", Math.max(s.start, run.createdAt), s.end, threadId(host, s.worker))
    }
    run.executors.set(executor, startup.workers.length)
  }
  const built = buildSpan(graph)
  if (built !== undefined) known.push({ activity: "graph build", start: built[0], end: built[1] })
  known.sort((a, b) => a.start - b.start)
  const gap: DriverActivity = n === 1 ? "setup" : "between computes"
  let t = run.lastEnd
  for (const k of known) {
    const s = Math.max(k.start, t)
    const e = Math.min(k.end, c.entered)
    if (!(e > s)) continue
    if (s > t) push(gap, t, s)
    push(k.activity, s, e)
    t = e
  }
  if (c.entered > t) push(gap, t, c.entered)
  push("submit", Math.max(t, c.entered), Math.max(t, c.submitted))
  push("wait", Math.max(t, c.submitted), Math.max(t, c.done), driverThreadId, state.finishedCount)
  run.lastEnd = Math.max(t, c.done)
  run.lastDriverKey = prev
  // a loop, not Array.from(requested, fn): over a typed array that takes the iterator
  // protocol's slow path (docs/engine.md, "Measured costs behind the code")
  const requested = state.requested
  const exec = c.exec
  const outputs = new Array<string>(requested.length)
  for (let q = 0; q < requested.length; q++) outputs[q] = exec?.[requested[q]!] ?? graph.keys[requested[q]!]!
  run.lastOutputs = outputs
  return out
}

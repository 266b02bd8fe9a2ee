/**
 * The names in a job's records: the execution key of a task (its graph key, or the key a
 * lineage run gave it), the keys of its dependencies and dependents as its TaskRecord
 * lists them, and the trace row (`threadId`) of a worker.
 *
 * @since 0.1.0
 * @internal
 */
import { threadId } from "../EngineEvents.ts"
import * as Lineage from "../Lineage.ts"
import type { TaskGraph } from "../TaskGraph.ts"
import type { Job } from "./job.ts"

const threadIds = new Map<string, Array<string>>()

const threadIdCached = (host: string, w: number): string => {
  let ids = threadIds.get(host)
  if (ids === undefined) threadIds.set(host, ids = [])
  return ids[w] ??= threadId(host, w)
}

/**
 * The trace row of thread `w` on `host` in `job`'s records (see `Job.rowName`).
 *
 * @since 0.1.0
 * @internal
 */
export const rowOf = (job: Job, host: string, w: number): string => job.rowName !== undefined ? job.rowName(host, w) : threadIdCached(host, w)

/**
 * The execution key task `i` got (its graph key when the job has no run).
 *
 * @since 0.1.0
 * @internal
 */
export const execKeyOf = (job: Job, i: number): string => job.exec?.[i] ?? job.graph.keys[i]!

/**
 * A list of keys being made: a buffer that only grows (cutting an array's length to 0
 * makes V8 drop its storage, and the next push allocate it again); `copy` gives the
 * list as an array of its own.
 *
 * @since 0.1.0
 * @internal
 */
export class KeyList {
  private readonly keys: Array<string> = []
  n = 0
  add(k: string): void {
    this.keys[this.n++] = k
  }
  has(k: string): boolean {
    for (let q = 0; q < this.n; q++) if (this.keys[q] === k) return true
    return false
  }
  /** The list as a new array. */
  copy(): Array<string> {
    return this.keys.slice(0, this.n)
  }
}

/**
 * Dependencies of task `i` as execution keys, into `out`: its graph dependencies (which
 * ran earlier in this compute), then the tasks of earlier computes that made the values
 * it takes as arguments (Lineage origins).
 */
const execDependencies = (job: Job, run: Lineage.Run, i: number, out: KeyList): KeyList => {
  const g = job.graph
  out.n = 0
  for (let j = g.depStart[i]!; j < g.depStart[i + 1]!; j++) out.add(execKeyOf(job, g.depList[j]!))
  const args = g.specs[i]!.args
  const plan = g.argPlan[i]
  for (let a = 0; a < args.length; a++) {
    // a ref's value is a task of this compute (listed above), never a marked result
    if (plan != null && plan[a] !== -1) continue
    const from = Lineage.originOf(run, args[a])
    if (from === undefined) continue
    for (const k of from) if (!out.has(k)) out.add(k)
  }
  return out
}

/**
 * Dependents of task `i` as the execution keys they will get when they run (or got: a
 * record built after its dependents ran, see `PendingTask`, names the keys they were
 * given), into `out`.
 */
const execDependents = (job: Job, run: Lineage.Run, i: number, out: KeyList): KeyList => {
  const g = job.graph
  const exec = job.exec!
  out.n = 0
  for (let j = g.dependentStart[i]!; j < g.dependentStart[i + 1]!; j++) {
    const d = g.dependentList[j]!
    out.add(exec[d] ?? Lineage.nextKey(run, g.keys[d]!))
  }
  return out
}

/** Graph keys of task `i`'s dependencies (`first` true) or dependents, into `out` (a job without a run). */
const graphKeys = (g: TaskGraph, i: number, first: boolean, out: KeyList): KeyList => {
  const start = first ? g.depStart : g.dependentStart
  const list = first ? g.depList : g.dependentList
  out.n = 0
  for (let j = start[i]!; j < start[i + 1]!; j++) out.add(g.keys[list[j]!]!)
  return out
}

/**
 * Task `i`'s dependencies and dependents into the job's two key lists (`deps`, `dents`;
 * execution keys with a run).
 *
 * @since 0.1.0
 * @internal
 */
export const fillLists = (job: Job, i: number): void => {
  const run = job.run
  if (run === undefined) {
    graphKeys(job.graph, i, true, job.deps)
    graphKeys(job.graph, i, false, job.dents)
  } else {
    execDependencies(job, run, i, job.deps)
    execDependents(job, run, i, job.dents)
  }
}

/**
 * Task `i`'s execution key, dependencies and dependents as its TaskRecord will have them,
 * for an executor that records the task in another process (the cluster's workers);
 * assigns the execution key now, and `record` keeps it.
 *
 * @since 0.1.0
 * @internal
 */
export const taskLineage = (job: Job, i: number): [key: string, dependencies: Array<string>, dependents: Array<string>] => {
  const run = job.run
  const key = run === undefined ? job.graph.keys[i]! : (job.exec![i] ??= Lineage.executeKey(run, job.graph.keys[i]!))
  fillLists(job, i)
  return [key, job.deps.copy(), job.dents.copy()]
}

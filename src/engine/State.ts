/**
 * The scheduler's state record and its transitions — one record everyone reads (hooks,
 * progress bars, profilers), as in dask's local scheduler (`dask/local.py`).
 *
 * Tasks are addressed by index (`graph.keys[i]` is the key), so the hot loop touches
 * typed arrays, not Maps or strings. Fields:
 *
 * - `dependencies`, `dependents` (constant): CSR views of the graph: the dependencies
 *   of `i` are `dependencies.list[dependencies.start[i] .. dependencies.start[i+1])`.
 * - `waiting[i]`: how many dependencies of `i` have not finished yet (shrinks to 0; then
 *   `i` is pushed on `ready`).
 * - `waitingData[i]`: how many holders still need the result of `i`: its needed
 *   dependents that have not finished, plus 1 when the caller requested `i`. When it
 *   reaches 0 the result is released (dropped from `cache`).
 * - `ready`: a LIFO stack of runnable tasks (`ready[0 .. readyCount)`), so the scheduler
 *   goes depth-first and frees memory early, like dask.
 * - `running[i]`, `finished[i]`, `released[i]`: 0/1 flags with counts.
 * - `cache[i]`: the result of `i` while somebody still needs it.
 * - `needed[i]`: 1 when `i` is needed for the requested keys (others never run).
 *
 * **Example** (worked, a -> b, a -> c, requested ["b", "c"]):
 *
 * ```
 * start:          waiting = {a:0, b:1, c:1}  waitingData = {a:2, b:1, c:1}  ready = [a]
 * a finishes:     waiting = {b:0, c:0}       ready = [c, b]   cache = {a}
 * b finishes:     waitingData a: 2 -> 1      cache = {a, b}
 * c finishes:     waitingData a: 1 -> 0 => a released        cache = {b, c}
 * ```
 *
 * Transition functions mutate the record; each must run without interleaving (the
 * engine runs on one thread, so that is automatic).
 *
 * @since 0.1.0
 */
import type { TaskGraph } from "./TaskGraph.ts"

/**
 * CSR adjacency: entries of task `i` are `list[start[i] .. start[i + 1])`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Adjacency {
  readonly start: Int32Array
  readonly list: Int32Array
}

/**
 * The scheduler state record (see the module header for every field).
 *
 * @since 0.1.0
 * @category models
 */
export interface SchedulerState {
  readonly graph: TaskGraph
  readonly dependencies: Adjacency
  readonly dependents: Adjacency
  readonly needed: Uint8Array
  readonly requested: Int32Array
  /** Number of needed tasks. */
  readonly total: number
  readonly waiting: Int32Array
  readonly waitingData: Int32Array
  readonly ready: Int32Array
  readyCount: number
  readonly running: Uint8Array
  runningCount: number
  readonly finished: Uint8Array
  finishedCount: number
  readonly released: Uint8Array
  releasedCount: number
  readonly cache: Array<unknown>
  /** Called with each released task index (memory accounting); null when nobody cares. */
  onRelease: ((i: number) => void) | null
}

/**
 * Builds the start state for computing `requested` (task indices) of `graph`: culls the
 * graph to what they need and pushes the tasks without dependencies on `ready`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const init = (graph: TaskGraph, requested: Int32Array): SchedulerState => {
  const n = graph.size
  const { depStart, depList, dependentStart, dependentList } = graph
  const needed = new Uint8Array(n)
  const stack: Array<number> = []
  for (const r of requested) {
    if (!needed[r]) {
      needed[r] = 1
      stack.push(r)
    }
  }
  while (stack.length > 0) {
    const t = stack.pop()!
    for (let j = depStart[t]!; j < depStart[t + 1]!; j++) {
      const d = depList[j]!
      if (!needed[d]) {
        needed[d] = 1
        stack.push(d)
      }
    }
  }
  const waiting = new Int32Array(n)
  const waitingData = new Int32Array(n)
  const ready = new Int32Array(n)
  let total = 0
  let readyCount = 0
  for (let i = 0; i < n; i++) {
    if (!needed[i]) continue
    total++
    waiting[i] = depStart[i + 1]! - depStart[i]!
    let holders = 0
    for (let j = dependentStart[i]!; j < dependentStart[i + 1]!; j++) if (needed[dependentList[j]!]) holders++
    waitingData[i] = holders
  }
  for (const r of requested) waitingData[r]!++
  // Push in reverse topological order so the first task in graph order pops first.
  for (let o = n - 1; o >= 0; o--) {
    const i = graph.order[o]!
    if (needed[i] && waiting[i] === 0) ready[readyCount++] = i
  }
  return {
    graph,
    dependencies: { start: depStart, list: depList },
    dependents: { start: dependentStart, list: dependentList },
    needed,
    requested,
    total,
    waiting,
    waitingData,
    ready,
    readyCount,
    running: new Uint8Array(n),
    runningCount: 0,
    finished: new Uint8Array(n),
    finishedCount: 0,
    released: new Uint8Array(n),
    releasedCount: 0,
    cache: new Array(n),
    onRelease: null
  }
}

/**
 * Pops the next ready task (LIFO) and marks it running; -1 when none is ready.
 *
 * @since 0.1.0
 * @category combinators
 */
export const popReady = (s: SchedulerState): number => {
  if (s.readyCount === 0) return -1
  const i = s.ready[--s.readyCount]!
  s.running[i] = 1
  s.runningCount++
  return i
}

/**
 * Marks a task that is not ready yet as running: the worker executor dispatches it in
 * the same batch as the unfinished tasks it depends on ("fused"); the worker runs them
 * in order and hands their results over locally. `finishTask` of its inputs will not
 * push it on `ready`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const markFused = (s: SchedulerState, i: number): void => {
  s.running[i] = 1
  s.runningCount++
}

/**
 * Takes a running task back (a retry after its worker died): onto `ready` when its
 * inputs are finished, else back to waiting (a fused task whose inputs were lost too).
 *
 * @since 0.1.0
 * @category combinators
 */
export const requeue = (s: SchedulerState, i: number): void => {
  if (!s.running[i]) return
  s.running[i] = 0
  s.runningCount--
  if (s.waiting[i] === 0) s.ready[s.readyCount++] = i
}

/**
 * Drops the result of `i` from the cache.
 *
 * @since 0.1.0
 * @category combinators
 */
export const release = (s: SchedulerState, i: number): void => {
  s.cache[i] = undefined
  s.released[i] = 1
  s.releasedCount++
  if (s.onRelease !== null) s.onRelease(i)
}

/**
 * Records the result of running task `i`: caches it, makes dependents whose inputs are
 * now complete ready, and releases inputs nobody needs any more.
 *
 * @since 0.1.0
 * @category combinators
 */
export const finishTask = (s: SchedulerState, i: number, result: unknown): void => {
  s.running[i] = 0
  s.runningCount--
  s.finished[i] = 1
  s.finishedCount++
  s.cache[i] = result
  const { dependents, dependencies, waiting, waitingData, needed } = s
  for (let j = dependents.start[i]!, e = dependents.start[i + 1]!; j < e; j++) {
    const d = dependents.list[j]!
    if (needed[d] && --waiting[d]! === 0 && !s.running[d]) s.ready[s.readyCount++] = d
  }
  for (let j = dependencies.start[i]!, e = dependencies.start[i + 1]!; j < e; j++) {
    const d = dependencies.list[j]!
    if (--waitingData[d]! === 0) release(s, d)
  }
  if (waitingData[i] === 0) release(s, i)
}

/**
 * The resolved arguments of task `i` (refs replaced by cached results).
 *
 * @since 0.1.0
 * @category getters
 */
export const argsFor = (s: SchedulerState, i: number): ReadonlyArray<unknown> => {
  const spec = s.graph.specs[i]!
  const plan = s.graph.argPlan[i]
  if (plan === null || plan === undefined) return spec.args
  const out = new Array(plan.length)
  for (let a = 0; a < plan.length; a++) {
    const slot = plan[a]!
    if (typeof slot === "number") {
      out[a] = slot < 0 ? spec.args[a] : s.cache[slot]
    } else {
      const arr = new Array(slot.length)
      for (let q = 0; q < slot.length; q++) arr[q] = s.cache[slot[q]!]
      out[a] = arr
    }
  }
  return out
}

/**
 * True when every needed task has finished.
 *
 * @since 0.1.0
 * @category getters
 */
export const isDone = (s: SchedulerState): boolean => s.finishedCount === s.total

/**
 * A task's status by key: "waiting" | "ready" | "running" | "memory" | "released" |
 * "not-needed" | "unknown".
 *
 * @since 0.1.0
 * @category getters
 */
export const statusOf = (s: SchedulerState, key: string): string => {
  const i = s.graph.index.get(key)
  if (i === undefined) return "unknown"
  if (!s.needed[i]) return "not-needed"
  if (s.released[i]) return "released"
  if (s.finished[i]) return "memory"
  if (s.running[i]) return "running"
  if (s.waiting[i] === 0) return "ready"
  return "waiting"
}

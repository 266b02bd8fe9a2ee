/**
 * The task table as typed arrays, shared by the analyses, plus the small helpers they
 * have in common (grouping, worker labels, deterministic ordering).
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { type Codes, codesOf, floatsOf, listCodesOf, recode } from "./access.ts"

export { cmpStr, gpuLabel, groupBy } from "./grouping.ts"

/**
 * The loaded tables an analysis reads. Only `tasks` is required.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tables {
  readonly tasks: Table
  readonly resources?: Table
  readonly memory?: Table
  /** `Driver` events (Driver.ts), when the trace has them */
  readonly driver?: Table
  /** `Transfer` events (Load.ts `transfers`), when the trace has them */
  readonly transfers?: Table
}

/**
 * Typed-array view of the task table.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskView {
  readonly n: number
  readonly host: Codes
  readonly worker: Codes
  readonly key: Codes
  readonly fn: Codes
  readonly start: Float64Array
  readonly end: Float64Array
  readonly duration: Float64Array
  readonly size: Float64Array
  /**
   * dependency lists: `deps[depOffsets[i]..depOffsets[i+1])`, codes of `key`'s dictionary
   * (-1: null, or, where the dependency column has a dictionary of its own, a string that
   * dictionary lacks; Load's tables share one, in which a dependency that no task ran still
   * has a code)
   */
  readonly depOffsets: Int32Array
  readonly deps: Int32Array
}

/**
 * Build the view. `start` falls back to `end - duration` when the table has no start.
 *
 * @since 0.1.0
 * @category getters
 */
export const taskView = (tasks: Table): TaskView => {
  // analyses of one loaded trace share the view (tables are immutable)
  let v = views.get(tasks)
  if (v === undefined) {
    v = makeTaskView(tasks)
    views.set(tasks, v)
  }
  return v
}

const views = new WeakMap<Table, TaskView>()

const makeTaskView = (tasks: Table): TaskView => {
  const n = tasks.numRows
  const end = floatsOf(tasks.getChild("end"), n)
  const duration = floatsOf(tasks.getChild("duration"), n)
  const startCol = tasks.getChild("start")
  const start = startCol !== null ? floatsOf(startCol, n) : end.map((e, i) => e - duration[i])
  const key = codesOf(tasks.getChild("key"), n)
  const lists = listCodesOf(tasks.getChild("dependencies"), n)
  return {
    n,
    host: codesOf(tasks.getChild("host"), n),
    worker: codesOf(tasks.getChild("worker"), n),
    key,
    fn: codesOf(tasks.getChild("function"), n),
    start,
    end,
    duration,
    size: floatsOf(tasks.getChild("size"), n),
    depOffsets: lists.offsets,
    deps: recode(lists.codes, key)
  }
}

/**
 * String of a code, null for -1.
 *
 * @since 0.1.0
 * @category getters
 */
export const str = (c: Codes, code: number): string | null => (code < 0 ? null : c.at(code))

/**
 * Input bytes of each task: the sum over its dependencies of the size of that
 * dependency's latest execution (0 for a dependency that is not in the trace, as in DASF).
 *
 * @since 0.1.0
 * @category getters
 */
export const inputBytes = (v: TaskView): Float64Array => {
  const sizeOfKey = new Float64Array(v.key.size)
  const endOfKey = new Float64Array(v.key.size).fill(-Infinity)
  for (let i = 0; i < v.n; i++) {
    const k = v.key.codes[i]
    if (k >= 0 && v.end[i] >= endOfKey[k]) {
      endOfKey[k] = v.end[i]
      sizeOfKey[k] = v.size[i] === v.size[i] ? v.size[i] : 0
    }
  }
  const out = new Float64Array(v.n)
  for (let i = 0; i < v.n; i++) {
    let s = 0
    for (let j = v.depOffsets[i]; j < v.depOffsets[i + 1]; j++) {
      const d = v.deps[j]
      if (d >= 0) s += sizeOfKey[d]
    }
    out[i] = s
  }
  return out
}

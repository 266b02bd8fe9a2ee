/**
 * The task table as typed arrays, shared by the analyses, plus the small helpers they
 * have in common (grouping, worker labels, deterministic ordering).
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { type Codes, codesFromArray, codesOf, floatsOf, listCodesOf, recode } from "./access.ts"

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
  /** dependency lists: `deps[depOffsets[i]..depOffsets[i+1])`, codes of `key.dict` (-1 = not a task key) */
  readonly depOffsets: Int32Array
  readonly deps: Int32Array
}

/**
 * Build the view. `start` falls back to `end - duration` when the table has no start.
 *
 * @since 0.1.0
 * @category access
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
 * DASF's "GPU" column: the last `-`-separated part of the worker (thread) id, which
 * is the dask worker name (DASF-NOTES 11); "" for a missing worker.
 *
 * @since 0.1.0
 * @category access
 */
export const gpuLabel = (worker: string | undefined): string =>
  worker === undefined ? "" : worker.slice(worker.lastIndexOf("-") + 1)

/**
 * DASF's "GPU" label per task row as codes (into the labels of the worker dictionary).
 *
 * @since 0.1.0
 * @category access
 */
export const gpuCodes = (v: TaskView): Codes => {
  const labels: Array<string> = []
  const index = new Map<string, number>()
  const trans = Int32Array.from(v.worker.dict, (w) => {
    const l = gpuLabel(w)
    let c = index.get(l)
    if (c === undefined) (c = labels.length, labels.push(l), index.set(l, c))
    return c
  })
  let empty = -1
  const wc = v.worker.codes
  const codes = new Int32Array(wc.length)
  for (let i = 0; i < wc.length; i++) {
    const c = wc[i]
    if (c >= 0) codes[i] = trans[c]
    else {
      if (empty < 0) {
        empty = index.get("") ?? labels.length
        if (empty === labels.length) (labels.push(""), index.set("", empty))
      }
      codes[i] = empty
    }
  }
  return codesFromArray(codes, labels)
}

/**
 * String of a code, null for -1.
 *
 * @since 0.1.0
 * @category access
 */
export const str = (c: Codes, code: number): string | null => (code < 0 ? null : c.at(code))

/**
 * Compare strings with nulls first; for deterministic row order.
 *
 * @since 0.1.0
 * @category access
 */
export const cmpStr = (a: string | null, b: string | null): number =>
  a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1

/**
 * Group rows by a tuple of small codes; returns group id per row and the first row of
 * each group.
 *
 * @since 0.1.0
 * @category access
 */
export const groupBy = (
  n: number,
  parts: ReadonlyArray<{ readonly codes: Int32Array; readonly size: number }>
): { readonly group: Int32Array; readonly firstRow: Array<number> } => {
  const group = new Int32Array(n)
  const firstRow: Array<number> = []
  // composite code; a dense table when the code space is small enough, else a Map
  let space = 1
  for (const p of parts) space *= p.size + 1
  if (space <= 1 << 22) {
    const dense = new Int32Array(space).fill(-1)
    for (let i = 0; i < n; i++) {
      let k = 0
      for (const p of parts) k = k * (p.size + 1) + (p.codes[i] + 1)
      let g = dense[k]
      if (g < 0) {
        g = dense[k] = firstRow.length
        firstRow.push(i)
      }
      group[i] = g
    }
    return { group, firstRow }
  }
  // large spaces (the last part is the big one, e.g. task keys): per last-part code,
  // remember the first group and its prefix; a Map only for codes seen with other prefixes
  const last = parts[parts.length - 1]
  const prefixes = parts.slice(0, -1)
  const firstGroup = new Int32Array(last.size + 1).fill(-1)
  const firstPrefix = new Float64Array(last.size + 1)
  const ids = new Map<number, number>()
  for (let i = 0; i < n; i++) {
    let pre = 0
    for (const p of prefixes) pre = pre * (p.size + 1) + (p.codes[i] + 1)
    const c = last.codes[i] + 1
    let g = firstGroup[c]
    if (g < 0) {
      g = firstGroup[c] = firstRow.length
      firstPrefix[c] = pre
      firstRow.push(i)
    } else if (firstPrefix[c] !== pre) {
      const k = pre * (last.size + 1) + c
      const m = ids.get(k)
      if (m === undefined) {
        g = firstRow.length
        ids.set(k, g)
        firstRow.push(i)
      } else g = m
    }
    group[i] = g
  }
  return { group, firstRow }
}

/**
 * Input bytes of each task: the sum over its dependencies of the size of that
 * dependency's latest execution (0 for a dependency that is not in the trace, as in DASF).
 *
 * @since 0.1.0
 * @category access
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

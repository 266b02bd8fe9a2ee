/**
 * The rows of DASF's per-task bottleneck (`Bottleneck.perTaskBottleneck`) from plain
 * typed arrays, no Arrow: the calling thread computes them from its task view, and
 * `tessera analyze`'s CSV worker thread computes them from the same arrays (shared memory)
 * while the calling thread runs the other analyses (`Analyze.ts`). One function, so both
 * give the same rows.
 *
 * Hot path: hundreds of thousands of groups, typed arrays and codes, no row objects.
 *
 * @since 0.1.0
 * @internal
 */
import { cmpStr, gpuLabel, groupBy, pct, workerTotals } from "./grouping.ts"
import { argsortDesc } from "./sort.ts"

/**
 * The task columns the per-task bottleneck reads: dictionary codes (-1 = null) and
 * numbers, one entry per task row.
 *
 * @since 0.1.0
 * @internal
 */
export interface BottleneckTaskColumns {
  readonly n: number
  readonly host: Int32Array
  readonly worker: Int32Array
  readonly key: Int32Array
  readonly duration: Float64Array
  readonly end: Float64Array
  readonly size: Float64Array
}

/**
 * The dictionaries behind `BottleneckTaskColumns`' codes: their sizes, and a code's
 * string (asked for every worker, and for hosts and keys only to order rows of equal
 * duration).
 *
 * @since 0.1.0
 * @internal
 */
export interface TaskStrings {
  readonly hosts: number
  readonly workers: number
  readonly keys: number
  readonly host: (code: number) => string
  readonly worker: (code: number) => string
  readonly key: (code: number) => string
}

/**
 * The per-task bottleneck's rows, in their final order: per (host, worker, key), the
 * summed duration, its share of the worker's task time (%), the output size (MB) of the
 * key's latest execution there, the host and key codes (of `TaskStrings`' dictionaries)
 * and the "GPU" label's code into `gpuLabels`.
 *
 * @since 0.1.0
 * @internal
 */
export interface TaskBottleneckRows {
  readonly rows: number
  readonly duration: Float64Array
  readonly percentage: Float64Array
  readonly megabytes: Float64Array
  readonly host: Int32Array
  readonly gpu: Int32Array
  readonly key: Int32Array
  /** the task row each row's cells come from (its group's first row) */
  readonly row: Int32Array
  readonly gpuLabels: ReadonlyArray<string>
}

/**
 * Memory for a result array of `bytes` bytes (an `ArrayBuffer`, or a `SharedArrayBuffer`
 * where another thread reads the rows too).
 *
 * @since 0.1.0
 * @internal
 */
export type Allocate = (bytes: number) => ArrayBufferLike

/**
 * DASF's "GPU" labels of the worker dictionary (`gpuLabel`), each once, in dictionary
 * order, "" last for rows without a worker: a label code per worker code.
 */
const gpuOfWorkers = (t: BottleneckTaskColumns, s: TaskStrings) => {
  const labels: Array<string> = []
  const index = new Map<string, number>()
  const label = (l: string) => {
    let c = index.get(l)
    if (c === undefined) (c = labels.length, labels.push(l), index.set(l, c))
    return c
  }
  const ofWorker = Int32Array.from({ length: s.workers }, (_, w) => label(gpuLabel(s.worker(w))))
  let empty = -1
  for (let i = 0; i < t.n; i++) if (t.worker[i] < 0) (empty = label(""), i = t.n)
  return { labels, ofWorker, empty }
}

/**
 * See the module header; `allocate` makes the result's arrays.
 *
 * @since 0.1.0
 * @internal
 */
export const taskBottleneckRows = (t: BottleneckTaskColumns, s: TaskStrings, allocate: Allocate = (b) => new ArrayBuffer(b)): TaskBottleneckRows => {
  const { group, firstRow } = groupBy(t.n, [
    { codes: t.host, size: s.hosts },
    { codes: t.worker, size: s.workers },
    { codes: t.key, size: s.keys }
  ])
  const G = firstRow.length
  const dur = new Float64Array(G)
  const size = new Float64Array(G).fill(NaN)
  const lastEnd = new Float64Array(G).fill(-Infinity)
  for (let i = 0; i < t.n; i++) {
    const g = group[i]
    dur[g] += t.duration[i]
    if (t.end[i] >= lastEnd[g]) (lastEnd[g] = t.end[i], size[g] = t.size[i])
  }
  const totalOf = workerTotals(t, s.hosts, s.workers)
  const gpus = gpuOfWorkers(t, s)
  const gpuOf = (r: number) => (t.worker[r] < 0 ? gpus.empty : gpus.ofWorker[t.worker[r]])
  const str = (code: number, at: (c: number) => string) => (code < 0 ? null : at(code))
  const order = argsortDesc(dur, (a, b) =>
    cmpStr(str(t.host[firstRow[a]], s.host), str(t.host[firstRow[b]], s.host)) ||
    cmpStr(gpus.labels[gpuOf(firstRow[a])]!, gpus.labels[gpuOf(firstRow[b])]!) ||
    cmpStr(str(t.key[firstRow[a]], s.key), str(t.key[firstRow[b]], s.key))
  )
  // each group's cells side by side, in group order (its first rows come in row order:
  // sequential reads), then gathered in sorted order: one cache line a row, where
  // gathering from the seven arrays missed the cache seven times
  const W = 7
  const cells = new Float64Array(G * W)
  for (let g = 0; g < G; g++) {
    const r = firstRow[g]
    const at = g * W
    cells[at] = dur[g]
    cells[at + 1] = pct(dur[g], totalOf(r))
    cells[at + 2] = size[g] / 1e6
    cells[at + 3] = t.host[r]
    cells[at + 4] = gpuOf(r)
    cells[at + 5] = t.key[r]
    cells[at + 6] = r
  }
  const f64 = () => new Float64Array(allocate(G * 8))
  const i32 = () => new Int32Array(allocate(G * 4))
  const out = { duration: f64(), percentage: f64(), megabytes: f64(), host: i32(), gpu: i32(), key: i32(), row: i32() }
  for (let i = 0; i < G; i++) {
    const at = order[i] * W
    out.duration[i] = cells[at]
    out.percentage[i] = cells[at + 1]
    out.megabytes[i] = cells[at + 2]
    out.host[i] = cells[at + 3]
    out.gpu[i] = cells[at + 4]
    out.key[i] = cells[at + 5]
    out.row[i] = cells[at + 6]
  }
  return { rows: G, ...out, gpuLabels: gpus.labels }
}

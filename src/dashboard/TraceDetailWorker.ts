/**
 * Zooming into the past beyond the server's ring, off the engine's thread: a worker
 * thread that loads the run's trace databases (analysis/Load.ts, the same tables as
 * `tessera analyze`) and answers a window's rectangles — the tasks (erred ones as such)
 * and the data transfers whose span meets it — at most `limit` of them, the earliest
 * first, with how many there are in all. Started by the server on the first such
 * request (`TraceDetail.ts`), ended with it.
 *
 * The tables are loaded once and kept; they are loaded again only when a window ends
 * after what the loaded files covered and the files have grown since (a run still
 * writing them: the profiler appends its batches at most a second after their events).
 * A window is `complete` when the loaded files cover its end.
 *
 * @since 0.1.0
 */
import { statSync } from "node:fs"
import { parentPort } from "node:worker_threads"
import { floatsOf } from "../analysis/Columns.ts"
import type { TraceTables } from "../analysis/Load.ts"

/**
 * One rectangle of the trace: times in epoch seconds; `kind` 0 a task, 1 an erred
 * task, 2 a data transfer (the LiveState's kinds).
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceRect {
  readonly start: number
  readonly end: number
  readonly worker: string
  readonly function: string
  readonly stage: string
  readonly key: string
  readonly kind: 0 | 1 | 2
}

/**
 * A window's answer: at most `limit` rectangles (the earliest first), how many meet
 * the window in all, whether the loaded files cover the window's end, and that end of
 * coverage (epoch seconds; the latest task end or transfer stop loaded).
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceWindow {
  readonly rects: ReadonlyArray<TraceRect>
  readonly count: number
  readonly complete: boolean
  readonly coveredTo: number
}

/**
 * The latest time the tables hold (task ends, transfer stops), epoch seconds.
 *
 * @since 0.1.0
 * @category getters
 */
export const coverageOf = (tables: TraceTables): number => {
  let hi = -Infinity
  const tasks = floatsOf(tables.tasks.getChild("end"), tables.tasks.numRows)
  for (let i = 0; i < tasks.length; i++) if (tasks[i]! > hi) hi = tasks[i]!
  const stops = floatsOf(tables.transfers.getChild("stop"), tables.transfers.numRows)
  for (let i = 0; i < stops.length; i++) if (stops[i]! > hi) hi = stops[i]!
  return hi
}

/**
 * The rectangles of `tables` that meet `[from, to]` (epoch seconds): a task spans its
 * gather start to its transfer end (its start and end where those are absent), as the
 * live state draws it; a transfer its start to its stop. At most `limit`, the earliest
 * first (then by worker and key), and the count of all.
 *
 * @since 0.1.0
 * @category getters
 */
export const rectsIn = (tables: TraceTables, from: number, to: number, limit: number): { readonly rects: Array<TraceRect>; readonly count: number } => {
  const all: Array<TraceRect> = []
  const t = tables.tasks
  const n = t.numRows
  const start = floatsOf(t.getChild("start"), n), end = floatsOf(t.getChild("end"), n)
  const gs = floatsOf(t.getChild("gather_start"), n), te = floatsOf(t.getChild("transfer_end"), n)
  const worker = t.getChild("worker"), fn = t.getChild("function"), stage = t.getChild("stage"), key = t.getChild("key"), state = t.getChild("state")
  for (let i = 0; i < n; i++) {
    const s = Number.isFinite(gs[i]!) ? gs[i]! : start[i]!
    const e = Number.isFinite(te[i]!) ? te[i]! : end[i]!
    if (!(e >= from && s <= to)) continue
    all.push({
      start: s,
      end: e,
      worker: worker?.get(i) ?? "",
      function: fn?.get(i) ?? "",
      stage: stage?.get(i) ?? "",
      key: key?.get(i) ?? "",
      kind: state?.get(i) === "erred" ? 1 : 0
    })
  }
  const x = tables.transfers
  const xs = floatsOf(x.getChild("start"), x.numRows), xe = floatsOf(x.getChild("stop"), x.numRows)
  const xw = x.getChild("worker"), keys = x.getChild("keys")
  for (let i = 0; i < x.numRows; i++) {
    if (!(xe[i]! >= from && xs[i]! <= to)) continue
    const k = keys?.get(i)
    all.push({ start: xs[i]!, end: xe[i]!, worker: xw?.get(i) ?? "", function: "", stage: "", key: k !== null && k !== undefined && k.length === 1 ? String(k.get(0)) : "", kind: 2 })
  }
  all.sort((a, b) => a.start - b.start || (a.worker < b.worker ? -1 : a.worker > b.worker ? 1 : 0) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  return { rects: all.slice(0, Math.max(0, limit)), count: all.length }
}

/**
 * What the server asks: a window (epoch seconds) of `files`, at most `limit` rectangles.
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceDetailRequest {
  readonly id: number
  readonly files: ReadonlyArray<string>
  readonly from: number
  readonly to: number
  readonly limit: number
}

const sizes = (files: ReadonlyArray<string>): string =>
  files.map((f) => {
    try {
      return String(statSync(f).size)
    } catch {
      return "-"
    }
  }).join(",")

let cache: { key: string; sizes: string; tables: TraceTables; coveredTo: number } | undefined

const answer = async (r: TraceDetailRequest): Promise<TraceWindow> => {
  const key = r.files.join("\0")
  const now = sizes(r.files)
  if (cache === undefined || cache.key !== key || (r.to > cache.coveredTo && cache.sizes !== now)) {
    const present = r.files.filter((_, i) => now.split(",")[i] !== "-")
    if (present.length === 0) return { rects: [], count: 0, complete: false, coveredTo: -Infinity }
    const { loadPromise } = await import("../analysis/Load.ts")
    const tables = await loadPromise(present)
    cache = { key, sizes: now, tables, coveredTo: coverageOf(tables) }
  }
  const { rects, count } = rectsIn(cache.tables, r.from, r.to, r.limit)
  return { rects, count, complete: r.to <= cache.coveredTo, coveredTo: cache.coveredTo }
}

let queue: Promise<void> = Promise.resolve()
const port = parentPort
if (port !== null) {
  port.on("message", (m: TraceDetailRequest | { readonly quit: true }) => {
    if ("quit" in m) {
      port.close()
      return
    }
    // one at a time: a second window waits for the first one's load, then shares it
    const done = queue.then(() => answer(m))
    queue = done.then(() => undefined, () => undefined)
    done.then(
      (w) => port.postMessage({ id: m.id, ok: true, window: w }),
      (e: unknown) => port.postMessage({ id: m.id, ok: false, error: e instanceof Error ? e.message : String(e) })
    )
  })
}

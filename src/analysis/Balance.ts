/**
 * Time-bucketed views per worker: DASF's task balance (chunks held per worker per
 * second) with correct bucketing, and Tessera's worker utilization (busy / idle time per
 * worker per interval).
 *
 * Buckets are aligned to the trace start `t0`: the earliest of every task start
 * (`timestamp - duration`), Managed Memory timestamp and Resource Usage timestamp; bucket
 * b covers `[t0 + b, t0 + b + 1)`. DASF instead buckets by `int(absolute timestamp)`
 * (docs/dasf.md, N9).
 *
 * Memory is bounded by the number of events, never by the span: a trace whose span holds
 * more one-second buckets than {@link maxBuckets} allows (two tasks 1e9 s apart, or a
 * DASF trace on `time.monotonic()` next to a Tessera trace on epoch seconds) gets task
 * balance rows only for the seconds that have events, and worker utilization intervals
 * widened until they fit. Non-finite instants are left out of the span.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { buildTable, codesOf, type Column, floatsOf } from "./internal/access.ts"
import { cmpStr, str, type Tables, taskView } from "./internal/taskView.ts"

/**
 * Earliest and latest instant of the trace over tasks, memory and resource events.
 *
 * @since 0.1.0
 * @category analysis
 */
export const traceSpan = (tables: Tables): { readonly start: number; readonly end: number } => {
  let start = Infinity
  let end = -Infinity
  // `x - x === 0` holds exactly for finite x: NaN and ±Infinity never widen the span
  const scan = (xs: Float64Array) => {
    for (let i = 0; i < xs.length; i++) {
      const x = xs[i]
      if (x - x !== 0) continue
      if (x < start) start = x
      if (x > end) end = x
    }
  }
  const t = tables.tasks
  const dur = floatsOf(t.getChild("duration"), t.numRows)
  const endCol = floatsOf(t.getChild("end"), t.numRows)
  scan(endCol)
  for (let i = 0; i < endCol.length; i++) {
    const x = endCol[i] - dur[i]
    if (x - x === 0 && x < start) start = x
  }
  if (tables.memory !== undefined) scan(floatsOf(tables.memory.getChild("timestamp"), tables.memory.numRows))
  if (tables.resources !== undefined) scan(floatsOf(tables.resources.getChild("timestamp"), tables.resources.numRows))
  return { start, end }
}

/**
 * The most time buckets an analysis allocates for a trace of `events` events: a day of
 * seconds, or eight per event when that is more. Past it, buckets follow the events
 * (task balance) or widen (worker utilization), so memory stays proportional to the
 * input however far apart its timestamps are.
 *
 * @since 0.1.0
 * @category analysis
 */
export const maxBuckets = (events: number): number => Math.max(86_400, 8 * events)

/**
 * DASF's "Task balance": column "Time Interval (seconds from begin)" (0, 1, 2, ... one
 * row for EVERY second from the trace start to its end) plus one column per worker
 * (thread id, sorted; `host/worker` when one worker id appears on several hosts) with
 * the MEAN number of chunks the worker held (`tasks` of its Managed Memory events) in
 * that second; a second without events carries the worker's last value forward (0
 * before its first event). No Managed Memory events: zero rows. When the span holds more
 * seconds than {@link maxBuckets} allows, only seconds with at least one event get a row
 * (values still carried forward from the row before).
 *
 * @since 0.1.0
 * @category analysis
 */
export const perWorkerTaskBalance = (tables: Tables): Table => {
  const interval = "Time Interval (seconds from begin)"
  const mem = tables.memory
  if (mem === undefined || mem.numRows === 0) return buildTable({ [interval]: { kind: "int", values: [] } })
  const n = mem.numRows
  const ts = floatsOf(mem.getChild("timestamp"), n)
  const tasks = floatsOf(mem.getChild("tasks"), n)
  const host = codesOf(mem.getChild("host"), n)
  const worker = codesOf(mem.getChild("worker"), n)
  // column per (host, worker); label by worker unless ambiguous
  const colOf = new Map<number, number>()
  const labels: Array<{ host: string | null; worker: string | null }> = []
  const col = new Int32Array(n)
  const W = worker.size + 1
  for (let i = 0; i < n; i++) {
    const k = (host.codes[i] + 1) * W + worker.codes[i] + 1
    let c = colOf.get(k)
    if (c === undefined) {
      c = labels.length
      colOf.set(k, c)
      labels.push({ host: str(host, host.codes[i]), worker: str(worker, worker.codes[i]) })
    }
    col[i] = c
  }
  const workerHosts = new Map<string | null, number>()
  for (const l of labels) workerHosts.set(l.worker, (workerHosts.get(l.worker) ?? 0) + 1)
  const names = labels.map((l) =>
    (workerHosts.get(l.worker) ?? 0) > 1 ? `${l.host ?? ""}/${l.worker ?? ""}` : (l.worker ?? "")
  )
  const order = names.map((_, i) => i).sort((a, b) => cmpStr(names[a], names[b]))
  const span = traceSpan(tables)
  const seconds = span.end >= span.start ? Math.floor(span.end - span.start) + 1 : 1
  // Dense: row b is second b. Sparse (span too long for its events): one row per second
  // that has an event, in time order; rowOf maps an event to its row either way.
  const dense = seconds <= maxBuckets(n)
  const second = (i: number) => Math.floor(ts[i] - span.start)
  let rowSeconds: Float64Array
  let rowOf: (i: number) => number
  if (dense) {
    rowSeconds = Float64Array.from({ length: seconds }, (_, b) => b)
    rowOf = (i) => Math.min(seconds - 1, second(i))
  } else {
    const distinct = new Set<number>()
    for (let i = 0; i < n; i++) if (ts[i] - ts[i] === 0) distinct.add(second(i))
    rowSeconds = Float64Array.from(distinct).sort()
    const index = new Map<number, number>()
    for (let r = 0; r < rowSeconds.length; r++) index.set(rowSeconds[r], r)
    rowOf = (i) => index.get(second(i))!
  }
  const B = rowSeconds.length
  const C = labels.length
  const sum = new Float64Array(B * C)
  const cnt = new Float64Array(B * C)
  for (let i = 0; i < n; i++) {
    if (tasks[i] !== tasks[i] || ts[i] - ts[i] !== 0) continue
    const b = rowOf(i)
    sum[b * C + col[i]] += tasks[i]
    cnt[b * C + col[i]] += 1
  }
  const fitsInt = B === 0 || rowSeconds[B - 1] <= 0x7fffffff
  const columns: Record<string, Column> = {
    [interval]: fitsInt ? { kind: "int", values: Int32Array.from(rowSeconds) } : { kind: "float", values: rowSeconds }
  }
  for (const c of order) {
    const values = new Float64Array(B)
    let last = 0
    for (let b = 0; b < B; b++) {
      if (cnt[b * C + c] > 0) last = sum[b * C + c] / cnt[b * C + c]
      values[b] = last
    }
    columns[names[c]] = { kind: "float", values }
  }
  return buildTable(columns)
}

/**
 * Busy and idle time per worker per interval (default 1 s, aligned to the trace
 * start): Time Interval (seconds from begin), Host, Worker, Busy (s), Idle (s),
 * Utilization (%). Busy = total overlap of the worker's task spans with the interval
 * (a multi-threaded worker can exceed 100 %); Idle = max(0, interval length - busy);
 * the last interval is cut at the trace end. Rows: interval, then Host, then Worker.
 * When the span holds more intervals than {@link maxBuckets} allows for the trace's
 * tasks, the interval widens to span / maxBuckets (the column shows each interval's
 * start, so the width used can be read from it).
 *
 * @since 0.1.0
 * @category analysis
 */
export const workerUtilization = (tables: Tables, options?: { readonly interval?: number }): Table => {
  const asked = options?.interval ?? 1
  const v = taskView(tables.tasks)
  const span = traceSpan(tables)
  const workers = new Map<string, number>()
  const labels: Array<{ host: string | null; worker: string | null }> = []
  const wOf = new Int32Array(v.n)
  for (let i = 0; i < v.n; i++) {
    const k = `${v.host.codes[i]}:${v.worker.codes[i]}`
    let w = workers.get(k)
    if (w === undefined) {
      w = labels.length
      workers.set(k, w)
      labels.push({ host: str(v.host, v.host.codes[i]), worker: str(v.worker, v.worker.codes[i]) })
    }
    wOf[i] = w
  }
  const W = labels.length
  if (W === 0) {
    return buildTable({
      "Time Interval (seconds from begin)": { kind: "float", values: [] },
      "Host": { kind: "string", values: [] },
      "Worker": { kind: "string", values: [] },
      "Busy (s)": { kind: "float", values: [] },
      "Idle (s)": { kind: "float", values: [] },
      "Utilization (%)": { kind: "float", values: [] }
    })
  }
  const length = span.end >= span.start ? span.end - span.start : 0
  const limit = Math.max(1, Math.floor(maxBuckets(v.n) / W))
  const I = Math.max(asked, length / limit)
  const B = Math.max(1, Math.min(limit, Math.ceil(length / I)))
  const busy = new Float64Array(B * W)
  for (let i = 0; i < v.n; i++) {
    const s = v.start[i] - span.start
    const e = v.end[i] - span.start
    if (!(e > s) || s - s !== 0 || e - e !== 0) continue
    const b0 = Math.max(0, Math.floor(s / I))
    const b1 = Math.min(B - 1, Math.floor(e / I))
    for (let b = b0; b <= b1; b++) {
      const lo = Math.max(s, b * I)
      const hi = Math.min(e, (b + 1) * I)
      if (hi > lo) busy[b * W + wOf[i]] += hi - lo
    }
  }
  const order = labels.map((_, i) => i).sort((a, b) =>
    cmpStr(labels[a].host, labels[b].host) || cmpStr(labels[a].worker, labels[b].worker)
  )
  const t: Array<number> = []
  const h: Array<string | null> = []
  const w: Array<string | null> = []
  const bz: Array<number> = []
  const idle: Array<number> = []
  const util: Array<number> = []
  for (let b = 0; b < B; b++) {
    const len = Math.min(I, span.end - span.start - b * I)
    for (const k of order) {
      const x = busy[b * W + k]
      t.push(b * I)
      h.push(labels[k].host)
      w.push(labels[k].worker)
      bz.push(x)
      idle.push(Math.max(0, len - x))
      util.push(len > 0 ? (x / len) * 100 : NaN)
    }
  }
  return buildTable({
    "Time Interval (seconds from begin)": { kind: "float", values: t },
    "Host": { kind: "string", values: h },
    "Worker": { kind: "string", values: w },
    "Busy (s)": { kind: "float", values: bz },
    "Idle (s)": { kind: "float", values: idle },
    "Utilization (%)": { kind: "float", values: util }
  })
}

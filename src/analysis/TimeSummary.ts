/**
 * Where a run's time went, per worker and for the run (Tessera's own analysis): the
 * time each worker spent in tasks, the time it sat without a task while the driver was
 * busy (its own segments: setup, pool start, graph build, between computes, submit) or
 * while it booted (`worker start`), and the rest, idle. The three add up to the run's
 * wall time, from the first event to the last, on every row.
 *
 * Rows: one per worker (thread id, sorted), then `driver` (Tasks 0; Driver = the main
 * thread's own work; Idle = its `wait` for the executor), then `(run)`: Tasks = time at
 * least one task ran anywhere, Driver = time no task ran while the driver worked or a
 * worker booted, Idle = neither. Traces without driver events (DASF's) have Driver 0;
 * an empty trace gives no rows.
 *
 * @since 0.1.0
 */
import type { Table } from "apache-arrow"
import { driverSegments } from "./Driver.ts"
import { buildTable } from "./internal/access.ts"
import { cmpStr, str, type Tables, taskView } from "./internal/taskView.ts"

type Span = readonly [number, number]

/** Total length of the union of spans clipped to [lo, hi]. */
const unionLength = (spans: ReadonlyArray<Span>, lo: number, hi: number): number => {
  const s = spans
    .map(([a, b]): Span => [Math.max(a, lo), Math.min(b, hi)])
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0])
  let total = 0
  let curA = -Infinity
  let curB = -Infinity
  for (const [a, b] of s) {
    if (a > curB) {
      if (curB > curA) total += curB - curA
      curA = a
      curB = b
    } else if (b > curB) curB = b
  }
  if (curB > curA) total += curB - curA
  return total
}

/**
 * Host, Worker, Wall (s), Tasks (s), Driver (s), Idle (s), Tasks (%), Driver (%),
 * Idle (%): one row per worker, then the driver, then the run (see the module header).
 *
 * @since 0.1.0
 * @category analysis
 */
export const timeSummary = (tables: Tables): Table => {
  const v = taskView(tables.tasks)
  const segs = driverSegments(tables.driver)
  let t0 = Infinity
  let t1 = -Infinity
  for (let i = 0; i < v.n; i++) {
    if (v.start[i] < t0) t0 = v.start[i]
    if (v.end[i] > t1) t1 = v.end[i]
  }
  for (const s of segs) {
    if (s.start < t0) t0 = s.start
    if (s.end > t1) t1 = s.end
  }
  const wall = t1 > t0 ? t1 - t0 : 0
  const byWorker = new Map<string, { host: string; worker: string; tasks: Array<Span>; startup: Array<Span> }>()
  const rowOf = (host: string, worker: string) => {
    const id = `${host}\t${worker}`
    let r = byWorker.get(id)
    if (r === undefined) byWorker.set(id, r = { host, worker, tasks: [], startup: [] })
    return r
  }
  const allTasks: Array<Span> = []
  for (let i = 0; i < v.n; i++) {
    const span: Span = [v.start[i], v.end[i]]
    rowOf(str(v.host, v.host.codes[i]) ?? "", str(v.worker, v.worker.codes[i]) ?? "").tasks.push(span)
    allTasks.push(span)
  }
  const driverWork = new Map<string, Array<Span>>() // per host: the driver's own segments
  const driverWait = new Map<string, Array<Span>>()
  const allStartups: Array<Span> = []
  for (const s of segs) {
    const span: Span = [s.start, s.end]
    if (s.worker !== "driver") {
      rowOf(s.host, s.worker).startup.push(span)
      allStartups.push(span)
      continue
    }
    const m = s.activity === "wait" ? driverWait : driverWork
    const list = m.get(s.host) ?? []
    list.push(span)
    m.set(s.host, list)
  }
  const out: Array<{ host: string; worker: string; tasks: number; driver: number }> = []
  const workers = [...byWorker.values()].sort((a, b) => cmpStr(a.host, b.host) || cmpStr(a.worker, b.worker))
  for (const w of workers) {
    const busy = unionLength(w.tasks, t0, t1)
    const covered = unionLength([...w.tasks, ...w.startup, ...(driverWork.get(w.host) ?? [])], t0, t1)
    out.push({ host: w.host, worker: w.worker, tasks: busy, driver: covered - busy })
  }
  for (const [host, work] of [...driverWork.entries()].sort((a, b) => cmpStr(a[0], b[0]))) {
    out.push({ host, worker: "driver", tasks: 0, driver: unionLength(work, t0, t1) })
  }
  if (v.n > 0 || segs.length > 0) {
    const anyTask = unionLength(allTasks, t0, t1)
    const allWork = [...driverWork.values()].flat()
    const covered = unionLength([...allTasks, ...allStartups, ...allWork], t0, t1)
    out.push({ host: "", worker: "(run)", tasks: anyTask, driver: covered - anyTask })
  }
  const pct = (x: number) => (wall > 0 ? (x / wall) * 100 : NaN)
  return buildTable({
    "Host": { kind: "string", values: out.map((r) => r.host) },
    "Worker": { kind: "string", values: out.map((r) => r.worker) },
    "Wall (s)": { kind: "float", values: out.map(() => wall) },
    "Tasks (s)": { kind: "float", values: out.map((r) => r.tasks) },
    "Driver (s)": { kind: "float", values: out.map((r) => r.driver) },
    "Idle (s)": { kind: "float", values: out.map((r) => Math.max(0, wall - r.tasks - r.driver)) },
    "Tasks (%)": { kind: "float", values: out.map((r) => pct(r.tasks)) },
    "Driver (%)": { kind: "float", values: out.map((r) => pct(r.driver)) },
    "Idle (%)": { kind: "float", values: out.map((r) => pct(Math.max(0, wall - r.tasks - r.driver))) }
  })
}

/**
 * Chrome Trace Event JSON export (the "JSON Array/Object Format" that Perfetto and
 * chrome://tracing open): trace events in DASF's model become Chrome events with
 * `ts`/`dur` in microseconds and integer `pid`/`tid`, plus `M` metadata events that
 * name every process (host) and thread (worker).
 *
 * Mapping:
 * - `X` (complete) events: `ts = (timestamp - duration)`, because DASF's and Tessera's
 *   `Compute` timestamp is the task's END; `dur = duration`; args kept.
 * - `I` (instant) events: `ph: "i"` with their scope (`s`), args kept.
 * - `Resource Usage` instants additionally become `C` counter events (one series per
 *   numeric metric) on their host's process, so Perfetto draws them as tracks.
 * - `Managed Memory` instants additionally become a per-worker `C` counter
 *   (`managed memory <thread>`: bytes and chunks held).
 * - `B`/`E`/`C` pass through; `M` events from the source keep their args.
 * Leaves out: flow events (dependencies) — task dependency arrows would multiply the
 * file size for little use in these viewers.
 *
 * @since 0.1.0
 */
import type { TraceEvent } from "../../trace/TraceEvent.ts"

/**
 * One Chrome Trace Event.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChromeEvent {
  readonly name: string
  readonly ph: string
  readonly ts: number
  readonly pid: number
  readonly tid: number
  readonly dur?: number
  readonly s?: string
  readonly cat?: string
  readonly args?: Record<string, unknown>
}

/**
 * The exported document: `{ traceEvents, displayTimeUnit }`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChromeTrace {
  readonly traceEvents: Array<ChromeEvent>
  readonly displayTimeUnit: "ms"
}

const asRecord = (u: unknown): Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : {}

// Round µs to nanosecond precision so the JSON stays short.
const us = (seconds: number): number => Math.round(seconds * 1e9) / 1e3

/**
 * Convert trace events to a Chrome trace. Processes are numbered from 1 in order of
 * first appearance, threads from 1 within the whole trace; events without a thread
 * (resource samples) go to tid 0, named `resources`.
 *
 * Plain loop over events on purpose: it runs once per event of large traces.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toChromeTrace = (events: Iterable<TraceEvent>): ChromeTrace => {
  const pids = new Map<string, number>()
  const tids = new Map<string, { pid: number; tid: number; name: string }>()
  const out: Array<ChromeEvent> = []
  const pidOf = (p: unknown): number => {
    const name = String(p ?? "unknown")
    let id = pids.get(name)
    if (id === undefined) {
      id = pids.size + 1
      pids.set(name, id)
    }
    return id
  }
  const tidOf = (pid: number, t: unknown): number => {
    if (t === null || t === undefined) return 0
    const name = String(t)
    // a thread belongs to one process: the same thread name on two hosts is two threads
    const id = `${pid}\u0000${name}`
    let entry = tids.get(id)
    if (entry === undefined) {
      entry = { pid, tid: tids.size + 1, name }
      tids.set(id, entry)
    }
    return entry.tid
  }
  const threadsWithoutName = new Set<string>()
  for (const e of events) {
    const pid = pidOf(e.process_id)
    const tid = tidOf(pid, e.thread_id)
    if (tid === 0) threadsWithoutName.add(`${pid}`)
    const args = asRecord(e.args)
    switch (e.phase) {
      case "X": {
        const d = typeof e.duration === "number" ? e.duration : 0
        out.push({ name: e.name, cat: "task", ph: "X", ts: us(e.timestamp - d), dur: us(d), pid, tid, args })
        break
      }
      case "I": {
        out.push({ name: e.name, ph: "i", s: e.scope ?? "t", ts: us(e.timestamp), pid, tid, args })
        if (e.name === "Resource Usage") {
          const ts = us(e.timestamp)
          threadsWithoutName.add(`${pid}`)
          for (const [k, v] of Object.entries(args)) {
            if (typeof v === "number" && k !== "time") out.push({ name: k, ph: "C", ts, pid, tid: 0, args: { [k]: v } })
          }
        } else if (e.name === "Managed Memory") {
          out.push({
            name: `managed memory ${String(e.thread_id ?? "")}`,
            ph: "C",
            ts: us(e.timestamp),
            pid,
            tid,
            args: { bytes: typeof args["size"] === "number" ? args["size"] : 0, chunks: typeof args["tasks"] === "number" ? args["tasks"] : 0 }
          })
        }
        break
      }
      default:
        out.push({ name: e.name, ph: e.phase, ts: us(e.timestamp), pid, tid, args })
    }
  }
  const meta: Array<ChromeEvent> = []
  for (const [name, pid] of pids) {
    meta.push({ name: "process_name", ph: "M", ts: 0, pid, tid: 0, args: { name } })
  }
  for (const { pid, tid, name } of tids.values()) {
    meta.push({ name: "thread_name", ph: "M", ts: 0, pid, tid, args: { name } })
    meta.push({ name: "thread_sort_index", ph: "M", ts: 0, pid, tid, args: { sort_index: tid } })
  }
  for (const pid of threadsWithoutName) {
    meta.push({ name: "thread_name", ph: "M", ts: 0, pid: Number(pid), tid: 0, args: { name: "resources" } })
  }
  return { traceEvents: [...meta, ...out], displayTimeUnit: "ms" }
}

/**
 * Serialise a Chrome trace as JSON text, one event per line (diff- and grep-friendly,
 * and still one valid JSON document).
 *
 * @since 0.1.0
 * @category encoding
 */
export const chromeTraceJson = (trace: ChromeTrace): string => {
  const lines = trace.traceEvents.map((e) => JSON.stringify(e))
  return `{"displayTimeUnit":"${trace.displayTimeUnit}","traceEvents":[\n${lines.join(",\n")}\n]}\n`
}

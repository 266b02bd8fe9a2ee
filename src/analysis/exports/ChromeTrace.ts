/**
 * Chrome Trace Event JSON export (the "JSON Array/Object Format" that Perfetto and
 * chrome://tracing open): trace events in DASF's model become Chrome events with
 * `ts`/`dur` in microseconds and integer `pid`/`tid`, plus `M` metadata events that
 * name every process (host) and thread (worker).
 *
 * Mapping:
 * - `X` (complete) events: `ts = (timestamp - duration)`, because DASF's and Tessera's
 *   `Compute` timestamp is the task's END; `dur = duration`; args kept (key, stage, …).
 *   A `Compute` slice is named by its function (`args.name`, else dask's `key_split` of
 *   `args.key`), so Perfetto labels and colours slices per function (it colours by
 *   name); `cat` is the DASF event name (`Compute`).
 * - dependencies become flow events (arrows in Perfetto), one pair per edge whose both
 *   ends are slices in the trace: `ph: "s"` on the dependency's pid/tid, 1 ns before its
 *   slice ends, and `ph: "f"` with `bp: "e"` on the dependent's pid/tid, 1 ns after its
 *   slice starts; both `name: "dependency"`, `cat: "dependency"` and one `id` per edge.
 *   Perfetto's JSON importer keys a flow by (id, cat, name), binds `s` to the slice open
 *   on that thread when it is read, and binds `f` to the enclosing slice only with
 *   `bp: "e"` (without it, to the next slice that begins); events are read in timestamp
 *   order, so a flow event at exactly a slice's start may be read before the slice and
 *   bind to nothing — hence the 1 ns inside each slice (half the slice when shorter).
 * - `Driver` X events (Tessera's driver segments) are named `driver: <activity>`
 *   (`driver: wait`, `driver: pool start`, …), `cat` `Driver`; the driver's thread is
 *   named `driver (main thread)` and sorted first; `worker start` segments stay on their
 *   worker's thread.
 * - `I` (instant) events: `ph: "i"` with their scope (`s`), args kept.
 * - `Resource Usage` instants additionally become `C` counter events (one series per
 *   numeric metric) on their host's process, so Perfetto draws them as tracks.
 * - `Managed Memory` instants additionally become a per-worker `C` counter
 *   (`managed memory <thread>`: bytes and chunks held).
 * - `B`/`E`/`C` pass through; `M` events from the source keep their args.
 * Leaves out: Chrome DevTools' Performance panel binds flow events only to slices with the
 * same `ts`, so it draws no arrows from this file; Perfetto and chrome://tracing do.
 *
 * @since 0.1.0
 */
import type { TraceEvent } from "../../trace/TraceEvent.ts"
import { driverEventName } from "../Driver.ts"
import { functionName } from "../FunctionName.ts"

// the thread id Tessera's driver segments carry (engine/EngineEvents.ts `driverThreadId`)
const driverThreadName = "driver"

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
  /** flow events: the flow's id (unique per dependency edge) */
  readonly id?: number
  /** flow end events: `"e"`, bind to the enclosing slice */
  readonly bp?: "e"
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

/** A task's slice, for flows: where it is and what it depends on. */
interface Slice {
  readonly key: string
  readonly ts: number
  readonly dur: number
  readonly pid: number
  readonly tid: number
  readonly deps: ReadonlyArray<unknown>
}

const round3 = (x: number): number => Math.round(x * 1e3) / 1e3

// the slice of `key` that `dependent` read: the latest one that ended by its start (a
// key may repeat across runs in one trace), else the first
const dependencySlice = (candidates: ReadonlyArray<Slice>, dependent: Slice): Slice => {
  if (candidates.length === 1) return candidates[0]!
  let best: Slice | undefined
  for (const c of candidates) {
    if (c.ts + c.dur <= dependent.ts && (best === undefined || c.ts + c.dur > best.ts + best.dur)) best = c
  }
  return best ?? candidates[0]!
}

// Flow events for the dependency edges between slices (the module header gives the
// binding rules they follow).
const dependencyFlows = (slices: ReadonlyArray<Slice>): Array<ChromeEvent> => {
  const byKey = new Map<string, Array<Slice>>()
  for (const s of slices) {
    const list = byKey.get(s.key)
    if (list === undefined) byKey.set(s.key, [s])
    else list.push(s)
  }
  const out: Array<ChromeEvent> = []
  let id = 0
  for (const s of slices) {
    for (const d of s.deps) {
      const candidates = typeof d === "string" ? byKey.get(d) : undefined
      if (candidates === undefined) continue
      const from = dependencySlice(candidates, s)
      id++
      const end = from.ts + from.dur
      out.push({ name: "dependency", cat: "dependency", ph: "s", id, ts: round3(end - Math.min(0.001, from.dur / 2)), pid: from.pid, tid: from.tid })
      out.push({ name: "dependency", cat: "dependency", ph: "f", bp: "e", id, ts: round3(s.ts + Math.min(0.001, s.dur / 2)), pid: s.pid, tid: s.tid })
    }
  }
  return out
}

/**
 * Convert trace events to a Chrome trace. Processes are numbered from 1 in order of
 * first appearance, threads from 1 within the whole trace; events without a thread
 * (resource samples) go to tid 0, named `resources`. `flows: false` leaves out the
 * dependency arrows.
 *
 * Plain loop over events on purpose: it runs once per event of large traces.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toChromeTrace = (events: Iterable<TraceEvent>, options: { readonly flows?: boolean } = {}): ChromeTrace => {
  const slices: Array<Slice> = []
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
  const driverThreads = new Set<number>()
  for (const e of events) {
    const pid = pidOf(e.process_id)
    const tid = tidOf(pid, e.thread_id)
    if (tid === 0) threadsWithoutName.add(`${pid}`)
    const args = asRecord(e.args)
    switch (e.phase) {
      case "X": {
        const d = typeof e.duration === "number" ? e.duration : 0
        const ts = us(e.timestamp - d)
        const dur = us(d)
        const key = args["key"]
        let name = e.name
        if (e.name === driverEventName && typeof args["activity"] === "string" && args["activity"] !== "") {
          // the driver's segments: named by what the main thread did (Perfetto colours by name)
          name = `driver: ${args["activity"]}`
          driverThreads.add(tid)
        } else if (e.name === "Compute") {
          const fn = args["name"]
          if (typeof fn === "string" && fn !== "") name = fn
          else if (typeof key === "string") name = functionName(key)
          if (typeof key === "string") {
            const deps = args["dependencies"]
            slices.push({ key, ts, dur, pid, tid, deps: Array.isArray(deps) ? deps : [] })
          }
        }
        out.push({ name, cat: e.name, ph: "X", ts, dur, pid, tid, args })
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
    // the driver's own thread first, named as such; workers keep their names
    const driver = name === driverThreadName && driverThreads.has(tid)
    meta.push({ name: "thread_name", ph: "M", ts: 0, pid, tid, args: { name: driver ? "driver (main thread)" : name } })
    meta.push({ name: "thread_sort_index", ph: "M", ts: 0, pid, tid, args: { sort_index: driver ? 0 : tid } })
  }
  for (const pid of threadsWithoutName) {
    meta.push({ name: "thread_name", ph: "M", ts: 0, pid: Number(pid), tid: 0, args: { name: "resources" } })
  }
  const flows = options.flows === false ? [] : dependencyFlows(slices)
  return { traceEvents: [...meta, ...out, ...flows], displayTimeUnit: "ms" }
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

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
 * `chromeTraceChunks` writes the same document from a source read twice, a batch at a
 * time (the names, driver threads and slice positions first, then each batch converted
 * and written), for traces too large to hold or to put in one string (issue 32 item 9).
 * Each task's flow events follow its slice.
 * Leaves out: Chrome DevTools' Performance panel binds flow events only to slices with the
 * same `ts`, so it draws no arrows from this file; Perfetto and chrome://tracing do.
 *
 * @since 0.1.0
 */
import type { TraceEvent } from "../../trace/TraceEvent.ts"
import { driverEventName } from "../Driver.ts"
import { functionName } from "../FunctionName.ts"
import { F64, I32 } from "../../trace/TraceReader.ts"
import type { EventBatches } from "./EventBatches.ts"

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

const round3 = (x: number): number => Math.round(x * 1e3) / 1e3

/**
 * What converting events needs to know of the whole trace before it writes the first
 * one: process and thread numbers (in order of first appearance), which threads are the
 * driver's or carry resource counters, and, for the dependency flows, where every task's
 * slice is (typed columns and one map of keys: no event is kept). `index` every event
 * first, then `convert` each (in the same order) and write `meta()` anywhere.
 */
class ChromeConverter {
  private readonly pids = new Map<string, number>()
  private readonly tids = new Map<string, { pid: number; tid: number; name: string }>()
  private readonly threadsWithoutName = new Set<number>()
  private readonly driverThreads = new Set<number>()
  // slices of Compute events with a key, in event order: key -> first slice, next[]: the
  // same key's next slice (a key may repeat across runs in one trace), -1 none
  private readonly firstSlice = new Map<string, number>()
  private readonly last = new Map<string, number>()
  private readonly next = new I32()
  private readonly sliceTs = new F64()
  private readonly sliceDur = new F64()
  private readonly slicePid = new I32()
  private readonly sliceTid = new I32()
  private converted = 0 // slices met by `convert`
  private flowId = 0
  readonly flows: boolean
  constructor(flows: boolean) {
    this.flows = flows
  }

  private pidOf(p: unknown): number {
    const name = String(p ?? "unknown")
    let id = this.pids.get(name)
    if (id === undefined) {
      id = this.pids.size + 1
      this.pids.set(name, id)
    }
    return id
  }

  private tidOf(pid: number, t: unknown): number {
    if (t === null || t === undefined) return 0
    const name = String(t)
    // a thread belongs to one process: the same thread name on two hosts is two threads
    const id = `${pid}\u0000${name}`
    let entry = this.tids.get(id)
    if (entry === undefined) {
      entry = { pid, tid: this.tids.size + 1, name }
      this.tids.set(id, entry)
    }
    return entry.tid
  }

  /** First pass: numbers, driver threads, slices. */
  index(e: TraceEvent): void {
    const pid = this.pidOf(e.process_id)
    const tid = this.tidOf(pid, e.thread_id)
    if (tid === 0 || (e.phase === "I" && e.name === "Resource Usage")) this.threadsWithoutName.add(pid)
    if (e.phase !== "X") return
    const args = asRecord(e.args)
    if (e.name === driverEventName && typeof args["activity"] === "string" && args["activity"] !== "") this.driverThreads.add(tid)
    else if (e.name === "Compute" && this.flows && typeof args["key"] === "string") {
      const d = typeof e.duration === "number" ? e.duration : 0
      const key = args["key"]
      const k = this.sliceTs.length
      this.sliceTs.push(us(e.timestamp - d))
      this.sliceDur.push(us(d))
      this.slicePid.push(pid)
      this.sliceTid.push(tid)
      this.next.push(-1)
      const prev = this.last.get(key)
      if (prev === undefined) this.firstSlice.set(key, k)
      else this.next.data[prev] = k
      this.last.set(key, k)
    }
  }

  /** After `index`: the M events naming every process and thread. */
  meta(): Array<ChromeEvent> {
    this.last.clear() // not needed past the first pass
    const meta: Array<ChromeEvent> = []
    for (const [name, pid] of this.pids) {
      meta.push({ name: "process_name", ph: "M", ts: 0, pid, tid: 0, args: { name } })
    }
    for (const { pid, tid, name } of this.tids.values()) {
      // the driver's own thread first, named as such; workers keep their names
      const driver = name === driverThreadName && this.driverThreads.has(tid)
      meta.push({ name: "thread_name", ph: "M", ts: 0, pid, tid, args: { name: driver ? "driver (main thread)" : name } })
      meta.push({ name: "thread_sort_index", ph: "M", ts: 0, pid, tid, args: { sort_index: driver ? 0 : tid } })
    }
    for (const pid of this.threadsWithoutName) {
      meta.push({ name: "thread_name", ph: "M", ts: 0, pid, tid: 0, args: { name: "resources" } })
    }
    return meta
  }

  // the slice of `key` that slice `s` read: the latest one that ended by its start, else
  // the first
  private dependencySlice(first: number, ts: number): number {
    if (this.next.data[first] === -1) return first
    let best = -1
    let bestEnd = -Infinity
    const t = this.sliceTs.data, d = this.sliceDur.data
    for (let c = first; c >= 0; c = this.next.data[c]!) {
      const end = t[c]! + d[c]!
      if (end <= ts && end > bestEnd) {
        best = c
        bestEnd = end
      }
    }
    return best >= 0 ? best : first
  }

  /** Second pass: the event's Chrome events (and its dependency flows) onto `out`. */
  convert(e: TraceEvent, out: Array<ChromeEvent>): void {
    const pid = this.pidOf(e.process_id)
    const tid = this.tidOf(pid, e.thread_id)
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
        } else if (e.name === "Compute") {
          const fn = args["name"]
          if (typeof fn === "string" && fn !== "") name = fn
          else if (typeof key === "string") name = functionName(key)
        }
        out.push({ name, cat: e.name, ph: "X", ts, dur, pid, tid, args })
        if (e.name === "Compute" && this.flows && typeof key === "string") {
          this.converted++
          const deps = args["dependencies"]
          if (Array.isArray(deps)) this.dependencyFlows(deps, ts, dur, pid, tid, out)
        }
        break
      }
      case "I": {
        out.push({ name: e.name, ph: "i", s: e.scope ?? "t", ts: us(e.timestamp), pid, tid, args })
        if (e.name === "Resource Usage") {
          const ts = us(e.timestamp)
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

  // Flow events for the dependency edges into one slice whose both ends are slices in
  // the trace (the module header gives the binding rules they follow).
  private dependencyFlows(deps: ReadonlyArray<unknown>, ts: number, dur: number, pid: number, tid: number, out: Array<ChromeEvent>): void {
    for (const d of deps) {
      const first = typeof d === "string" ? this.firstSlice.get(d) : undefined
      if (first === undefined) continue
      const from = this.dependencySlice(first, ts)
      const fromDur = this.sliceDur.data[from]!
      const end = this.sliceTs.data[from]! + fromDur
      const id = ++this.flowId
      out.push({ name: "dependency", cat: "dependency", ph: "s", id, ts: round3(end - Math.min(0.001, fromDur / 2)), pid: this.slicePid.data[from]!, tid: this.sliceTid.data[from]! })
      out.push({ name: "dependency", cat: "dependency", ph: "f", bp: "e", id, ts: round3(ts + Math.min(0.001, dur / 2)), pid, tid })
    }
  }
}

/**
 * Convert trace events to a Chrome trace. Processes are numbered from 1 in order of
 * first appearance, threads from 1 within the whole trace; events without a thread
 * (resource samples) go to tid 0, named `resources`. `flows: false` leaves out the
 * dependency arrows. The metadata events come first; each task's flow events follow
 * its slice. For traces too large to hold, `chromeTraceChunks` writes the same events.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toChromeTrace = (events: Iterable<TraceEvent>, options: { readonly flows?: boolean } = {}): ChromeTrace => {
  const all = Array.isArray(events) ? (events as ReadonlyArray<TraceEvent>) : Array.from(events)
  const c = new ChromeConverter(options.flows !== false)
  for (const e of all) c.index(e)
  const out = c.meta()
  for (const e of all) c.convert(e, out)
  return { traceEvents: out, displayTimeUnit: "ms" }
}

/**
 * The Chrome trace of `source` as JSON text, a piece at a time (what `chromeTraceJson`
 * of `toChromeTrace` writes, one event per line): the source is read twice, once for the
 * process and thread names and the slices the dependency flows join, once to convert and
 * write, a batch at a time. Memory holds one batch and, for the flows, a few numbers and
 * the key of each task (issue 32 item 9: the 1,000,000-task trace's export was one
 * string, too long for V8).
 *
 * @since 0.1.0
 * @category encoding
 */
export const chromeTraceChunks = async function*(source: EventBatches, options: { readonly flows?: boolean } = {}): AsyncGenerator<string> {
  const c = new ChromeConverter(options.flows !== false)
  for await (const batch of source()) for (const e of batch) c.index(e)
  const meta = c.meta()
  yield `{"displayTimeUnit":"ms","traceEvents":[\n${meta.map((e) => JSON.stringify(e)).join(",\n")}`
  let first = meta.length === 0
  const out: Array<ChromeEvent> = []
  for await (const batch of source()) {
    out.length = 0
    for (const e of batch) c.convert(e, out)
    if (out.length === 0) continue
    const text = out.map((e) => JSON.stringify(e)).join(",\n")
    yield first ? text : `,\n${text}`
    first = false
  }
  yield "\n]}\n"
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

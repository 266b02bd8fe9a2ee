/**
 * Replay: a `LiveState` filled from recorded trace databases (`tessera dashboard -d
 * DB…`), so the dashboard's pages browse a finished run, however large, without a
 * static report: the databases are read once into the report's model
 * (`report/Report.ts` `loadReportData`, the report's own numbers), and every task,
 * driver segment, transfer, memory change and resource sample goes through the same
 * state the live hooks feed. The server holds every rectangle (its ring is sized to the
 * trace), so zooming anywhere fetches single tasks.
 *
 * @since 0.1.0
 */
import type { ReportData } from "../report/ReportData.ts"
import { LiveState } from "./LiveState.ts"

const hostOf = (thread: string, hosts: ReadonlyArray<string>): string => {
  for (const h of hosts) if (thread.startsWith(`worker-${h}-`) || thread === h) return h
  return hosts[0] ?? "?"
}

/**
 * The state of a recorded run (times: seconds since the trace's start).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromReportData = (data: ReportData): LiveState => {
  const t = data.tasks
  const d = data.driver
  const x = data.transfers
  const m = data.memory
  const r = data.resources
  const n = t.start.length + d.start.length + x.start.length
  const state = new LiveState({ t0: 0, detailCapacity: Math.max(16, n), maxRectsPerTick: 1 })
  // the driver's row first, as the report draws it
  for (const th of data.driverThreads) if (!data.workers.includes(th)) state.rows.id(th)
  for (const w of data.workers) state.rows.id(w)
  for (const f of data.functions) state.functions.id(f)
  for (const s of data.stages) state.stages.id(s)
  for (let i = 0; i < d.start.length; i++) {
    const thread = data.driverThreads[d.thread[i]!] ?? "driver"
    state.driver({
      key: d.key[i]!,
      activity: (data.activities[d.activity[i]!] ?? "wait") as never,
      start: d.start[i]!,
      end: d.end[i]!,
      host: hostOf(thread, data.hosts),
      threadId: thread,
      compute: d.compute[i]!,
      dependencies: [],
      tasks: d.tasks[i]!
    })
  }
  // tasks in the order they ended, as a live run delivers them
  const order = Int32Array.from({ length: t.start.length }, (_, i) => i).sort((a, b) => t.end[a]! - t.end[b]! || a - b)
  for (const i of order) {
    const worker = data.workers[t.worker[i]!] ?? "?"
    const s = t.start[i]!, e = t.end[i]!
    const stage = t.stage[i]! >= 0 ? data.stages[t.stage[i]!] : undefined
    state.task({
      key: t.key[i]!,
      name: data.functions[t.fn[i]!] ?? "?",
      ...(stage !== undefined ? { stage } : {}),
      host: hostOf(worker, data.hosts),
      workerId: t.worker[i]!,
      threadId: worker,
      phases: { gather: [s, s], compute: [s, e], transfer: [e, e] },
      cpuTime: Number.isFinite(t.cpuTime[i]!) ? t.cpuTime[i]! : 0,
      ...(Number.isFinite(t.peakMemory[i]!) ? { peakMemory: t.peakMemory[i]! } : {}),
      nbytes: Number.isFinite(t.size[i]!) ? t.size[i]! : 0,
      shape: [],
      dtype: "",
      type: "",
      dependencies: [],
      dependents: [],
      state: t.erred[i] === 1 ? "erred" : "memory"
    })
  }
  for (let i = 0; i < x.start.length; i++) {
    const worker = data.workers[x.worker[i]!] ?? "?"
    const direction = x.direction[i]
    state.transfer({
      keys: x.nKeys[i] === 1 ? [x.keys[i]!] : new Array<string>(Math.max(0, x.nKeys[i]!)).fill(""),
      bytes: x.bytes[i]!,
      host: hostOf(worker, data.hosts),
      threadId: worker,
      ...(x.peer[i] ? { peer: x.peer[i]! } : {}),
      ...(direction === "host-to-device" || direction === "device-to-host" ? { direction } : {}),
      start: x.start[i]!,
      stop: x.end[i]!
    })
  }
  const mo = Int32Array.from({ length: m.time.length }, (_, i) => i).sort((a, b) => m.time[a]! - m.time[b]! || a - b)
  for (const i of mo) {
    const worker = data.workers[m.worker[i]!] ?? "?"
    state.memory({
      timestamp: m.time[i]!,
      host: hostOf(worker, data.hosts),
      workerId: m.worker[i]!,
      threadId: worker,
      key: "",
      state: "memory",
      bytes: m.bytes[i]!,
      chunks: m.chunks[i]!,
      ...(Number.isFinite(m.device[i]!) ? { device: m.device[i]! } : {})
    })
  }
  const cpu = r.values["cpu"], mem = r.values["memory"]
  const ro = Int32Array.from({ length: r.time.length }, (_, i) => i).sort((a, b) => r.time[a]! - r.time[b]! || a - b)
  for (const i of ro) state.resourceSample(data.hosts[r.host[i]!] ?? "?", r.time[i]!, cpu?.[i] ?? NaN, mem?.[i] ?? NaN)
  // the computes: one "wait" segment each
  const wait = data.activities.indexOf("wait")
  const computes = new Set<number>()
  for (let i = 0; i < d.start.length; i++) if (d.activity[i] === wait) computes.add(d.compute[i]!)
  state.computesStarted = state.computesFinished = computes.size
  state.finishReplay(data.wall)
  return state
}

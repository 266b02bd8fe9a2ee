/**
 * The report model from `src/analysis`'s loaded tables (`TraceTables`): the fast path
 * for large traces, since `Load` decodes with a decoder specialised for DASF's record
 * shapes, and the same tables then feed the analyses — one decode for the whole report.
 *
 * The stage DAG (`dot`) is the first `Pipeline Graph` event's, from the tables'
 * metadata events; the driver's segments come from the `driver` table.
 *
 * Besides times, workers and functions, each task's `stage`, its gather and transfer
 * phases (durations from `gather_start`/`gather_end`, `transfer_start`/`transfer_end`),
 * `peak_memory` and `io_bytes`, null (NaN / no stage) where a trace lacks them, as
 * DASF's do. Bytes in come from the `dependencies` lists.
 *
 * @since 0.1.0
 */
import type { Vector } from "apache-arrow"
import type { Codes } from "../analysis/Columns.ts"
import type { TraceTables } from "../analysis/Load.ts"
import { codesOf, floatsOf, listCodesOf, recode } from "../analysis/Columns.ts"
import { driverSegments } from "../analysis/Driver.ts"
import { isPipelineGraphEvent } from "../trace/TraceEvent.ts"
import { erredTasks, stagesOfDot } from "../analysis/StageSummary.ts"
import type { ReportData, TaskFailure } from "./ReportData.ts"
import { clockSummaries, driverColumns, gpuWorkersOf, resourceMetrics, transferColumns, usableTaskTimes } from "./ReportData.ts"

/** A phase's duration (seconds) per task from its start and end columns; NaN where absent. */
const phaseSeconds = (t: TraceTables, phase: "gather" | "transfer", n: number): Float64Array => {
  const from = floatsOf(t.tasks.getChild(`${phase}_start`), n)
  const to = floatsOf(t.tasks.getChild(`${phase}_end`), n)
  const out = new Float64Array(n)
  for (let i = 0; i < n; i++) out[i] = to[i]! - from[i]!
  return out
}

// Input bytes per task: the sum over its dependencies of their latest execution's size.
const bytesIn = (t: TraceTables, key: Codes, size: Float64Array, end: Float64Array, n: number): Float64Array => {
  const deps = listCodesOf(t.tasks.getChild("dependencies"), n)
  // dependency codes as key codes (Load's tables share one dictionary: as they are)
  const depKeys = recode(deps.codes, key)
  const latest = new Int32Array(key.size).fill(-1)
  for (let i = 0; i < n; i++) {
    const k = key.codes[i]!
    if (k >= 0 && (latest[k]! < 0 || end[i]! >= end[latest[k]!]!)) latest[k] = i
  }
  const out = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    let sum = 0
    for (let j = deps.offsets[i]!; j < deps.offsets[i + 1]!; j++) {
      const k = depKeys[j]!
      const r = k >= 0 ? latest[k]! : -1
      if (r >= 0 && Number.isFinite(size[r]!)) sum += size[r]!
    }
    out[i] = sum
  }
  return out
}

// Remaps a column's (possibly trace-wide) dictionary codes to a small local index.
const localNames = () => {
  const names: Array<string> = []
  const byName = new Map<string, number>()
  const id = (s: string): number => {
    let i = byName.get(s)
    if (i === undefined) (i = names.length, names.push(s), byName.set(s, i))
    return i
  }
  const remap = (v: Vector | null, n: number): Int32Array => {
    const c = codesOf(v, n)
    const cache = new Map<number, number>()
    const out = new Int32Array(n)
    for (let i = 0; i < n; i++) {
      const code = c.codes[i]!
      let j = cache.get(code)
      if (j === undefined) (j = id(code < 0 ? "" : c.dict[code]!), cache.set(code, j))
      out[i] = j
    }
    return out
  }
  return { names, id, remap }
}

/**
 * Build the report model from loaded tables. Plain loops over columns (1M+ rows).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromTables = (
  t: TraceTables,
  options: {
    readonly title?: string
    readonly sources?: ReadonlyArray<string>
    /** erred tasks' error and traceback by key (the tables keep only their state) */
    readonly failures?: ReadonlyMap<string, { readonly error: string; readonly traceback: string }>
  } = {}
): ReportData => {
  const nAll = t.tasks.numRows
  const nm = t.memory.numRows
  const nr = t.resources.numRows
  const hosts = localNames()
  const workers = localNames()
  hosts.remap(t.tasks.getChild("host"), nAll)
  const startAll = floatsOf(t.tasks.getChild("start"), nAll)
  const endAll = floatsOf(t.tasks.getChild("end"), nAll)
  // tasks whose times cannot be drawn (an infinite or absurd duration) are left out and
  // counted: `kept` maps the report's task rows to the table's
  let kept: Int32Array | undefined
  {
    let bad = 0
    for (let i = 0; i < nAll; i++) if (!usableTaskTimes(startAll[i]!, endAll[i]!)) bad++
    if (bad > 0) {
      kept = new Int32Array(nAll - bad)
      for (let i = 0, j = 0; i < nAll; i++) if (usableTaskTimes(startAll[i]!, endAll[i]!)) kept[j++] = i
    }
  }
  const n = kept === undefined ? nAll : kept.length
  const pick = <A extends Float64Array | Int32Array | Uint8Array>(a: A): A => {
    if (kept === undefined) return a
    const out = new (a.constructor as new (n: number) => A)(kept.length)
    for (let j = 0; j < kept.length; j++) out[j] = a[kept[j]!]!
    return out
  }
  const start = pick(startAll)
  const end = pick(endAll)
  // a task without a duration (an erred one, recorded at its failure) is a point at its end
  for (let i = 0; i < n; i++) if (!Number.isFinite(start[i]!)) start[i] = end[i]!
  const worker = pick(workers.remap(t.tasks.getChild("worker"), nAll))
  const fnsAll = localNames()
  const fnAll = fnsAll.remap(t.tasks.getChild("function"), nAll)
  // the functions of the tasks shown (not those only left-out tasks ran)
  const fns = kept === undefined ? fnsAll : localNames()
  const fn = kept === undefined ? fnAll : Int32Array.from(kept, (i) => fns.id(fnsAll.names[fnAll[i]!]!))
  const keyCodes = codesOf(t.tasks.getChild("key"), nAll)
  const keyAt = (i: number) => (keyCodes.codes[i]! < 0 ? "" : keyCodes.dict[keyCodes.codes[i]!]!)
  const key = new Array<string>(n)
  for (let j = 0; j < n; j++) key[j] = keyAt(kept === undefined ? j : kept[j]!)
  const mTime = floatsOf(t.memory.getChild("timestamp"), nm)
  const mWorker = workers.remap(t.memory.getChild("worker"), nm)
  const rTime = floatsOf(t.resources.getChild("timestamp"), nr)
  const rHost = hosts.remap(t.resources.getChild("host"), nr)
  let t0 = Infinity
  let t1 = -Infinity
  for (let i = 0; i < n; i++) {
    if (start[i]! < t0) t0 = start[i]!
    if (end[i]! > t1) t1 = end[i]!
  }
  for (const col of [mTime, rTime]) {
    for (let i = 0; i < col.length; i++) {
      if (col[i]! < t0) t0 = col[i]!
      if (col[i]! > t1) t1 = col[i]!
    }
  }
  const segments = driverSegments(t.driver)
  for (const sg of segments) {
    if (sg.start < t0) t0 = sg.start
    if (sg.end > t1) t1 = sg.end
  }
  if (!Number.isFinite(t0)) (t0 = 0), (t1 = 0)
  const rel = (a: Float64Array): Float64Array => {
    const out = new Float64Array(a.length)
    for (let i = 0; i < a.length; i++) out[i] = a[i]! - t0
    return out
  }
  const values: Record<string, Float64Array> = {}
  for (const m of resourceMetrics) {
    const col = floatsOf(t.resources.getChild(m.field), nr)
    let any = false
    for (let i = 0; i < nr && !any; i++) any = Number.isFinite(col[i]!)
    if (any) values[m.field] = col
  }
  const stages = localNames()
  const stageCol = t.tasks.getChild("stage")
  const stage = stageCol === null ? new Int32Array(n).fill(-1) : pick(stages.remap(stageCol, nAll))
  // a null stage is "" in remap: no stage
  const empty = stages.names.indexOf("")
  if (stageCol !== null && empty >= 0) {
    for (let i = 0; i < n; i++) if (stage[i] === empty) stage[i] = -1
    else if (stage[i]! > empty) stage[i]!--
    stages.names.splice(empty, 1)
  }
  const sizeAll = floatsOf(t.tasks.getChild("size"), nAll)
  const size = pick(sizeAll)
  const drv = driverColumns(segments, t0)
  // erred tasks: state "erred"
  const erred = pick(erredTasks(t.tasks))
  const failures: Array<TaskFailure> = []
  for (let i = 0; i < n; i++) {
    if (erred[i] === 0) continue
    const text = options.failures?.get(key[i]!)
    failures.push({
      task: i,
      key: key[i]!,
      function: fns.names[fn[i]!]!,
      stage: stage[i]! >= 0 ? stages.names[stage[i]!] : undefined,
      worker: workers.names[worker[i]!]!,
      start: start[i]! - t0,
      end: end[i]! - t0,
      error: text?.error ?? "",
      traceback: text?.traceback ?? ""
    })
  }
  const tr = transferColumns(
    t.transfers.toArray().map((r) => ({
      worker: r.worker ?? "",
      peer: r.peer,
      direction: r.direction,
      keys: r.keys === null ? [] : Array.from(r.keys as unknown as Iterable<string | null>).filter((k): k is string => k !== null),
      bytes: r.bytes ?? NaN,
      start: r.start ?? NaN,
      stop: r.stop ?? NaN
    })),
    workers.id,
    t0
  )
  const memory = {
    time: rel(mTime),
    worker: mWorker,
    bytes: floatsOf(t.memory.getChild("size"), nm),
    chunks: floatsOf(t.memory.getChild("tasks"), nm),
    device: floatsOf(t.memory.getChild("device"), nm)
  }
  const dot = t.metadata.find(isPipelineGraphEvent)?.args.dot
  return {
    title: options.title ?? "Tessera run",
    sources: options.sources ?? t.files,
    t0,
    wall: t1 - t0,
    hosts: hosts.names,
    workers: workers.names,
    functions: fns.names,
    eventCounts: t.eventCounts,
    tasks: {
      start: rel(start),
      end: rel(end),
      worker,
      fn,
      size,
      cpuTime: pick(floatsOf(t.tasks.getChild("cpu_time"), nAll)),
      key,
      stage,
      gather: pick(phaseSeconds(t, "gather", nAll)),
      transfer: pick(phaseSeconds(t, "transfer", nAll)),
      bytesIn: pick(bytesIn(t, keyCodes, sizeAll, endAll, nAll)),
      peakMemory: pick(floatsOf(t.tasks.getChild("peak_memory"), nAll)),
      ioBytes: pick(floatsOf(t.tasks.getChild("io_bytes"), nAll)),
      erred
    },
    memory,
    resources: { time: rel(rTime), host: rHost, values },
    dot,
    stages: stages.names,
    pipelineStages: dot === undefined ? [] : stagesOfDot(dot),
    failures,
    driver: drv.driver,
    driverThreads: drv.threads,
    activities: drv.activities,
    transfers: tr,
    clocks: clockSummaries(t.clockOffsets.toArray().map((r) => ({
      worker: r.worker ?? "",
      name: r.name ?? "",
      time: r.time ?? NaN,
      offset: r.offset ?? NaN,
      uncertainty: r.uncertainty ?? NaN
    }))),
    gpuWorkers: gpuWorkersOf(workers.names, memory, tr),
    leftOutTasks: nAll - n
  }
}

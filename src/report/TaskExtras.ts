/**
 * The task fields the report draws that a loader may not decode: stage, the gather and
 * transfer phase seconds, peak memory and I/O bytes (`ReportData.TaskColumns`). Where
 * the loaded tasks table has none of them (`FromTables.hasOptionalTaskColumns`), this
 * module reads the databases' events again with the generic decoder and fills them into
 * the report model, matching each loaded row to the `Compute` event with the same key
 * whose end is nearest (the file's clock shift applied).
 *
 * Leaves out: traces above `maxEvents` (the generic decoder is several times slower
 * than `Load`'s): there the report shows no stages or phases and says so.
 *
 * @since 0.1.0
 */
import type { TraceTables } from "../analysis/Load.ts"
import { loadEvents } from "./LoadEvents.ts"
import type { ReportData } from "./ReportData.ts"
import { phaseSeconds } from "./ReportData.ts"

/**
 * Most events for which the extras are read from the events.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxEvents = 400_000

const num = (u: unknown): number => (typeof u === "number" ? u : typeof u === "bigint" ? Number(u) : NaN)

/**
 * The report model with its optional task fields filled from the events of `files`
 * (see the module header); `data` itself when the trace is above `maxEvents` or has no
 * `Compute` events. Returns whether it filled them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fillFromEvents = async (
  data: ReportData,
  tables: TraceTables,
  files: ReadonlyArray<string>
): Promise<{ readonly data: ReportData; readonly filled: boolean }> => {
  const n = data.tasks.start.length
  if (n === 0 || tables.events > maxEvents) return { data, filled: false }
  const shiftOf = new Map(tables.clocks.map((c) => [c.file, c.shift]))
  // per key: the ends (absolute, shifted) and args of its Compute events
  const byKey = new Map<string, Array<{ end: number; args: Record<string, unknown> }>>()
  for (const file of files) {
    const { events } = await loadEvents([file])
    const shift = shiftOf.get(file) ?? 0
    for (const e of events) {
      if (e.name !== "Compute" || e.phase !== "X") continue
      const args = (e.args ?? {}) as Record<string, unknown>
      const key = String(args["key"] ?? "")
      const list = byKey.get(key)
      const x = { end: e.timestamp + shift, args }
      if (list === undefined) byKey.set(key, [x])
      else list.push(x)
    }
  }
  const t = data.tasks
  const stageNames: Array<string> = []
  const stageIds = new Map<string, number>()
  const stage = new Int32Array(n).fill(-1)
  const gather = new Float64Array(n).fill(NaN)
  const transfer = new Float64Array(n).fill(NaN)
  const peakMemory = new Float64Array(n).fill(NaN)
  const ioBytes = new Float64Array(n).fill(NaN)
  for (let i = 0; i < n; i++) {
    const list = byKey.get(t.key[i]!)
    if (list === undefined) continue
    const end = t.end[i]! + data.t0
    let best = list[0]!
    for (const c of list) if (Math.abs(c.end - end) < Math.abs(best.end - end)) best = c
    const a = best.args
    const s = a["stage"]
    if (typeof s === "string") {
      let id = stageIds.get(s)
      if (id === undefined) (id = stageNames.length, stageNames.push(s), stageIds.set(s, id))
      stage[i] = id
    }
    gather[i] = phaseSeconds(a["startstops"], "gather")
    transfer[i] = phaseSeconds(a["startstops"], "transfer")
    peakMemory[i] = num(a["peak_memory"])
    ioBytes[i] = num(a["io_bytes"])
  }
  return {
    data: { ...data, stages: stageNames, tasks: { ...t, stage, gather, transfer, peakMemory, ioBytes } },
    filled: true
  }
}

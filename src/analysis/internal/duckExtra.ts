/**
 * The `transfers` and `samples` tables (QueryViews.ts) for DuckDB: read with a second
 * pass over the files, and only where the run has them, so Load.ts's hot path stays as
 * it is for every trace.
 *
 * - `transfers`: only when `eventCounts.Transfer > 0`, a generic pass over the files
 *   (`streamEvents`, every record decoded by the generic decoder, `Transfer` X events
 *   kept). Slower per record than Load.ts's column decoder, but paid only by runs that
 *   wrote transfers (cluster peer fetches, GPU copies). Times get the file's clock shift.
 * - `samples`: only when `eventCounts["Profile Samples"] > 0` (a statistical profiler
 *   sidecar `NAME-StatisticalProfiler-HOST.msgpack` is among the databases), through
 *   Profile.ts's reader (which skips every other record undecoded).
 *
 * Both tables always exist (empty when the run has none), so queries and `.tables` do
 * not depend on the run. Rows go in through the appender one value at a time: these
 * tables are small next to `tasks` (a transfer per fetch, a sample per 10 ms).
 *
 * @since 0.1.0
 */
import { LIST, VARCHAR } from "@duckdb/node-api"
import type { DuckDBAppender, DuckDBConnection } from "@duckdb/node-api"
import { streamEvents } from "../../trace/TraceFormat.ts"
import { SampleEventNames } from "../../trace/SampleEvents.ts"
import type { TraceTables } from "../Load.ts"
import { loadProfilePromise } from "../Profile.ts"

/** The name of Tessera's transfer events (profiler/Trace.ts `transferEventName`). */
const transferName = "Transfer"

const num = (u: unknown): number | null => (typeof u === "number" && Number.isFinite(u) ? u : null)
const str = (u: unknown): string | null => (typeof u === "string" ? u : typeof u === "number" ? String(u) : null)

const putString = (a: DuckDBAppender, s: string | null) => (s === null ? a.appendNull() : a.appendVarchar(s))
const putNumber = (a: DuckDBAppender, x: number | null) => (x === null ? a.appendNull() : a.appendDouble(x))

/**
 * Create `transfers` and `samples` (empty when the run has none) and fill them.
 */
export const loadExtraTables = async (con: DuckDBConnection, t: TraceTables): Promise<void> => {
  await con.run(`CREATE TABLE transfers (host VARCHAR, worker VARCHAR, keys VARCHAR[], n_keys INTEGER, bytes DOUBLE,
    start DOUBLE, stop DOUBLE, duration DOUBLE, peer VARCHAR, direction VARCHAR, serialize DOUBLE, deserialize DOUBLE)`)
  await con.run(`CREATE TABLE samples (time DOUBLE, host VARCHAR, thread VARCHAR, key VARCHAR, function VARCHAR,
    stage VARCHAR, interval DOUBLE, frame_function VARCHAR, frame_url VARCHAR, frame_line INTEGER, depth INTEGER)`)
  if ((t.eventCounts[transferName] ?? 0) > 0) await loadTransfers(con, t)
  if ((t.eventCounts[SampleEventNames.samples] ?? 0) > 0) await loadSamples(con, t)
}

const loadTransfers = async (con: DuckDBConnection, t: TraceTables) => {
  const a = await con.createAppender("transfers")
  const keysType = LIST(VARCHAR)
  for (let f = 0; f < t.files.length; f++) {
    const shift = t.clocks[f]?.shift ?? 0
    for await (const batch of streamEvents(t.files[f]!)) {
      for (const e of batch) {
        if (e.name !== transferName || e.phase !== "X") continue
        const args = (e.args ?? {}) as Record<string, unknown>
        const stop = (num(args.stop) ?? num(e.timestamp) ?? 0) + shift
        const duration = num(e.duration) ?? 0
        const start = (num(args.start) ?? stop - shift - duration) + shift
        const keys = Array.isArray(args.keys) ? args.keys.map((k) => String(k)) : []
        putString(a, str(e.process_id))
        putString(a, str(args.worker) ?? str(e.thread_id))
        a.appendList(keys, keysType)
        a.appendInteger(keys.length)
        putNumber(a, num(args.bytes))
        a.appendDouble(start)
        a.appendDouble(stop)
        a.appendDouble(stop - start)
        putString(a, str(args.peer))
        putString(a, str(args.direction))
        putNumber(a, num(args.serialize))
        putNumber(a, num(args.deserialize))
        a.endRow()
      }
    }
  }
  a.closeSync()
}

const loadSamples = async (con: DuckDBConnection, t: TraceTables) => {
  const d = await loadProfilePromise(t.files)
  const s = d.samples
  const a = await con.createAppender("samples")
  for (let q = 0; q < s.time.length; q++) {
    const node = s.stack[q]!
    const frame = node >= 0 ? d.frames[d.frame[node]!]! : undefined
    let depth = 0
    for (let n = node; n >= 0; n = d.parent[n]!) depth++
    a.appendDouble(s.time[q]!)
    a.appendVarchar(s.host[q]!)
    a.appendVarchar(s.thread[q]!)
    putString(a, s.key[q] === "" ? null : s.key[q]!)
    a.appendVarchar(s.name[q]!)
    putString(a, s.stage[q] === "" ? null : s.stage[q]!)
    a.appendDouble(s.interval[q]!)
    putString(a, frame === undefined ? null : frame.functionName === "" ? "(anonymous)" : frame.functionName)
    putString(a, frame === undefined || frame.url === "" ? null : frame.url)
    if (frame === undefined || frame.line < 0) a.appendNull()
    else a.appendInteger(frame.line + 1)
    a.appendInteger(depth)
    a.endRow()
  }
  a.closeSync()
}

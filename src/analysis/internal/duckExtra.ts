/**
 * The `transfers` and `samples` tables (QueryViews.ts) for DuckDB, only where the run
 * has them: transfers from Load.ts's table, samples with a second pass over the files,
 * so Load.ts's hot path stays as it is for every trace.
 *
 * - `transfers`: Load.ts's `transfers` table (read in its one pass; times with the
 *   file's clock shift), copied row by row.
 * - `samples`: only when `eventCounts["Profile Samples"] > 0` (a statistical profiler
 *   sidecar `NAME-StatisticalProfiler-HOST.msgpack` is among the databases), through
 *   Profile.ts's reader (which skips every other record undecoded); `seconds` is each
 *   sample's weight as Profile.ts sums it (`sum(seconds)` agrees with `analyze -a profile`).
 *
 * Both tables always exist (empty when the run has none), so queries and `.tables` do
 * not depend on the run. Rows go in through the appender one value at a time: these
 * tables are small next to `tasks` (a transfer per fetch, a sample per 10 ms).
 *
 * @since 0.1.0
 */
import { LIST, VARCHAR } from "@duckdb/node-api"
import type { DuckDBAppender, DuckDBConnection } from "@duckdb/node-api"
import { SampleEventNames } from "../../trace/SampleEvents.ts"
import type { TraceTables } from "../Load.ts"
import { loadProfilePromise } from "../Profile.ts"


const putString = (a: DuckDBAppender, s: string | null) => (s === null ? a.appendNull() : a.appendVarchar(s))
const putNumber = (a: DuckDBAppender, x: number | null) => (x === null ? a.appendNull() : a.appendDouble(x))

/**
 * Create `transfers` and `samples` (empty when the run has none) and fill them.
 */
export const loadExtraTables = async (con: DuckDBConnection, t: TraceTables): Promise<void> => {
  await con.run(`CREATE TABLE transfers (host VARCHAR, worker VARCHAR, keys VARCHAR[], n_keys INTEGER, bytes DOUBLE,
    start DOUBLE, stop DOUBLE, duration DOUBLE, peer VARCHAR, direction VARCHAR, serialize DOUBLE, deserialize DOUBLE)`)
  await con.run(`CREATE TABLE samples (time DOUBLE, host VARCHAR, thread VARCHAR, key VARCHAR, function VARCHAR,
    stage VARCHAR, interval DOUBLE, seconds DOUBLE, frame_function VARCHAR, frame_url VARCHAR, frame_line INTEGER, depth INTEGER)`)
  if (t.transfers.numRows > 0) await loadTransfers(con, t)
  if ((t.eventCounts[SampleEventNames.samples] ?? 0) > 0) await loadSamples(con, t)
}

const loadTransfers = async (con: DuckDBConnection, t: TraceTables) => {
  const a = await con.createAppender("transfers")
  const keysType = LIST(VARCHAR)
  for (const r of t.transfers) {
    const keys = r.keys === null ? [] : Array.from(r.keys as unknown as Iterable<string | null>, (k) => k ?? "")
    putString(a, r.host)
    putString(a, r.worker)
    a.appendList(keys, keysType)
    a.appendInteger(keys.length)
    putNumber(a, r.bytes)
    putNumber(a, r.start)
    putNumber(a, r.stop)
    putNumber(a, r.duration)
    putString(a, r.peer)
    putString(a, r.direction)
    putNumber(a, r.serialize)
    putNumber(a, r.deserialize)
    a.endRow()
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
    // thread and task through the sample's indices (no per-sample string columns)
    const th = s.threads[s.threadIndex[q]!]!, task = s.tasks[s.taskIndex[q]!]!
    a.appendDouble(s.time[q]!)
    a.appendVarchar(th.host)
    a.appendVarchar(th.thread)
    putString(a, task.key === "" ? null : task.key)
    a.appendVarchar(task.name)
    putString(a, task.stage === "" ? null : task.stage)
    a.appendDouble(s.interval[q]!)
    a.appendDouble(s.weight[q]!)
    putString(a, frame === undefined ? null : frame.functionName === "" ? "(anonymous)" : frame.functionName)
    putString(a, frame === undefined || frame.url === "" ? null : frame.url)
    if (frame === undefined || frame.line < 0) a.appendNull()
    else a.appendInteger(frame.line + 1)
    a.appendInteger(depth)
    a.endRow()
  }
  a.closeSync()
}

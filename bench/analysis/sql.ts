/**
 * SQL benchmark (issue 20): loading a trace's tables into DuckDB (Query.open: columns
 * copied into data chunks, dictionaries joined in DuckDB, the documented tables built)
 * and a group-by over functions, in process; a row-by-row appender of the same `tasks`
 * columns as the baseline the columnar path replaces; and `tessera sql` end to end
 * (process start, trace load, DuckDB load, query, print).
 *
 * `node bench/analysis/sql.ts [PATH] [--runs N] [--json]`; PATH defaults to
 * `os.tmpdir()/tessera-bench-1M.msgpack` (`node bench/analysis/generate.ts`). Reports
 * medians of wall time and of process CPU time (all threads: DuckDB runs its own).
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Query from "../../src/analysis/Query.ts"

const argv = process.argv.slice(2)
const json = argv.includes("--json")
const runsAt = argv.indexOf("--runs")
const runs = runsAt >= 0 ? Number(argv[runsAt + 1]) : 3
const path = argv.find((a, i) => !a.startsWith("--") && (i === 0 || argv[i - 1] !== "--runs")) ?? join(tmpdir(), "tessera-bench-1M.msgpack")
if (!existsSync(path)) {
  console.error(`no trace at ${path}: run  node bench/analysis/generate.ts ${path}`)
  process.exit(1)
}
const groupBy = "SELECT function, count(*) AS n, sum(duration) AS total FROM tasks GROUP BY 1 ORDER BY total DESC"

const wall: Record<string, Array<number>> = {}
const cpu: Record<string, Array<number>> = {}
const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const timed = async <A>(name: string, f: () => Promise<A>): Promise<A> => {
  const c = cpuMs()
  const t = performance.now()
  const a = await f()
  ;(wall[name] ??= []).push(performance.now() - t)
  ;(cpu[name] ??= []).push(cpuMs() - c)
  return a
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

await timed("import @duckdb/node-api (first time)", () => import("@duckdb/node-api"))
let rows = 0
for (let r = 0; r < runs; r++) {
  const tables = await timed("tessera load (Arrow tables)", () => loadPromise([path]))
  rows = tables.tasks.numRows
  const db = await timed("DuckDB: open + append + build tables", () => Effect.runPromise(Query.cached(tables)))
  ;(wall["  of which: append columns (data chunks)"] ??= []).push(db.loadMs.append)
  ;(wall["  of which: append dictionaries' strings"] ??= []).push(db.loadMs.dictionaries)
  ;(wall["  of which: build tables (joins, tasks.bytes_in)"] ??= []).push(db.loadMs.build)
  await timed("group-by over functions", () => Effect.runPromise(db.sql(groupBy)))
  await timed("same group-by, second run", () => Effect.runPromise(db.sql(groupBy)))
  db.closeUnsafe()
}

/** A fresh database with an empty table `t` for the tasks table's ten columns. */
const tasksTable = async () => {
  const duck = await import("@duckdb/node-api")
  const inst = await duck.DuckDBInstance.create(":memory:")
  const con = await inst.connect()
  await con.run("CREATE TABLE t (host VARCHAR, worker VARCHAR, key VARCHAR, function VARCHAR, state VARCHAR, s DOUBLE, e DOUBLE, d DOUBLE, size DOUBLE, cpu DOUBLE)")
  return { con, inst }
}

// baseline: the tasks table's ten columns through the row appender, value by value
{
  const tables = await loadPromise([path])
  await timed("baseline: row-by-row appender, tasks' 10 columns only", async () => {
    const { con, inst } = await tasksTable()
    const app = await con.createAppender("t")
    const strs = (["host", "worker", "key", "function", "state"] as const).map((c) => tables.tasks.getChild(c)!.toArray() as Array<string | null>)
    const nums = (["start", "end", "duration", "size", "cpu_time"] as const).map((c) => tables.tasks.getChild(c)!)
    for (let i = 0; i < tables.tasks.numRows; i++) {
      for (const s of strs) s[i] === null ? app.appendNull() : app.appendVarchar(s[i]!)
      for (const v of nums) {
        const x = v.get(i)
        x === null ? app.appendNull() : app.appendDouble(x)
      }
      app.endRow()
    }
    app.closeSync()
    con.closeSync()
    inst.closeSync()
  })
}

// alternative tried: strings as ENUM-typed chunks (one ENUM per dictionary), cast to
// VARCHAR by the appender; numbers copied as in Query. Creating a 378k-member ENUM is
// the cost.
{
  const duckdb = (await import("@duckdb/node-bindings")).default
  const tables = await loadPromise([path])
  await timed("alternative: ENUM chunks cast to VARCHAR, tasks' 10 columns", async () => {
    const { con, inst } = await tasksTable()
    const strs = (["host", "worker", "key", "function", "state"] as const).map((c) => {
      const d = tables.tasks.getChild(c)!.data[0]
      return { codes: d.values as unknown as Int32Array, names: d.dictionary!.toArray() as Array<string> }
    })
    const nums = (["start", "end", "duration", "size", "cpu_time"] as const).map((c) => tables.tasks.getChild(c)!.data[0].values as Float64Array)
    const dbl = duckdb.create_logical_type(duckdb.Type.DOUBLE)
    const chunk = duckdb.create_data_chunk([...strs.map((x) => duckdb.create_enum_type(x.names)), dbl, dbl, dbl, dbl, dbl])
    const app = duckdb.appender_create((con as unknown as { connection: import("@duckdb/node-bindings").Connection }).connection, null, "t")
    const n = tables.tasks.numRows
    for (let off = 0; off < n; off += 2048) {
      const m = Math.min(2048, n - off)
      strs.forEach((x, j) => {
        const part = x.codes.subarray(off, off + m)
        const src = x.names.length < 256 ? Uint8Array.from(part) : x.names.length < 65536 ? Uint16Array.from(part) : part
        duckdb.copy_data_to_vector(duckdb.data_chunk_get_vector(chunk, j), 0, src.buffer as ArrayBuffer, src.byteOffset, src.byteLength)
      })
      nums.forEach((x, j) => duckdb.copy_data_to_vector(duckdb.data_chunk_get_vector(chunk, 5 + j), 0, x.buffer as ArrayBuffer, x.byteOffset + off * 8, m * 8))
      duckdb.data_chunk_set_size(chunk, m)
      duckdb.append_data_chunk(app, chunk)
      duckdb.data_chunk_reset(chunk)
    }
    duckdb.appender_close_sync(app)
    con.closeSync()
    inst.closeSync()
  })
}

// end to end: a fresh process, as a user runs it
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
for (let r = 0; r < runs; r++) {
  const t = performance.now()
  const p = spawnSync(process.execPath, [main, "--log-level", "none", "sql", "-d", path, "--csv", groupBy], { encoding: "utf8" })
  if (p.status !== 0) throw new Error(p.stderr)
  ;(wall["tessera sql -d PATH \"<group-by>\" (process start to exit)"] ??= []).push(performance.now() - t)
}

const out = Object.keys(wall).map((k) => ({ step: k, wallMs: Math.round(median(wall[k])), cpuMs: cpu[k] === undefined ? null : Math.round(median(cpu[k])) }))
if (json) console.log(JSON.stringify({ path, tasks: rows, runs, steps: out }))
else {
  console.log(`${path}: ${rows} tasks, median of ${runs} run(s)`)
  for (const s of out) console.log(`${s.step.padEnd(62)} ${String(s.wallMs).padStart(7)} ms wall  ${s.cpuMs === null ? "" : `${String(s.cpuMs).padStart(7)} ms CPU`}`)
}

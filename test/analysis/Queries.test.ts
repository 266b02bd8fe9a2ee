/**
 * SQL over traces (Query.ts): every query of docs/queries.md runs on the DASF fixture
 * traces and on a demo trace; the tables agree with the built-in analyses where they
 * overlap; errors carry DuckDB's message and the position.
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import type { Table } from "apache-arrow"
import { Effect } from "effect"
import * as A from "../../src/analysis/Analysis.ts"
import type { TraceTables } from "../../src/analysis/Load.ts"
import * as Query from "../../src/analysis/Query.ts"

const repo = fileURLToPath(new URL("../../", import.meta.url))
const dasf = join(repo, "test/fixtures/dasf-small/")
const fixture = [join(dasf, "small-TracePlugin.msgpack"), join(dasf, "small-ResourceMonitor-gpusurrogate.msgpack")]
const main = join(repo, "src/cli/main.ts")

/** The ```sql blocks of docs/queries.md. */
const docQueries = (): Array<string> =>
  [...readFileSync(join(repo, "docs/queries.md"), "utf8").matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1].trim())

const rows = (t: Table): Array<Record<string, unknown>> => t.toArray().map((r) => r.toJSON() as Record<string, unknown>)
const close = (a: number, b: number, what: string) =>
  assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b)), `${what}: ${a} != ${b}`)

describe("Query", () => {
  let demoDir = ""
  let demo: TraceTables
  let dasfTables: TraceTables
  before(async () => {
    demoDir = mkdtempSync(join(tmpdir(), "tessera-sql-"))
    await promisify(execFile)(process.execPath, [main, "demo", "--samples", "20000", "--workers", "2", "--profile", "x", "--log-level", "none"], {
      cwd: demoDir,
      timeout: 120_000
    })
    // NAME-TracePlugin-{host}.msgpack and NAME-ResourceMonitor-{host}.msgpack
    demo = await A.loadPromise(readdirSync(demoDir).filter((f) => f.endsWith(".msgpack")).map((f) => join(demoDir, f)))
    dasfTables = await A.loadPromise(fixture)
  })
  after(() => rmSync(demoDir, { recursive: true, force: true }))

  it("docs/queries.md has a dozen queries", () => {
    assert.ok(docQueries().length >= 12, `${docQueries().length} queries`)
  })

  it("runs every query of docs/queries.md on the DASF fixtures and on a demo trace", async () => {
    for (const [name, tables] of [["dasf-small", dasfTables], ["demo", demo]] as const) {
      assert.ok(tables.tasks.numRows > 0, name)
      for (const q of docQueries()) {
        const t = await Query.sqlPromise(tables, q).catch((e) => assert.fail(`${name}: ${e.message}\n${q}`))
        assert.ok(t.schema.fields.length > 0, `${name}: no columns\n${q}`)
      }
    }
  })

  it("has every documented table with its typed columns", async () => {
    const cols = await Effect.runPromise(Effect.flatMap(Query.cached(dasfTables), (db) => db.columns()))
    for (const view of Query.viewNames) {
      const have = cols.filter((c) => c.table === view).map((c) => c.column)
      const t = await Query.sqlPromise(dasfTables, `SELECT * FROM ${view} LIMIT 0`)
      assert.deepStrictEqual(t.schema.fields.map((f) => f.name), have, view)
    }
    const t = await Query.sqlPromise(dasfTables, "SELECT count(*) AS n FROM tasks")
    assert.equal(Number(t.get(0)!.toJSON().n), dasfTables.tasks.numRows)
    const memory = await Query.sqlPromise(dasfTables, "SELECT count(*) AS n FROM memory")
    assert.equal(Number(memory.get(0)!.toJSON().n), dasfTables.memory.numRows)
    const res = await Query.sqlPromise(dasfTables, "SELECT count(*) AS n, count(gpu_utilization) AS g FROM resources")
    assert.equal(Number(res.get(0)!.toJSON().n), dasfTables.resources.numRows)
  })

  for (const which of ["dasf-small", "demo"] as const) {
    const tablesOf = () => (which === "demo" ? demo : dasfTables)

    it(`agrees with function_summary on ${which} (counts, totals, percentiles, bytes)`, async () => {
      const tables = tablesOf()
      const built = new Map(rows(A.perFunctionSummary(tables)).map((r) => [r["Function"] as string, r]))
      const sql = rows(await Query.sqlPromise(tables, docQueries()[0]))
      assert.equal(sql.length, built.size)
      for (const r of sql) {
        const b = built.get(r.function as string)!
        assert.equal(r.tasks, b["Count"] === undefined ? undefined : BigInt(b["Count"] as number))
        close(r.total as number, b["Total (s)"] as number, `${r.function} total`)
        close(r.p50 as number, b["p50 (s)"] as number, `${r.function} p50`)
        close(r.p95 as number, b["p95 (s)"] as number, `${r.function} p95`)
        close(r.max as number, b["Max (s)"] as number, `${r.function} max`)
        close(r.bytes_in as number, b["Bytes In"] as number, `${r.function} bytes in`)
        close(r.bytes_out as number, b["Bytes Out"] as number, `${r.function} bytes out`)
      }
    })

    it(`agrees with function_bottleneck's durations and task counts on ${which}`, async () => {
      const tables = tablesOf()
      const sql = rows(await Query.sqlPromise(tables, "SELECT host, worker, function, sum(duration) AS d, count(*)::INTEGER AS n FROM tasks GROUP BY ALL"))
      const built = rows(A.perFunctionBottleneck(tables))
      assert.equal(sql.length, built.length)
      const byKey = new Map(sql.map((r) => [`${r.host}|${String(r.worker).split("-").at(-1)}|${r.function}`, r]))
      for (const b of built) {
        const r = byKey.get(`${b["Host"]}|${b["GPU"]}|${b["Function"]}`)
        assert.ok(r !== undefined, `${b["Host"]} ${b["GPU"]} ${b["Function"]}`)
        close(r.d as number, b["Duration (s)"] as number, "duration")
        assert.equal(r.n, b["Num Tasks (chunks)"])
      }
    })

    it(`agrees with stage_summary (tasks, task time, span, bytes) on ${which}`, async () => {
      const tables = tablesOf()
      // the SQL view groups tasks: stage_summary's rows with tasks (not the start-up, nor a graph stage without tasks)
      const built = rows(A.stageSummary(tables)).filter((b) => (b["Tasks"] as number) > 0)
      const sql = new Map(rows(await Query.sqlPromise(tables, "SELECT * FROM stages")).map((r) => [r.stage as string, r]))
      assert.equal(sql.size, built.length)
      if (which === "dasf-small") assert.deepStrictEqual([...sql.keys()], [A.noStage])
      else assert.ok(sql.size > 1, "the demo has stages")
      for (const b of built) {
        const r = sql.get(b["Stage"] as string)!
        assert.ok(r !== undefined, `${b["Stage"]}`)
        assert.equal(r.tasks, b["Tasks"])
        close(r.busy as number, b["Task time (s)"] as number, `${b["Stage"]} task time`)
        close(r.wall as number, b["Task span (s)"] as number, `${b["Stage"]} wall`)
        close(r.bytes_in as number, b["Bytes In"] as number, `${b["Stage"]} bytes in`)
        close(r.bytes_out as number, b["Bytes Out"] as number, `${b["Stage"]} bytes out`)
      }
    })

    it(`fills the tasks table's details from the loaded columns on ${which}`, async () => {
      const tables = tablesOf()
      const sql = rows(await Query.sqlPromise(tables,
        "SELECT stage, shape, dtype, type, gather, compute, transfer, peak_memory, io_bytes, cores FROM tasks ORDER BY task_id"))
      const loaded = tables.tasks.toArray()
      assert.equal(sql.length, loaded.length)
      const diff = (a: number | null, b: number | null) => (a === null || b === null ? null : a - b)
      sql.forEach((r, i) => {
        const t = loaded[i]!
        assert.deepStrictEqual([r.stage, r.shape, r.dtype, r.type], [t.stage, t.shape, t.dtype, t.type], `row ${i}`)
        for (const [got, want] of [
          [r.gather, diff(t.gather_end, t.gather_start)],
          [r.compute, diff(t.compute_end, t.compute_start)],
          [r.transfer, diff(t.transfer_end, t.transfer_start)],
          [r.peak_memory, t.peak_memory],
          [r.io_bytes, t.io_bytes],
          [r.cores, t.cores]
        ] as const) {
          if (want === null) assert.equal(got, null, `row ${i}`)
          else close(got as number, want, `row ${i}`)
        }
      })
      if (which === "demo") assert.ok(sql.some((r) => r.stage !== null && r.peak_memory !== null && r.compute !== null))
    })

    it(`agrees with task_balance's per-second means on ${which}`, async () => {
      const tables = tablesOf()
      const span = A.traceSpan(tables)
      const sql = rows(await Query.sqlPromise(tables,
        `SELECT floor(timestamp - ${span.start})::INTEGER AS second, worker, avg(chunks) AS mean FROM memory GROUP BY ALL`))
      const built = rows(A.perWorkerTaskBalance(tables))
      assert.ok(sql.length > 0)
      for (const r of sql) {
        const b = built[r.second as number]
        if (b === undefined || !(String(r.worker) in b)) continue // sparse layout or a host/worker label
        close(b[String(r.worker)] as number, r.mean as number, `second ${r.second} ${r.worker}`)
      }
    })
  }

  it("fails a bad query with DuckDB's message and the position", async () => {
    const e = await Effect.runPromise(Effect.flip(Query.sql(dasfTables, "SELECT key,\n  durtion FROM tasks")))
    assert.ok(Query.isQueryError(e))
    assert.equal(e.reason._tag, "SqlFailed")
    if (e.reason._tag !== "SqlFailed") return
    assert.match(e.reason.detail, /Binder Error: .*durtion/)
    assert.deepStrictEqual([e.reason.line, e.reason.column], [2, 3])
    assert.match(e.message, /\(line 2, column 3\)$/)
    assert.ok(!e.message.includes("\n"))
    const p = await Effect.runPromise(Effect.flip(Query.sql(dasfTables, "SELECT * FRM tasks")))
    assert.match(p.message, /^Parser Error: syntax error at or near "tasks" \(line 1, column 14\)$/)
  })

  it("runs typed queries and returns typed columns", async () => {
    const q = Query.select("tasks", ["function", "duration"], { orderBy: [{ column: "duration", descending: true }], limit: 3 })
    assert.equal(q.sql, "SELECT \"function\", \"duration\" FROM tasks ORDER BY \"duration\" DESC LIMIT 3")
    const t = await Query.runPromise(dasfTables, q)
    const d: number | null = t.getChild("duration")!.get(0)
    assert.equal(d, Math.max(...(dasfTables.tasks.getChild("duration")!.toArray() as Float64Array)))
  })

  it("closes a scoped database", async () => {
    const db = await Effect.runPromise(Effect.scoped(Effect.map(Query.open(dasfTables), (db) => db)))
    const e = await Effect.runPromise(Effect.flip(db.sql("SELECT 1")))
    assert.match(e.message, /closed/)
  })
})

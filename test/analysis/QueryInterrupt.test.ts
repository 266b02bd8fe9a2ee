/**
 * Issue 32 items 8 and 13 in code: interrupting a query's Effect interrupts DuckDB's query
 * (the connection is free for the next one at once, which it would not be while the
 * query ran on), and `{ safe: true }` databases refuse file access while the full one,
 * kept apart for the same tables, does not.
 */
import assert from "node:assert/strict"
import { existsSync } from "node:fs"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { Effect, Exit } from "effect"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Query from "../../src/analysis/Query.ts"

const trace = fileURLToPath(new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url))
const endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) AS n FROM r"
const count = async (db: Query.Database | Awaited<ReturnType<typeof loadPromise>>, options: Query.OpenOptions = {}) =>
  Number((await Query.sqlPromise(db, "SELECT count(*)::INTEGER AS n FROM tasks", options)).getChild("n")!.get(0))

describe("Query interruption and safe mode", { timeout: 120_000 }, () => {
  it("issue 32 item 8: an interrupted query stops inside DuckDB: the same database answers the next query at once", async () => {
    const tables = await loadPromise([trace])
    const db = await Effect.runPromise(Query.cached(tables))
    const t0 = performance.now()
    const exit = await Effect.runPromiseExit(Query.sql(db, endless).pipe(Effect.timeout("500 millis")))
    assert.ok(Exit.isFailure(exit), "the endless query did not end by itself")
    // one connection runs one query at a time: had the endless one run on, this would wait for ever
    assert.equal(await count(db), 409)
    assert.ok(performance.now() - t0 < 30_000, `${((performance.now() - t0) / 1000).toFixed(1)} s`)
    // and the prompt's way: interruptUnsafe stops the running query, which fails with DuckDB's INTERRUPT
    const running = Effect.runPromiseExit(db.sql(endless))
    await new Promise((r) => setTimeout(r, 300))
    db.interruptUnsafe()
    const stopped = await running
    assert.ok(Exit.isFailure(stopped))
    assert.match(String(stopped.cause), /INTERRUPT/)
    assert.equal(await count(db), 409)
  })

  it("issue 32 item 13: a safe database refuses files and extensions; the full one for the same tables does not", async (t) => {
    const tables = await loadPromise([trace])
    const readable = existsSync("/etc/passwd") ? "/etc/passwd" : trace
    const q = `SELECT count(*) AS n FROM read_csv('${readable}')`
    const safe = await Effect.runPromiseExit(Query.sql(tables, q, { safe: true }))
    assert.ok(Exit.isFailure(safe))
    const e = safe.cause.reasons.find((r) => r._tag === "Fail")?.error
    assert.ok(Query.isQueryError(e) && e.reason._tag === "SqlFailed", String(safe.cause))
    assert.match(e.message, /^Permission Error: Cannot access file .* \(safe mode: no file access, no extensions\)/)
    for (const s of ["INSTALL httpfs", "LOAD httpfs", "SET enable_external_access = true"]) {
      assert.ok(Exit.isFailure(await Effect.runPromiseExit(Query.sql(tables, s, { safe: true }))), s)
    }
    assert.equal(await count(tables, { safe: true }), 409)
    const safeDb = await Effect.runPromise(Query.cached(tables, { safe: true }))
    const fullDb = await Effect.runPromise(Query.cached(tables))
    assert.equal(safeDb.safe, true)
    assert.equal(fullDb.safe, false)
    assert.notEqual(safeDb, fullDb)
    if (readable !== "/etc/passwd") return t.skip("no /etc/passwd to read")
    await Query.sqlPromise(tables, q) // the full SQL reads it
  })
})

/**
 * Type tests of typed queries (Query.select / run): `tsc -p .` checks that every
 * `@ts-expect-error` below is really an error. The function holding them is never
 * called; the `it` at the end runs the positive case.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import type { Float64, Utf8 } from "apache-arrow"
import * as Query from "../../src/analysis/Query.ts"
import type { TypedTable } from "../../src/analysis/Load.ts"

/** Misspelt tables and columns: compile errors (never called). */
export const misspelt = async (tables: Parameters<typeof Query.run>[0]) => {
  // @ts-expect-error `durtion`: not a column of tasks
  Query.select("tasks", ["function", "durtion"])
  // @ts-expect-error `task`: not a table
  Query.select("task", ["function"])
  // @ts-expect-error `peak`: a column of no table here (memory has `bytes`, `chunks`)
  Query.select("memory", ["peak"])
  // @ts-expect-error ordering by a column that is not selected
  Query.select("tasks", ["function"], { orderBy: ["duration"] })
  const t = await Query.runPromise(tables, Query.select("workers", ["worker", "busy"]))
  // @ts-expect-error `idle` was not selected
  t.getChild("idle")
  const busy: Float64 | undefined = t.getChild("busy")?.type
  const worker: Utf8 | undefined = t.getChild("worker")?.type
  return [busy, worker]
}

describe("Query types", () => {
  it("select builds the SQL of its typed columns", () => {
    const q = Query.select("memory", ["worker", "bytes"], { where: "bytes > 0", orderBy: ["bytes"], limit: 2 })
    assert.equal(q.sql, "SELECT \"worker\", \"bytes\" FROM memory WHERE bytes > 0 ORDER BY \"bytes\" LIMIT 2")
    const typed: Query.TypedQuery<{ worker: Utf8; bytes: Float64 }> = q
    assert.ok(typed)
    const _t: TypedTable<{ worker: Utf8 }> | undefined = undefined
    assert.equal(_t, undefined)
  })
})

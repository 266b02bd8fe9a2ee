/**
 * The per-task bottleneck computed on the CSV worker thread (`Analyze.offloadTaskBottleneck`,
 * `taskRows.ts`, `csvWorker.ts`) from the load's task columns (`onTaskColumns`: keys as
 * the load's string ids, not the table's codes) against `perTaskBottleneck` on the
 * calling thread: the same table, and, with the worker formatting its share of the rows,
 * the same CSV bytes, whatever the hosts, workers (missing ones included), keys (quotes,
 * commas, non-ASCII, a leading BOM, the same key on several workers) and durations (ties
 * ordered by strings).
 */
import assert from "node:assert/strict"
import { after, before, describe, it } from "node:test"
import * as fc from "fast-check"
import type { Table } from "apache-arrow"
import * as A from "../../src/analysis/Analysis.ts"
import { offloadTaskBottleneck } from "../../src/analysis/Analyze.ts"
import { csvColumns, csvHeader } from "../../src/analysis/Format.ts"
import { csvHelper, type CsvHelper, csvRowBlocks, splitRow } from "../../src/analysis/internal/csvWriter.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import type { EarlyTaskColumns } from "../../src/analysis/Load.ts"

const keyText = fc.oneof(
  fc.constantFrom("('sum-1', 0)", "a,b", "say \"hi\"", "ключ", "\uFEFFbom", "line\nbreak", "é"),
  fc.string({ maxLength: 6 })
)

const arbTasks = fc.array(
  fc.record({
    host: fc.option(fc.constantFrom("node1", "nöde,2"), { nil: null }),
    worker: fc.option(fc.constantFrom("tcp://1-0", "tcp://1-1", "gpu-w-\"3\"", "plain"), { nil: null }),
    key: keyText,
    end: fc.integer({ min: 0, max: 20 }).map((x) => 100 + x / 4),
    // few distinct durations: rows of equal duration are ordered by host, GPU and key
    duration: fc.integer({ min: 0, max: 6 }).map((x) => x / 8),
    size: fc.option(fc.integer({ min: 0, max: 10_000_000 }), { nil: undefined })
  }),
  { minLength: 1, maxLength: 60 }
)

interface Task {
  readonly host: string | null
  readonly worker: string | null
  readonly key: string
  readonly end: number
  readonly duration: number
  readonly size: number | undefined
}

/** The tables and the task columns the load handed out while building them. */
const tablesOf = (tasks: ReadonlyArray<Task>) => {
  const events = tasks.map((t): TraceEvent => ({
    name: "Compute",
    timestamp: t.end,
    phase: "X",
    process_id: t.host,
    thread_id: t.worker,
    args: { key: t.key, name: "f", state: "memory", ...(t.size !== undefined ? { size: t.size } : {}), dependencies: [], dependents: [] },
    duration: t.duration
  }))
  let early: EarlyTaskColumns | undefined
  const tables = A.loadBytesUnsafe([{ file: "random.msgpack", bytes: encodeRecords(events) }], undefined, (c) => (early = c))
  assert.ok(early !== undefined, "the load hands out its task columns")
  return { tables, early }
}

const rowsOf = (t: Table) => t.toArray().map((r) => JSON.stringify(r))

describe("the per-task bottleneck on the CSV worker", () => {
  let helper: CsvHelper
  before(async () => (helper = await csvHelper()))
  after(() => helper.close())

  it("gives perTaskBottleneck's table, and its CSV with the worker's rows after any split (property)", async () => {
    await fc.assert(
      fc.asyncProperty(arbTasks, fc.double({ min: 0, max: 1, noNaN: true }), fc.boolean(), async (tasks, share, starting) => {
        const { early, tables } = tablesOf(tasks)
        const expected = A.perTaskBottleneck(tables)
        // the helper started, or still starting (posted once it has)
        const offloaded = offloadTaskBottleneck(early, starting ? Promise.resolve(helper) : helper, share)(tables)
        const table = await offloaded.table
        assert.ok(table !== undefined, "the worker computed it")
        assert.deepEqual(rowsOf(table), rowsOf(expected))
        const mid = splitRow(table.numRows, share)
        const csv = Buffer.concat([csvHeader(table), ...csvRowBlocks(csvColumns(table), 0, mid), ...(await offloaded.blocks)])
        assert.equal(csv.toString("utf8"), A.toCsv(expected))
      }),
      { numRuns: 80 }
    )
  })

  it("leaves the table and every row to the caller when the worker is gone", async () => {
    const gone = await csvHelper()
    gone.close()
    await new Promise((resolve) => setTimeout(resolve, 50))
    const { early, tables } = tablesOf([
      { host: "h", worker: "w-1", key: "k1", end: 101, duration: 0.5, size: 10 },
      { host: "h", worker: "w-2", key: "k2", end: 102, duration: 0.25, size: undefined }
    ])
    const offloaded = offloadTaskBottleneck(early, gone, 0.5)(tables)
    assert.equal(await offloaded.table, undefined)
    await assert.rejects(offloaded.blocks)
  })
})

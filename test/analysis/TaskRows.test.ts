/**
 * The per-task bottleneck computed on the CSV worker thread (`Analyze.offloadTaskBottleneck`,
 * `taskRows.ts`, `csvWorker.ts`) from the load's task columns (`onTaskColumns`: keys as
 * the load's string ids, not the table's codes) against `perTaskBottleneck` on the
 * calling thread: the same table, and, with the worker formatting its share of the rows,
 * the same CSV bytes, whatever the hosts, workers (missing ones included), keys (quotes,
 * commas, non-ASCII, a leading BOM, the same key on several workers) and durations (ties
 * ordered by strings); from a load on two threads too (keys read from the load's shared
 * string pool while it interns more), and with nothing left rejecting unhandled when the
 * tables never come.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import * as fc from "fast-check"
import type { Table } from "apache-arrow"
import * as A from "../../src/analysis/Analysis.ts"
import { offloadTaskBottleneck } from "../../src/analysis/Analyze.ts"
import { csvColumns, csvHeader } from "../../src/analysis/Format.ts"
import { csvHelper, type CsvHelper, csvRowBlocks, splitRow } from "../../src/analysis/internal/csvWriter.ts"
import type { EarlyTaskColumns } from "../../src/analysis/Load.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

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

  it("gives the same from a load on two threads: keys read where the load keeps them, in shared memory, while it interns more", async () => {
    // 70,000 tasks (the shared columns' threshold), no function names: the load interns
    // them from the keys after it handed the columns out
    const dir = mkdtempSync(join(tmpdir(), "tessera-taskrows-"))
    try {
      const file = join(dir, "two.msgpack")
      const events: Array<TraceEvent> = []
      for (let i = 0; i < 70_000; i++) {
        events.push({
          name: "Compute",
          timestamp: 100 + i / 1000,
          phase: "X",
          process_id: `node${i % 2}`,
          thread_id: `tcp://w-${i % 5}`,
          args: { key: `('f${i % 7}-abc', ${i >> 1})`, state: "memory", size: i % 13, dependencies: [] },
          duration: (i * 7919) % 101 / 1000
        })
      }
      writeFileSync(file, encodeRecords(events))
      let early: EarlyTaskColumns | undefined
      const tables = await A.loadPromise([file], { threads: 2, pieces: 8, onTaskColumns: (c) => (early = c) })
      assert.ok(early !== undefined)
      assert.ok(early.keys.bytes.buffer instanceof SharedArrayBuffer, "the keys' UTF-8 is the load's, in shared memory")
      assert.ok(early.columns.key.buffer instanceof SharedArrayBuffer)
      const expected = A.perTaskBottleneck(tables)
      const offloaded = offloadTaskBottleneck(early, helper, 0.5)(tables)
      const table = await offloaded.table
      assert.ok(table !== undefined)
      assert.deepEqual(rowsOf(table), rowsOf(expected))
      const mid = splitRow(table.numRows, 0.5)
      const csv = Buffer.concat([csvHeader(table), ...csvRowBlocks(csvColumns(table), 0, mid), ...(await offloaded.blocks)])
      assert.equal(csv.toString("utf8"), A.toCsv(expected))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("lets the worker's answers go when the tables never come (a load failing after it posted): nothing rejects unhandled", async () => {
    const unhandled: Array<unknown> = []
    const listen = (e: unknown) => void unhandled.push(e)
    process.on("unhandledRejection", listen)
    try {
      const closing = await csvHelper()
      const { early } = tablesOf([{ host: "h", worker: "w-1", key: "k1", end: 101, duration: 0.5, size: 10 }])
      offloadTaskBottleneck(early, closing, 0.5) // never given the tables
      closing.close()
      await new Promise((resolve) => setTimeout(resolve, 100))
      assert.deepEqual(unhandled, [])
    } finally {
      process.off("unhandledRejection", listen)
    }
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

/**
 * Time-bucketed analyses allocate by the number of events, never by the span: two tasks
 * 1e9 s apart, or a DASF trace (time.monotonic()) analysed with a Tessera one (epoch
 * seconds), give small tables quickly instead of one bucket per second.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import * as A from "../../src/analysis/Analysis.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import { isTraceFormatError } from "../../src/trace/TraceFormatError.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const repo = fileURLToPath(new URL("../../", import.meta.url))
const fixture = join(repo, "test/fixtures/dasf-small/small-TracePlugin.msgpack")

const compute = (key: string, end: number, duration: number, worker = "worker-a-0"): TraceEvent => ({
  name: "Compute",
  timestamp: end,
  phase: "X",
  process_id: "a",
  thread_id: worker,
  args: { key, name: key.split("-")[0]!, state: "memory", size: 8, dependencies: [], dependents: [] },
  duration
})
const memory = (key: string, t: number, tasks: number, worker = "worker-a-0"): TraceEvent => ({
  name: "Managed Memory",
  timestamp: t,
  phase: "I",
  scope: "t",
  process_id: "a",
  thread_id: worker,
  args: { key, state: "memory", size: 8 * tasks, tasks }
})

/** Two tasks 1e9 s apart, each followed by its Managed Memory event: 4 records, ~440 bytes. */
const farApart = (): Uint8Array =>
  encodeRecords([compute("x-0", 1, 0.5), memory("x-0", 1, 1), compute("y-1", 1e9, 0.25), memory("y-1", 1e9, 2)])

describe("Balance", () => {
  it("task balance over a 1e9 s span has one row per second with events, carried forward", () => {
    const t = A.loadBytesUnsafe([{ file: "far.msgpack", bytes: farApart() }])
    const table = A.perWorkerTaskBalance(t)
    assert.equal(table.numRows, 2)
    const rows = table.toArray().map((r) => r.toJSON() as Record<string, number>)
    assert.deepEqual(rows.map((r) => r["Time Interval (seconds from begin)"]), [0, 999_999_999])
    assert.deepEqual(rows.map((r) => r["worker-a-0"]), [1, 2])
  })

  it("worker utilization over a 1e9 s span widens its interval to stay within maxBuckets", () => {
    const t = A.loadBytesUnsafe([{ file: "far.msgpack", bytes: farApart() }])
    const table = A.workerUtilization(t)
    assert.ok(table.numRows <= A.maxBuckets(2), `${table.numRows} rows`)
    const busy = table.getChild("Busy (s)")!.toArray() as Float64Array
    assert.ok(Math.abs(busy.reduce((a, b) => a + b, 0) - 0.75) < 1e-6)
  })

  it("keeps one bucket per second while the span fits (DASF's layout)", () => {
    const bytes = encodeRecords([compute("x-0", 100.5, 0.5), memory("x-0", 100.5, 1), compute("y-1", 103.2, 0.1), memory("y-1", 103.2, 3)])
    const table = A.perWorkerTaskBalance(A.loadBytesUnsafe([{ file: "near.msgpack", bytes }]))
    const rows = table.toArray().map((r) => r.toJSON() as Record<string, number>)
    assert.deepEqual(rows.map((r) => r["Time Interval (seconds from begin)"]), [0, 1, 2, 3])
    assert.deepEqual(rows.map((r) => r["worker-a-0"]), [1, 1, 1, 3])
  })

  it("never sizes buckets by non-finite instants: the loader rejects them (NotAnEvent at the record)", () => {
    // (this test loaded NaN / Infinity timestamps and checked the span skipped them; under
    // the one rule on times such a record is not an event, on every reader)
    const before = encodeRecords([compute("x-0", 10, 1), memory("x-0", 10, 1)])
    for (const bad of [Infinity, NaN]) {
      const bytes = encodeRecords([compute("x-0", 10, 1), memory("x-0", 10, 1), memory("x-0", bad, 5)])
      assert.throws(
        () => A.loadBytesUnsafe([{ file: "inf.msgpack", bytes }]),
        (e: unknown) => isTraceFormatError(e) && e.reason._tag === "NotAnEvent" && e.offset === before.length
      )
    }
    const t = A.loadBytesUnsafe([{ file: "ok.msgpack", bytes: before }])
    assert.deepEqual(A.traceSpan(t), { start: 9, end: 10 })
  })

  it("analyses a DASF trace (monotonic clock) together with an epoch-clock trace", () => {
    const epoch = encodeRecords([compute("z-0", 1.8e9, 0.5), memory("z-0", 1.8e9, 1)])
    const t = A.loadBytesUnsafe([
      { file: fixture, bytes: readFileSync(fixture) },
      { file: "epoch.msgpack", bytes: epoch }
    ])
    for (const a of A.analyses) {
      const table = a.run(t)
      assert.ok(table.numRows < 100_000, `${a.name}: ${table.numRows} rows`)
    }
  })

  it("tessera report on the far-apart trace finishes in a 512 MB heap", () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-balance-"))
    try {
      const db = join(dir, "far.msgpack")
      writeFileSync(db, farApart())
      const r = spawnSync(
        process.execPath,
        ["--max-old-space-size=512", join(repo, "src/cli/main.ts"), "report", "-d", db, "-o", join(dir, "r.html")],
        { encoding: "utf8", timeout: 120_000 }
      )
      assert.equal(r.status, 0, r.stderr)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

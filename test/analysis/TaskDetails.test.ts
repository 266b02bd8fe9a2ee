/**
 * What Load keeps of a Compute event beyond DASF's columns (stage, type, dtype, shape,
 * dependents, phases, peak_memory, io_bytes, cores), written by the profiler's fast
 * encoder and read back; and the per-stage analysis on the demo and on DASF's fixture.
 */
import assert from "node:assert/strict"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as A from "../../src/analysis/Analysis.ts"
import * as H from "../../src/analysis/Histograms.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import { RecordEncoder } from "../../src/trace/TraceWriter.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"

const repo = fileURLToPath(new URL("../../", import.meta.url))
const dasf = join(repo, "test/fixtures/dasf-small/")

const time = fc.double({ min: 1e9, max: 2e9, noNaN: true })
const span = fc.tuple(time, fc.double({ min: 0, max: 10, noNaN: true })).map(([a, d]) => [a, a + d] as const)
const word = fc.string({ minLength: 1, maxLength: 12 })
const taskArb: fc.Arbitrary<TaskRecord> = fc.record({
  key: fc.uuid(),
  name: word,
  stage: word,
  host: fc.constantFrom("h0", "h1"),
  workerId: fc.nat(3),
  threadId: fc.constantFrom("worker-h0-0", "worker-h0-1"),
  phases: fc.record({ gather: span, compute: span, transfer: span }),
  cpuTime: fc.double({ min: 0, max: 100, noNaN: true }),
  peakMemory: fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e12, noNaN: true })),
  ioBytes: fc.nat(),
  nbytes: fc.nat(),
  shape: fc.array(fc.nat(100000), { maxLength: 4 }),
  dtype: fc.constantFrom("float64", "int32", ""),
  type: fc.constantFrom("Chunk", "number", "object"),
  dependencies: fc.array(fc.uuid(), { maxLength: 4 }),
  dependents: fc.array(fc.uuid(), { maxLength: 4 }),
  state: fc.constantFrom("memory" as const, "erred" as const)
}, { requiredKeys: ["key", "name", "host", "workerId", "threadId", "phases", "cpuTime", "nbytes", "shape", "dtype", "type", "dependencies", "dependents", "state"] })

/** Runs the demo (small) under a Trace layer writing into memory; the loaded tables. */
const demoTables = async () => {
  const db = MemoryDatabase.make()
  await Effect.runPromise(
    Tutorial5.run({ samples: 4_000, chunkRows: 1_000, log: () => {} }).pipe(
      Effect.provide(Executor.layerWorkers({ workers: 2 })),
      Hooks.provide(Trace.callbacks(db))
    )
  )
  return A.loadBytesUnsafe([{ file: "memory", bytes: encodeRecords(db.list) }])
}

const sum = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0)

describe("TaskDetails", () => {
  it("keeps every recorded field of random Compute records through write and Load", () => {
    fc.assert(
      fc.property(fc.array(taskArb, { minLength: 1, maxLength: 8 }), (records) => {
        const enc = new RecordEncoder()
        for (const r of records) enc.compute(r)
        const t = A.loadBytesUnsafe([{ file: "mem", bytes: enc.buf.slice(0, enc.pos) }])
        const rows = t.tasks.toArray()
        assert.equal(rows.length, records.length)
        records.forEach((r, i) => {
          const row = rows[i]!
          const end = r.phases.transfer[1]
          const duration = Math.max(0, end - r.phases.gather[0])
          assert.equal(row.stage, r.stage ?? null)
          assert.equal(row.type, r.type)
          assert.equal(row.dtype, r.dtype)
          assert.equal(row.shape, r.shape.join("x"))
          assert.deepEqual(row.dependents?.toArray(), [...r.dependents])
          assert.deepEqual(row.dependencies?.toArray(), [...r.dependencies])
          assert.deepEqual(
            [row.gather_start, row.gather_end, row.compute_start, row.compute_end, row.transfer_start, row.transfer_end],
            [...r.phases.gather, ...r.phases.compute, ...r.phases.transfer]
          )
          assert.equal(row.peak_memory, r.peakMemory ?? null)
          assert.equal(row.io_bytes, r.ioBytes ?? null)
          assert.equal(row.cpu_time, r.cpuTime)
          assert.equal(row.cores, duration > 0 ? r.cpuTime / duration : null)
        })
      }),
      { numRuns: 100 }
    )
  })

  it("gives DASF's traces nulls in the new columns and a single (no stage) row", async () => {
    const t = await A.loadPromise([join(dasf, "small-TracePlugin.msgpack")])
    const rows = t.tasks.toArray()
    assert.ok(rows.length > 0)
    for (const r of rows) {
      for (const c of ["stage", "gather_start", "compute_end", "transfer_end", "peak_memory", "io_bytes"] as const) assert.equal(r[c], null, c)
    }
    // DASF writes shape, dtype and type: kept
    assert.ok(rows.some((r) => r.shape !== null && r.dtype !== null && r.type !== null))
    const s = A.stageSummary(t).toArray()
    assert.equal(s.length, 1)
    assert.equal(s[0]!.Stage, A.noStage)
    assert.equal(s[0]!.Tasks, rows.length)
    assert.equal(A.stageSummary({ tasks: t.tasks.slice(0, 0) }).numRows, 0, "an empty trace gives no rows")
  })

  it("on the demo: stages, phases inside each task, measured resources, and a stage summary that adds up", async () => {
    const t = await demoTables()
    const rows = t.tasks.toArray()
    const staged = rows.filter((r) => r.stage !== null)
    assert.ok(staged.length > rows.length * 0.9, `${staged.length} of ${rows.length} tasks carry a stage`)
    const EPS = 1e-6
    for (const r of rows) {
      assert.ok(r.gather_start! >= r.start - EPS && r.transfer_end! <= r.end + EPS, `${r.key}: phases inside the task`)
      assert.ok(r.gather_end! <= r.compute_start! + EPS && r.compute_end! <= r.transfer_start! + EPS, `${r.key}: phases in order`)
      assert.ok(r.peak_memory! > 0, `${r.key}: peak_memory ${r.peak_memory}`)
      assert.ok(r.io_bytes! >= 0)
      assert.match(r.shape ?? "", /^(\d+(x\d+)*)?$/)
    }
    // dependents name tasks of the trace (the run's execution keys)
    const keys = new Set(rows.map((r) => r.key))
    const dependents = rows.flatMap((r) => (r.dependents?.toArray() ?? []) as Array<string>)
    assert.ok(dependents.length > 0)
    assert.ok(dependents.filter((d) => keys.has(d)).length > dependents.length * 0.9, "dependents are tasks of the run")

    const summary = A.stageSummary(t).toArray()
    const stages = new Set(staged.map((r) => r.stage))
    assert.equal(summary.filter((s) => s.Stage !== A.noStage && (s.Tasks as number) > 0).length, stages.size)
    assert.equal(sum(summary.map((s) => s.Tasks as number)), rows.length)
    for (const s of summary) {
      const mine = rows.filter((r) => (r.stage ?? A.noStage) === s.Stage)
      assert.equal(s.Tasks, mine.length)
      assert.ok(Math.abs((s["Task time (s)"] as number) - sum(mine.map((r) => r.duration))) < 1e-9)
      assert.ok(Math.abs((s["Bytes Out"] as number) - sum(mine.map((r) => r.size ?? 0))) < 1e-3)
      assert.ok((s["Share of run (%)"] as number) <= 100 + 1e-9)
    }
    // stages in the order they started
    const starts = summary.filter((s) => s.Stage !== A.noStage && (s.Tasks as number) > 0).map((s) => s["Start (s from begin)"] as number)
    assert.deepEqual(starts, [...starts].sort((a, b) => a - b))
    const onPath = sum(summary.map((s) => s["Critical path (%)"] as number))
    assert.ok(onPath > 0 && onPath <= 100 + 1e-6, `stages' share of the critical path ${onPath}%`)
  })

  it("draws Work Queue's histograms per function: every task counted once, in its function's figure", async () => {
    const t = await A.loadPromise([join(dasf, "small-TracePlugin.msgpack")])
    const data = H.taskSamplesOf(t)
    const fns = new Set(t.tasks.toArray().map((r) => r.function))
    const per = H.taskHistogramsByFunction(data, ["duration", "size", "bytes_in", "peak_memory", "memory"])
    assert.deepEqual([...new Set(per.map((h) => h.resource))], ["duration", "size", "bytes_in", "peak_memory"], "memory is per worker sample, not per task")
    for (const r of ["duration", "size", "bytes_in"]) {
      const mine = per.filter((h) => h.resource === r)
      assert.deepEqual(new Set(mine.map((h) => h.function)), fns)
      assert.equal(sum(mine.map((h) => h.n)), t.tasks.numRows, r)
      for (const h of mine) assert.equal(sum(h.bins.map((b) => b.count)), h.n)
      // one unit for all functions: the whole run's
      assert.equal(new Set(mine.map((h) => h.unit)).size, 1)
    }
    // DASF records no peak memory: every function's histogram is empty
    assert.ok(per.filter((h) => h.resource === "peak_memory").every((h) => h.n === 0))
    const run = H.taskHistograms(data, ["bytes_in", "io_bytes"])
    assert.equal(run[0]!.n, t.tasks.numRows)
    assert.equal(run[1]!.n, 0)
  })
})

import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import fc from "fast-check"
import type { DriverRecord, MemoryRecord, TaskRecord } from "../../src/engine/EngineEvents.ts"
import { RecordEncoder } from "../../src/trace/TraceWriter.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import * as TraceFormat from "../../src/trace/TraceFormat.ts"

const time = fc.double({ min: 0, max: 2e9, noNaN: true })
const span = fc.tuple(time, time).map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const)
const str = fc.string({ maxLength: 60 })
const taskArb: fc.Arbitrary<TaskRecord> = fc.record({
  key: str,
  name: str,
  stage: str,
  host: str,
  workerId: fc.nat(64),
  threadId: str,
  phases: fc.record({ gather: span, compute: span, transfer: span }),
  cpuTime: fc.oneof(fc.double({ min: 0, max: 100, noNaN: true }), fc.nat(5)),
  // optional (absent from records not made by Tessera's executors): both int and float
  peakMemory: fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e12, noNaN: true })),
  ioBytes: fc.oneof(fc.nat(), fc.constant(0), fc.double({ min: 0, max: 1e12, noNaN: true })),
  // GPU tasks' kernel seconds
  gpuTime: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 100, noNaN: true })),
  nbytes: fc.nat(),
  shape: fc.array(fc.nat(100000), { maxLength: 4 }),
  dtype: str,
  type: str,
  dependencies: fc.array(str, { maxLength: 20 }),
  dependents: fc.array(str, { maxLength: 20 }),
  state: fc.constantFrom("memory" as const, "erred" as const)
}, { requiredKeys: ["key", "name", "host", "workerId", "threadId", "phases", "cpuTime", "nbytes", "shape", "dtype", "type", "dependencies", "dependents", "state"] })
const memoryArb: fc.Arbitrary<MemoryRecord> = fc.record({
  timestamp: time,
  host: str,
  workerId: fc.nat(64),
  threadId: str,
  key: str,
  state: fc.constantFrom("memory" as const, "released" as const, "erred" as const),
  bytes: fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e15, noNaN: true })),
  chunks: fc.nat(1000),
  // a GPU worker's device bytes (docs/gpu.md)
  device: fc.nat()
}, { requiredKeys: ["timestamp", "host", "workerId", "threadId", "key", "state", "bytes", "chunks"] })

const driverArb: fc.Arbitrary<DriverRecord> = fc.record({
  key: str,
  activity: fc.constantFrom("pool start" as const, "worker start" as const, "setup" as const, "graph build" as const, "between computes" as const, "submit" as const, "wait" as const),
  // end before start too: the event's duration is clamped at 0 either way
  start: time,
  end: time,
  host: str,
  threadId: str,
  compute: fc.nat(100000),
  dependencies: fc.array(str, { maxLength: 40 }),
  tasks: fc.nat()
})

describe("TraceEncoding", () => {
  it("encodes a TaskRecord straight to the same bytes as its Compute event", () => {
    fc.assert(
      fc.property(fc.array(taskArb, { minLength: 1, maxLength: 5 }), (records) => {
        const enc = new RecordEncoder()
        for (const r of records) enc.compute(r)
        const fast = enc.buf.slice(0, enc.pos)
        assert.deepEqual(fast, TraceFormat.encodeRecords(records.map(Trace.computeEvent)))
      }),
      { numRuns: 100 }
    )
  })

  it("writes peak_memory, io_bytes and gpu_time after cpu_time, and only when measured", () => {
    const base = {
      key: "k", name: "f", host: "h", workerId: 0, threadId: "worker-h-0",
      phases: { gather: [1, 1], compute: [1, 2], transfer: [2, 2] } as const,
      cpuTime: 0.5, nbytes: 8, shape: [1], dtype: "float64", type: "Chunk",
      dependencies: [], dependents: [], state: "memory" as const
    }
    const args = (r: TaskRecord) => {
      const enc = new RecordEncoder()
      enc.compute(r)
      const [e] = TraceFormat.decodeRecordsUnsafe(enc.buf.slice(0, enc.pos), "mem").events
      return e!.args as Record<string, unknown>
    }
    const measured = args({ ...base, peakMemory: 1234567, ioBytes: 4096, gpuTime: 0.25, stage: "s" })
    assert.deepEqual(Object.keys(measured).slice(-5), ["cpu_time", "peak_memory", "io_bytes", "gpu_time", "stage"])
    assert.equal(measured.gpu_time, 0.25)
    assert.equal(measured.peak_memory, 1234567)
    assert.equal(measured.io_bytes, 4096)
    const plain = args(base)
    assert.equal("peak_memory" in plain || "io_bytes" in plain || "gpu_time" in plain, false)
  })

  it("encodes a MemoryRecord straight to the same bytes as its Managed Memory event", () => {
    fc.assert(
      fc.property(fc.array(memoryArb, { minLength: 1, maxLength: 5 }), (records) => {
        const enc = new RecordEncoder()
        for (const m of records) enc.memory(m)
        assert.deepEqual(enc.buf.slice(0, enc.pos), TraceFormat.encodeRecords(records.map(Trace.memoryEvent)))
      }),
      { numRuns: 100 }
    )
  })

  it("writes the same bytes when records of many rows interleave (the encoder's per-row bytes, found again and evicted)", () => {
    // 3 hosts x 8 threads x 2 map sizes: more rows than the encoder keeps, each seen many times
    const host = fc.constantFrom("h", "host-2", "ümlaut")
    const thread = fc.integer({ min: 0, max: 7 }).map((i) => `worker-h-${i}`)
    const records = fc.array(
      fc.oneof(
        fc.tuple(taskArb, host, thread).map(([r, h, t]): TaskRecord | MemoryRecord | DriverRecord => ({ ...r, host: h, threadId: t })),
        fc.tuple(memoryArb, host, thread).map(([m, h, t]): TaskRecord | MemoryRecord | DriverRecord => ({ ...m, host: h, threadId: t })),
        fc.tuple(driverArb, host, thread).map(([d, h, t]): TaskRecord | MemoryRecord | DriverRecord => ({ ...d, host: h, threadId: t }))
      ),
      { minLength: 1, maxLength: 120 }
    )
    fc.assert(
      fc.property(records, (rs) => {
        const enc = new RecordEncoder()
        for (const r of rs) {
          if ("phases" in r) enc.compute(r)
          else if ("activity" in r) enc.driver(r)
          else enc.memory(r)
        }
        const events = rs.map((r) => ("phases" in r ? Trace.computeEvent(r) : "activity" in r ? Trace.driverEvent(r) : Trace.memoryEvent(r)))
        assert.deepEqual(enc.buf.slice(0, enc.pos), TraceFormat.encodeRecords(events))
      }),
      { numRuns: 100 }
    )
  })

  it("encodes a DriverRecord straight to the same bytes as its Driver event", () => {
    fc.assert(
      fc.property(fc.array(driverArb, { minLength: 1, maxLength: 5 }), (records) => {
        const enc = new RecordEncoder()
        for (const d of records) enc.driver(d)
        assert.deepEqual(enc.buf.slice(0, enc.pos), TraceFormat.encodeRecords(records.map(Trace.driverEvent)))
      }),
      { numRuns: 200 }
    )
  })

  it("gives a FileDatabase's driver records the same bytes as record(Trace.driverEvent(d))", () => {
    const dir = mkdtempSync(join(tmpdir(), "trace-encoding-"))
    try {
      fc.assert(
        fc.property(fc.array(driverArb, { minLength: 1, maxLength: 5 }), (records) => {
          const fast = new FileDatabase.FileDatabase(join(dir, "fast.msgpack"), { overwrite: true })
          const slow = new FileDatabase.FileDatabase(join(dir, "slow.msgpack"), { overwrite: true })
          for (const d of records) {
            fast.records.driver!(d)
            slow.record(Trace.driverEvent(d))
          }
          fast.close()
          slow.close()
          assert.deepEqual(readFileSync(join(dir, "fast.msgpack")), readFileSync(join(dir, "slow.msgpack")))
        }),
        { numRuns: 50 }
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

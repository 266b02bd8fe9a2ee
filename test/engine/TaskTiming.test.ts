/**
 * The one task-timing codec (internal/taskTiming.ts) and the one record builder
 * (internal/taskRecord.ts): a record's timings survive the trip through a row (both
 * record shapes), a clock shift moves only timestamps, an unmeasured field is absent —
 * and a driver-side hook gets a cluster task's peak memory and bytes read (they were
 * undefined when the wire carried 7 of the 9 floats).
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, ManagedRuntime } from "effect"
import * as fc from "fast-check"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { buildTaskRecord, RecordSource } from "../../src/engine/internal/taskRecord.ts"
import {
  CLOCK_FIELDS,
  copyRow,
  hasRow,
  newRows,
  Timing,
  TIMING_FLOATS,
  writeAmounts,
  writePhases,
  writeRecord
} from "../../src/engine/internal/taskTiming.ts"
import { bytesOf, npy } from "../dsl/fixtures/files.ts"

// -0 made +0 (a shift of 0 turns one into the other, and deepEqual tells them apart)
const finite = fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 }).map((x) => x === 0 ? 0 : x)
const maybe = fc.option(fc.double({ noNaN: true, min: 0, max: 1e12 }), { nil: undefined })

const recordArb = fc.record({
  spans: fc.array(finite, { minLength: 6, maxLength: 6 }),
  cpuTime: fc.double({ noNaN: true, min: 0, max: 1e6 }),
  peakMemory: maybe,
  ioBytes: maybe,
  gpuTime: maybe,
  stage: fc.option(fc.string(), { nil: undefined }),
  failed: fc.boolean()
})

type Generated = typeof recordArb extends fc.Arbitrary<infer T> ? T : never

/** A TaskRecord of the generated values (its optional fields absent where undefined). */
const recordOf = (x: Generated): TaskRecord => {
  const s = x.spans
  const r: Record<string, unknown> = {
    key: "k",
    name: "n",
    host: "h",
    workerId: 3,
    threadId: "worker-h-3",
    phases: { gather: [s[0], s[1]], compute: [s[2], s[3]], transfer: [s[4], s[5]] },
    cpuTime: x.cpuTime,
    nbytes: 8,
    shape: [1],
    dtype: "float64",
    type: "Float64Array",
    dependencies: ["a"],
    dependents: ["b"],
    state: x.failed ? "erred" : "memory"
  }
  if (x.peakMemory !== undefined) r.peakMemory = x.peakMemory
  if (x.ioBytes !== undefined) r.ioBytes = x.ioBytes
  if (x.gpuTime !== undefined) r.gpuTime = x.gpuTime
  if (x.stage !== undefined) r.stage = x.stage
  if (x.failed) {
    r.error = "boom"
    r.traceback = "at k"
  }
  return r as unknown as TaskRecord
}

/** A source for `r`'s non-timing fields, reading row `o` of `rows` shifted by `shift`. */
const sourceOf = (r: TaskRecord, rows: Float64Array, o: number, shift: number): RecordSource => {
  const s = new RecordSource()
  s.key = r.key
  s.name = r.name
  s.host = r.host
  s.workerId = r.workerId
  s.threadId = r.threadId
  s.rows = rows
  s.o = o
  s.shift = shift
  s.info = { nbytes: r.nbytes, chunks: 1, shape: r.shape, dtype: r.dtype, type: r.type }
  s.dependencies = r.dependencies
  s.dependents = r.dependents
  s.state = r.state
  s.stage = r.stage
  s.failure = r.error !== undefined ? { error: r.error, traceback: r.traceback ?? "" } : undefined
  return s
}

describe("TaskTiming", () => {
  it("issue 37: a record written to a row and built back is the same record", () => {
    fc.assert(
      fc.property(recordArb, fc.nat(4), (x, at) => {
        const r = recordOf(x)
        const rows = newRows(at + 1)
        writeRecord(rows, at * TIMING_FLOATS, r)
        assert.ok(hasRow(rows, at * TIMING_FLOATS))
        const fresh = buildTaskRecord(sourceOf(r, rows, at * TIMING_FLOATS, 0))
        assert.deepEqual(fresh, r)
      }),
      { numRuns: 300 }
    )
  })

  it("issue 37: copyRow moves the timestamps by the shift and leaves the amounts alone", () => {
    fc.assert(
      fc.property(recordArb, finite, (x, shift) => {
        const rows = newRows(1)
        writeRecord(rows, 0, recordOf(x))
        const to = newRows(2)
        copyRow(rows, 0, to, TIMING_FLOATS, shift)
        assert.ok(!hasRow(to, 0), "the row not copied to stays empty")
        for (let q = 0; q < TIMING_FLOATS; q++) {
          const want = q < CLOCK_FIELDS ? rows[q]! + shift : rows[q]!
          assert.ok(Object.is(to[TIMING_FLOATS + q], want), `field ${q}: ${to[TIMING_FLOATS + q]} against ${want}`)
        }
      }),
      { numRuns: 300 }
    )
  })

  it("issue 37: the writers cut a task into three phases, each starting where the last stopped", () => {
    const rows = newRows(1)
    writePhases(rows, 0, 1, 2, 5, 6)
    writeAmounts(rows, 0, 0.5, 1024, NaN)
    const r = buildTaskRecord(Object.assign(new RecordSource(), { rows }))
    assert.deepEqual(r.phases, { gather: [1, 2], compute: [2, 5], transfer: [5, 6] })
    assert.equal(r.cpuTime, 0.5)
    assert.equal(r.peakMemory, 1024)
    assert.ok(!("ioBytes" in r) && !("gpuTime" in r), "unmeasured fields are absent")
    assert.equal(TIMING_FLOATS, Object.keys(Timing).length)
    assert.deepEqual(new Set(Object.values(Timing)).size, TIMING_FLOATS, "no two fields share an offset")
  })
})

describe("TaskTiming on a cluster (2 worker processes on loopback)", () => {
  const dir = mkdtempSync(join(tmpdir(), "tessera-timing-"))
  const rt = ManagedRuntime.make(Cluster.layerLocal({ local: 2 }))
  after(async () => {
    await rt.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it("issue 37: a driver-side hook receives a cluster task's peak memory and I/O bytes", { timeout: 180_000 }, async () => {
    const data = new Float64Array(4096).map((_, i) => i)
    const file = join(dir, "x.npy")
    const bytes = npy("<f8", [data.length], bytesOf(data))
    writeFileSync(file, bytes)
    const npyKernels = new URL("../../src/kernels/io/npy.ts", import.meta.url).href
    const mem = new URL("../profiler/fixtures/memory.ts", import.meta.url).href
    const MiB = 1024 * 1024
    const g = TaskGraph.makeUnsafe([
      { key: "read-0", kernel: { module: npyKernels, name: "readNpy" }, args: [file] },
      { key: "allocate-0", kernel: { module: mem, name: "allocate" }, args: [16 * MiB] }
    ])
    const seen = new Map<string, TaskRecord>()
    // a hook that keeps its records (not transient): the driver builds a new record per task
    const hook: Hooks.Callbacks = { task: (r) => void seen.set(r.key, r) }
    await rt.runPromise(Engine.compute(g).pipe(Effect.provide(Hooks.layer(hook))))
    const read = seen.get("read-0")
    const big = seen.get("allocate-0")
    assert.ok(read !== undefined && big !== undefined, `records of: ${[...seen.keys()].join(", ")}`)
    assert.equal(read.ioBytes, bytes.length, "bytes the reader kernel read on its worker")
    assert.equal(big.ioBytes, 0)
    assert.ok(typeof read.peakMemory === "number" && read.peakMemory > 0, `peakMemory ${read.peakMemory}`)
    assert.ok(big.peakMemory! >= 16 * MiB, `peakMemory ${big.peakMemory} below the 16 MiB the kernel returned`)
    for (const r of [read, big]) {
      assert.ok(r.phases.gather[0] <= r.phases.compute[0] && r.phases.compute[1] <= r.phases.transfer[1], "phases in order")
      assert.ok(r.cpuTime >= 0)
    }
    // the refilled shape too (a transient hook)
    const transient: Array<number | undefined> = []
    const hook2: Hooks.Callbacks = { transientRecords: true, task: (r) => void transient.push(r.peakMemory, r.ioBytes) }
    const g2 = TaskGraph.makeUnsafe([{ key: "read-1", kernel: { module: npyKernels, name: "readNpy" }, args: [file] }])
    await rt.runPromise(Engine.compute(g2).pipe(Effect.provide(Hooks.layer(hook2))))
    assert.equal(transient.length, 2)
    assert.ok(transient[0]! > 0)
    assert.equal(transient[1], bytes.length)
  })
})

/**
 * The executors' held-memory book (src/engine/internal/job.ts `MemoryBook`): its
 * per-worker arrays start small and grow for the workers it meets (the cluster's worker
 * ids are sparse: `index × 16 + thread`), and what it records does not depend on the
 * size it started with.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import type { MemoryRecord } from "../../src/engine/EngineEvents.ts"
import { makeJob, MemoryBook } from "../../src/engine/internal/job.ts"
import * as State from "../../src/engine/State.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

const opArb = fc.array(fc.record({ task: fc.nat({ max: 15 }), worker: fc.nat({ max: 300 }), bytes: fc.nat({ max: 1000 }), release: fc.boolean() }), { maxLength: 40 })

/** Holds (or releases) per `ops` in a book that starts with room for `workers`; its records and per-worker totals. */
const play = (workers: number, ops: ReadonlyArray<{ task: number; worker: number; bytes: number; release: boolean }>) => {
  const graph = TaskGraph.makeUnsafe(Array.from({ length: 16 }, (_, i) => ({ key: `k${i}`, kernel: { module: "m", name: "f" }, args: [] })))
  const records: Array<string> = []
  const job = makeJob(graph, State.init(graph, Int32Array.from({ length: 16 }, (_, i) => i)), [{
    memory: (m: MemoryRecord) => void records.push(JSON.stringify([m.key, m.state, m.workerId, m.bytes, m.chunks, m.device ?? null]))
  }])
  const book = new MemoryBook(job, workers, "h")
  const held = new Set<number>()
  for (const op of ops) {
    if (op.release) book.release(op.task)
    else if (book.owner[op.task] === -1) {
      book.hold(op.task, op.worker, op.bytes, 1)
      held.add(op.worker)
    }
  }
  const totals = Array.from({ length: 301 }, (_, w) => [w < book.bytes.length ? book.bytes[w]! : 0, w < book.chunks.length ? book.chunks[w]! : 0])
  return { records, totals, book, held }
}

describe("MemoryBook", () => {
  it("records the same whatever room it starts with, growing for workers beyond it", () => {
    fc.assert(fc.property(opArb, fc.integer({ min: 1, max: 8 }), (ops, small) => {
      const a = play(small, ops)
      const b = play(512, ops)
      assert.deepEqual(a.records, b.records)
      assert.deepEqual(a.totals, b.totals)
      for (const w of a.held) assert.ok(a.book.bytes.length > w)
      // a grown worker holds no device bytes
      for (let w = small; w < a.book.device.length; w++) assert.ok(Number.isNaN(a.book.device[w]!))
    }))
  })
})

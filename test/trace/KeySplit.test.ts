import assert from "node:assert/strict"
import { describe, it } from "node:test"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import { keySplit } from "../../src/trace/KeySplit.ts"
import * as TraceFormat from "../../src/trace/TraceFormat.ts"
import { RecordEncoder } from "../../src/trace/TraceWriter.ts"

describe("KeySplit", () => {
  it("derives group names from keys like dask's key_split", () => {
    // moved from test/engine/TaskGraph.test.ts (TaskGraph.keyName)
    assert.equal(keySplit("add-3f2a9c1d7b"), "add")
    assert.equal(keySplit("load-7"), "load")
    assert.equal(keySplit("('sum-abc12345', 0, 1)"), "sum")
    assert.equal(keySplit("read-csv-12"), "read-csv")
    assert.equal(keySplit("x"), "x")
  })

  it("follows dask's key_split doctests", () => {
    assert.equal(keySplit("x-1-2-3"), "x")
    assert.equal(keySplit("('x-2', 1)"), "x")
    assert.equal(keySplit("('x', 1)"), "x")
    assert.equal(keySplit("hello-world-1"), "hello-world")
    assert.equal(keySplit("ae05086432ca935f6eba409a8ecd4896"), "data")
    assert.equal(keySplit("<module.submodule.myclass object at 0xdaf372"), "myclass")
    assert.equal(keySplit("x-abcdefab"), "x")
    assert.equal(keySplit("_(x)"), "x")
    assert.equal(keySplit(""), "Other")
  })

  it("splits a stringified tuple key by its first element, as dask splits the tuple", () => {
    assert.equal(keySplit("('hello-world', 0)"), "hello-world")
    assert.equal(keySplit("('var-partial-f25c4ad77b800e93fac4f5e341cf3340', 5, 0)"), "var-partial")
  })

  it("is the name the trace writer gives a task without one", () => {
    const record = (key: string, name: string): TaskRecord => ({
      key,
      name,
      host: "h",
      workerId: 0,
      threadId: "worker-h-0",
      phases: { gather: [1, 1], compute: [1, 2], transfer: [2, 2] },
      cpuTime: 1,
      nbytes: 8,
      shape: [1],
      dtype: "float64",
      type: "Chunk",
      dependencies: [],
      dependents: [],
      state: "memory"
    })
    const records = [record("add-17", ""), record("k", "custom")]
    assert.deepEqual(records.map((r) => Trace.computeEvent(r).args.name), ["add", "custom"])
    const enc = new RecordEncoder()
    for (const r of records) enc.compute(r)
    const events = TraceFormat.decodeRecordsUnsafe(enc.buf.slice(0, enc.pos)).events
    assert.deepEqual(events.map((e) => e.args.name), ["add", "custom"])
  })
})

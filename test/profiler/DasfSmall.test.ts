import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as EventProfiler from "../../src/profiler/EventProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as MultiEventDatabase from "../../src/profiler/MultiEventDatabase.ts"
import * as TraceFormat from "../../src/trace/TraceFormat.ts"

const data = new URL("../fixtures/dasf-small/", import.meta.url)
const trace = new URL("small-TracePlugin.msgpack", data).pathname
const resource = new URL("small-ResourceMonitor.msgpack", data).pathname

const countByName = (events: ReadonlyArray<{ name: string }>) => {
  const out: Record<string, number> = {}
  for (const e of events) out[e.name] = (out[e.name] ?? 0) + 1
  return out
}

describe("DasfSmall", () => {
  it("reads DASF's TracePlugin file exactly: 409 Compute and 558 Managed Memory events", async () => {
    const t = await FileDatabase.readPromise(trace)
    assert.equal(t.droppedBytes, 0)
    assert.deepEqual(countByName(t.events), { Compute: 409, "Managed Memory": 558 })
    const first = t.events[0]!
    assert.deepStrictEqual({ ...first, args: { ...first.args } }, {
      name: "Compute",
      timestamp: 1279.022098964,
      duration: 0.00003337860107421875,
      phase: "X",
      process_id: "vm",
      thread_id: "worker-vm-0",
      args: {
        key: "('array-0117baf52de50432ed73e4bf713a01f5', 0, 0)",
        name: "array",
        state: "memory",
        size: 80000,
        shape: [5000, 2],
        dtype: "float64",
        type: "<class 'numpy.ndarray'>",
        dependencies: [],
        dependents: []
      }
    })
    const mm = t.events[1]!
    assert.equal(mm.name, "Managed Memory")
    assert.equal(mm.scope, "g")
    assert.deepStrictEqual({ ...mm.args }, {
      key: "('array-0117baf52de50432ed73e4bf713a01f5', 0, 0)",
      state: "memory",
      size: 80000,
      tasks: 1
    })
    // every field value equals the generic msgpack decoder's reading
    const generic = await TraceFormat.readFilePromise(trace)
    assert.deepStrictEqual(JSON.stringify(t.events), JSON.stringify(generic.events))
    const threads = new Set(t.events.map((e) => e.thread_id))
    assert.deepEqual([...threads].sort(), ["worker-vm-0", "worker-vm-1"])
  })

  it("reads DASF's ResourceMonitor file exactly: 25 Resource Usage events with null thread ids and no gpu args", async () => {
    const r = await FileDatabase.readPromise(resource)
    assert.deepEqual(countByName(r.events), { "Resource Usage": 25 })
    const first = r.events[0]!
    assert.equal(first.thread_id, null)
    assert.equal(first.process_id, "vm")
    assert.deepStrictEqual({ ...first.args }, {
      cpu: 95.2,
      memory: 119107584,
      time: 1795346328.6301796,
      "host_net_io.read_bps": 990.8262541089094,
      "host_net_io.write_bps": 990.8262541089094,
      "host_disk_io.read_bps": 0,
      "host_disk_io.write_bps": 0,
      num_fds: 46
    })
    const generic = await TraceFormat.readFilePromise(resource)
    assert.deepStrictEqual(JSON.stringify(r.events), JSON.stringify(generic.events))
  })

  it("iterates both DASF files as one MultiEventDatabase, resource events first", async () => {
    const file = (path: string) => ({ label: path, events: () => FileDatabase.streamEvents(path) })
    const multi = MultiEventDatabase.make([file(resource), file(trace)])
    const profiler = EventProfiler.make(multi)
    const all = await profiler.getTraces()
    assert.equal(all.length, 25 + 967)
    assert.equal(all[0]!.name, "Resource Usage")
    assert.equal(all[25]!.name, "Compute")
  })

  it("re-encodes the DASF events to records that decode to the same values", async () => {
    const t = await FileDatabase.readPromise(trace)
    const back = FileDatabase.decodeUnsafe(TraceFormat.encodeRecords(t.events))
    assert.deepStrictEqual(JSON.stringify(back.events), JSON.stringify(t.events))
  })
})

import assert from "node:assert/strict"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { tableFromIPC } from "apache-arrow"
import { eventTable, tableToArrowFile, tableToCsv } from "../../src/analysis/exports/EventTable.ts"
import { loadEvents } from "../../src/report/LoadEvents.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const data = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))

describe("EventTable", () => {
  it("holds one row per event with args flattened into typed columns", async () => {
    const { events } = await loadEvents([join(data, "small-TracePlugin.msgpack"), join(data, "small-ResourceMonitor.msgpack")])
    const t = eventTable(events)
    assert.equal(t.numRows, 967 + 25)
    assert.equal(String(t.getChild("args.size")!.type), "Float64")
    assert.equal(t.getChild("name")!.get(0), "Compute")
    const i = events.findIndex((e) => e.phase === "X")
    assert.ok(Math.abs(t.getChild("start")!.get(i) - (events[i]!.timestamp - events[i]!.duration!)) < 1e-12)
  })

  it("round-trips through Arrow IPC and writes RFC 4180 CSV", () => {
    const events: Array<TraceEvent> = [
      { name: "Compute", timestamp: 2, duration: 1, phase: "X", process_id: "h", thread_id: "w0", args: { key: "('a, b', 0)", size: 8, shape: [2, 2] } },
      { name: "Managed Memory", timestamp: 3, phase: "I", scope: "g", process_id: "h", thread_id: "w0", args: { size: 8, tasks: 1 } }
    ]
    const t = eventTable(events)
    const back = tableFromIPC(tableToArrowFile(t))
    assert.equal(back.numRows, 2)
    assert.equal(back.getChild("args.key")!.get(0), "('a, b', 0)")
    const csv = tableToCsv(t).split("\n")
    assert.equal(csv[0], "name,phase,timestamp,start,duration,process_id,thread_id,scope,args.key,args.size,args.shape,args.tasks")
    assert.equal(csv[1], 'Compute,X,2,1,1,h,w0,,"(\'a, b\', 0)",8,"[2,2]",')
    assert.equal(csv[2], "Managed Memory,I,3,3,,h,w0,g,,8,,1")
  })
})

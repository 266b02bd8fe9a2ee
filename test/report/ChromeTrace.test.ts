import assert from "node:assert/strict"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import fc from "fast-check"
import { chromeTraceJson, toChromeTrace } from "../../src/analysis/exports/ChromeTrace.ts"
import { loadEvents } from "../../src/report/loadEvents.ts"

const data = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))

describe("ChromeTrace", () => {
  it("exports dasf-small as JSON with one X event per Compute event in microseconds, naming every thread", async () => {
    const { events } = await loadEvents([join(data, "small-TracePlugin.msgpack"), join(data, "small-ResourceMonitor.msgpack")])
    const doc = JSON.parse(chromeTraceJson(toChromeTrace(events))) as { traceEvents: Array<any> }
    const compute = events.filter((e) => e.name === "Compute" && e.phase === "X")
    const xs = doc.traceEvents.filter((e) => e.ph === "X")
    assert.equal(xs.length, compute.length)
    assert.equal(xs.length, 409)
    // µs: ts = (end - duration) * 1e6, dur = duration * 1e6
    xs.forEach((x, i) => {
      const e = compute[i]!
      assert.equal(x.args.key, (e.args as any).key)
      assert.ok(Math.abs(x.dur - e.duration! * 1e6) < 0.01)
      assert.ok(Math.abs(x.ts - (e.timestamp - e.duration!) * 1e6) < 0.01)
      assert.ok(Number.isInteger(x.pid) && Number.isInteger(x.tid))
    })
    const names = new Map(doc.traceEvents.filter((e) => e.ph === "M" && e.name === "thread_name").map((e) => [`${e.pid}/${e.tid}`, e.args.name]))
    for (const e of doc.traceEvents) assert.ok(names.has(`${e.pid}/${e.tid}`) || e.ph === "M", `thread ${e.pid}/${e.tid} is named`)
    assert.deepEqual([...names.values()].sort(), ["resources", "worker-vm-0", "worker-vm-1"])
    const procs = doc.traceEvents.filter((e) => e.ph === "M" && e.name === "process_name").map((e) => e.args.name)
    assert.deepEqual(procs, ["vm"])
    assert.ok(doc.traceEvents.some((e) => e.ph === "C" && e.name === "cpu"), "resource usage becomes counters")
  })

  it("keeps every event, places each complete event at timestamp - duration, and names every pid/tid it uses", () => {
    const event = fc.record({
      name: fc.constantFrom("Compute", "Managed Memory", "Resource Usage", "Other"),
      timestamp: fc.double({ min: 0, max: 1e6, noNaN: true }),
      phase: fc.constantFrom("X", "I", "C"),
      process_id: fc.constantFrom("a", "b"),
      thread_id: fc.constantFrom("t0", "t1", null),
      args: fc.constant({ size: 1 }),
      duration: fc.double({ min: 0, max: 10, noNaN: true })
    })
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (events) => {
        const t = toChromeTrace(events)
        const xs = t.traceEvents.filter((e) => e.ph === "X")
        assert.equal(xs.length, events.filter((e) => e.phase === "X").length)
        const src = events.filter((e) => e.phase === "X")
        xs.forEach((x, i) => assert.ok(Math.abs(x.ts - (src[i]!.timestamp - src[i]!.duration) * 1e6) < 1e-2))
        const named = new Set(t.traceEvents.filter((e) => e.name === "thread_name").map((e) => `${e.pid}/${e.tid}`))
        for (const e of t.traceEvents) if (e.ph !== "M") assert.ok(named.has(`${e.pid}/${e.tid}`))
        JSON.parse(chromeTraceJson(t))
      }),
      { numRuns: 60 }
    )
  })
})

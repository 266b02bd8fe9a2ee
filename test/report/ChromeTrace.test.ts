import assert from "node:assert/strict"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import fc from "fast-check"
import { chromeTraceJson, toChromeTrace } from "../../src/analysis/exports/ChromeTrace.ts"
import { loadEvents } from "../../src/report/LoadEvents.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

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

  it("draws the driver's segments on their own, named thread (first), named by activity; worker start stays on its worker", () => {
    const drv = (thread: string, activity: string, end: number, duration: number): TraceEvent => ({
      name: "Driver", timestamp: end, duration, phase: "X", process_id: "h", thread_id: thread,
      args: { key: `driver-1-${activity}`, activity, compute: 1, dependencies: [], tasks: 0 }
    })
    const task: TraceEvent = { name: "Compute", timestamp: 3, duration: 1, phase: "X", process_id: "h", thread_id: "worker-h-0", args: { key: "('f-1', 0)", name: "f", dependencies: [] } }
    const events = [task, drv("worker-h-0", "worker start", 1, 0.5), drv("driver", "pool start", 0.5, 0.5), drv("driver", "wait", 3, 2.5)]
    const doc = JSON.parse(chromeTraceJson(toChromeTrace(events))) as { traceEvents: Array<any> }
    const xs = doc.traceEvents.filter((e) => e.ph === "X")
    assert.deepEqual(xs.map((x) => x.name), ["f", "driver: worker start", "driver: pool start", "driver: wait"])
    assert.deepEqual(xs.map((x) => x.cat), ["Compute", "Driver", "Driver", "Driver"])
    const names = new Map(doc.traceEvents.filter((e) => e.ph === "M" && e.name === "thread_name").map((e) => [e.tid, e.args.name]))
    const sort = new Map(doc.traceEvents.filter((e) => e.ph === "M" && e.name === "thread_sort_index").map((e) => [e.tid, e.args.sort_index]))
    const [start, pool, wait] = xs.slice(1)
    assert.equal(names.get(start.tid), "worker-h-0", "worker start on the worker's thread")
    assert.equal(start.tid, xs[0].tid)
    assert.equal(names.get(pool.tid), "driver (main thread)")
    assert.equal(wait.tid, pool.tid)
    assert.equal(sort.get(pool.tid), 0, "the driver's thread sorts first")
    assert.ok(sort.get(start.tid) > 0)
    assert.equal(pool.dur, 0.5e6)
    assert.equal(pool.ts, 0)
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

describe("ChromeTrace slices and flows", () => {
  it("names Compute slices by function with category Compute, and keeps key and stage in args", () => {
    const compute = (key: string, extra: Record<string, unknown>, start: number, tid: string): TraceEvent => ({
      name: "Compute", phase: "X", timestamp: start + 0.01, duration: 0.01, process_id: "h", thread_id: tid,
      args: { key, dependencies: [], ...extra }
    })
    const t = toChromeTrace([
      compute("('lloyd-0123abcd', 0)", { name: "lloyd", stage: "KMeans.fitPredict" }, 1, "w0"),
      compute("('sum-0123abcd', 1)", {}, 1, "w1"), // no name: key_split of the key
      compute("finalize-0123abcd0123abcd0123abcd", {}, 1.02, "w0")
    ])
    const xs = t.traceEvents.filter((e) => e.ph === "X")
    assert.deepEqual(xs.map((e) => e.name), ["lloyd", "sum", "finalize"])
    for (const x of xs) assert.equal(x.cat, "Compute")
    assert.equal(xs[0]!.args!["key"], "('lloyd-0123abcd', 0)")
    assert.equal(xs[0]!.args!["stage"], "KMeans.fitPredict")
  })

  it("draws each dependency of dasf-small as an s/f flow pair bound inside the two slices on their own threads", async () => {
    const { events } = await loadEvents([join(data, "small-TracePlugin.msgpack")])
    const doc = JSON.parse(chromeTraceJson(toChromeTrace(events))) as { traceEvents: Array<any> }
    const xs = doc.traceEvents.filter((e) => e.ph === "X")
    assert.ok(xs.every((x) => x.cat === "Compute" && !x.name.startsWith("Compute")), "slices are named by function")
    assert.ok(new Set(xs.map((x) => x.name)).size > 1, "more than one label")
    const keys = new Set(xs.map((x) => x.args.key))
    // every edge whose two ends are in the trace
    let edges = 0
    for (const x of xs) for (const d of x.args.dependencies ?? []) if (keys.has(d)) edges++
    assert.ok(edges > 100, `${edges} edges`)
    const starts = doc.traceEvents.filter((e) => e.ph === "s")
    const ends = doc.traceEvents.filter((e) => e.ph === "f")
    assert.equal(starts.length, edges)
    assert.equal(ends.length, edges)
    assert.equal(new Set(starts.map((e) => e.id)).size, starts.length, "one id per flow")
    const endById = new Map(ends.map((e) => [e.id, e]))
    // the slice a flow event binds to: the one enclosing it on its own pid/tid
    const enclosing = (e: any) => xs.filter((x) => x.pid === e.pid && x.tid === e.tid && e.ts > x.ts && e.ts < x.ts + x.dur)
    for (const s of starts) {
      const f = endById.get(s.id)!
      // Perfetto keys a v1 flow by (id, cat, name): both halves must agree
      assert.deepEqual([s.cat, s.name, f.cat, f.name], ["dependency", "dependency", "dependency", "dependency"])
      assert.equal(f.bp, "e")
      const from = enclosing(s)
      const to = enclosing(f)
      assert.equal(from.length, 1, "s lies inside exactly one slice on its thread")
      assert.equal(to.length, 1, "f lies inside exactly one slice on its thread")
      assert.ok(to[0].args.dependencies.includes(from[0].args.key), "the arrow goes from a dependency to its dependent")
      assert.ok(from[0].ts + from[0].dur - s.ts <= 0.0011, "s just before the dependency's slice ends")
      assert.ok(f.ts - to[0].ts <= 0.0011, "f just after the dependent's slice starts")
    }
    assert.equal(toChromeTrace(events, { flows: false }).traceEvents.filter((e) => e.ph === "s").length, 0)
  })
})

import assert from "node:assert/strict"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import fc from "fast-check"
import { timeSummary } from "../../src/analysis/TimeSummary.ts"
import { renderHtml } from "../../src/report/Html.ts"
import { loadReportInputPromise } from "../../src/report/Report.ts"
import { fromEvents } from "../../src/report/ReportData.ts"
import { annotateDot, stageTable } from "../../src/report/Sections.ts"
import { fmtBytes, fmtNumber, fmtSeconds, unitOfColumn } from "../../src/report/TableHtml.ts"
import { timeBreakdown } from "../../src/report/TimeBreakdown.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const task = (w: string, start: number, end: number, stage: string | undefined, name = "f", extra: Record<string, unknown> = {}): TraceEvent => ({
  name: "Compute", timestamp: end, duration: end - start, phase: "X", process_id: "h", thread_id: w,
  args: {
    key: `('${name}-${start}-${w}', 0)`, name, size: 100, dependencies: [], cpu_time: 0,
    startstops: [
      { action: "gather", start, stop: start + (end - start) * 0.1 },
      { action: "compute", start: start + (end - start) * 0.1, stop: end - (end - start) * 0.1 },
      { action: "transfer", start: end - (end - start) * 0.1, stop: end }
    ],
    ...(stage === undefined ? {} : { stage }),
    ...extra
  }
})
const driver = (thread: string, activity: string, start: number, end: number, compute: number): TraceEvent => ({
  name: "Driver", timestamp: end, duration: end - start, phase: "X", process_id: "h", thread_id: thread,
  args: { key: `driver-${compute}-${activity}-${start}`, activity, compute, dependencies: [], tasks: 0 }
})

// two computes: stage A (0..4) then stage B (4..10), two workers
const run: Array<TraceEvent> = [
  driver("driver", "setup", 0, 1, 1),
  driver("w0", "worker start", 0.5, 1, 1),
  driver("driver", "wait", 1, 4, 1),
  task("w0", 1, 3, "A"),
  task("w1", 1, 2, "A"),
  driver("driver", "between computes", 4, 5, 2),
  driver("driver", "wait", 5, 10, 2),
  task("w0", 5, 10, "B", "g"),
  task("w1", 5, 7, "B", "g")
]

describe("TimeBreakdown", () => {
  it("splits each stage's windows × workers into compute, transfer, driver and idle", () => {
    const b = timeBreakdown(fromEvents(run))
    assert.equal(b.wall, 10)
    // the start-up (before the first task) is its own row, never stage A's
    assert.deepEqual(b.stages.map((s) => [s.name, s.tasks, s.wall]), [["(start-up)", 0, 1], ["A", 2, 3], ["B", 2, 6]])
    const [up, a, bb] = b.stages
    const close = (x: number, y: number) => assert.ok(Math.abs(x - y) < 1e-9, `${x} vs ${y}`)
    // start-up: the driver's setup 0..1 is driver time on both workers (w0's start-up inside it)
    close(up!.split.driver, 2)
    close(up!.split.idle, 0)
    close(up!.driverOwn, 1)
    // A: w0 busy 2 (0.4 transfer), w1 busy 1 (0.2); the rest idle
    close(a!.split.compute, 2.4)
    close(a!.split.transfer, 0.6)
    close(a!.split.driver, 0)
    close(a!.split.idle, 6 - 3)
    // B: between computes 4..5 is driver time for both workers
    close(bb!.split.compute + bb!.split.transfer, 7)
    close(bb!.split.driver, 2)
    close(bb!.split.idle, 12 - 7 - 2)
    close(a!.driverOwn, 0)
    close(bb!.driverOwn, 1)
    assert.deepEqual(b.functions.map((f) => f.name), ["g", "f"])
    close(b.runLine.tasks, 2 + 5)
    close(b.runLine.driver, 2)
    close(b.runLine.idle, 1)
  })

  it("parts add up to wall × workers per stage and for the run; each worker's line adds up to the wall time", () => {
    const ev = fc.record({ w: fc.constantFrom("w0", "w1", "w2"), a: fc.double({ min: 0, max: 50, noNaN: true }), d: fc.double({ min: 0, max: 5, noNaN: true }), s: fc.constantFrom("A", "B", undefined) })
    fc.assert(fc.property(fc.array(ev, { minLength: 1, maxLength: 40 }), fc.boolean(), (xs, withDriver) => {
      const events = xs.map((x) => task(x.w, x.a, x.a + x.d, x.s))
      if (withDriver) events.push(driver("driver", "setup", 0, 2, 1), driver("driver", "wait", 2, 60, 1))
      const b = timeBreakdown(fromEvents(events))
      const sum = (s: { compute: number; transfer: number; driver: number; idle: number }) => s.compute + s.transfer + s.driver + s.idle
      for (const s of b.stages) assert.ok(Math.abs(sum(s.split) - s.wall * b.workers) < 1e-6 * (1 + s.wall), `${s.name}`)
      assert.ok(Math.abs(sum(b.run) - b.wall * b.workers) < 1e-6 * (1 + b.wall))
      assert.ok(Math.abs(b.stages.reduce((a, s) => a + s.wall, 0) - b.wall) < 1e-6 * (1 + b.wall))
      for (const w of b.perWorker) assert.ok(Math.abs(w.tasks + w.driver + w.idle - b.wall) < 1e-6 * (1 + b.wall))
      for (const s of b.stages) for (const v of Object.values(s.split)) assert.ok(v >= -1e-9)
    }), { numRuns: 150 })
  })

  it("agrees with analysis/TimeSummary per worker (tasks, driver) on a loaded trace", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-tb-"))
    const file = join(dir, "t-TracePlugin-h.msgpack")
    await writeFile(file, encodeRecords(run))
    const { data, tables } = await loadReportInputPromise([file])
    assert.deepEqual(data.stages, ["A", "B"], "stages filled from the events where Load has none")
    assert.ok(data.tasks.gather.every((g) => g > 0))
    const b = timeBreakdown(data)
    const ts = timeSummary(tables)
    const rows = ts.toArray().map((r: any) => ({ worker: r["Worker"], tasks: r["Tasks (s)"], driver: r["Driver (s)"] }))
    for (const w of b.perWorker) {
      const r = rows.find((x) => x.worker === w.name)!
      assert.ok(Math.abs(r.tasks - w.tasks) < 1e-9 && Math.abs(r.driver - w.driver) < 1e-9, `${w.name}: ${JSON.stringify(r)} vs ${JSON.stringify(w)}`)
    }
    const runRow = rows.find((x) => x.worker === "(run)")!
    assert.ok(Math.abs(runRow.tasks - b.runLine.tasks) < 1e-9 && Math.abs(runRow.driver - b.runLine.driver) < 1e-9)
  })

  it("a trace without stages or driver events has one row and says what is absent", async () => {
    const events = [task("w0", 0, 1, undefined), task("w1", 0.5, 2, undefined)].map((e) => ({ ...e, args: { key: (e.args as any).key, name: "f" } }))
    const d = fromEvents(events)
    const b = timeBreakdown(d)
    assert.deepEqual(b.stages.map((s) => s.name), ["(no stage)"])
    assert.equal(b.hasDriver, false)
    assert.equal(b.run.driver, 0)
    const html = await renderHtml(d)
    assert.ok(html.includes("no Driver events in these databases"))
    assert.ok(html.includes("tasks carry no stage"))
    assert.ok(html.includes("tasks carry no gather / transfer phases"))
    assert.ok(html.includes("no Pipeline Graph event"))
  })
})

describe("report sections", () => {
  it("annotates the stage DAG with each stage's time, escaping stage names for DOT", () => {
    const b = timeBreakdown(fromEvents(run))
    const dot = annotateDot(`digraph p {\n  "A";\n  "B";\n  "A" -> "B";\n}`, b.stages, b.wall)
    assert.match(dot, /"A" \[label="A\\n3 s \(30 % of wall\)\\n2 tasks, 3 s task time"/)
    assert.match(dot, /"B" \[label="B\\n6 s \(60 % of wall\)/)
    const evil = timeBreakdown(fromEvents([task("w0", 0, 1, `x" URL="javascript:alert(1)`)]))
    const out = annotateDot(`digraph p { "x\\" URL=\\"javascript:alert(1)"; }`, evil.stages, evil.wall)
    assert.ok(!out.includes(`label="x" URL`), "a quote in a stage name cannot end the label")
  })

  it("the per-stage table has a caption and units", () => {
    const t = stageTable(timeBreakdown(fromEvents(run)))
    assert.ok(t.description !== undefined && t.description.length > 20)
    assert.equal(t.columns.length, t.units!.length)
    assert.deepEqual(t.rows.map((r) => r[0]), ["(start-up)", "A", "B"])
  })

  it("formats numbers for people", () => {
    assert.equal(fmtSeconds(1.23456), "1.23 s")
    assert.equal(fmtSeconds(0.0456), "45.6 ms")
    assert.equal(fmtSeconds(0.0000123), "12.3 µs")
    assert.equal(fmtBytes(1_600_000), "1.53 MiB")
    assert.equal(fmtBytes(512), "512 B")
    assert.equal(fmtNumber(0.4567, "share"), "45.7 %")
    assert.equal(fmtNumber(782719936, undefined), "782,719,936")
    assert.equal(fmtNumber(0.00000643730, undefined), "6.437e-6")
    assert.equal(unitOfColumn("Duration (s)"), "s")
    assert.equal(unitOfColumn("Bytes In"), "bytes")
    assert.equal(unitOfColumn("Mean Data Size (MB)"), undefined)
    assert.equal(unitOfColumn("Utilization (%)"), "%")
  })

  it("keeps hostile stage names, driver fields and keys inert", async () => {
    const evil = `</script><img src=x onerror=alert(1)>"'`
    const events: Array<TraceEvent> = [
      { ...task("w0", 0, 1, evil, evil), thread_id: "w0" },
      { ...driver("driver", evil, 1, 2, 1), args: { key: evil, activity: evil, compute: 1, dependencies: [], tasks: 0 } },
      { name: "Pipeline Graph", timestamp: 0, phase: "I", scope: "g", process_id: "h", thread_id: "main", args: { pipeline: "p", dot: `digraph p { "${evil.replace(/"/g, "\\\"")}"; }` } }
    ]
    const html = await renderHtml(fromEvents(events))
    assert.ok(!html.includes("<img src=x"), "no markup from the trace")
    assert.equal(html.split("</script>").length - 1, html.split("<script").length - 1)
    assert.ok(html.includes("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&quot;&#39;"), "the stage name shown, escaped")
  })
})

/**
 * Issue 31, the report's parts:
 *
 * - item 2: one definition of a stage's time (`analysis/StageSummary.ts`): the report's
 *   per-stage table equals `tessera analyze -a stage_summary` on the demo's trace and on
 *   a pipeline whose first stage reads a `.npy` file; the start-up is its own row; the
 *   stage graph is shaded by the same walls; the header counts the pipeline graph's stages.
 * - item 9 (report side): the report of a failed run (a hand-built trace with an erred
 *   `Compute` event) names the failed task, its stage and its error, as text; the erred
 *   task is flagged for the task stream and its stage outlined in the graph.
 * - item 14: every node of the stage graph (Persist's too) has numbers and the same font.
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import fc from "fast-check"
import { noStage, stagesOfDot, stageSummary, stageTimes, startUp } from "../../src/analysis/StageSummary.ts"
import { renderDotPromise } from "../../src/report/Graphviz.ts"
import { renderHtml } from "../../src/report/Html.ts"
import { loadReportInputPromise, writeReportPromise } from "../../src/report/Report.ts"
import { fromEvents } from "../../src/report/ReportData.ts"
import { annotateDot, stageTable } from "../../src/report/Sections.ts"
import { timeBreakdown } from "../../src/report/TimeBreakdown.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { bytesOf, npy } from "../dsl/fixtures/files.ts"

const run = promisify(execFile)
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/npy-pipeline.ts", import.meta.url))

const close = (a: number | null, b: number | null, what: string) => {
  if (a === null || b === null || Number.isNaN(a) || Number.isNaN(b)) return assert.equal(a === null || Number.isNaN(a), b === null || Number.isNaN(b), what)
  assert.ok(Math.abs(a - b) <= 1e-9 * (1 + Math.abs(a)), `${what}: ${a} vs ${b}`)
}

/** The report's per-stage table and stage_summary, row by row, column by column. */
const assertSameStages = async (files: ReadonlyArray<string>) => {
  const { data, tables } = await loadReportInputPromise(files)
  const b = timeBreakdown(data)
  const report = stageTable(b)
  const summary = stageSummary(tables).toArray().map((r) => r.toJSON() as Record<string, number | string | null>)
  const col = (name: string) => report.columns.indexOf(name)
  assert.deepEqual(report.rows.map((r) => r[0]), summary.map((s) => s["Stage"]), "the same rows, in the same order")
  report.rows.forEach((r, i) => {
    const s = summary[i]!
    const name = String(s["Stage"])
    assert.equal(r[col("tasks")], s["Tasks"], `${name} tasks`)
    close(r[col("wall (s)")] as number, s["Wall (s)"] as number, `${name} wall`)
    close(r[col("share of wall time")] as number, (s["Share of run (%)"] as number) / 100, `${name} share`)
    close(r[col("task time (s)")] as number, s["Task time (s)"] as number, `${name} task time`)
    close(r[col("compute (s)")] as number, s["Compute (s)"] as number, `${name} compute`)
    close(r[col("transfer (s)")] as number, s["Transfer (s)"] as number, `${name} transfer`)
    close(r[col("driver (s)")] as number, s["Driver (s)"] as number, `${name} driver`)
    close(r[col("bytes in")] as number, s["Bytes In"] as number, `${name} bytes in`)
    close(r[col("bytes out")] as number, s["Bytes Out"] as number, `${name} bytes out`)
  })
  // the rows cover the run: walls add up to the report's wall time
  const walls = summary.reduce((a, s) => a + (s["Wall (s)"] as number), 0)
  close(walls, data.wall, "the rows' walls add up to the run's")
  // the start-up is its own row, and no user stage's window starts before the first task
  const firstTask = Math.min(...data.tasks.start)
  const up = summary.find((s) => s["Stage"] === startUp)
  assert.ok(up !== undefined, "a start-up row")
  close(up["Wall (s)"] as number, firstTask, "start-up = run start to first task")
  for (const s of summary) {
    if (s["Stage"] === startUp || (s["Tasks"] as number) === 0) continue
    assert.ok((s["Start (s from begin)"] as number) >= firstTask - 1e-9, `${s["Stage"]} starts at or after the first task`)
  }
  // the stage graph is shaded and labelled by the same walls
  assert.ok(data.dot !== undefined)
  const dot = annotateDot(data.dot, b.stages, b.wall)
  for (const s of b.stages) {
    if (s.row.kind !== "stage") continue
    assert.ok(dot.includes(`(${((s.wall / b.wall) * 100).toFixed(0)} % of wall)`), `${s.name}'s node shows its share`)
  }
  return { data, summary, dot }
}

describe("issue 31 item 2: one definition of a stage's time", () => {
  let demo: Array<string> = []
  let npyRun: Array<string> = []
  before(async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-31-2-"))
    await run(process.execPath, [main, "demo", "--samples", "8000", "--workers", "2", "--profile", "d", "--no-sample", "--log-level", "none"], { cwd: dir })
    demo = (await readdir(dir)).filter((f) => f.startsWith("d-") && f.endsWith(".msgpack")).map((f) => join(dir, f))
    // a .npy file: 12,000 rows × 2 columns in three blobs
    const n = 12_000
    const x = new Float64Array(n * 2)
    for (let i = 0; i < n; i++) (x[2 * i] = (i % 3) * 5 + Math.sin(i), x[2 * i + 1] = (i % 3) * -4 + Math.cos(i))
    const npyFile = join(dir, "X.npy")
    await writeFile(npyFile, npy("<f8", [n, 2], bytesOf(x)))
    await run(process.execPath, [main, "run", fixture, "--workers", "2", "--profile", "f", "--no-sample", "--log-level", "none"], {
      cwd: dir,
      env: { ...process.env, TESSERA_TEST_NPY: npyFile }
    })
    npyRun = (await readdir(dir)).filter((f) => f.startsWith("f-") && f.endsWith(".msgpack")).map((f) => join(dir, f))
  })

  it("issue 31 item 2: the report's per-stage table equals stage_summary on the demo trace", async () => {
    assert.ok(demo.length >= 2, `${demo}`)
    const { summary } = await assertSameStages(demo)
    const names = summary.map((s) => s["Stage"])
    for (const s of ["Normalize.transform", "KMeans.fitPredict", "SOM.fitPredict", "Persist.kmeans", "Persist.som"]) assert.ok(names.includes(s), `${s} has a row`)
  })

  it("issue 31 item 2: the report's per-stage table equals stage_summary on a pipeline whose first stage reads a .npy file", async () => {
    assert.ok(npyRun.length >= 2, `${npyRun}`)
    const { summary, data } = await assertSameStages(npyRun)
    // the first user stage is charged its own windows, not the pool's start-up
    const first = summary.find((s) => s["Stage"] === "Normalize.transform")!
    assert.ok(first !== undefined)
    assert.ok((first["Wall (s)"] as number) < data.wall - (summary[0]!["Wall (s)"] as number) + 1e-9)
    assert.ok(data.tasks.ioBytes.some((b) => b > 0), "a task read the file")
  })

  it("issue 31 item 2: the header's stage count equals the pipeline graph's", async () => {
    const { data } = await loadReportInputPromise(demo)
    const graph = stagesOfDot(data.dot!)
    assert.deepEqual(graph, ["Normalize.transform", "KMeans.fitPredict", "SOM.fitPredict", "Persist.kmeans", "Persist.som"])
    const html = await renderHtml(data)
    const header = html.slice(html.indexOf("<header>"), html.indexOf("</header>"))
    assert.match(header, new RegExp(`in \\d+ functions, ${graph.length} stages<`))
  })

  it("issue 31 item 2: rows add up to the run, start-up is never a stage's, and the report agrees with stage_summary's rules (property)", () => {
    const seg = (start: number, end: number, compute: number, activity: string) => ({ start, end, compute, activity })
    fc.assert(fc.property(
      fc.array(fc.record({ a: fc.double({ min: 0.5, max: 40, noNaN: true }), d: fc.double({ min: 0, max: 5, noNaN: true }), s: fc.integer({ min: -1, max: 2 }) }), { minLength: 1, maxLength: 30 }),
      fc.boolean(),
      (xs, withDriver) => {
        const segments = withDriver ? [seg(0, 0.5, 1, "pool start"), seg(0.5, 20, 1, "wait"), seg(20, 21, 2, "setup"), seg(21, 50, 2, "wait")] : []
        const names = ["A", "B", "C"]
        const st = stageTimes({
          start: xs.map((x) => x.a), end: xs.map((x) => x.a + x.d), stage: xs.map((x) => x.s), names,
          gather: xs.map(() => NaN), transfer: xs.map(() => NaN), size: xs.map(() => 1), bytesIn: xs.map(() => 0), erred: xs.map(() => 0),
          graph: ["A", "B", "C", "D"], segments, runStart: 0, runEnd: 50
        })
        const first = Math.min(...xs.map((x) => x.a))
        close(st.rows.reduce((a, r) => a + r.wall, 0), 50, "walls add up to the run")
        close(st.rows.reduce((a, r) => a + r.share, 0), 1, "shares add up to 1")
        const up = st.rows.find((r) => r.stage === startUp)!
        close(up.wall, first, "start-up ends at the first task")
        assert.equal(up.tasks, 0)
        assert.equal(st.rows.reduce((a, r) => a + r.tasks, 0), xs.length, "every task in one row")
        for (let k = 0; k < st.lo.length; k++) {
          if (st.rows[st.row[k]!]!.kind !== "start-up") assert.ok(st.lo[k]! >= first - 1e-12, "a stage's window starts at or after the first task")
          if (k > 0) assert.ok(st.lo[k]! >= st.hi[k - 1]! - 1e-12, "windows are disjoint and in order")
        }
        assert.ok(st.rows.some((r) => r.stage === "D" && r.tasks === 0 && r.wall === 0), "a graph stage without tasks has a row")
        if (xs.some((x) => x.s < 0)) assert.equal(st.rows.at(-1)!.stage, noStage)
      }
    ), { numRuns: 200 })
  })
})

// a hand-built trace of a failed run: stage A ran, then stage B's task erred
const task = (w: string, start: number, end: number, stage: string, name: string, extra: Record<string, unknown> = {}): TraceEvent => ({
  name: "Compute", timestamp: end, duration: end - start, phase: "X", process_id: "h", thread_id: w,
  args: { key: `('${name}-1', ${start})`, name, state: "memory", size: 8, dependencies: [], stage, ...extra }
})
const driver = (activity: string, start: number, end: number, compute: number): TraceEvent => ({
  name: "Driver", timestamp: end, duration: end - start, phase: "X", process_id: "h", thread_id: "driver",
  args: { key: `driver-${compute}-${activity}`, activity, compute, dependencies: [], tasks: 0 }
})
const evil = `</code><img src=x onerror=alert(1)>"'&`
const failedRun = (erred: TraceEvent): Array<TraceEvent> => [
  { name: "Pipeline Graph", timestamp: 100, phase: "I", scope: "g", process_id: "h", thread_id: "main", args: { pipeline: "p", dot: `digraph "p" {\n  "A";\n  "B";\n  "A" -> "B" [label="X"];\n}` } },
  driver("setup", 100, 100.5, 1),
  driver("wait", 100.5, 102, 1),
  task("w0", 101, 101.5, "A", "load"),
  task("w1", 101, 101.8, "A", "load"),
  driver("wait", 102, 103, 2),
  task("w0", 102.1, 102.4, "B", "signedLog"),
  erred
]

describe("issue 31 item 9: the report of a failed run", () => {
  const erredWith = (extra: Record<string, unknown>, duration: number | undefined = 0.2): TraceEvent => {
    const e = task("w1", 102.1, 102.1 + (duration ?? 0), "B", "signedLog", { state: "erred", error: `kernel signedLog threw: ${evil} at kernels.ts:12:7`, traceback: `Error: boom\n    at signedLog (file:///x/kernels.ts:12:7)\n${evil}`, ...extra })
    return duration === undefined ? ({ ...e, duration: undefined } as unknown as TraceEvent) : e
  }

  it("issue 31 item 9: names the failed task, its stage and its error (inert text) from a written trace", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-31-9-"))
    const file = join(dir, "fail-TracePlugin-h.msgpack")
    await writeFile(file, encodeRecords(failedRun(erredWith({}))))
    const out = join(dir, "fail.html")
    const { data } = await writeReportPromise([file], out)
    assert.equal(data.failures.length, 1)
    const f = data.failures[0]!
    assert.equal(f.stage, "B")
    assert.equal(f.function, "signedLog")
    assert.match(f.error, /kernel signedLog threw/)
    assert.match(f.traceback, /kernels\.ts:12:7/)
    assert.equal(data.tasks.erred.reduce((a, x) => a + x, 0), 1)
    const html = await readFile(out, "utf8")
    assert.ok(!html.includes("<img src=x"), "no markup from the trace")
    assert.ok(html.includes('<section id="failure">'), "a failure section")
    const banner = html.slice(html.indexOf('id="failure-banner"'), html.indexOf("</section>", html.indexOf('id="failure-banner"')))
    assert.ok(banner.includes("The run failed."))
    assert.ok(banner.includes(f.key.replace(/'/g, "&#39;")), "the failed task's key")
    assert.ok(banner.includes("stage <b>B</b>"), "its stage")
    assert.ok(banner.includes("kernel signedLog threw: &lt;/code&gt;&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp; at kernels.ts:12:7"), "its error, escaped")
    assert.ok(banner.includes("at signedLog (file:///x/kernels.ts:12:7)"), "its stack, folded")
    // the header says so, the stage table counts it, the graph outlines its stage
    assert.match(html, /<dt>status<\/dt><dd class="failed">/)
    const b = timeBreakdown(data)
    const t = stageTable(b)
    assert.ok(t.columns.includes("erred"))
    assert.equal(t.rows.find((r) => r[0] === "B")![t.columns.indexOf("erred")], 1)
    const dot = annotateDot(data.dot!, b.stages, b.wall)
    assert.match(dot, /"B" \[label="B\\n[^"]*\\nFAILED: 1 erred task", [^\]]*color="#c00000"/)
    assert.doesNotMatch(dot, /"A" \[label="[^"]*FAILED/)
    // the payload flags the erred task for the stream, with its error as data
    const marker = '<script id="tessera-data" type="application/json">'
    const at = html.indexOf(marker) + marker.length
    const payload = JSON.parse(html.slice(at, html.indexOf("</script>", at)))
    assert.deepEqual(payload.tasks.erred, Array.from(data.tasks.erred))
    assert.equal(payload.tasks.erred.filter((x: number) => x === 1).length, 1)
    assert.equal(payload.failures[0][1], f.error)
  })

  it("issue 31 item 9: tolerates an erred task without a duration, or without an error message", async () => {
    for (const e of [erredWith({}, undefined), erredWith({ error: undefined, traceback: undefined }), erredWith({ error: undefined, exception: "ValueError: bad" })]) {
      const data = fromEvents(failedRun(e))
      assert.equal(data.failures.length, 1)
      for (let i = 0; i < data.tasks.start.length; i++) assert.ok(Number.isFinite(data.tasks.start[i]!) && data.tasks.start[i]! <= data.tasks.end[i]!)
      const html = await renderHtml(data)
      assert.ok(html.includes("The run failed."))
      const st = timeBreakdown(data).stages
      assert.equal(st.find((s) => s.name === "B")!.row.erred, 1)
    }
    assert.equal(fromEvents(failedRun(erredWith({ error: undefined, exception: "ValueError: bad" }))).failures[0]!.error, "ValueError: bad")
    const none = await renderHtml(fromEvents(failedRun(erredWith({ error: undefined, traceback: undefined }))))
    assert.ok(none.includes("the trace records no error message"))
  })

  it("issue 31 item 9: a run that did not fail has no failure section", async () => {
    const ok = failedRun(task("w1", 102.1, 102.3, "B", "signedLog"))
    const data = fromEvents(ok)
    assert.equal(data.failures.length, 0)
    const html = await renderHtml(data)
    assert.ok(!html.includes('<section id="failure">'))
    assert.ok(!stageTable(timeBreakdown(data)).columns.includes("erred"))
  })
})

describe("issue 31 item 14: the stage graph's nodes", () => {
  it("issue 31 item 14: every node (a Persist stage without tasks too) has numbers and the report's font", async () => {
    const events: Array<TraceEvent> = [
      { name: "Pipeline Graph", timestamp: 0, phase: "I", scope: "g", process_id: "h", thread_id: "main", args: { pipeline: "p", dot: `digraph "p" {\n  rankdir=LR; node [shape=box, style=rounded];\n  "KMeans.fitPredict";\n  "Persist.kmeans";\n  "KMeans.fitPredict" -> "Persist.kmeans" [label="X"];\n}` } },
      task("w0", 0, 1, "KMeans.fitPredict", "lloyd")
    ]
    const data = fromEvents(events)
    const b = timeBreakdown(data)
    const dot = annotateDot(data.dot!, b.stages, b.wall)
    assert.match(dot, /"Persist\.kmeans" \[label="Persist\.kmeans\\n0 s \(0 % of wall\)\\n0 tasks, 0 s task time"/)
    const svg = await renderDotPromise(dot)
    assert.ok(!/font-family="Times/.test(svg), "no node or edge label in Graphviz's default serif font")
    const fonts = [...svg.matchAll(/font-family="([^"]+)"/g)].map((m) => m[1])
    assert.ok(fonts.length >= 7, `${fonts.length} labels`)
    assert.deepEqual([...new Set(fonts)], ["Helvetica,sans-Serif"])
  })
})

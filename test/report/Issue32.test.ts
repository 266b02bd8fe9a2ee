/**
 * Issue 32, the report's parts (the page in a browser: test/e2e/issue32.test.ts):
 *
 * - item 9: a trace of 20,000 distinct function names makes a report (Vega-Lite's
 *   expression parser overflowed its stack on the per-function bars' sort, one nested
 *   expression per function): the bars are the 39 functions with the most task time and
 *   one "others (K functions, X s)"; stages likewise; the task stream colours 59
 *   functions and "(other functions)"; no spec names the 20,000.
 * - item 10: function and stage names with U+2028 / U+2029 (and `</script`, `<!--`):
 *   the charts' specs compile and run in Vega, and no script element of the page holds
 *   them raw.
 * - item 12: a task whose duration is 1e305 s or infinite is left out and counted (the
 *   page says "N tasks with non-finite or absurd durations … were left out"), and the
 *   page's data is JSON without Infinity or NaN; a dependency cycle is named (its keys)
 *   by `analyze -a critical_path` and in the report's critical path caption.
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { mkdtemp, readFile, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import * as vega from "vega"
import { criticalPathSteps } from "../../src/analysis/CriticalPath.ts"
import { loadPromise } from "../../src/analysis/Load.ts"
import { maxStreamColours, otherFunctionsLabel, taskStreamSpec, toVega } from "../../src/report/Charts.ts"
import { fromTables } from "../../src/report/FromTables.ts"
import { renderHtml, scriptJson } from "../../src/report/Html.ts"
import { writeReportPromise } from "../../src/report/Report.ts"
import { fromEvents } from "../../src/report/ReportData.ts"
import { analysisTables } from "../../src/report/ReportTables.ts"
import { timeBreakdown } from "../../src/report/TimeBreakdown.ts"
import { functionTimeSpec, maxTimeBars, stageTimeSpec } from "../../src/report/TimeCharts.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { dependent, manyFunctions, task } from "./fixtures/issue32.ts"

const run = promisify(execFile)
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))


const writeTrace = async (prefix: string, events: ReadonlyArray<TraceEvent>) => {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  const db = join(dir, "trace.msgpack")
  await writeFile(db, encodeRecords(events))
  return { dir, db }
}

// the page's script elements' text, the Vega runtime (the first) left out, and its data
const scripts = (html: string) => [...html.matchAll(/<script[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]!).slice(1)
const pageData = (html: string) => JSON.parse(/<script id="tessera-data" type="application\/json">([\s\S]*?)<\/script>/.exec(html)![1]!)

// runs a compiled spec headless, as the page does (its expressions parsed, its data flowed)
const runs = async (spec: vega.Spec) => {
  const view = new vega.View(vega.parse(spec), { renderer: "none" })
  await view.runAsync()
  view.finalize()
}

describe("issue 32: the report takes any names, counts and numbers", () => {
  it("issue 32 item 9: 20,000 distinct function names make a report: top functions plus one \"others\" bar, no spec per function", { timeout: 120_000 }, async () => {
    const n = 20_000
    // fn_0 runs longest, fn_19999 shortest: the top functions are known
    const events = manyFunctions(n)
    const { dir, db } = await writeTrace("tessera-i32-9-", events)
    const out = join(dir, "report.html")
    await writeReportPromise([db], out)
    const html = await readFile(out, "utf8")
    const data = pageData(html)
    assert.equal(data.functions.length, n, "every function's name is in the data (tooltips name them)")
    assert.equal(data.fnTop.length, maxStreamColours - 1, "the task stream colours the top functions")
    // the views: no function past the top ones is named in any spec
    const views = /var specs = (\[[\s\S]*?\]);\nvar WALL/.exec(html)![1]!
    const named = new Set(views.match(/fn_\d+/g) ?? [])
    assert.ok(named.size <= maxStreamColours, `${named.size} function names in the specs`)
    assert.ok(named.has("fn_0") && !named.has("fn_19999"), "the longest-running function is named, the shortest is not")
    assert.ok(views.includes(`others (${(n - maxTimeBars + 1).toLocaleString("en-US")} functions, `), "one bar for the other functions")
    assert.ok(views.includes("others (61 stages, "), "one bar for the other stages")
    assert.ok(views.includes(otherFunctionsLabel))
    assert.ok(!views.includes("indexof("), "no sort expression over a list of names")

    // the model's specs compile and run headless
    const model = fromEvents(events)
    const b = timeBreakdown(model)
    const fnSpec = toVega(functionTimeSpec(b))
    const rows = (fnSpec.data as Array<{ values?: Array<{ row: string }> }>).flatMap((d) => d.values ?? [])
    assert.equal(new Set(rows.map((r) => r.row)).size, maxTimeBars)
    await runs(fnSpec)
    await runs(toVega(stageTimeSpec(b)))
    await runs(toVega(taskStreamSpec(model)))
  })

  it("issue 32 item 10: U+2028 / U+2029, </script and <!-- in function and stage names: specs run in Vega, script elements hold none of them raw", { timeout: 60_000 }, async () => {
    const names = ["line\u2028sep", "para\u2029sep", "end</script><script>alert(1)</script><!--"]
    const events = Array.from({ length: 30 }, (_, i) => task(i, names[i % 3]!, 0.0005, { stage: `stage\u2028${names[i % 3]}` }))
    const model = fromEvents(events)
    const b = timeBreakdown(model)
    for (const spec of [functionTimeSpec(b), stageTimeSpec(b), taskStreamSpec(model)]) await runs(toVega(spec))
    const html = await renderHtml(model)
    for (const s of scripts(html)) {
      assert.ok(!s.includes("\u2028") && !s.includes("\u2029"), "no raw U+2028 / U+2029 in a script element")
      assert.ok(!/<\/script|<!--/i.test(s), "no </script or <!-- inside a script element")
    }
    assert.deepEqual(pageData(html).functions, names, "the names come back whole")
    assert.equal(JSON.parse(scriptJson(names)).join(), names.join())
    assert.equal(scriptJson("\u2028\u2029</script><!--"), "\"\\u2028\\u2029\\u003c/script>\\u003c!--\"")
  })

  it("issue 32 item 12: tasks with a 1e305 s (or any ≥ 1e9 s, or infinite) duration are left out and counted; the page's data has no Infinity or NaN", { timeout: 60_000 }, async () => {
    const events = [
      ...Array.from({ length: 20 }, (_, i) => task(i, "ok", 0.01)),
      // (a non-finite timestamp or duration is refused by the trace format: TraceFormatError)
      task(20, "huge", 1e305),
      task(21, "huge", 1e303),
      { ...task(22, "huge", 0.01), duration: 2e9 }
    ]
    const { dir, db } = await writeTrace("tessera-i32-12-", events)
    const data = fromTables(await loadPromise([db]))
    assert.equal(data.leftOutTasks, 3)
    assert.equal(data.tasks.start.length, 20)
    assert.ok(data.wall > 0 && data.wall < 1, `wall ${data.wall} s: the usable tasks' span`)
    assert.ok(!data.functions.includes("huge"), "a function only left-out tasks ran is not listed")
    assert.equal(fromEvents(events).leftOutTasks, 3, "the same from events")
    assert.equal(fromEvents([...events, { ...task(23, "inf", 0.01), duration: Infinity }]).leftOutTasks, 4, "and an infinite duration (events in memory)")
    const out = join(dir, "report.html")
    await writeReportPromise([db], out)
    const html = await readFile(out, "utf8")
    const json = /<script id="tessera-data" type="application\/json">([\s\S]*?)<\/script>/.exec(html)![1]!
    assert.ok(!/Infinity|NaN/.test(json), "JSON has no Infinity or NaN")
    assert.equal(pageData(html).tasks.start.length, 20)
    assert.match(html, /<p class="warning" id="left-out">3 tasks with non-finite or absurd durations \(not finite, or 1e\+9 s or longer\) were left out<\/p>/)
    // the command line says so too, on stderr
    const cli = await run(process.execPath, [main, "report", "-d", db, "-o", join(dir, "cli.html")])
    assert.ok(cli.stderr.includes("report: warning: 3 tasks with non-finite or absurd durations (not finite, or 1e+9 s or longer) were left out"), cli.stderr)
  })

  it("issue 32 item 12: a dependency cycle is named by analyze -a critical_path (exit 0, a warning) and in the report's caption", { timeout: 90_000 }, async () => {
    // x, then a -> b -> c -> a (each depends on the one before), and d after c
    const { dir, db } = await writeTrace("tessera-i32-cycle-", [
      dependent("x-1", [], 0.7), dependent("a-1", ["c-1", "x-1"], 1), dependent("b-1", ["a-1"], 2), dependent("c-1", ["b-1"], 3), dependent("d-1", ["c-1"], 4)
    ])
    const tables = await loadPromise([db])
    const path = criticalPathSteps(tables)
    assert.deepEqual(path.cycle, { _tag: "DependencyCycle", keys: ["a-1", "b-1", "c-1"], tasks: 4, driverSegments: 0 })
    assert.equal(path.steps.length, 1, "the path over what is not on or after the cycle: x")
    const warning = "dependency cycle: a-1 -> b-1 -> c-1 -> a-1; 4 tasks on or after a cycle were left out of the critical path"
    const cli = await run(process.execPath, [main, "analyze", "-d", db, "-a", "critical_path"])
    assert.ok(cli.stdout.includes(`warning: ${warning}`), cli.stdout)
    const cp = analysisTables(tables).find((t) => t.title === "Critical path")!
    assert.equal(cp.warning, warning)
    assert.ok(!(cp.description ?? "").includes("warning"), "the caption keeps its summary; the warning is its own line")
    const out = join(dir, "report.html")
    await writeReportPromise([db], out)
    assert.ok((await readFile(out, "utf8")).includes(`<p class="warning">${warning.replaceAll(">", "&gt;")}</p>`))
  })
})

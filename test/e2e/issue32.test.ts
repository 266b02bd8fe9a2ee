/**
 * Issue 32 in a real headless browser (Debian's chromium driven by playwright-core), the
 * report pages of hand-built traces:
 *
 * - item 9: 20,000 distinct function names: the page loads with no console error, the
 *   task stream draws, "Per function" shows the top functions and one "others" bar, the
 *   stream's legend has "(other functions)" (screenshots report-i32-many-*.png).
 * - item 10: U+2028 / U+2029 (and `</script`, `<!--`) in function and stage names: the
 *   page loads, the task stream has one bar per task, and the names are text in the
 *   tables and the tooltip (report-i32-separators-*.png).
 * - item 12: a task of 1e305 s: the page loads, says that one task was left out, draws
 *   the others; a dependency cycle: the critical path's warning names its keys
 *   (report-i32-absurd-*.png).
 *
 * Skips with a message where /usr/bin/chromium is absent (`.ci/run` installs it).
 */
import assert from "node:assert/strict"
import { existsSync } from "node:fs"
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { pathToFileURL } from "node:url"
import { chromium } from "playwright-core"
import type { Browser, Page } from "playwright-core"
import { writeReportPromise } from "../../src/report/Report.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { dependent, manyFunctions, task } from "../report/fixtures/issue32.ts"

const CHROMIUM = "/usr/bin/chromium"
const hasChromium = existsSync(CHROMIUM)
const skip = hasChromium ? false : `${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium; .ci/run does) to run the browser tests`
if (!hasChromium) console.log(`# skipping browser tests: ${skip}`)


// the trace written to a new folder, its report opened; console errors, page errors and
// dialogs recorded
const openReport = async (browser: Browser, prefix: string, events: ReadonlyArray<TraceEvent>) => {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  await writeFile(join(dir, "trace.msgpack"), encodeRecords(events))
  const file = join(dir, "report.html")
  await writeReportPromise([join(dir, "trace.msgpack")], file)
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  const errors: Array<string> = []
  const dialogs: Array<string> = []
  page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())))
  page.on("pageerror", (e) => errors.push(String(e)))
  page.on("dialog", (d) => (dialogs.push(d.message()), void d.dismiss()))
  await page.goto(pathToFileURL(file).href)
  await page.evaluate(() => (globalThis as any).tessera.ready)
  return { dir, page, errors, dialogs }
}

// the items a view drew (its scenegraph's marks of `type`, e.g. the task stream's
// bars), each with its centre in page coordinates
const items = (page: Page, view: string, type = "rect") =>
  page.evaluate(({ view, type }) => {
    const v = (globalThis as any).tessera.views[view]
    const out: Array<any> = []
    const walk = (node: any): void => {
      if (node == null) return
      if (node.marktype === type && node.role === "mark" && node.name === "marks") return void out.push(...node.items)
      for (const child of node.items ?? []) walk(child)
    }
    walk(v.scenegraph().root)
    const canvas = (globalThis as any).document.querySelector(`#${view} canvas`).getBoundingClientRect()
    const [ox, oy] = v.origin()
    const pad = v.padding()
    return out.map((it) => ({
      datum: it.datum as Record<string, unknown>,
      x: canvas.left + ox + (pad.left ?? 0) + it.x + (it.width ?? 0) / 2,
      y: canvas.top + oy + (pad.top ?? 0) + it.y + (it.height ?? 0) / 2
    }))
  }, { view, type })

const shoot = async (page: Page, dir: string, name: string, selector: string) => {
  const path = join(dir, `report-i32-${name}.png`)
  await page.locator(selector).first().screenshot({ path })
  console.log(`# screenshot: ${path}`)
}

describe("issue 32: report pages in a browser", { skip }, () => {
  let browser: Browser
  before(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM })
  })
  after(async () => {
    await browser?.close()
  })

  it("issue 32 item 9: a trace of 20,000 distinct function names: the page loads without errors, others aggregated", { timeout: 180_000 }, async () => {
    const n = 20_000
    const events = manyFunctions(n)
    const { dir, page, errors } = await openReport(browser, "tessera-e2e-i32-many-", events)
    assert.deepEqual(errors, [])
    const fnBars = await items(page, "time-functions")
    const rows = new Set(fnBars.map((b) => String(b.datum["row"])))
    assert.equal(rows.size, 40, "39 functions and one others bar")
    assert.ok([...rows].some((r) => r.startsWith("others (19,961 functions, ")), [...rows].join(", "))
    const stageRows = new Set((await items(page, "time-stages")).map((b) => String(b.datum["row"])))
    assert.ok([...stageRows].some((r) => r.startsWith("others (61 stages, ")), [...stageRows].join(", "))
    // the stream is drawn (aggregated: more tasks than the detail limit), others in one colour
    const stream = await items(page, "task-stream")
    assert.ok(stream.length > 0, "the task stream has bars")
    assert.ok(stream.some((b) => b.datum["c"] === "(other functions)"))
    const legend = await page.evaluate(() => (globalThis as any).tessera.views["task-stream"].scale("color").domain() as Array<string>)
    assert.ok(legend.length <= 70 && legend.includes("(other functions)") && legend.includes("fn_0"), `${legend.length} colours`)
    await shoot(page, dir, "many-time", "#time")
    await shoot(page, dir, "many-stream", "#stream")
    await page.close()
  })

  it("issue 32 item 10: U+2028 / U+2029 in function and stage names: the page loads, charts render, the names are text", { timeout: 120_000 }, async () => {
    const names = ["line\u2028sep", "para\u2029sep", "end</script><script>alert(1)</script><!--"]
    const events = Array.from({ length: 30 }, (_, i) => task(i, names[i % 3]!, 0.0005, { stage: `stage\u2028${i % 2}` }))
    const { dir, page, errors, dialogs } = await openReport(browser, "tessera-e2e-i32-separators-", events)
    assert.deepEqual(errors, [])
    const stream = (await items(page, "task-stream")).filter((b) => b.datum["_i"] !== undefined)
    assert.equal(stream.length, 30, "one bar per task")
    assert.deepEqual([...new Set(stream.map((b) => b.datum["c"]))].sort(), [...names].sort(), "coloured by the names as they are")
    assert.equal((await items(page, "time-functions")).length, 6, "two parts for each of the three functions")
    // the names as text: the function summary's cells, and the task's tooltip
    const cells = await page.locator("#analyses td").allTextContents()
    for (const name of names) assert.ok(cells.includes(name), `${JSON.stringify(name)} in a table cell`)
    await page.locator("#task-stream").evaluate((el: any) => el.scrollIntoView({ block: "start" }))
    const bar = (await items(page, "task-stream")).find((b) => b.datum["c"] === names[2])!
    await page.mouse.move(bar.x, bar.y)
    await page.waitForSelector("#tooltip", { state: "visible", timeout: 10_000 })
    const tip = (await page.textContent("#tooltip")) ?? ""
    assert.ok(tip.includes(names[2]!) && tip.includes("stage\u2028"), `the tooltip shows the name as text: ${JSON.stringify(tip)}`)
    // the name's "<script>alert(1)</script>" stayed inside its string: no element of its own
    assert.equal(await page.locator("script").evaluateAll((s) => s.filter((x) => (x.textContent ?? "").trim() === "alert(1)").length), 0)
    assert.deepEqual(dialogs, [])
    await shoot(page, dir, "separators-time", "#time")
    await shoot(page, dir, "separators-stream", "#stream")
    await page.close()
  })

  it("issue 32 item 12: a 1e305 s task is left out with a warning, the rest drawn; a dependency cycle is named in the critical path's caption", { timeout: 120_000 }, async () => {
    const events = [
      dependent("x-1", [], 1000.7), dependent("a-1", ["c-1", "x-1"], 1001), dependent("b-1", ["a-1"], 1002), dependent("c-1", ["b-1"], 1003),
      task(3000, "huge", 1e305)
    ]
    const { dir, page, errors } = await openReport(browser, "tessera-e2e-i32-absurd-", events)
    assert.deepEqual(errors, [])
    assert.equal(await page.textContent("#left-out"), "1 task with non-finite or absurd durations (not finite, or 1e+9 s or longer) was left out")
    const stream = (await items(page, "task-stream")).filter((b) => b.datum["_i"] !== undefined)
    assert.equal(stream.length, 4, "the four other tasks drawn")
    const warning = await page.locator("#analyses p.warning").first().textContent()
    assert.equal(warning, "dependency cycle: a-1 -> b-1 -> c-1 -> a-1; 3 tasks on or after a cycle were left out of the critical path")
    await shoot(page, dir, "absurd-header", "main")
    await page.close()
  })
})

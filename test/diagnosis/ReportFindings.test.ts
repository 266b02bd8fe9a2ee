/**
 * The report's findings in a real headless browser (chromium via playwright-core): the
 * report of DASF's own traces (test/fixtures/dasf-small) shows the diagnosis's findings
 * as its first section, before the charts; clicking a finding's evidence zooms the task
 * stream to that time range; strings from the trace are shown as text, never markup.
 *
 * Skips with a message where /usr/bin/chromium is absent (`.ci/run` installs it).
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath, pathToFileURL } from "node:url"
import { chromium } from "playwright-core"
import type { Browser, Page } from "playwright-core"
import { diagnoseFilesPromise } from "../../src/analysis/Diagnose.ts"
import { pageRange, withFindingsFirst, findingsSection } from "../../src/report/Findings.ts"
import { writeReportPromise } from "../../src/report/Report.ts"

const CHROMIUM = "/usr/bin/chromium"
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium; .ci/run does) to run the browser tests`
if (skip !== false) console.log(`# skipping the findings browser test: ${skip}`)
const fixture = (f: string) => fileURLToPath(new URL(`../fixtures/dasf-small/${f}`, import.meta.url))
const dasf = [fixture("small-TracePlugin.msgpack"), fixture("small-ResourceMonitor.msgpack")]

describe("issue 35: the report's findings", () => {
  it("issue 35: a finding's strings are escaped, and the section goes first, after the header", () => {
    const d = {
      findings: [{
        rule: "straggler" as const,
        severity: "high" as const,
        message: "task <img src=x onerror=alert(1)> took long",
        evidence: { keys: ["<b>k</b>"], start: 1, end: 2, function: "f&g" },
        fix: "<script>x</script>",
        saving: { seconds: 1, share: 0.5 },
        assumptions: "a \"b\""
      }],
      clean: false,
      wall: 2,
      runStart: 100,
      tasks: 1,
      workers: 1,
      criticalPath: { length: 2, tasks: 1, driver: 0, latency: 1 },
      sampled: false,
      thresholds: {} as never
    }
    const s = findingsSection(d, 99.5)
    assert.ok(!s.html.includes("<img") && !s.html.includes("<b>k") && !s.html.includes("<script>x"))
    assert.match(s.html, /&lt;img src=x/)
    assert.deepEqual(pageRange(d.findings[0]!, 100, 99.5), [1.5, 2.5])
    const page = withFindingsFirst("<main><header><h1>t</h1><nav><a href=\"#time\">Time</a></nav></header>\n<section id=\"time\"></section></main>", s.html)
    assert.ok(page.indexOf("id=\"findings\"") < page.indexOf("id=\"time\""))
    assert.match(page, /<nav><a href="#findings">Findings<\/a> · <a href="#time">/)
    const failed = withFindingsFirst("<main><header><nav></nav></header><section id=\"failure\">x</section><section id=\"time\"></section></main>", s.html)
    assert.ok(failed.indexOf("id=\"failure\"") < failed.indexOf("id=\"findings\"") && failed.indexOf("id=\"findings\"") < failed.indexOf("id=\"time\""))
  })
})

describe("issue 35: the report's findings (browser)", { skip, timeout: 120_000 }, () => {
  let browser: Browser
  let page: Page
  let dir: string
  const errors: Array<string> = []
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tessera-findings-"))
    await writeReportPromise(dasf, join(dir, "report.html"))
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())))
    page.on("pageerror", (e) => void errors.push(String(e)))
    await page.goto(pathToFileURL(join(dir, "report.html")).href)
    await page.evaluate(() => (globalThis as any).tessera.ready)
  })
  after(async () => {
    await browser?.close()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("issue 35: the findings are the first section, with the diagnosis's top finding", async () => {
    const first = await page.evaluate(() => (globalThis as any).document.querySelector("main > section")?.id)
    assert.equal(first, "findings")
    const d = await diagnoseFilesPromise(dasf)
    const rules = await page.evaluate(() => Array.from((globalThis as any).document.querySelectorAll("#findings li.finding") as ArrayLike<{ dataset: { rule: string } }>).map((li) => li.dataset.rule))
    assert.deepEqual(rules, d.findings.map((f) => f.rule))
    const shot = join(tmpdir(), "tessera-findings.png")
    await page.locator("#findings").screenshot({ path: shot })
    console.log(`# findings screenshot: ${shot}`)
  })

  it("issue 35: clicking a finding's evidence zooms the task stream to its time range", async () => {
    const link = page.locator("#findings a.finding-zoom").first()
    const from = Number(await link.getAttribute("data-from"))
    const to = Number(await link.getAttribute("data-to"))
    const before = await page.evaluate(() => (globalThis as any).tessera.stream.domain as [number, number])
    await link.click()
    const after = await page.evaluate(async () => {
      const t = (globalThis as any).tessera
      await t.idle()
      return t.stream.domain as [number, number]
    })
    assert.notDeepEqual(after, before)
    assert.ok(Math.abs(after[0] - Math.max(0, from)) < 1e-9 && Math.abs(after[1] - to) < 1e-6, `${after} vs ${from}..${to}`)
    // the stream's x scale shows that window
    const xdom = await page.evaluate(() => {
      const t = (globalThis as any).tessera
      return t.views["task-stream"].signal("xdom") as [number, number]
    })
    assert.ok(Math.abs(xdom[0] - after[0]) < 1e-9 && Math.abs(xdom[1] - after[1]) < 1e-9, `${xdom}`)
    const shot = join(tmpdir(), "tessera-findings-zoomed.png")
    await page.locator("#stream").screenshot({ path: shot })
    console.log(`# zoomed task stream screenshot: ${shot}`)
    assert.deepEqual(errors, [])
  })
})

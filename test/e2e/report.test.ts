/**
 * End-to-end test of the HTML report in a real headless browser (Debian's chromium
 * driven by playwright-core): the report of dasf-small loads with no console errors and
 * no network requests, the task stream holds one bar per Compute event, and hovering a
 * bar shows its key. Saves a screenshot to the OS temp directory.
 * Skips with a message where /usr/bin/chromium is absent.
 */
import assert from "node:assert/strict"
import { existsSync } from "node:fs"
import { mkdtemp } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath, pathToFileURL } from "node:url"
import { chromium } from "playwright-core"
import type { Browser, Page } from "playwright-core"
import { writeReport } from "../../src/report/buildReport.ts"
import { loadEvents } from "../../src/report/loadEvents.ts"

const CHROMIUM = "/usr/bin/chromium"
const data = fileURLToPath(new URL("../../../shared/data/dasf-small/", import.meta.url))
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium) console.log(`# skipping browser tests: ${CHROMIUM} not found (apt-get install -y chromium)`)

describe("report (browser)", { skip: hasChromium ? false : `${CHROMIUM} not found` }, () => {
  let browser: Browser
  let page: Page
  const consoleErrors: Array<string> = []
  const external: Array<string> = []
  let computeEvents = 0

  before(async () => {
    const files = [join(data, "small-TracePlugin.msgpack"), join(data, "small-ResourceMonitor-gpusurrogate.msgpack")]
    const loaded = await loadEvents(files)
    computeEvents = loaded.events.filter((e) => e.name === "Compute" && e.phase === "X").length
    const dir = await mkdtemp(join(tmpdir(), "tessera-e2e-"))
    const file = join(dir, "report.html")
    await writeReport(files, file, { title: "dasf-small" })
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text())
    })
    page.on("pageerror", (e) => consoleErrors.push(String(e)))
    await page.route("**/*", (route) => {
      const url = route.request().url()
      if (url.startsWith("file:") || url.startsWith("data:")) return route.continue()
      external.push(url)
      return route.abort()
    })
    await page.goto(pathToFileURL(file).href)
    await page.evaluate(() => (globalThis as unknown as { tessera: { ready: Promise<unknown> } }).tessera.ready)
  })

  after(async () => {
    await browser?.close()
  })

  it("loads with no console errors and no network requests", () => {
    assert.deepEqual(consoleErrors, [])
    assert.deepEqual(external, [])
  })

  it("draws one task-stream bar per Compute event", async () => {
    const counts = await page.evaluate(() => {
      const v = (globalThis as any).tessera.views["task-stream"]
      let bars = 0
      const walk = (node: any): void => {
        if (node === null || node === undefined) return
        if (node.marktype === "rect" && node.role === "mark") bars += node.items.length
        for (const child of node.items ?? []) walk(child)
      }
      walk(v.scenegraph().root)
      return { data: v.data("tasks").length, bars }
    })
    assert.equal(counts.data, computeEvents)
    assert.equal(counts.bars, computeEvents)
  })

  it("keeps resource and memory timelines aligned with the task stream's zoom", async () => {
    await page.evaluate(() => (globalThis as any).scrollTo(0, 0))
    const box = (await page.locator("#task-stream canvas").boundingBox())!
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 3)
    await page.mouse.wheel(0, -300)
    const doms = await page.evaluate(async () => {
      const t = (globalThis as any).tessera
      await t.views["task-stream"].runAsync()
      await new Promise((r) => setTimeout(r, 200))
      return {
        stream: t.views["task-stream"].scale("x").domain(),
        cpu: t.views["res-cpu"].scale("x").domain(),
        memory: t.views["managed-memory"].scale("x").domain()
      }
    })
    assert.ok(doms.stream[1] - doms.stream[0] < 2.39, `zoomed in: ${doms.stream}`)
    for (const d of [doms.cpu, doms.memory]) {
      assert.ok(Math.abs(d[0] - doms.stream[0]) < 1e-9 && Math.abs(d[1] - doms.stream[1]) < 1e-9, `${d} follows ${doms.stream}`)
    }
    await page.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 3)
  })

  it("sorts an analysis table when its header is clicked", async () => {
    const th = page.locator("table.sortable th", { hasText: "tasks" }).first()
    await th.click()
    await th.click()
    assert.ok(await th.evaluate((el: any) => el.classList.contains("desc")))
  })

  it("shows a task's key when its bar is hovered", async () => {
    await page.evaluate(() => (globalThis as any).scrollTo(0, 0))
    const target = await page.evaluate(() => {
      const v = (globalThis as any).tessera.views["task-stream"]
      let found: any
      const walk = (node: any): void => {
        if (found !== undefined || node === null || node === undefined) return
        if (node.marktype === "rect" && node.role === "mark") {
          // the longest bar is the easiest to hit
          for (const it of node.items) if (found === undefined || it.width > found.width) found = it
          return
        }
        for (const child of node.items ?? []) walk(child)
      }
      walk(v.scenegraph().root)
      const canvas = (globalThis as any).document.querySelector("#task-stream canvas").getBoundingClientRect()
      // the canvas handler's origin is the view's origin plus its padding
      const [ox0, oy0] = v.origin()
      const pad = v.padding()
      const ox = ox0 + (pad.left ?? 0)
      const oy = oy0 + (pad.top ?? 0)
      return { x: canvas.left + ox + found.x + found.width / 2, y: canvas.top + oy + found.y + found.height / 2, key: found.datum.key }
    })
    await page.mouse.move(target.x, target.y)
    await page.waitForSelector("#tooltip", { state: "visible", timeout: 5000 })
    const text = await page.textContent("#tooltip")
    assert.ok(text?.includes(target.key), `tooltip ${text} should include ${target.key}`)
    const shot = join(tmpdir(), "tessera-report.png")
    await page.screenshot({ path: shot })
    await page.screenshot({ path: join(tmpdir(), "tessera-report-full.png"), fullPage: true })
    console.log(`# screenshots: ${shot} (viewport, tooltip shown), tessera-report-full.png beside it`)
  })
})

/**
 * Responsiveness of the HTML report with ~100,000 tasks in headless chromium:
 * `node bench/report/browser.ts [--json]`. Generates a 250,000-event trace
 * (`bench/analysis/generate.ts`, ~106,000 tasks) when absent, writes its report, then
 * measures: time until every chart has rendered, one wheel-zoom step of the task
 * stream (median of 5), and a hover until the tooltip shows. The baseline in the same
 * run is loading a blank page. Needs /usr/bin/chromium (skips with a message without).
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { chromium } from "playwright-core"
import { writeReport } from "../../src/report/buildReport.ts"

const json = process.argv.includes("--json")
const CHROMIUM = "/usr/bin/chromium"
if (!existsSync(CHROMIUM)) {
  console.log(`skipping: ${CHROMIUM} not found`)
  process.exit(0)
}
const trace = join(tmpdir(), "tessera-bench-250k.msgpack")
if (!existsSync(trace)) {
  const gen = fileURLToPath(new URL("../analysis/generate.ts", import.meta.url))
  execFileSync(process.execPath, [gen, trace, "--events", "250000"], { stdio: "inherit" })
}
const html = join(tmpdir(), "tessera-bench-report-100k.html")
const { bytes, data } = await writeReport([trace], html)

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
})
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
let t = performance.now()
await page.goto("about:blank")
const blank = performance.now() - t
t = performance.now()
await page.goto(pathToFileURL(html).href)
await page.evaluate(() => (globalThis as any).tessera.ready.then(() => 1))
const ready = performance.now() - t
const box = (await page.locator("#task-stream canvas").boundingBox())!
await page.mouse.move(box.x + 500, box.y + 100)
const zooms: Array<number> = []
for (let i = 0; i < 5; i++) {
  t = performance.now()
  await page.mouse.wheel(0, -150)
  await page.evaluate(() => (globalThis as any).tessera.views["task-stream"].runAsync().then(() => 1))
  zooms.push(performance.now() - t)
}
t = performance.now()
await page.mouse.move(box.x + 520, box.y + 110)
await page.waitForSelector("#tooltip", { state: "visible", timeout: 10_000 }).catch(() => undefined)
const hover = performance.now() - t
await browser.close()

zooms.sort((a, b) => a - b)
const rows = [
  { name: "blank page (baseline)", "ms": Math.round(blank) },
  { name: "report loaded, all charts drawn", "ms": Math.round(ready) },
  { name: "one wheel-zoom step (median of 5)", "ms": Math.round(zooms[2]!) },
  { name: "hover to tooltip", "ms": Math.round(hover) }
]
if (json) console.log(JSON.stringify({ tasks: data.tasks.start.length, reportBytes: bytes, rows }))
else {
  console.log(`${data.tasks.start.length.toLocaleString("en-US")} tasks, report ${(bytes / 2 ** 20).toFixed(1)} MiB`)
  console.table(rows)
}

/**
 * Responsiveness of the HTML report with ~100,000 tasks in headless chromium:
 * `node bench/report/browser.ts [--json]`. Generates a 250,000-event trace
 * (`bench/analysis/generate.ts`, ~106,000 tasks) when absent, writes its report, then
 * measures: time until every chart has rendered, one wheel-zoom step and one drag-pan
 * step of the task stream (median of 5; a step ends when the stream and every timeline
 * have redrawn: `tessera.idle()`), and a hover until the tooltip shows. The baseline in the same
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
// In-page latency: from the input event's dispatch (a capturing listener) until the
// stream and every timeline have redrawn for the new window (`tessera.idle()`); the
// outer figure adds the DevTools-protocol round trips of driving the page.
await page.evaluate(() => {
  const g = globalThis as any
  g.__lastInput = 0
  for (const type of ["wheel", "pointerup"]) g.document.addEventListener(type, () => (g.__lastInput = performance.now()), true)
})
const settle = () =>
  page.evaluate(async () => {
    const g = globalThis as any
    await g.tessera.views["task-stream"].runAsync()
    if (g.tessera.idle) await g.tessera.idle()
    return performance.now() - g.__lastInput
  })
const zooms: Array<number> = []
const zoomsIn: Array<number> = []
for (let i = 0; i < 5; i++) {
  t = performance.now()
  await page.mouse.wheel(0, -150)
  zoomsIn.push(await settle())
  zooms.push(performance.now() - t)
}
const stream = await page.evaluate(() => (globalThis as any).tessera.stream)
const pans: Array<number> = []
const pansIn: Array<number> = []
for (let i = 0; i < 5; i++) {
  t = performance.now()
  await page.mouse.move(box.x + 500, box.y + 100)
  await page.mouse.down()
  await page.mouse.move(box.x + 560, box.y + 100, { steps: 1 })
  await page.mouse.up()
  pansIn.push(await settle())
  pans.push(performance.now() - t)
}
t = performance.now()
await page.mouse.move(box.x + 520, box.y + 110)
await page.waitForSelector("#tooltip", { state: "visible", timeout: 10_000 }).catch(() => undefined)
const hover = performance.now() - t
await browser.close()

for (const xs of [zooms, zoomsIn, pans, pansIn]) xs.sort((a, b) => a - b)
const rows = [
  { name: "blank page (baseline)", "ms": Math.round(blank) },
  { name: "report loaded, all charts drawn", "ms": Math.round(ready) },
  { name: "one wheel-zoom step, driven from Node (median of 5)", "ms": Math.round(zooms[2]!) },
  { name: "  of which in the page: wheel event to all charts redrawn", "ms": Math.round(zoomsIn[2]!) },
  { name: "one drag-pan step, driven from Node (median of 5)", "ms": Math.round(pans[2]!) },
  { name: "  of which in the page: pointerup to all charts redrawn", "ms": Math.round(pansIn[2]!) },
  { name: "hover to tooltip", "ms": Math.round(hover) }
]
if (json) console.log(JSON.stringify({ tasks: data.tasks.start.length, reportBytes: bytes, stream, rows }))
else {
  console.log(`${data.tasks.start.length.toLocaleString("en-US")} tasks, report ${(bytes / 2 ** 20).toFixed(1)} MiB; after the zooms: ${JSON.stringify(stream ?? null)}`)
  console.table(rows)
}

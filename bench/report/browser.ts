/**
 * Responsiveness of the HTML report with ~100,000 tasks in headless chromium:
 * `node bench/report/browser.ts [--json]`. Generates a 250,000-event trace
 * (`bench/analysis/generate.ts`, ~106,000 tasks) when absent, writes its report, then
 * measures: time until every chart has rendered, a wheel-zoom step and a drag-pan step
 * of the task stream (median of 9: driven from Node, and in the page from the input
 * event until the task stream, then every chart, has redrawn — `tessera.idle()`), and
 * a hover until the tooltip shows. The baseline in the same
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
import { writeReportPromise } from "../../src/report/Report.ts"

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
const { bytes, data } = await writeReportPromise([trace], html)

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
  for (const type of ["wheel", "pointermove"]) g.document.addEventListener(type, () => (g.__lastInput = performance.now()), true)
})
// [all charts redrawn, task stream redrawn] in ms since the last input event
const settle = () =>
  page.evaluate(async () => {
    const g = globalThis as any
    await g.tessera.views["task-stream"].runAsync()
    if (g.tessera.idle) await g.tessera.idle()
    const s = g.tessera.stream ?? {}
    // the page's own timestamps: the evaluate call itself may arrive after the step is
    // done (the DevTools round trip of the input), which the page does not wait for
    return [(s.endAt ?? performance.now()) - g.__lastInput, s.streamAt !== undefined ? s.streamAt - g.__lastInput : NaN] as [number, number]
  })
const STEPS = 9
const zooms: Array<number> = []
const zoomsIn: Array<number> = []
const zoomsStream: Array<number> = []
for (let i = 0; i < STEPS; i++) {
  t = performance.now()
  await page.mouse.wheel(0, -100)
  const [all, stream] = await settle()
  zooms.push(performance.now() - t)
  zoomsIn.push(all)
  zoomsStream.push(stream)
}
const stream = await page.evaluate(() => (globalThis as any).tessera.stream)
const pans: Array<number> = []
const pansIn: Array<number> = []
const pansStream: Array<number> = []
for (let i = 0; i < STEPS; i++) {
  await page.mouse.move(box.x + 500, box.y + 100)
  await page.mouse.down()
  t = performance.now()
  await page.mouse.move(box.x + 560, box.y + 100, { steps: 1 })
  const [all, stream] = await settle()
  pans.push(performance.now() - t)
  pansIn.push(all)
  pansStream.push(stream)
  await page.mouse.up()
}
t = performance.now()
await page.mouse.move(box.x + 520, box.y + 110)
await page.waitForSelector("#tooltip", { state: "visible", timeout: 10_000 }).catch(() => undefined)
const hover = performance.now() - t
await browser.close()

const med = (xs: Array<number>) => Math.round([...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1]!)
const rows = [
  { name: "blank page (baseline)", "ms": Math.round(blank) },
  { name: "report loaded, all charts drawn", "ms": Math.round(ready) },
  { name: `wheel-zoom step, driven from Node (median of ${STEPS})`, "ms": med(zooms) },
  { name: "  in the page: wheel event to task stream redrawn", "ms": med(zoomsStream) },
  { name: "  in the page: wheel event to all charts redrawn", "ms": med(zoomsIn) },
  { name: `drag-pan step, driven from Node (median of ${STEPS})`, "ms": med(pans) },
  { name: "  in the page: pointermove to task stream redrawn", "ms": med(pansStream) },
  { name: "  in the page: pointermove to all charts redrawn", "ms": med(pansIn) },
  { name: "hover to tooltip", "ms": Math.round(hover) }
]
if (json) console.log(JSON.stringify({ tasks: data.tasks.start.length, reportBytes: bytes, stream, rows }))
else {
  console.log(`${data.tasks.start.length.toLocaleString("en-US")} tasks, report ${(bytes / 2 ** 20).toFixed(1)} MiB; after the zooms: ${JSON.stringify(stream ?? null)}`)
  console.table(rows)
}

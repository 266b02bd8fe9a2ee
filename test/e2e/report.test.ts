/**
 * End-to-end tests of the HTML report in a real headless browser (Debian's chromium
 * driven by playwright-core).
 *
 * The demo's report: the test runs `tessera demo` small (20,000 samples, 2 workers,
 * --profile and --report) in a temporary folder, then checks that the report loads with
 * no console errors and no network requests, that the task stream holds one bar per
 * Compute event of that trace (counted by reading the trace database), that hovering a
 * bar shows its key, that the timelines follow the task stream's zoom, that tables sort,
 * that the stage DAG (the trace's "Pipeline Graph" event) is drawn as SVG with each
 * stage's time and tasks on its node, that the page opens with "where did the time go"
 * (the run's summary line, and stacked bars per stage whose parts add up to the run's),
 * that the task stream draws the driver's row, worker start-up and phase bars (a driver
 * segment's tooltip names its activity), and that the time-axis charts take the page's
 * width (narrower at 900 px than at 1280 px, timelines aligned with the stream). It saves
 * screenshots (report-time.png, report-stream.png, report-stages.png, the hover and the
 * whole page) to the temporary folder and prints their paths.
 *
 * dasf-small's report: loads cleanly with one bar per Compute event; with a small
 * `maxDetail` the stream draws aggregated bars when zoomed out and single tasks again
 * once zoomed in.
 *
 * A 2-process cluster run's report (`demo --cluster local:2`): one pink bar per `Transfer`
 * event on its receiving worker's row, whose tooltip shows keys, bytes, peer and MB/s;
 * the "Transfers and clocks" section's bandwidth tables and one clock-offset row per
 * worker (screenshots report-cluster-stream.png, report-cluster-transfer-hover.png,
 * report-cluster-transfers.png). A GPU run's report (`demo --gpu`; skipped without a
 * WebGPU adapter): device copies both ways on the GPU worker's row, its device memory
 * timeline and the header naming it (report-gpu-stream.png, report-gpu-resources.png,
 * report-gpu-transfers.png).
 *
 * A failed run's report (a hand-built trace with an erred `Compute` event; issue 31 item
 * 9): the failure section first, naming the task, its stage and its error as text; the
 * erred task in its own colour in the task stream, its error on hover; its stage
 * outlined in the graph (report-failure*.png). Issue 31 item 14: the task stream's plot
 * takes the page's width; every stage node has numbers in one font.
 *
 * Skips with a message where /usr/bin/chromium is absent (`.ci/run` installs it).
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdtemp, readdir, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { after, before, describe, it } from "node:test"
import { fileURLToPath, pathToFileURL } from "node:url"
import { chromium } from "playwright-core"
import type { Browser, Page } from "playwright-core"
import { writeReportPromise as writeReport } from "../../src/report/Report.ts"
import { renderHtml } from "../../src/report/Html.ts"
import { loadEvents } from "../../src/report/LoadEvents.ts"
import { fromEvents } from "../../src/report/ReportData.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import { hostileDot } from "../fixtures/hostile.ts"
import { skip as gpuSkip } from "../gpu/gpu.ts"

const CHROMIUM = "/usr/bin/chromium"
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const data = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))
const hasChromium = existsSync(CHROMIUM)
const skip = hasChromium ? false : `${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium; .ci/run does) to run the browser tests`
if (!hasChromium) console.log(`# skipping browser tests: ${skip}`)

// Opens a report with every non-file request aborted and recorded, console errors kept.
const open = async (browser: Browser, file: string) => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  const consoleErrors: Array<string> = []
  const external: Array<string> = []
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
  await page.evaluate(() => (globalThis as any).tessera.ready)
  return { page, consoleErrors, external }
}

// A report of hand-built events: the trace written to a new folder, its report opened,
// and any dialog (a script the trace smuggled in) recorded and dismissed.
const openEvents = async (browser: Browser, prefix: string, db: string, events: Parameters<typeof encodeRecords>[0]) => {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  const file = join(dir, "report.html")
  await writeFile(join(dir, db), encodeRecords(events))
  await writeReport([join(dir, db)], file)
  const opened = await open(browser, file)
  const dialogs: Array<string> = []
  opened.page.on("dialog", (d) => {
    dialogs.push(d.message())
    void d.dismiss()
  })
  return { dir, dialogs, ...opened }
}

// Rect items of the task stream's bar mark, read from Vega's scenegraph: one per task
// (its compute phase) or aggregated bucket; with `all`, also the gather / transfer phase
// bars and the driver's segments.
const bars = (page: Page, all = false) =>
  page.evaluate((all) => {
    const v = (globalThis as any).tessera.views["task-stream"]
    const items: Array<any> = []
    const walk = (node: any): void => {
      if (node === null || node === undefined) return
      if (node.marktype === "rect" && node.role === "mark" && node.name === "marks") {
        items.push(...node.items)
        return
      }
      for (const child of node.items ?? []) walk(child)
    }
    walk(v.scenegraph().root)
    if (!all) items.splice(0, items.length, ...items.filter((it) => it.datum._d === undefined && it.datum._x === undefined && (it.datum._p === undefined || it.datum._p === "compute")))
    const canvas = (globalThis as any).document.querySelector("#task-stream canvas").getBoundingClientRect()
    // the canvas handler's origin is the view's origin plus its padding
    const [ox, oy] = v.origin()
    const pad = v.padding()
    return items.map((it) => ({
      x: canvas.left + ox + (pad.left ?? 0) + it.x + it.width / 2,
      y: canvas.top + oy + (pad.top ?? 0) + it.y + it.height / 2,
      width: it.width as number,
      datum: {
        i: it.datum._i as number | undefined, agg: it.datum._agg === true, tasks: it.datum.tasks as number | undefined,
        p: it.datum._p as string | undefined, d: it.datum._d as number | undefined, worker: it.datum.worker as string,
        x: it.datum._x as number | undefined, c: it.datum.c as string | undefined, fill: it.fill as string | undefined
      }
    }))
  }, all)

const settle = (page: Page) =>
  page.evaluate(async () => {
    const t = (globalThis as any).tessera
    await t.views["task-stream"].runAsync()
    await t.idle()
    return t.stream as { visible: number; drawn: number; detail: boolean; domain: [number, number] }
  })

// the task stream in the viewport (the "where did the time go" section is above it)
const showStream = async (page: Page) => {
  await page.locator("#task-stream").evaluate((el: any) => el.scrollIntoView({ block: "start" }))
}

const hoverWidest = async (page: Page) => {
  await showStream(page)
  const all = await bars(page)
  const widest = all.reduce((a, b) => (b.width > a.width ? b : a))
  await page.mouse.move(widest.x, widest.y)
  await page.waitForSelector("#tooltip", { state: "visible", timeout: 5000 })
  return { widest, text: (await page.textContent("#tooltip")) ?? "" }
}

describe("report (browser)", { skip }, () => {
  let browser: Browser
  before(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    })
  })
  after(async () => {
    await browser?.close()
  })

  describe("the demo's report", () => {
    let dir: string
    let page: Page
    let consoleErrors: Array<string>
    let external: Array<string>
    let computeEvents = 0
    let dot: string | undefined
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), "tessera-e2e-demo-"))
      await promisify(execFile)(process.execPath, [main, "demo", "--samples", "20000", "--workers", "2", "--profile", "e2e", "--report", "report.html", "--json"], { cwd: dir })
      const traces = (await readdir(dir)).filter((f) => f.startsWith("e2e-TracePlugin-")).map((f) => join(dir, f))
      assert.equal(traces.length, 1, `one trace database in ${dir}`)
      const { events } = await loadEvents(traces)
      computeEvents = events.filter((e) => e.name === "Compute" && e.phase === "X").length
      const graph = events.find((e) => e.name === "Pipeline Graph")
      dot = (graph?.args as { dot?: string } | undefined)?.dot
      ;({ page, consoleErrors, external } = await open(browser, join(dir, "report.html")))
    })

    it("loads with no console errors and no network requests", () => {
      assert.deepEqual(consoleErrors, [])
      assert.deepEqual(external, [])
    })

    it("draws one task-stream bar per Compute event of the trace", async () => {
      assert.ok(computeEvents > 100, `${computeEvents} Compute events`)
      const all = await bars(page)
      assert.equal(all.length, computeEvents)
      assert.equal(new Set(all.map((b) => b.datum.i)).size, computeEvents, "each bar is a different task")
      const stream = await settle(page)
      assert.equal(stream.detail, true)
      assert.equal(stream.visible, computeEvents)
    })

    it("shows a task's key, function and duration when its bar is hovered", async () => {
      const { widest, text } = await hoverWidest(page)
      const key = await page.evaluate((i) => (globalThis as any).tessera.data.tasks.key[i], widest.datum.i!)
      const fn = await page.evaluate((i) => {
        const d = (globalThis as any).tessera.data
        return d.functions[d.tasks.fn[i]]
      }, widest.datum.i!)
      assert.ok(text.includes(key), `tooltip ${text} should include ${key}`)
      assert.ok(text.includes(fn) && /duration\s*[\d.]+ (s|ms|µs)/.test(text), `tooltip ${text} shows function and duration`)
      const shot = join(dir, "report-hover.png")
      await page.screenshot({ path: shot })
      await page.screenshot({ path: join(dir, "report-full.png"), fullPage: true })
      console.log(`# screenshots: ${shot} (viewport, tooltip shown), ${join(dir, "report-full.png")} (whole page)`)
    })

    it("keeps resource and memory timelines aligned with the task stream's zoom", async () => {
      await showStream(page)
      const box = (await page.locator("#task-stream canvas").boundingBox())!
      const before = await settle(page)
      // zoom in about sevenfold around the median task, so tasks lie outside the window
      // however long the run's start-up and end are on a loaded machine
      const xs = (await bars(page)).map((b) => b.x).sort((a, b) => a - b)
      await page.mouse.move(xs[xs.length >> 1]!, box.y + box.height / 3)
      await page.mouse.wheel(0, -2000)
      const stream = await settle(page)
      const doms = await page.evaluate(() => {
        const t = (globalThis as any).tessera
        return {
          stream: t.views["task-stream"].scale("x").domain(),
          timelines: t.views["timelines"].scale("x").domain()
        }
      })
      assert.ok(doms.stream[1] - doms.stream[0] < (before.domain[1] - before.domain[0]) * 0.9, `zoomed in: ${doms.stream}`)
      // the page's windowed count (sorted starts, binary search) against a plain scan
      const inWindow = await page.evaluate(([x0, x1]) => {
        const t = (globalThis as any).tessera.data.tasks
        let n = 0
        for (let i = 0; i < t.start.length; i++) if (t.end[i] >= x0 && t.start[i] <= x1) n++
        return n
      }, doms.stream as [number, number])
      assert.equal(stream.visible, inWindow, "tasks counted in the zoomed window")
      assert.ok(stream.visible > 0 && stream.visible < computeEvents, `${stream.visible} of ${computeEvents} tasks in the zoomed window`)
      for (const d of [doms.timelines]) {
        assert.ok(Math.abs(d[0] - doms.stream[0]) < 1e-9 && Math.abs(d[1] - doms.stream[1]) < 1e-9, `${d} follows ${doms.stream}`)
      }
      await page.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 3)
      const reset = await settle(page)
      assert.equal(reset.visible, computeEvents)
    })

    it("sorts an analysis table when its header is clicked", async () => {
      const th = page.locator("table.sortable th", { hasText: "Count" }).first()
      await th.click()
      await th.click()
      assert.ok(await th.evaluate((el: any) => el.classList.contains("desc")))
      const col = Number(await th.getAttribute("data-col"))
      const values = await th.evaluate((el: any, c: number) => [...el.closest("table").tBodies[0].rows].map((r: any) => Number(r.cells[c].dataset.v)), col)
      assert.deepEqual(values, [...values].sort((a, b) => b - a))
    })

    it("answers where the time went first: the summary line, and worker time per stage as stacked bars", async () => {
      const first = await page.evaluate(() => (globalThis as any).document.querySelector("main > section:not(#findings)").id) // the findings go first (issue 35)
      assert.equal(first, "time")
      const summary = (await page.textContent("#run-summary")) ?? ""
      assert.match(summary, /tasks [\d.]+ m?s, driver [\d.]+ m?s, idle [\d.]+ m?s/)
      assert.match(summary, /most task time in (Normalize\.transform|KMeans\.fitPredict|SOM\.fitPredict|\(no stage\)) \(\d+ % of it\)/)
      const workers = await page.locator("ul.workers li").allTextContents()
      assert.equal(workers.length, 2)
      // the chart's rows: the whole run and every stage, each split in four parts
      const rows = await page.evaluate(() => {
        const v = (globalThis as any).tessera.views["time-stages"]
        const out: Array<[string, string, number]> = []
        const walk = (n: any): void => {
          if (n == null) return
          if (n.marktype === "rect" && n.role === "mark") for (const it of n.items) out.push([it.datum.row, it.datum.part, it.datum.seconds])
          for (const c of n.items ?? []) walk(c)
        }
        walk(v.scenegraph().root)
        return out
      })
      const names = [...new Set(rows.map((r) => r[0]))]
      assert.deepEqual(names.slice(0, 1), ["whole run"])
      for (const s of ["Normalize.transform", "KMeans.fitPredict", "SOM.fitPredict"]) assert.ok(names.includes(s), `${s} in ${names}`)
      const parts = new Set(rows.map((r) => r[1]))
      assert.deepEqual([...parts].sort(), ["compute", "driver", "idle", "transfer (gather + send)"])
      const total = (row: string) => rows.filter((r) => r[0] === row).reduce((a, r) => a + r[2], 0)
      const stagesTotal = names.slice(1).reduce((a, n) => a + total(n), 0)
      assert.ok(Math.abs(stagesTotal - total("whole run")) < 1e-6 * total("whole run"), "stages add up to the run")
      const driverSeconds = rows.filter((r) => r[0] === "whole run" && r[1] === "driver")[0]![2]
      assert.ok(driverSeconds > 0, "the demo's driver time is measured")
      await page.locator("#time").screenshot({ path: join(dir, "report-time.png") })
      console.log(`# screenshot: ${join(dir, "report-time.png")} (where did the time go)`)
    })

    it("draws the driver's row and worker start-up, and phases as their own bars", async () => {
      await showStream(page)
      await settle(page)
      const all = await bars(page, true)
      const drv = all.filter((b) => b.datum.d !== undefined)
      assert.ok(drv.some((b) => b.datum.worker === "driver"), "segments on the driver's row")
      assert.ok(drv.some((b) => b.datum.worker.startsWith("worker-")), "worker start-up on the workers' rows")
      assert.ok(all.some((b) => b.datum.p === "transfer" || b.datum.p === "gather"), "phase bars")
      const longest = drv.reduce((a, b) => (b.width > a.width ? b : a))
      await page.mouse.move(longest.x, longest.y)
      await page.waitForSelector("#tooltip", { state: "visible", timeout: 5000 })
      const text = (await page.textContent("#tooltip")) ?? ""
      assert.match(text, /driver(wait|worker start|pool start|setup|between computes)/, text)
      await page.locator("#stream").screenshot({ path: join(dir, "report-stream.png") })
      console.log(`# screenshot: ${join(dir, "report-stream.png")} (task stream with the driver row)`)
      await page.mouse.move(0, 0)
    })

    it("task-axis charts take the page's width", async () => {
      // the plot's width (the legend below it has a width of its own)
      const width = () => page.evaluate(() => (globalThis as any).tessera.views["task-stream"].width() as number)
      const wide = await width()
      await page.setViewportSize({ width: 900, height: 900 })
      await page.waitForTimeout(400)
      await settle(page)
      const narrow = await width()
      await page.setViewportSize({ width: 1280, height: 900 })
      await page.waitForTimeout(400)
      await settle(page)
      assert.ok(narrow < wide - 300, `${narrow} px at 900 px wide vs ${wide} px at 1280`)
      const timelines = await page.evaluate(() => (globalThis as any).tessera.views["timelines"].width() as number)
      assert.equal(timelines, wide, "the timelines' plots line up with the task stream's")
      const stages = (await page.locator("#time-stages canvas").boundingBox())!.width
      const section = (await page.locator("#time").boundingBox())!.width
      assert.ok(stages > section * 0.9 && stages <= section + 1, `the stage chart spans the page: ${stages} of ${section}`)
    })

    it("issue 31 item 14: the task stream's plot uses the page's width (its legend is below it, not beside it)", async () => {
      await settle(page)
      const plot = await page.evaluate(() => (globalThis as any).tessera.views["task-stream"].width() as number)
      const canvas = (await page.locator("#task-stream canvas").boundingBox())!.width
      const main = await page.evaluate(() => (globalThis as any).document.querySelector("main").clientWidth as number)
      // the y axis (110 px) and the view's padding are all that is not plot
      assert.ok(plot + 110 >= main * 0.95, `plot ${plot} px + axis of ${main} px`)
      assert.ok(canvas <= main + 1, `the stream's canvas (${canvas} px) fits the page (${main} px)`)
      const timelines = (await page.locator("#timelines canvas").boundingBox())!.width
      assert.ok(timelines <= main + 1, `the timelines' canvas (${timelines} px) fits the page (${main} px)`)
    })

    it("draws the pipeline's stage DAG from the trace's Pipeline Graph event, with each stage's time", async () => {
      assert.ok(dot !== undefined, "the demo's trace carries a Pipeline Graph event with DOT")
      const stages = [...dot.matchAll(/^\s*"([^"]+)";/gm)].map((m) => m[1]!)
      assert.ok(stages.length >= 3, `stages in ${dot}`)
      const text = await page.locator(".dag svg").textContent()
      for (const s of stages) assert.ok(text?.includes(s), `stage ${s} drawn`)
      assert.match(text ?? "", /SOM\.fitPredict\s*[\d.]+ m?s \(\d+ % of wall\)\s*[\d,]+ tasks, [\d.]+ m?s task time/, "a stage's time and tasks on its node")
      // issue 31 item 14: every node, Persist's too, has numbers and the same font
      for (const s of stages) assert.match(text ?? "", new RegExp(`${s.replace(/\./g, "\\.")}\\s*[\\d.]+ m?s \\(\\d+ % of wall\\)`), `${s}'s node has numbers`)
      const fonts = await page.locator(".dag svg text").evaluateAll((ts) => [...new Set(ts.map((t: any) => t.getAttribute("font-family")))])
      assert.deepEqual(fonts, ["Helvetica,sans-Serif"], "one font for every node and edge label")
      const table = await page.locator("#table-stages tbody tr").count()
      assert.ok(table >= 3)
      await page.locator("#stages").screenshot({ path: join(dir, "report-stages.png") })
      console.log(`# screenshot: ${join(dir, "report-stages.png")} (stage DAG with times)`)
    })
  })

  describe("dasf-small's report", () => {
    let page: Page
    let consoleErrors: Array<string>
    let external: Array<string>
    let computeEvents = 0
    before(async () => {
      const files = [join(data, "small-TracePlugin.msgpack"), join(data, "small-ResourceMonitor-gpusurrogate.msgpack")]
      const { events } = await loadEvents(files)
      computeEvents = events.filter((e) => e.name === "Compute" && e.phase === "X").length
      const dir = await mkdtemp(join(tmpdir(), "tessera-e2e-dasf-"))
      const file = join(dir, "report.html")
      // a small detail limit: the whole run draws aggregated bars
      await writeFile(file, await renderHtml(fromEvents(events, { title: "dasf-small" }), { maxDetail: 100 }))
      ;({ page, consoleErrors, external } = await open(browser, file))
    })

    it("loads with no console errors and no network requests", () => {
      assert.deepEqual(consoleErrors, [])
      assert.deepEqual(external, [])
    })

    it("aggregates bars above the detail limit and shows single tasks once zoomed in", async () => {
      const whole = await settle(page)
      assert.equal(whole.visible, computeEvents)
      assert.equal(whole.detail, false)
      const agg = await bars(page)
      assert.ok(agg.length > 0 && agg.length < computeEvents && agg.every((b) => b.datum.agg), `${agg.length} aggregated bars`)
      const { text } = await hoverWidest(page)
      assert.match(text, /tasks\s*\d+/)
      assert.match(text, /busy\s*\d+ %/)
      const box = (await page.locator("#task-stream canvas").boundingBox())!
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 3)
      let stream = whole
      for (let i = 0; i < 20 && !stream.detail; i++) {
        await page.mouse.wheel(0, -400)
        stream = await settle(page)
      }
      assert.equal(stream.detail, true, `single tasks after zooming in (${stream.visible} visible)`)
      const single = await bars(page)
      assert.equal(single.length, stream.visible)
    })
  })

  describe("a 2-process cluster run's report", () => {
    let dir: string
    let page: Page
    let consoleErrors: Array<string>
    let transferEvents = 0
    let clockWorkers = 0
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), "tessera-e2e-cluster-"))
      await promisify(execFile)(process.execPath, [main, "demo", "--cluster", "local:2", "--workers", "2", "--samples", "20000", "--profile", "c", "--report", "report.html", "--json"], { cwd: dir })
      const traces = (await readdir(dir)).filter((f) => f.startsWith("c-TracePlugin-")).map((f) => join(dir, f))
      const { events } = await loadEvents(traces)
      transferEvents = events.filter((e) => e.name === "Transfer" && e.phase === "X").length
      clockWorkers = new Set(events.filter((e) => e.name === "Clock Offset").map((e) => String(e.thread_id))).size
      ;({ page, consoleErrors } = await open(browser, join(dir, "report.html")))
    })

    it("draws every peer fetch on the receiving worker's row, with keys, bytes, peer and MB/s on hover", async () => {
      assert.deepEqual(consoleErrors, [])
      assert.ok(transferEvents > 0, "the run fetched from peers")
      await showStream(page)
      await settle(page)
      const moved = (await bars(page, true)).filter((b) => b.datum.x !== undefined)
      assert.equal(moved.length, transferEvents)
      const rows = await page.evaluate(() => {
        const D = (globalThis as any).tessera.data
        return D.transfers.worker.map((w: number) => D.workers[w]) as Array<string>
      })
      assert.ok(moved.every((b) => b.datum.worker === rows[b.datum.x!]), "each on its receiving worker's row")
      await page.locator("#stream").screenshot({ path: join(dir, "report-cluster-stream.png") })
      // zoom in on the first transfer, so its bar is wide enough to hover
      const box = (await page.locator("#task-stream canvas").boundingBox())!
      const first = moved[0]!
      for (let i = 0; i < 8; i++) {
        await page.mouse.move(first.x, box.y + box.height / 3)
        await page.mouse.wheel(0, -400)
        await settle(page)
      }
      const bar = (await bars(page, true)).filter((b) => b.datum.x !== undefined).reduce((a, b) => (b.width > a.width ? b : a))
      await page.mouse.move(bar.x, bar.y)
      await page.waitForSelector("#tooltip", { state: "visible", timeout: 5000 })
      const text = (await page.textContent("#tooltip")) ?? ""
      for (const re of [/peer fetch/, /keys \(\d+\)/, /bytes\s*[\d.]+ (B|KiB|MiB)/, /from peer\s*worker-/, /MB\/s/]) assert.match(text, re)
      await page.screenshot({ path: join(dir, "report-cluster-transfer-hover.png") })
    })

    it("shows the bandwidth tables and the clock offsets with their uncertainty", async () => {
      const section = page.locator("#transfers")
      const text = (await section.textContent()) ?? ""
      for (const title of ["Transfer bandwidth by worker pair", "Transfer bandwidth by data type", "Transfer time per function", "Compute vs transfer", "Clock offsets"]) {
        assert.ok(text.includes(title), title)
      }
      assert.match(text, /\d+ transfers moved [\d.]+ (B|KiB|MiB)/)
      const clockRows = await page.locator("#transfers table").last().locator("tbody tr").count()
      assert.equal(clockRows, clockWorkers)
      await section.screenshot({ path: join(dir, "report-cluster-transfers.png") })
      console.log(`# screenshots: ${join(dir, "report-cluster-stream.png")}, ${join(dir, "report-cluster-transfer-hover.png")}, ${join(dir, "report-cluster-transfers.png")}`)
    })
  })

  describe("a GPU run's report", { skip: gpuSkip }, () => {
    it("draws the GPU worker's own row, its device copies and its device memory", async () => {
      const dir = await mkdtemp(join(tmpdir(), "tessera-e2e-gpu-"))
      await promisify(execFile)(process.execPath, [main, "demo", "--gpu", "--workers", "1", "--samples", "3000", "--chunk-rows", "500", "--profile", "g", "--report", "report.html", "--json"], { cwd: dir })
      const { consoleErrors, page } = await open(browser, join(dir, "report.html"))
      assert.deepEqual(consoleErrors, [])
      const info = await page.evaluate(() => {
        const t = (globalThis as any).tessera
        const D = t.data
        const device = t.views["timelines"].data("memory_device") as Array<{ worker: string; device: number }>
        return {
          directions: [...new Set(D.transfers.direction)] as Array<string>,
          transferRows: [...new Set(D.transfers.worker.map((w: number) => D.workers[w]))] as Array<string>,
          deviceWorkers: [...new Set(device.map((r) => r.worker))] as Array<string>,
          deviceMax: Math.max(...device.map((r) => r.device))
        }
      })
      assert.deepEqual(info.directions.sort(), ["device-to-host", "host-to-device"])
      assert.equal(info.transferRows.length, 1, "device copies on the GPU worker's row")
      assert.deepEqual(info.deviceWorkers, info.transferRows, "device bytes of the GPU worker only")
      assert.ok(info.deviceMax > 0)
      assert.match((await page.textContent("header")) ?? "", new RegExp(`GPU: ${info.transferRows[0]}`))
      await showStream(page)
      await settle(page)
      await page.locator("#stream").screenshot({ path: join(dir, "report-gpu-stream.png") })
      await page.locator("#resources").screenshot({ path: join(dir, "report-gpu-resources.png") })
      await page.locator("#transfers").screenshot({ path: join(dir, "report-gpu-transfers.png") })
      console.log(`# screenshots: ${join(dir, "report-gpu-stream.png")}, ${join(dir, "report-gpu-resources.png")}, ${join(dir, "report-gpu-transfers.png")}`)
      await page.close()
    })
  })

  describe("a failed run's report", () => {
    it("issue 31 item 9: shows the failure first, the erred task in its own colour (hover: its error as text) and its stage outlined", async () => {
      const evil = `<img src=x onerror=alert(1)>"'`
      const task = (w: string, start: number, end: number, stage: string, name: string, extra: Record<string, unknown> = {}) => ({
        name: "Compute", timestamp: end, duration: end - start, phase: "X" as const, process_id: "h", thread_id: w,
        args: { key: `('${name}-1', ${start})`, name, state: "memory", size: 8, dependencies: [], dependents: [], stage, ...extra }
      })
      const { dir, dialogs, consoleErrors, external, page } = await openEvents(browser, "tessera-e2e-failed-", "fail-TracePlugin-h.msgpack", [
        { name: "Pipeline Graph", timestamp: 100, phase: "I", scope: "g", process_id: "h", thread_id: "main", args: { pipeline: "p", dot: `digraph "p" {\n  "load";\n  "signedLog";\n  "load" -> "signedLog" [label="X"];\n}` } },
        { name: "Driver", timestamp: 100.5, duration: 0.5, phase: "X", process_id: "h", thread_id: "driver", args: { key: "d-1", activity: "setup", compute: 1, dependencies: [], tasks: 0 } },
        task("worker-h-0", 100.6, 101.5, "load", "read_npy"),
        task("worker-h-1", 100.6, 101.4, "load", "read_npy"),
        task("worker-h-0", 101.6, 102, "signedLog", "signed_log"),
        task("worker-h-1", 101.6, 101.9, "signedLog", "signed_log", { state: "erred", error: `kernel signedLog threw: ${evil} at kernels.ts:12:7`, traceback: "Error\n    at signedLog (file:///p/kernels.ts:12:7)" })
      ])
      // the failure is the first section, and names the task, its stage and its error
      assert.equal(await page.locator("main > section").first().getAttribute("id"), "failure")
      const banner = (await page.textContent("#failure-banner")) ?? ""
      assert.ok(banner.includes("The run failed.") && banner.includes("('signed_log-1', 101.6)") && banner.includes("signedLog"), banner)
      assert.ok(banner.includes(`kernel signedLog threw: ${evil} at kernels.ts:12:7`), "the error shown as text")
      await page.locator("#failure").screenshot({ path: join(dir, "report-failure.png") })
      // the erred task: its own colour in the stream, its error on hover
      await showStream(page)
      await settle(page)
      const all = await bars(page)
      const erred = all.filter((b) => b.datum.c === "(erred task)")
      assert.equal(erred.length, 1, "one erred bar")
      assert.equal(erred[0]!.datum.fill, "#111111")
      assert.ok(all.filter((b) => b.datum.c !== "(erred task)").every((b) => b.datum.fill !== "#111111"), "no other bar in the erred colour")
      await page.mouse.move(erred[0]!.x, erred[0]!.y)
      await page.waitForSelector("#tooltip", { state: "visible", timeout: 5000 })
      const tip = (await page.textContent("#tooltip")) ?? ""
      assert.ok(tip.includes("erred") && tip.includes(evil), tip)
      await page.locator("#stream").screenshot({ path: join(dir, "report-failure-stream.png") })
      // its stage outlined in the graph
      const dag = (await page.locator(".dag svg").textContent()) ?? ""
      assert.match(dag, /FAILED: 1 erred task/)
      await page.locator("#stages").screenshot({ path: join(dir, "report-failure-stages.png") })
      console.log(`# screenshots: ${join(dir, "report-failure.png")}, ${join(dir, "report-failure-stream.png")}, ${join(dir, "report-failure-stages.png")}`)
      assert.equal(await page.evaluate(() => (globalThis as any).document.querySelectorAll("img").length), 0)
      assert.deepEqual(dialogs, [])
      assert.deepEqual(consoleErrors, [])
      assert.deepEqual(external, [])
      await page.close()
    })
  })

  describe("a report of a hostile trace", () => {
    it("runs nothing when every node and edge of its stage DAG is clicked", async () => {
      const { dialogs, consoleErrors, external, page } = await openEvents(browser, "tessera-e2e-xss-", "xss-TracePlugin-h.msgpack", [
        { name: "Pipeline Graph", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: "main", args: { pipeline: "p", dot: hostileDot } },
        {
          name: "Compute", timestamp: 2, phase: "X", process_id: "h", thread_id: "worker-h-0", duration: 0.5,
          args: { key: "<img src=x onerror=alert(1)>-0", name: "x", state: "memory", size: 8, dependencies: [], dependents: [] }
        }
      ])
      const url = page.url()
      const shapes = page.locator(".dag svg g > ellipse, .dag svg g > polygon, .dag svg g > path, .dag svg text")
      const n = await shapes.count()
      assert.ok(n >= 5, `${n} clickable shapes in the DAG`)
      for (let i = 0; i < n; i++) await shapes.nth(i).click({ force: true })
      await page.waitForTimeout(200)
      assert.deepEqual(dialogs, [])
      assert.equal(page.url(), url)
      assert.equal(await page.locator(".dag a, .dag script, .dag foreignObject").count(), 0)
      assert.equal(await page.evaluate(() => (globalThis as any).document.querySelectorAll("img").length), 0)
      assert.deepEqual(consoleErrors, [])
      assert.deepEqual(external, [])
      await page.close()
    })

    it("shows hostile stage names, driver fields and thread ids as text in the tooltips, charts and tables", async () => {
      const evil = `<img src=x onerror=alert(1)>"'`
      const { dialogs, consoleErrors, external, page } = await openEvents(browser, "tessera-e2e-xss-stage-", "xss-TracePlugin-h.msgpack", [
        { name: "Pipeline Graph", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: "main", args: { pipeline: "p", dot: `digraph p { "${evil.replace(/"/g, "\\\"")}"; }` } },
        { name: "Driver", timestamp: 1.5, duration: 0.5, phase: "X", process_id: "h", thread_id: "driver", args: { key: evil, activity: evil, compute: 1, dependencies: [], tasks: 0 } },
        {
          name: "Compute", timestamp: 2, phase: "X", process_id: "h", thread_id: evil, duration: 0.5,
          args: { key: `${evil}-0`, name: evil, stage: evil, state: "memory", size: 8, dependencies: [], dependents: [] }
        },
        {
          name: "Transfer", timestamp: 1.4, duration: 0.2, phase: "X", process_id: "h", thread_id: evil,
          args: { keys: [`${evil}-0`], bytes: 8, worker: evil, peer: evil, start: 1.2, stop: 1.4, serialize: 0.01, deserialize: 0.01 }
        },
        { name: "Clock Offset", timestamp: 1, phase: "I", scope: "t", process_id: "h", thread_id: evil, args: { worker: evil, offset: 0.001, uncertainty: 0.0005 } }
      ])
      await showStream(page)
      await settle(page)
      const all = await bars(page, true)
      assert.ok(all.some((b) => b.datum.d !== undefined) && all.some((b) => b.datum.i !== undefined) && all.some((b) => b.datum.x !== undefined), "a task, a driver segment and a transfer drawn")
      for (const b of all) {
        await page.mouse.move(b.x, b.y)
        await page.waitForSelector("#tooltip", { state: "visible", timeout: 5000 })
        assert.ok(((await page.textContent("#tooltip")) ?? "").includes(evil), "the trace's string shown as text")
      }
      assert.ok(((await page.textContent("#table-stages")) ?? "").includes(evil))
      assert.ok(((await page.textContent("#transfers")) ?? "").includes(evil), "transfer and clock tables show the strings as text")
      assert.ok(((await page.textContent("#run-summary")) ?? "").includes("tasks"))
      assert.equal(await page.evaluate(() => (globalThis as any).document.querySelectorAll("img").length), 0)
      assert.deepEqual(dialogs, [])
      assert.deepEqual(consoleErrors, [])
      assert.deepEqual(external, [])
      await page.close()
    })
  })
})

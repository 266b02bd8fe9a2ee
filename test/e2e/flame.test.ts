/**
 * The report's flame graph in a real headless browser (chromium via playwright-core):
 * `tessera demo --profile --report` (small, 2 workers), then the flame graph section
 * draws every sample of the statistical profiler's database for the whole run, redraws
 * with the samples inside the task stream's window when it is zoomed (and all of them
 * again on reset), and per function: the SOM epochs' samples end in a kernel of
 * src/kernels/cluster.ts (printed, with the screenshots' paths).
 *
 * Skips with a message where /usr/bin/chromium is absent (`.ci/run` installs it).
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdtemp, readdir } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { after, before, describe, it } from "node:test"
import { fileURLToPath, pathToFileURL } from "node:url"
import { chromium } from "playwright-core"
import type { Browser, Page } from "playwright-core"
import { frameTimes, loadProfilePromise, sampledSeconds } from "../../src/analysis/Profile.ts"

const CHROMIUM = "/usr/bin/chromium"
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium; .ci/run does) to run the browser tests`
if (skip !== false) console.log(`# skipping flame graph browser test: ${skip}`)

const flame = (page: Page) => page.evaluate(() => (globalThis as any).tessera.flame as { boxes: number; samples: number; seconds: number })
const settled = (page: Page) =>
  page.evaluate(async () => {
    const t = (globalThis as any).tessera
    await t.idle()
    await new Promise((r) => setTimeout(r, 50))
    await t.flameReady
  })

describe("report flame graph (browser)", { skip }, () => {
  let browser: Browser
  let page: Page
  let dir: string
  let samples = 0
  let seconds = 0
  let somKernel = ""
  const errors: Array<string> = []
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tessera-e2e-flame-"))
    await promisify(execFile)(process.execPath, [main, "demo", "--samples", "20000", "--workers", "2", "--profile", "fl", "--report", "report.html", "--json"], { cwd: dir })
    const sampleFiles = (await readdir(dir)).filter((f) => f.startsWith("fl-StatisticalProfiler-")).map((f) => join(dir, f))
    assert.equal(sampleFiles.length, 1, `one statistical profiler database in ${dir}`)
    const data = await loadProfilePromise(sampleFiles)
    samples = data.samples.time.length
    seconds = sampledSeconds(data)
    const top = frameTimes(data, { function: "som_epoch" })[0]
    somKernel = top === undefined ? "" : `${top.frame.functionName} (${top.frame.url}:${top.frame.line + 1}), ${top.selfSamples} samples`
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())))
    page.on("pageerror", (e) => void errors.push(String(e)))
    await page.goto(pathToFileURL(join(dir, "report.html")).href)
    await page.evaluate(async () => {
      await (globalThis as any).tessera.ready
      await (globalThis as any).tessera.flameReady
    })
  })
  after(async () => {
    await browser?.close()
  })

  it("draws every sample of the run, with no page errors", async () => {
    assert.deepEqual(errors, [])
    assert.ok(samples > 0)
    const f = await flame(page)
    assert.equal(f.samples, samples)
    assert.ok(f.boxes > 3)
    // issue 31 item 1: the caption's thread time is the samples' weights summed, as analyze -a profile sums them
    assert.ok(Math.abs(f.seconds - seconds) < 1e-3, `page ${f.seconds} s, trace ${seconds} s`)
    assert.match((await page.textContent("#flame-window")) ?? "", new RegExp(`${samples} samples, ${seconds.toFixed(3)} s of thread time`))
    const shot = join(dir, "flame-run.png")
    await page.locator("section:has(#flame)").screenshot({ path: shot })
    console.log(`# flame graph screenshot (whole run): ${shot}`)
  })

  it("follows the task stream's zoom, and its reset", async () => {
    // the task stream is below the time breakdown: bring it into the viewport before the wheel
    await page.locator("#task-stream canvas").scrollIntoViewIfNeeded()
    const box = (await page.locator("#task-stream canvas").boundingBox())!
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 3)
    await page.mouse.wheel(0, -400)
    await settled(page)
    const zoomed = await flame(page)
    assert.ok(zoomed.samples < samples, `${zoomed.samples} of ${samples} samples in the zoomed window`)
    assert.match((await page.textContent("#flame-window")) ?? "", /the task stream's selection/)
    await page.mouse.dblclick(box.x + box.width / 2, box.y + box.height / 3)
    await settled(page)
    assert.equal((await flame(page)).samples, samples)
  })

  it("shows one function's samples: the SOM epochs spend their time in a kernel of cluster.ts", async () => {
    await page.selectOption("#flame-pick", { label: "function: som_epoch" })
    await settled(page)
    const f = await flame(page)
    assert.ok(f.samples > 0 && f.samples < samples)
    console.log(`# SOM epochs' top frame by self time: ${somKernel}`)
    assert.match(somKernel, /src\/kernels\/cluster\.ts/)
    const shot = join(dir, "flame-som_epoch.png")
    await page.locator("section:has(#flame)").screenshot({ path: shot })
    console.log(`# flame graph screenshot (som_epoch): ${shot}`)
  })
})

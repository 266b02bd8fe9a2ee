/**
 * Issue 34: the live dashboard in a real headless browser (Debian's chromium driven by
 * playwright-core).
 *
 * - a demo run (`tessera demo --dashboard 127.0.0.1:0 --profile …`, 100,000 samples on 2
 *   workers): the page, opened while the run goes, shows the task count growing (the
 *   dashboard's live samples, shared with `--profile`'s sampler: every sample it wrote); at the
 *   end it equals the trace's Compute events (the engine's own count) exactly, every
 *   progress bar is done, the stage DAG's stages are coloured done, and the page says
 *   the run is over (the process holds it up until SIGINT);
 * - a 2-process cluster run (`--cluster local:2`): both worker processes have rows and
 *   tasks, transfers are drawn and tabled by worker pair;
 * - `tessera dashboard -d` over the demo's databases: the page's numbers are the
 *   report's (tasks, per-stage and per-function counts, wall time);
 * - hostile strings (keys, functions, stages, workers, title) run no script and show as
 *   text; bound off loopback the page needs its token.
 *
 * Screenshots of every tab go to a temporary folder (paths printed); no page may log an
 * error or request anything outside the dashboard. Skips where /usr/bin/chromium is
 * absent (`.ci/run` installs it).
 */
import assert from "node:assert/strict"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdtemp, readdir, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { Effect, Exit, Scope } from "effect"
import { chromium } from "playwright-core"
import type { Browser, Page } from "playwright-core"
import * as Dashboard from "../../src/dashboard/Dashboard.ts"
import { LiveState } from "../../src/dashboard/LiveState.ts"
import { SchedulerLiveState } from "../../src/dashboard/SchedulerFeed.ts"
import { loadReportDataPromise } from "../../src/report/Report.ts"
import { diagnoseFilesPromise } from "../../src/analysis/Diagnose.ts"
import { loadProfilePromise } from "../../src/analysis/Profile.ts"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import { fanout } from "../../bench/engine/BenchGraphs.ts"
import { hostileDot } from "../fixtures/hostile.ts"

// page-side code (evaluated in the browser) names its globals
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const window: any, document: any, requestAnimationFrame: any

const CHROMIUM = "/usr/bin/chromium"
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const hasChromium = existsSync(CHROMIUM)
const skip = hasChromium ? false : `${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium; .ci/run does) to run the browser tests`
if (!hasChromium) console.log(`# skipping dashboard browser tests: ${skip}`)

const tabs = ["status", "workers", "memory", "transfers", "stages", "profile", "findings"] as const

/** A `tessera` process serving a dashboard: its URL once printed, its stderr, and a way to stop it. */
const serve = (args: ReadonlyArray<string>, cwd: string) => {
  const child: ChildProcess = spawn(process.execPath, [main, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] })
  let stderr = ""
  let stdout = ""
  child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()))
  const url = new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString()
      const m = /dashboard: (http:\/\/\S+)/.exec(stderr)
      if (m !== null) resolve(m[1]!)
    })
    child.on("exit", (code) => reject(new Error(`tessera ${args.join(" ")} exited ${code} before printing its URL:\n${stderr}`)))
  })
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return {
    url,
    stderr: () => stderr,
    stdout: () => stdout,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGINT")
      return exited
    }
  }
}

const open = async (browser: Browser, url: string) => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  const errors: Array<string> = []
  const external: Array<string> = []
  const origin = new URL(url).origin
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text())
  })
  page.on("pageerror", (e) => errors.push(String(e)))
  await page.route("**/*", (route) => {
    const u = route.request().url()
    if (u.startsWith(origin)) return route.continue()
    external.push(u)
    return route.abort()
  })
  await page.goto(url)
  return { page, errors, external }
}

const pageState = (page: Page) =>
  page.evaluate(() => {
    const t = (window as unknown as { tessera: { state: { counts: Record<string, number> | null; over: boolean; groups: Array<{ name: string; stage: string; done: number; total: number; erred: number; running: number } | null>; workers: Array<{ name: string; tasks: number }>; pairs: Record<string, unknown>; t: number }; rects: { k: Array<number> }; errors: Array<string>; mode: string } }).tessera
    return {
      counts: t.state.counts,
      over: t.state.over,
      groups: t.state.groups.filter((g) => g !== null),
      workers: t.state.workers,
      pairs: Object.keys(t.state.pairs).length,
      rectKinds: [...new Set(t.rects.k)],
      errors: t.errors,
      text: document.getElementById("n-tasks")!.textContent,
      status: document.getElementById("status")!.textContent,
      time: t.state.t
    }
  })

const shootTabs = async (page: Page, dir: string, prefix: string) => {
  const files: Array<string> = []
  for (const tab of tabs) {
    await page.click(`#tabs button[data-tab=${tab}]`)
    await page.waitForTimeout(700)
    const file = join(dir, `${prefix}-${tab}.png`)
    await page.screenshot({ path: file, fullPage: true })
    files.push(file)
  }
  await page.click(`#tabs button[data-tab=status]`)
  console.log(`# ${prefix} screenshots: ${files.join(" ")}`)
}

const waitOver = async (page: Page, ms: number) => {
  const until = Date.now() + ms
  for (;;) {
    const s = await pageState(page)
    if (s.over) return s
    if (Date.now() > until) throw new Error(`the page never showed the run over: ${JSON.stringify(s.counts)}`)
    await page.waitForTimeout(100)
  }
}

describe("issue 34: the dashboard in a browser", { skip, timeout: 600_000 }, () => {
  let browser: Browser
  let dir: string
  const cleanups: Array<() => Promise<unknown>> = []
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tessera-dashboard-"))
    console.log(`# dashboard test artifacts: ${dir}`)
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] })
  })
  after(async () => {
    for (const c of cleanups) await c().catch(() => undefined)
    await browser?.close()
  })

  it("issue 34: during a demo run the count grows; at the end it equals the engine's count and every bar is done", async () => {
    const run = serve(["demo", "--samples", "100000", "--workers", "2", "--dashboard", "127.0.0.1:0", "--profile", join(dir, "live"), "--log-level", "warn"], dir)
    cleanups.push(run.stop)
    const url = await run.url
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/, "loopback, no token")
    const { page, errors, external } = await open(browser, url)
    const seen: Array<number> = []
    const until = Date.now() + 120_000
    let s = await pageState(page)
    while (!s.over && Date.now() < until) {
      if (s.counts !== null && (seen.length === 0 || seen.at(-1) !== s.counts.tasks)) seen.push(s.counts.tasks)
      await page.waitForTimeout(80)
      s = await pageState(page)
    }
    assert.ok(s.over, "the page shows the run over")
    const during = seen.filter((n) => n > 0 && n < s.counts!.tasks)
    assert.ok(during.length >= 2, `the count grew while the run went: ${seen.join(", ")}`)
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! >= seen[i - 1]!, "never goes back")
    await page.waitForTimeout(500)
    s = await pageState(page)
    const dbs = (await readdir(dir)).filter((f) => f.startsWith("live-") && f.endsWith(".msgpack")).map((f) => join(dir, f))
    const data = await loadReportDataPromise(dbs)
    assert.equal(s.counts!.tasks, data.eventCounts["Compute"], "the page's count is the engine's, exactly")
    assert.equal(s.text, data.eventCounts["Compute"]!.toLocaleString("en-US"))
    assert.equal(s.counts!.erred, 0)
    assert.ok(s.groups.length > 5)
    for (const g of s.groups) assert.deepEqual([g.name, g.done, g.running, g.erred], [g.name, g.total, 0, 0], `${g.stage}/${g.name} done`)
    // the page's progress table says so too, once drawn (the page's drawing budget may hold the last draw on a loaded machine)
    await page.waitForFunction(() => {
      const trs = [...document.querySelectorAll("#progress-table tr")].slice(1)
      return trs.length > 0 && trs.every((tr) => /^(\d+) \/ \1$/.test(tr.children[3]!.textContent ?? ""))
    }, undefined, { timeout: 30_000 })
    await shootTabs(page, dir, "live")
    // the stage DAG (the pipeline's, laid out by the server), its stages coloured done
    await page.click(`#tabs button[data-tab=stages]`)
    await page.waitForFunction(() => document.querySelectorAll("#dag svg g[data-state=done]").length >= 3, undefined, { timeout: 30_000 })
    const states = await page.$$eval("#dag svg g[data-state]", (gs) => gs.map((g) => [g.firstElementChild!.textContent, g.getAttribute("data-state")]))
    assert.deepEqual(states.filter(([, st]) => st !== "done"), [], "every stage with tasks done")
    assert.ok(states.some(([n]) => n === "KMeans.fitPredict"))
    await page.click(`#tabs button[data-tab=status]`)
    assert.match(await page.textContent("#status") ?? "", /run finished/)
    assert.deepEqual(errors, [])
    assert.deepEqual(external, [])
    assert.deepEqual(s.errors, [])
    assert.match(run.stderr(), /the page stays up with its final state at http:\/\/127\.0\.0\.1:\d+\/ until Ctrl-C/)
    assert.match(run.stdout(), /wall time: /, "the results come first")
    // after the run: the Findings tab diagnoses the databases --profile wrote
    await page.click(`#tabs button[data-tab=findings]`)
    await page.waitForFunction(() => {
      const f = (window as unknown as { tessera: { findings?: { status: string } } }).tessera.findings
      return f !== undefined && f.status !== "pending"
    }, undefined, { timeout: 120_000 })
    const live = await page.evaluate(() => (window as unknown as { tessera: { findings: { status: string; source: string; findings?: Array<{ rule: string }> } } }).tessera.findings)
    assert.equal(live.status, "ready", JSON.stringify(live))
    assert.match(live.source, /live-TracePlugin/)
    const expected = await diagnoseFilesPromise(dbs)
    assert.deepEqual(live.findings!.map((f) => f.rule), expected.findings.map((f) => f.rule), "tessera diagnose's findings of the same databases")
    // and the Profile tab: the samples --profile wrote, read after the run
    await page.click(`#tabs button[data-tab=profile]`)
    await page.waitForFunction(() => (window as unknown as { tessera: { flame?: unknown } }).tessera.flame !== undefined, undefined, { timeout: 120_000 })
    const sampled = await page.evaluate(() => (window as unknown as { tessera: { flame: { samples: number } } }).tessera.flame.samples)
    const written = (await loadProfilePromise(dbs)).samples.time.length
    assert.equal(sampled, written, "every sample of the run")
    // the live structure got the same records as the profiler: every sample it wrote
    const liveAll = await page.evaluate(() => fetch("/api/flame?live=1").then((r) => r.json())) as { live: boolean; samples: number }
    assert.equal(liveAll.live, true)
    assert.equal(liveAll.samples, written, "the live samples are the ones --profile wrote")
    await page.click(`#tabs button[data-tab=status]`)
    await page.close()
    const code = await run.stop()
    assert.notEqual(code, null)
  })

  it("issue 34: a trace replay (tessera dashboard -d) shows the report's numbers", async () => {
    const dbs = (await readdir(dir)).filter((f) => f.startsWith("live-") && f.endsWith(".msgpack")).map((f) => join(dir, f))
    assert.ok(dbs.length >= 2, "the live run's databases")
    const data = await loadReportDataPromise(dbs)
    const replay = serve(["dashboard", "--address", "127.0.0.1:0", "-d", ...dbs], dir)
    cleanups.push(replay.stop)
    const { page, errors, external } = await open(browser, await replay.url)
    await page.waitForFunction(() => (window as unknown as { tessera: { state: { counts: unknown } } }).tessera.state.counts !== null)
    await page.waitForTimeout(800)
    const s = await pageState(page)
    assert.ok(s.over)
    assert.equal(s.counts!.tasks, data.tasks.start.length)
    // per stage and function: the report's counts
    const expected = new Map<string, number>()
    for (let i = 0; i < data.tasks.start.length; i++) {
      const stage = data.tasks.stage[i]! >= 0 ? data.stages[data.tasks.stage[i]!]! : ""
      const k = `${stage}/${data.functions[data.tasks.fn[i]!]}`
      expected.set(k, (expected.get(k) ?? 0) + 1)
    }
    const got = new Map(s.groups.map((g) => [`${g.stage}/${g.name}`, g.done]))
    assert.deepEqual(got, expected)
    assert.ok(Math.abs(s.time - data.wall) < 1e-6, `wall ${s.time} vs the report's ${data.wall}`)
    // zoom into a window: single tasks fetched from the server
    const zoomed = await page.evaluate(async (wall) => {
      const r = await fetch(`/api/detail?from=${wall / 2}&to=${wall / 2 + wall / 50}&limit=4000`).then((x) => x.json()) as { count: number; complete: boolean }
      return r
    }, data.wall)
    assert.ok(zoomed.complete)
    await shootTabs(page, dir, "replay")
    assert.deepEqual(errors, [])
    assert.deepEqual(external, [])
    await page.close()
    await replay.stop()
  })

  it("issue 35: the Findings tab of a replay shows tessera diagnose's findings, in its order; a finding's evidence zooms the task stream", async () => {
    const dbs = (await readdir(dir)).filter((f) => f.startsWith("live-") && f.endsWith(".msgpack")).map((f) => join(dir, f))
    assert.ok(dbs.length >= 2, "the live run's databases")
    const [expected, data] = await Promise.all([diagnoseFilesPromise(dbs), loadReportDataPromise(dbs)])
    const replay = serve(["dashboard", "--address", "127.0.0.1:0", "-d", ...dbs], dir)
    cleanups.push(replay.stop)
    const { page, errors, external } = await open(browser, await replay.url)
    await page.click(`#tabs button[data-tab=findings]`)
    await page.waitForFunction(() => {
      const f = (window as unknown as { tessera: { findings?: { status: string } } }).tessera.findings
      return f !== undefined && f.status !== "pending"
    }, undefined, { timeout: 120_000 })
    const shown = await page.$$eval("#findings li.finding", (lis) => lis.map((li) => ({ rule: li.getAttribute("data-rule"), text: li.textContent ?? "" })))
    assert.deepEqual(shown.map((f) => f.rule), expected.findings.map((f) => f.rule), "the same rule ids in the same order")
    expected.findings.forEach((f, i) => {
      assert.ok(shown[i]!.text.includes(f.message), `finding ${i}: its sentence`)
      assert.ok(shown[i]!.text.includes(f.fix), `finding ${i}: its fix`)
      assert.ok(shown[i]!.text.includes(f.severity), `finding ${i}: its severity`)
    })
    const headline = expected.findings.length === 0 ? /No findings/ : expected.clean ? /A clean run/ : /of high severity/
    assert.match(await page.textContent("#findings-summary") ?? "", headline)
    await page.screenshot({ path: join(dir, "replay-findings.png"), fullPage: true })
    console.log(`# findings screenshot: ${join(dir, "replay-findings.png")}`)
    if (expected.findings.length > 0) {
      // the evidence's range on the page's axis: seconds from the trace's start
      const f = expected.findings[0]!
      const from = expected.runStart + f.evidence.start - data.t0
      const to = expected.runStart + f.evidence.end - data.t0
      await page.click(`#findings li.finding button.zoom[data-index="0"]`)
      // drawn once the page's drawing budget allows (after a draw of d ms it waits 9 d: seconds on a loaded machine)
      const mid = (from + to) / 2
      await page.waitForFunction(([a, b]) => {
        const w = (window as unknown as { tessera: { window: [number, number] } }).tessera.window
        const m = (a! + b!) / 2
        return w[0] <= m + 1e-9 && w[1] >= m - 1e-9 && (b! - a! < 1e-3 || Math.abs(w[0] - a!) < 1e-6 && Math.abs(w[1] - b!) < 1e-6)
      }, [from, to], { timeout: 60_000 }).catch(() => undefined)
      const [win, visible] = await page.evaluate(() => [(window as unknown as { tessera: { window: [number, number] } }).tessera.window, !document.getElementById("tab-status")!.hidden])
      assert.ok(visible, "the Status tab is shown")
      assert.ok(win[0] <= mid + 1e-9 && win[1] >= mid - 1e-9, `the window ${win} shows the evidence ${from}-${to}`)
      if (to - from >= 1e-3) {
        assert.ok(Math.abs(win[0] - from) < 1e-6 && Math.abs(win[1] - to) < 1e-6, `the window ${win} is the evidence ${from}-${to}`)
      }
      await page.screenshot({ path: join(dir, "replay-findings-zoomed.png"), fullPage: true })
    }
    assert.deepEqual(errors, [])
    assert.deepEqual(external, [])
    await page.close()
    await replay.stop()
  })

  it("issue 34: the Profile tab's flame graph of a window (replay) counts exactly the samples in it, by function too", async () => {
    const dbs = (await readdir(dir)).filter((f) => f.startsWith("live-") && f.endsWith(".msgpack")).map((f) => join(dir, f))
    const [profile, data] = await Promise.all([loadProfilePromise(dbs), loadReportDataPromise(dbs)])
    const s = profile.samples
    assert.ok(s.time.length > 0, "the live run was sampled")
    const replay = serve(["dashboard", "--address", "127.0.0.1:0", "-d", ...dbs], dir)
    cleanups.push(replay.stop)
    const { page, errors, external } = await open(browser, await replay.url)
    await page.click(`#tabs button[data-tab=profile]`)
    await page.waitForFunction(() => (window as unknown as { tessera: { flame?: unknown } }).tessera.flame !== undefined, undefined, { timeout: 120_000 })
    type Flame = { samples: number; seconds: number; boxes: number; window: [number, number] | null; pick: string }
    const flame = () => page.evaluate(() => (window as unknown as { tessera: { flame: Flame } }).tessera.flame)
    // counted here from the samples database, without the page's code: times from the trace's start
    const count = (a: number, b: number, fn?: string) => {
      let n = 0, sec = 0
      for (let q = 0; q < s.time.length; q++) {
        const t = s.time[q]! - data.t0
        if (t < a || t > b) continue
        if (fn !== undefined && s.tasks[s.taskIndex[q]!]!.name !== fn) continue
        n++
        sec += s.weight[q]!
      }
      return { n, sec }
    }
    const whole = await flame()
    assert.equal(whole.window, null)
    assert.equal(whole.samples, s.time.length, "the whole run: every sample")
    // a window whose ends are no sample's time (the page keeps times to the µs)
    const clear = (x: number) => {
      for (let k = 0; k < 1000; k++, x += 3.7e-5) if (!Array.from(s.time).some((t) => Math.abs(t - data.t0 - x) < 5e-6)) return x
      return x
    }
    const a = clear(data.wall * 0.3), b = clear(data.wall * 0.7)
    await page.fill("#flame-from", String(a))
    await page.fill("#flame-to", String(b))
    await page.locator("#flame-to").dispatchEvent("change")
    await page.waitForFunction(() => (window as unknown as { tessera: { flame: Flame } }).tessera.flame.window !== null)
    const inWindow = await flame()
    const expected = count(a, b)
    assert.deepEqual(inWindow.window, [a, b])
    assert.equal(inWindow.samples, expected.n, `samples in ${a}-${b}`)
    assert.ok(Math.abs(inWindow.seconds - expected.sec) <= 1e-6 * Math.max(1, expected.n), `seconds ${inWindow.seconds} vs ${expected.sec}`)
    assert.ok(expected.n > 0 && expected.n < s.time.length, "a window that holds some, not all")
    // by function: the function most sampled in the window
    const byFn = new Map<string, number>()
    for (let q = 0; q < s.time.length; q++) {
      const t = s.time[q]! - data.t0
      if (t >= a && t <= b) byFn.set(s.tasks[s.taskIndex[q]!]!.name, (byFn.get(s.tasks[s.taskIndex[q]!]!.name) ?? 0) + 1)
    }
    const top = [...byFn].sort((x, y) => y[1] - x[1])[0]![0]
    const value = await page.$$eval("#flame-pick option", (os, f) => os.find((o) => o.textContent === `function: ${f}`)?.getAttribute("value") ?? "", top)
    assert.notEqual(value, "", `the select offers ${top}`)
    await page.selectOption("#flame-pick", value)
    await page.waitForFunction((v) => (window as unknown as { tessera: { flame: Flame } }).tessera.flame.pick === v, value)
    const oneFn = await flame()
    const expectedFn = count(a, b, top)
    assert.equal(oneFn.samples, expectedFn.n, `${top}'s samples in the window`)
    assert.ok(Math.abs(oneFn.seconds - expectedFn.sec) <= 1e-6 * Math.max(1, expectedFn.n))
    assert.ok(oneFn.boxes > 1, "drawn")
    await page.screenshot({ path: join(dir, "replay-profile.png"), fullPage: true })
    console.log(`# profile screenshot: ${join(dir, "replay-profile.png")}`)
    // the task stream's window, taken over by a click
    const c = clear(data.wall * 0.1), d = clear(data.wall * 0.2)
    await page.evaluate(([x, y]) => (window as unknown as { tessera: { zoomTo: (a: number, b: number) => void } }).tessera.zoomTo(x!, y!), [c, d])
    await page.waitForFunction((x) => (window as unknown as { tessera: { window: [number, number] } }).tessera.window[0] === x, c, { timeout: 60_000 })
    await page.click(`#tabs button[data-tab=profile]`)
    await page.click("#flame-stream")
    assert.deepEqual((await flame()).window, [c, d])
    assert.equal((await flame()).samples, count(c, d, top).n)
    assert.deepEqual(errors, [])
    assert.deepEqual(external, [])
    await page.close()
    await replay.stop()
  })

  it("issue 34: a cluster run (--cluster local:2) shows both worker processes and their transfers", async () => {
    const run = serve(["demo", "--samples", "20000", "--cluster", "local:2", "--dashboard", "127.0.0.1:0", "--log-level", "warn"], dir)
    cleanups.push(run.stop)
    const { page, errors } = await open(browser, await run.url)
    const s = await waitOver(page, 150_000)
    await page.waitForTimeout(500)
    const f = await pageState(page)
    const workers = f.workers.filter((w) => w.name !== "driver" && w.tasks > 0)
    const processes = new Set(workers.map((w) => /pid\d+/.exec(w.name)?.[0]))
    assert.equal(processes.size, 2, `two worker processes: ${workers.map((w) => w.name).join(", ")}`)
    assert.ok(f.counts!.transfers > 0, "transfers counted")
    assert.ok(f.pairs >= 1, "a worker pair tabled")
    assert.ok(f.rectKinds.includes(2), "transfers drawn in the task stream")
    assert.equal(f.counts!.tasks, s.counts!.tasks)
    await shootTabs(page, dir, "cluster")
    assert.deepEqual(errors, [])
    await page.close()
    await run.stop()
  })

  it("issue 34: zooming older than a small ring draws the window's tasks read from the trace database", async () => {
    const scope = await Effect.runPromise(Scope.make())
    cleanups.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
    const options = { name: "ring", directory: dir, log: () => undefined }
    const traceFile = DefaultProfiler.files(options, 0).traceFile
    const d = await Effect.runPromise(
      Dashboard.make({ port: 0, log: () => undefined, records: true, sampleHost: false, live: { detailCapacity: 64 }, traceFiles: [traceFile] }).pipe(Scope.provide(scope))
    )
    const f = fanout(3000)
    await Effect.runPromise(Engine.compute(f.graph, { keys: f.keys }).pipe(Hooks.provide(d.callbacks), Effect.provide(DefaultProfiler.layer(options)), Effect.provide(Executor.layerSync)))
    d.state.close()
    const ringStart = d.state.rect(d.state.oldest)!.start
    // the trace's tasks, counted here: the window from the first task to just before the ring
    const t = (await loadPromise([traceFile])).tasks
    const spans: Array<[number, number]> = []
    for (let i = 0; i < t.numRows; i++) spans.push([(t.getChild("gather_start")!.get(i) as number) - d.state.t0, (t.getChild("transfer_end")!.get(i) as number) - d.state.t0])
    // from before the first task to the middle of the widest gap between two task starts
    // before the ring (the page rounds times to 0.1 ms: no task start near the window's ends)
    const starts = spans.map((x) => x[0]).filter((x) => x < ringStart).sort((x, y) => x - y)
    let gap = 100
    for (let k = 100; k + 1 < starts.length; k++) if (starts[k + 1]! - starts[k]! > starts[gap + 1]! - starts[gap]!) gap = k
    const a = starts[0]! - 0.01, b = (starts[gap]! + starts[gap + 1]!) / 2
    const expected = spans.filter(([s, e]) => e >= a && s <= b).length
    assert.ok(expected > 100 && expected <= 4000, `tasks in the window: ${expected}`)
    const { page, errors } = await open(browser, d.url)
    await waitOver(page, 30_000)
    await page.evaluate(([x, y]) => (window as unknown as { tessera: { zoomTo: (a: number, b: number) => void } }).tessera.zoomTo(x!, y!), [a, b])
    await page.waitForFunction(() => (window as unknown as { tessera: { detailSource?: string; mode: string } }).tessera.detailSource === "trace", undefined, { timeout: 60_000 })
    await page.waitForFunction(() => (window as unknown as { tessera: { mode: string } }).tessera.mode === "detail", undefined, { timeout: 60_000 })
    const shown = await page.evaluate(() => (window as unknown as { tessera: { shown: number } }).tessera.shown)
    assert.equal(shown, expected, "every task of the window, one rectangle each")
    assert.match(await page.textContent("#detail-note") ?? "", /read from the trace database/)
    await page.screenshot({ path: join(dir, "ring-trace.png"), fullPage: true })
    console.log(`# beyond-the-ring screenshot: ${join(dir, "ring-trace.png")}`)
    assert.deepEqual(errors, [])
    await page.close()
  })

  it("issue 34: the Profile tab draws the live samples' flame graph while a compute runs; at its end the page's count is every sample a second hook got", async () => {
    const scope = await Effect.runPromise(Scope.make())
    cleanups.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
    const d = await Effect.runPromise(
      Dashboard.make({ port: 0, log: () => undefined, records: true, sampleHost: false, sample: { interval: 2, flushSeconds: 0.25 } }).pipe(Scope.provide(scope))
    )
    let counted = 0
    const counter: Hooks.Callbacks = { sampling: { interval: 2 }, samples: (r) => void (counted += r.samples.length) }
    // CPU work, then a task that holds the compute open until the test has seen the page
    const gate = join(dir, "live-flame-gate")
    const spinModule = new URL("../fixtures/kernels/spin.ts", import.meta.url).href
    const specs: Array<TaskGraph.TaskSpec> = Array.from({ length: 6 }, (_, i) => ({ key: `spin-${i}`, kernel: Kernel.ref(spinModule, "task"), args: [2_000_000], stage: "spinning" }))
    specs.push({ key: "gate", kernel: Kernel.ref(new URL("../fixtures/kernels/gate.ts", import.meta.url).href, "waitForFile"), args: [gate, TaskGraph.refs(specs.map((x) => x.key))], stage: "gate" })
    const running = Effect.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs), { keys: ["gate"] }).pipe(
      Hooks.provide(d.callbacks, counter),
      Effect.provide(Executor.layerWorkers({ workers: 2 }))
    ))
    try {
      const { page, errors } = await open(browser, d.url)
      await page.click(`#tabs button[data-tab=profile]`)
      // drawn from the live samples (function "task" among them) while the gate holds the compute
      await page.waitForFunction(() => {
        const t = (window as unknown as { tessera: { flame?: { live: boolean; samples: number; boxes: number }; flameData?: { payload?: { fns: Array<string> } } } }).tessera
        return t.flame !== undefined && t.flame.live && t.flame.boxes > 2 && (t.flameData?.payload?.fns ?? []).includes("task")
      }, undefined, { timeout: 120_000 })
      const during = await page.evaluate(() => (window as unknown as { tessera: { flame: { samples: number }; state: { over: boolean } } }).tessera)
      assert.equal(during.state.over, false, "drawn while the compute runs")
      assert.ok(during.flame.samples > 0)
      assert.match(await page.textContent("#flame-note") ?? "", /^live: /)
      await page.screenshot({ path: join(dir, "live-flame.png"), fullPage: true })
      console.log(`# live flame graph screenshot: ${join(dir, "live-flame.png")}`)
      // a stage picked (the kernels' stages, known from the computes' tasks): its samples
      await page.waitForFunction(() => [...document.querySelectorAll("#flame-pick option")].some((o) => o.textContent === "stage: spinning"), undefined, { timeout: 60_000 })
      const stageValue = await page.$$eval("#flame-pick option", (os) => os.find((o) => o.textContent === "stage: spinning")?.getAttribute("value") ?? "")
      await page.selectOption("#flame-pick", stageValue)
      await page.waitForFunction((v) => {
        const f = (window as unknown as { tessera: { flame: { pick: string; samples: number } } }).tessera.flame
        return f.pick === v && f.samples > 0
      }, stageValue, { timeout: 60_000 })
            // one function picked: the server answers its rows only
      const value = await page.$$eval("#flame-pick option", (os) => os.find((o) => o.textContent === "function: task")?.getAttribute("value") ?? "")
      await page.selectOption("#flame-pick", value)
      await page.waitForFunction((v) => (window as unknown as { tessera: { flame: { pick: string } } }).tessera.flame.pick === v, value)
      await writeFile(gate, "")
      await running
      d.state.close()
      await waitOver(page, 60_000)
      // after the compute (the pool closed: its last samples delivered): the whole run, every sample the counter got
      await page.selectOption("#flame-pick", "all")
      await page.waitForFunction((n) => {
        const t = (window as unknown as { tessera: { flame: { samples: number; pick: string } } }).tessera
        return t.flame.pick === "all" && t.flame.samples === n
      }, counted, { timeout: 60_000 }).catch(async () => {
        assert.fail(`the page's whole-run samples ${JSON.stringify(await page.evaluate(() => (window as unknown as { tessera: { flame: unknown } }).tessera.flame))} are not the ${counted} the counter got`)
      })
      assert.deepEqual(errors, [])
      await page.close()
    } finally {
      await writeFile(gate, "")
      await running.catch(() => undefined)
    }
  })

  it("issue 34: a scheduler's page says how many runs it shows and the records the drivers could not forward", async () => {
    const state = new SchedulerLiveState({ t0: 0 })
    state.runsSeen = 3
    state.dropped.set("run-a", 1234)
    state.dropped.set("run-b", 0)
    state.close()
    const scope = await Effect.runPromise(Scope.make())
    cleanups.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
    const s = await Effect.runPromise(Dashboard.serve(state, { port: 0, sampleHost: false }).pipe(Scope.provide(scope)))
    const { page, errors } = await open(browser, s.url)
    await waitOver(page, 30_000)
    await page.waitForFunction(() => /Runs:/.test(document.getElementById("detail-note")!.textContent ?? ""), undefined, { timeout: 30_000 })
    assert.match(await page.textContent("#detail-note") ?? "", /Runs: 2 shown \(3 since the scheduler started\); 1,234 records the drivers could not forward/)
    assert.deepEqual(errors, [])
    await page.close()
  })

  it("issue 34: hostile strings run no script and show as text; off loopback the token is required", async () => {
    const evil = `<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>\u2028"'`
    const state = new LiveState({ t0: 0 })
    for (let i = 0; i < 20; i++) {
      state.task({
        key: `${evil}-${i}`, name: `${evil}fn`, stage: `${evil}stage`, host: evil, workerId: i % 2, threadId: `${evil}-w${i % 2}`,
        phases: { gather: [i, i], compute: [i, i + 0.5], transfer: [i + 0.5, i + 0.5] }, cpuTime: 0.1, nbytes: 8, shape: [], dtype: "", type: "",
        dependencies: [], dependents: [], state: i === 7 ? "erred" : "memory"
      })
    }
    state.transfer({ keys: [evil], bytes: 1000, host: evil, threadId: `${evil}-w0`, peer: `${evil}peer`, start: 3, stop: 3.2 })
    state.close()
    const scope = await Effect.runPromise(Scope.make())
    cleanups.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
    const local = await Effect.runPromise(Dashboard.serve(state, { port: 0, title: evil, sampleHost: false, dot: hostileDot }).pipe(Scope.provide(scope)))
    const { page, errors } = await open(browser, local.url)
    const dialogs: Array<string> = []
    page.on("dialog", (d) => {
      dialogs.push(d.message())
      void d.dismiss()
    })
    await waitOver(page, 30_000)
    await page.waitForTimeout(500)
    // hover a bar: the tooltip fetches the key and shows it as text
    const box = await page.locator("#stream canvas").boundingBox()
    if (box !== null) for (let x = 0.2; x < 0.9; x += 0.1) await page.mouse.move(box.x + box.width * x, box.y + 60)
    for (const tab of tabs) {
      await page.click(`#tabs button[data-tab=${tab}]`)
      await page.waitForTimeout(300)
    }
    // a stage DAG whose DOT tries every way to put a link or script in its SVG: drawn inert
    await page.click(`#tabs button[data-tab=stages]`)
    await page.waitForSelector("#dag svg", { timeout: 30_000 })
    assert.equal(await page.locator("#dag a, #dag script, #dag foreignObject, #dag [onclick], #dag [href]").count(), 0)
    await page.locator("#dag svg text").first().click({ force: true }).catch(() => undefined)
    await page.screenshot({ path: join(dir, "hostile-stages.png"), fullPage: true })
    await page.click(`#tabs button[data-tab=status]`)
    await page.waitForTimeout(300)
    await page.screenshot({ path: join(dir, "hostile-status.png"), fullPage: true })
    assert.deepEqual(dialogs, [], "no alert ran")
    console.log(`# hostile screenshot: ${join(dir, "hostile-status.png")}`)
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, "no script ran")
    assert.equal(await page.locator("img").count(), 0, "no element from a string")
    assert.equal(await page.textContent("#title"), evil)
    assert.ok((await page.textContent("#progress-table"))!.includes(`${evil}fn`), "the function's name as text")
    assert.deepEqual(errors, [])
    await page.close()

    // off loopback: without the token nothing, with it the page
    const off = await Effect.runPromise(Dashboard.serve(state, { host: "0.0.0.0", port: 0, title: "off loopback", sampleHost: false }).pipe(Scope.provide(scope)))
    assert.ok(off.token !== undefined)
    const bare = `http://127.0.0.1:${off.port}/`
    const p2 = await browser.newPage()
    const r = await p2.goto(bare)
    assert.equal(r?.status(), 401)
    assert.match(await p2.textContent("body") ?? "", /token required/)
    const r2 = await p2.goto(`${bare}api/snapshot`)
    assert.equal(r2?.status(), 401)
    const withToken = await open(browser, `${bare}?token=${encodeURIComponent(off.token!)}`)
    await waitOver(withToken.page, 30_000)
    assert.equal((await pageState(withToken.page)).counts!.tasks, 20)
    await withToken.page.screenshot({ path: join(dir, "token-status.png") })
    assert.deepEqual(withToken.errors, [])
    await p2.close()
    await withToken.page.close()
  })
})

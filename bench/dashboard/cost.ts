/**
 * Issue 34: what the live dashboard costs, each side by side in one run (a benchmark,
 * not a timed test; results in BENCHMARKS.md).
 *
 *   node bench/dashboard/cost.ts [--tasks 100000] [--repeats 7] [--samples 200000]
 *       [--demo-runs 3] [--big 1000000] [--workers 2] [--skip engine,demo,big] [--json]
 *
 * - **engine**: `bench engine`'s no-op fan-out (`--tasks`, default 100,000) on a
 *   worker pool, computes alternating with the dashboard's hooks on and a Chromium page
 *   connected, and off (no hooks, the page on about:blank); median tasks/s of each, and
 *   the ratio (target: at most 3 % fewer tasks/s with it on).
 * - **latency**: during the "on" computes, each delta's newest rectangles: from the
 *   task's end (engine clock) to the frame that drew them (page clock, same host); p50,
 *   p95 (target: p95 at most 250 ms at the engine's full speed).
 * - **demo**: `tessera demo --samples N --json` processes alternating with
 *   `--dashboard 127.0.0.1:0` (and a page opened on it as soon as its URL is printed)
 *   and without; median `wallSeconds` (target: at most 2 % more).
 * - **big**: a `--big`-task fan-out (default 1,000,000) with the page open the whole
 *   time: the page's JS heap (CDP `Runtime.getHeapUsage`) sampled every 250 ms (target:
 *   under 100 MB), bytes the server sent over the run's seconds (target: under 256
 *   KB/s), and clicks on a tab answered (handler and the next two frames; target:
 *   under 200 ms).
 *
 * Needs /usr/bin/chromium (as the browser tests); says so and stops without it.
 *
 * @since 0.1.0
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync } from "node:fs"
import { availableParallelism, cpus, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, ManagedRuntime, Scope, Exit } from "effect"
import { chromium, type Page } from "playwright-core"
import * as Dashboard from "../../src/dashboard/Dashboard.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import { fanout } from "../engine/BenchGraphs.ts"

// page-side code (evaluated in the browser) names its globals
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const window: any, document: any, requestAnimationFrame: any

const CHROMIUM = "/usr/bin/chromium"
const args = process.argv.slice(2)
const opt = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`)
  return i < 0 ? fallback : Number(args[i + 1])
}
const skip = new Set((args[args.indexOf("--skip") + 1] ?? "").split(",").filter((s) => args.includes("--skip") && s !== ""))
const tasks = opt("tasks", 100_000)
const repeats = opt("repeats", 7)
const samples = opt("samples", 200_000)
const demoRuns = opt("demo-runs", 3)
const big = opt("big", 1_000_000)
const workers = opt("workers", 2)
const json = args.includes("--json")
// --records: the dashboard fed on the engine's task records (as with --profile) instead of its light hooks
const records = args.includes("--records")

if (!existsSync(CHROMIUM)) {
  console.log(`bench/dashboard: ${CHROMIUM} not found (apt-get install -y chromium): skipped`)
  process.exit(0)
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}
const quantile = (xs: ReadonlyArray<number>, q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}
const log = (line: string) => void process.stderr.write(line + "\n")

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] })
const results: Record<string, unknown> = { machine: `${availableParallelism()} cores, ${cpus()[0]?.model ?? "?"}`, node: process.version }

const waitReady = (page: Page) => page.waitForFunction(() => (window as unknown as { tessera?: { state: { counts: unknown } } }).tessera?.state.counts != null, undefined, { timeout: 60_000 })

const print = (part: string) => {
  if (json) return
  const e = results["engine"] as Record<string, number> | undefined
  if (part === "engine" && e) console.log(`engine fan-out ${e["tasks"]} on ${e["workers"]} workers, median of ${e["repeats"]}: off ${e["offTasksPerSecond"]!.toFixed(0)} tasks/s, on+page ${e["onTasksPerSecond"]!.toFixed(0)} tasks/s, ratio ${e["ratio"]!.toFixed(3)} (${e["fewerPercent"]!.toFixed(1)} % fewer; target <= 3 %); hooks without a page ${e["hooksOnlyTasksPerSecond"]!.toFixed(0)} tasks/s, ratio ${e["hooksOnlyRatio"]!.toFixed(3)}${records ? " (--records: the engine's task records)" : " (light hooks)"}`)
  const l = results["latency"] as Record<string, number> | undefined
  if (part === "engine" && l) console.log(`latency task end -> on screen: p50 ${l["p50Ms"]!.toFixed(0)} ms, p95 ${l["p95Ms"]!.toFixed(0)} ms, max ${l["maxMs"]!.toFixed(0)} ms over ${l["samples"]} rectangles (target p95 <= 250 ms)`)
  const dm = results["demo"] as Record<string, number> | undefined
  if (part === "demo" && dm) console.log(`demo ${dm["samples"]} samples, median of ${dm["runs"]}: off ${dm["offSeconds"]!.toFixed(2)} s, on+page ${dm["onSeconds"]!.toFixed(2)} s, ratio ${dm["ratio"]!.toFixed(3)} (${dm["morePercent"]!.toFixed(1)} % more; target <= 2 %)${records ? " (--records)" : ""}`)
  const b = results["big"] as Record<string, number> | undefined
  if (part === "big" && b) console.log(`big fan-out ${b["tasks"]} in ${b["seconds"]!.toFixed(1)} s, page open: JS heap max ${b["heapMaxMB"]!.toFixed(1)} MB (target < 100), sent ${b["bytesPerSecondKB"]!.toFixed(1)} KB/s (target < 256), clicks max ${b["clickMaxMs"]!.toFixed(0)} ms, p95 ${b["clickP95Ms"]!.toFixed(0)} ms over ${b["clicks"]} (target < 200); page counted ${b["tasksSeen"]} tasks, ${b["shed"]} shed from the live feed`)
}
if (!json) console.log(`bench/dashboard (issue 34), ${results["machine"]}, Node ${results["node"]}`)

// ---- engine cost and latency -------------------------------------------------------------
if (!skip.has("engine")) {
  const g = fanout(tasks)
  const rt = ManagedRuntime.make(Executor.layerWorkers({ workers }))
  const scope = await Effect.runPromise(Scope.make())
  const d = await Effect.runPromise(Dashboard.make({ port: 0, log: () => undefined, records }).pipe(Scope.provide(scope)))
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  const once = (on: boolean) =>
    rt.runPromise(Effect.gen(function*() {
      const t0 = performance.now()
      yield* Engine.compute(g.graph, { keys: g.keys }).pipe(on ? Hooks.provide(d.callbacks) : (x) => x)
      return (performance.now() - t0) / 1000
    }))
  await once(false)
  await once(true)
  const off: Array<number> = []
  const on: Array<number> = []
  const hooksOnly: Array<number> = []
  const latencies: Array<number> = []
  for (let r = 0; r < repeats; r++) {
    await page.goto("about:blank")
    off.push(await once(false))
    // the hooks without a page: what the engine's thread pays, apart from the browser
    hooksOnly.push(await once(true))
    await page.goto(d.url)
    await waitReady(page)
    await page.evaluate(() => void ((window as unknown as { tessera: { latencies: Array<number> } }).tessera.latencies.length = 0))
    on.push(await once(true))
    // the last deltas drawn
    await page.waitForTimeout(600)
    latencies.push(...await page.evaluate(() => (window as unknown as { tessera: { latencies: Array<number> } }).tessera.latencies))
    const pr = await page.evaluate(() => ({ renders: window.tessera.renders, ms: window.tessera.renderMs, deltas: window.tessera.deltas, bytes: window.tessera.bytes }))
    log(`  page: ${pr.renders} renders, ${(pr.ms / Math.max(1, pr.renders)).toFixed(1)} ms each; ${pr.deltas} deltas, ${(pr.bytes / Math.max(1, pr.deltas) / 1000).toFixed(1)} KB each`)
    log(`engine: repeat ${r + 1}/${repeats}: off ${(tasks / off.at(-1)!).toFixed(0)} tasks/s, on ${(tasks / on.at(-1)!).toFixed(0)} tasks/s`)
  }
  const offRate = tasks / median(off)
  const onRate = tasks / median(on)
  const hooksRate = tasks / median(hooksOnly)
  results["engine"] = { graph: "fanout", tasks, workers, repeats, records, offTasksPerSecond: offRate, onTasksPerSecond: onRate, ratio: onRate / offRate, fewerPercent: 100 * (1 - onRate / offRate), hooksOnlyTasksPerSecond: hooksRate, hooksOnlyRatio: hooksRate / offRate }
  results["latency"] = { samples: latencies.length, p50Ms: 1000 * quantile(latencies, 0.5), p95Ms: 1000 * quantile(latencies, 0.95), maxMs: 1000 * Math.max(...latencies) }
  await page.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await rt.dispose()
  print("engine")
}

// ---- demo wall time -------------------------------------------------------------------------
if (!skip.has("demo")) {
  const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
  const cwd = mkdtempSync(join(tmpdir(), "tessera-bench-dashboard-"))
  const demo = (withDashboard: boolean) =>
    new Promise<number>((resolve, reject) => {
      const child = spawn(process.execPath, [main, "demo", "--samples", String(samples), "--workers", String(workers), "--json", "--log-level", "warn", ...(withDashboard ? ["--dashboard", "127.0.0.1:0"] : [])], { cwd, stdio: ["ignore", "pipe", "pipe"] })
      let out = "", err = ""
      let page: Page | undefined
      child.stderr.on("data", (c: Buffer) => {
        err += c.toString()
        const m = /dashboard: (http:\/\/\S+)/.exec(err)
        if (m !== null && page === undefined) {
          page = {} as Page
          void browser.newPage().then(async (p) => {
            page = p
            await p.goto(m[1]!)
          })
        }
      })
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString()
        const line = out.split("\n").find((l) => l.startsWith("{"))
        if (line !== undefined && out.includes("\n")) {
          const wall = (JSON.parse(line) as { wallSeconds: number }).wallSeconds
          if (withDashboard) child.kill("SIGINT")
          void (page as Page | undefined)?.close?.()
          resolve(wall)
        }
      })
      child.on("exit", (code) => (out.includes("{") ? undefined : reject(new Error(`demo exited ${code}: ${err}`))))
    })
  await demo(false)
  const off: Array<number> = []
  const on: Array<number> = []
  for (let r = 0; r < demoRuns; r++) {
    off.push(await demo(false))
    on.push(await demo(true))
    log(`demo: run ${r + 1}/${demoRuns}: off ${off.at(-1)!.toFixed(2)} s, on ${on.at(-1)!.toFixed(2)} s`)
  }
  results["demo"] = { samples, workers, runs: demoRuns, offSeconds: median(off), onSeconds: median(on), ratio: median(on) / median(off), morePercent: 100 * (median(on) / median(off) - 1), off, on }
  print("demo")
}

// ---- a big run with the page open ---------------------------------------------------------------
if (!skip.has("big")) {
  const g = fanout(big)
  const rt = ManagedRuntime.make(Executor.layerWorkers({ workers }))
  const scope = await Effect.runPromise(Scope.make())
  const d = await Effect.runPromise(Dashboard.make({ port: 0, log: () => undefined, records }).pipe(Scope.provide(scope)))
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  await page.goto(d.url)
  await waitReady(page)
  const cdp = await page.context().newCDPSession(page)
  const heap: Array<number> = []
  const clicks: Array<number> = []
  let running = true
  const sampler = (async () => {
    let i = 0
    while (running) {
      const h = await cdp.send("Runtime.getHeapUsage") as { usedSize: number }
      heap.push(h.usedSize)
      if (i++ % 4 === 0) {
        const tab = i % 8 === 1 ? "workers" : "status"
        clicks.push(await page.evaluate(async (t) => {
          const t0 = performance.now()
          ;(document.querySelector(`#tabs button[data-tab=${t}]`)).click()
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))
          return performance.now() - t0
        }, tab))
      }
      await new Promise((r) => setTimeout(r, 250))
    }
  })()
  const sent0 = d.server.bytesSent()
  const t0 = performance.now()
  await rt.runPromise(Engine.compute(g.graph, { keys: g.keys }).pipe(Hooks.provide(d.callbacks)))
  const seconds = (performance.now() - t0) / 1000
  const bytes = d.server.bytesSent() - sent0
  await page.waitForTimeout(1000)
  running = false
  await sampler
  const final = await page.evaluate(() => (window as unknown as { tessera: { state: { counts: { tasks: number; shed: number } } } }).tessera.state.counts)
  results["big"] = {
    tasks: g.graph.size,
    seconds,
    tasksSeen: final.tasks,
    shed: final.shed,
    heapMaxMB: Math.max(...heap) / 1e6,
    heapLastMB: heap.at(-1)! / 1e6,
    bytesPerSecondKB: bytes / seconds / 1000,
    clickMaxMs: Math.max(...clicks),
    clickP95Ms: quantile(clicks, 0.95),
    clicks: clicks.length
  }
  await page.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await rt.dispose()
  print("big")
}
await browser.close()

if (json) console.log(JSON.stringify(results))

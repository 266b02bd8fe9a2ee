/**
 * Before/after of a profiler change in one process, so that both sides see the same load:
 * the demo (DASF tutorial 5, 100,000 samples x 2, chunks of 5,000 rows) run by this
 * checkout's code and by another checkout's (`--base DIR`, e.g. an older commit
 * unpacked with `git archive`), each arm on warm pools of its own tree, the arms
 * interleaved in rotating order round after round. Reported per arm: CPU of the main
 * thread (`process.threadCpuUsage`), of the whole process, and by thread name
 * (bench/profiler/threadCpu.ts; Linux), the main isolate's garbage collection (ms and
 * count a run, `PerformanceObserver`), and wall time. CPU time is the figure to compare
 * on a shared machine (a descheduled thread is not charged), though cache contention still
 * inflates it under load: look at both trees' unprofiled arms to see how far the noise goes.
 *
 * Arms: `plain` (unprofiled, worker pool), `records` (no-op task and memory hooks),
 * `default` (Trace + ResourceMonitor with the pipeline graph, as `--profile --no-sample`),
 * `sampled` (that + StatisticalProfiler at 10 ms, on a pool of its own), and the same on
 * the in-process executor, where every part of the profiler runs on the main thread:
 * `plainsync`, `tracesync`, `defaultsync`.
 *
 * Usage (from the repository's root):
 *   mkdir -p tmp/base && git archive <base commit> src examples | tar -x -C tmp/base
 *   node bench/profiler/compareTrees.ts --base tmp/base [--rounds 16] [--arms plain,default,sampled]
 * The base directory needs `src/` and `examples/` of that commit, somewhere its imports
 * (`effect`, ...) resolve to a `node_modules`: under the repository (its `tmp/` is ignored).
 *
 * @since 0.1.0
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { PerformanceObserver } from "node:perf_hooks"
import { pathToFileURL } from "node:url"
import { Effect, Layer, ManagedRuntime } from "effect"
import { threadTimes, usedByName } from "./threadCpu.ts"

const argv = process.argv.slice(2)
const opt = (name: string, dflt: string): string => {
  const i = argv.indexOf(name)
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : dflt
}
const baseDir = opt("--base", "")
if (baseDir === "") {
  console.error("usage: node bench/profiler/compareTrees.ts --base DIR [--rounds N] [--arms a,b,...]")
  process.exit(2)
}
const rounds = Number(opt("--rounds", "16"))
const armNames = opt("--arms", "plain,default").split(",")
const known = ["plain", "records", "default", "sampled", "plainsync", "tracesync", "defaultsync"]
for (const a of armNames) {
  if (!known.includes(a)) {
    console.error(`--arms: unknown arm ${a} (known: ${known.join(", ")})`)
    process.exit(2)
  }
}
const dir = mkdtempSync(join(tmpdir(), "tessera-compare-"))
const trees = [["base", pathToFileURL(resolve(baseDir) + "/")], ["this", new URL("../../", import.meta.url)]] as const

interface Arm {
  readonly name: string
  readonly run: () => Promise<unknown>
}
let fileNo = 0
const arms: Array<Arm> = []
const runtimes: Array<{ readonly dispose: () => Promise<void> }> = []
for (const [label, root] of trees) {
  const load = (path: string) => import(new URL(path, root).href)
  const Tutorial5 = await load("examples/tutorial5/Tutorial5.ts")
  const Executor = await load("src/engine/Executor.ts")
  const Hooks = await load("src/engine/Hooks.ts")
  const DefaultProfiler = await load("src/profiler/DefaultProfiler.ts")
  const StatisticalProfiler = await load("src/profiler/StatisticalProfiler.ts")
  const Trace = await load("src/profiler/Trace.ts")
  const pool = ManagedRuntime.make(Executor.layerWorkers({ workers: 2 }))
  const sampledPool = ManagedRuntime.make(Executor.layerWorkers({ workers: 2 }))
  const inProcess = ManagedRuntime.make(Executor.layerSync)
  runtimes.push(pool, sampledPool, inProcess)
  const options = { samples: 100_000, chunkRows: 5_000, log: () => {} }
  const pipeline = Tutorial5.make(options).pipeline
  const demo = Tutorial5.run(options)
  const profiled = () => DefaultProfiler.layer({ name: `c${fileNo++}`, directory: dir, log: () => {}, pipeline })
  const under = (layer: Layer.Layer<never, unknown>) => demo.pipe(Effect.provide(layer))
  const all: Record<string, () => Promise<unknown>> = {
    plain: () => pool.runPromise(demo),
    records: () => pool.runPromise(under(Hooks.layer({ task: () => {}, memory: () => {} }))),
    default: () => pool.runPromise(under(profiled())),
    sampled: () =>
      sampledPool.runPromise(under(profiled().pipe(Layer.provideMerge(StatisticalProfiler.layer({ file: join(dir, `s${fileNo++}.msgpack`), interval: 10 }))))),
    plainsync: () => inProcess.runPromise(demo),
    tracesync: () => inProcess.runPromise(under(Trace.layer({ file: join(dir, `t${fileNo++}.msgpack`) }))),
    defaultsync: () => inProcess.runPromise(under(profiled()))
  }
  for (const a of armNames) arms.push({ name: `${a} (${label})`, run: all[a]! })
}

let gcMs = 0
let gcCount = 0
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcMs += e.duration
    gcCount++
  }
}).observe({ entryTypes: ["gc"] })
const mainCpu = (): number => {
  const c = process.threadCpuUsage()
  return (c.user + c.system) / 1000
}
const settle = () => new Promise((r) => setTimeout(r, 5))

const res = arms.map(() => ({ main: [] as Array<number>, all: [] as Array<number>, wall: [] as Array<number>, gc: 0, gcs: 0, threads: new Map<string, number>() }))
for (const a of arms) await a.run()
const loadBefore = loadavg().map((x) => x.toFixed(1)).join(" / ")
for (let r = 0; r < rounds; r++) {
  const order = arms.map((_, k) => k)
  for (const k of r % 2 === 0 ? order : order.reverse()) {
    await settle()
    const g0 = gcMs, n0 = gcCount
    const th0 = threadTimes()
    const c0 = process.cpuUsage(), m0 = mainCpu(), t0 = performance.now()
    await arms[k]!.run()
    const c = process.cpuUsage(c0)
    const x = res[k]!
    x.wall.push(performance.now() - t0)
    x.main.push(mainCpu() - m0)
    x.all.push((c.user + c.system) / 1000)
    for (const [name, ms] of usedByName(th0, threadTimes())) x.threads.set(name, (x.threads.get(name) ?? 0) + ms)
    await settle()
    x.gc += gcMs - g0
    x.gcs += gcCount - n0
    for (const f of readdirSync(dir)) rmSync(join(dir, f), { force: true })
  }
}
const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  const at = (s.length - 1) * q
  return s[Math.floor(at)]! + (s[Math.ceil(at)]! - s[Math.floor(at)]!) * (at - Math.floor(at))
}
const iqr = (xs: ReadonlyArray<number>) => `${quantile(xs, 0.5).toFixed(0)} [${quantile(xs, 0.25).toFixed(0)}-${quantile(xs, 0.75).toFixed(0)}]`
console.table(arms.map((a, k) => {
  const x = res[k]!
  return {
    arm: a.name,
    "main CPU ms (median [IQR])": iqr(x.main),
    "main CPU ms, fastest": Math.min(...x.main).toFixed(0),
    "all threads CPU ms": iqr(x.all),
    "main GC ms a run (count)": `${(x.gc / rounds).toFixed(1)} (${(x.gcs / rounds).toFixed(1)})`,
    "wall ms": iqr(x.wall),
    "CPU by thread, mean ms a run": [...x.threads].filter(([, v]) => v / rounds >= 1).sort().map(([n, v]) => `${n} ${(v / rounds).toFixed(0)}`).join(", ")
  }
}))
console.log(`${rounds} rounds; load average (1 / 5 / 15 min) before: ${loadBefore}, after: ${loadavg().map((x) => x.toFixed(1)).join(" / ")}`)
for (const rt of runtimes) await rt.dispose()
rmSync(dir, { recursive: true, force: true })

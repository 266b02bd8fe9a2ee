/**
 * Latency of the cluster executor (issue 17): how long a trivial compute takes on a
 * LocalCluster of 2 worker processes, and the demo on `--cluster local:2` against the
 * demo on 2 worker threads, with the CPU time each spends.
 *
 * 1. Trivial computes, in this process on `Executor.layerCluster({ local: 2 })` (start-up
 *    and a warm-up untimed): `chain(1)` (one no-op task: one Run with its result in the
 *    reply), `chain(5)` (five levels, fused into one batch), `fanout(8)`, `tree(31)`.
 *    Reported: median, 10th and 90th percentile wall ms per compute, and the driver's CPU
 *    ms per compute (user + system of this process, all threads).
 * 2. The demo, each run a fresh process: `tessera demo --json` and
 *    `tessera demo --json --cluster local:2`, alternating. Reported: the demo's own
 *    `wallSeconds` (median, min), and the CPU seconds of the whole process tree (driver,
 *    worker processes, their threads: `/usr/bin/time`'s user + system, which counts
 *    waited-for children), median.
 *
 * The load average before and after is printed: on a loaded machine wall times mostly
 * measure the other load; CPU seconds less so.
 *
 * Usage: node bench/engine/cluster_latency.ts [--rounds N] [--demo-rounds N] [--json]
 * Default: 60 trivial computes each, 5 demo runs each (about 2 minutes on 2 quiet cores).
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { loadavg } from "node:os"
import { fileURLToPath } from "node:url"
import { ManagedRuntime } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as BenchGraphs from "./BenchGraphs.ts"

const argv = process.argv.slice(2)
const num = (flag: string, d: number): number => {
  const i = argv.indexOf(flag)
  const v = i >= 0 ? Number(argv[i + 1]) : d
  if (!Number.isInteger(v) || v < 1) {
    console.error(`${flag} takes a positive integer, got ${argv[i + 1]}`)
    process.exit(2)
  }
  return v
}
const rounds = num("--rounds", 60)
const demoRounds = num("--demo-rounds", 5)
const json = argv.includes("--json")

const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}
const load0 = loadavg()

// 1. trivial computes
const rt = ManagedRuntime.make(Executor.layerCluster({ local: 2 }))
const run = (g: BenchGraphs.BenchGraph) => rt.runPromise(Engine.compute(g.graph, { keys: g.keys }))
const trivial: Array<{ graph: string; tasks: number; medianMs: number; p10Ms: number; p90Ms: number; driverCpuMs: number }> = []
for (const [name, g] of [
  ["chain(1)", BenchGraphs.chain(1)],
  ["chain(5)", BenchGraphs.chain(5)],
  ["fanout(8)", BenchGraphs.fanout(8)],
  ["tree(31)", BenchGraphs.tree(31)]
] as const) {
  for (let i = 0; i < 5; i++) await run(g)
  const ms: Array<number> = []
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < rounds; i++) {
    const t = performance.now()
    await run(g)
    ms.push(performance.now() - t)
  }
  const cpu = process.cpuUsage(cpu0)
  trivial.push({
    graph: name,
    tasks: g.graph.size,
    medianMs: quantile(ms, 0.5),
    p10Ms: quantile(ms, 0.1),
    p90Ms: quantile(ms, 0.9),
    driverCpuMs: (cpu.user + cpu.system) / 1000 / rounds
  })
}
await rt.dispose()

// 2. the demo, fresh processes
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const demo = (cluster: boolean): { wall: number; cpu: number } => {
  const args = [process.execPath, main, "demo", "--json", ...(cluster ? ["--cluster", "local:2"] : [])]
  const r = existsSync("/usr/bin/time")
    ? spawnSync("/usr/bin/time", ["-f", "TIME %U %S", ...args], { encoding: "utf8" })
    : spawnSync(args[0]!, args.slice(1), { encoding: "utf8" })
  if (r.status !== 0) throw new Error(`demo${cluster ? " --cluster local:2" : ""} failed:\n${r.stderr}`)
  const out = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { wallSeconds: number }
  const t = /TIME ([\d.]+) ([\d.]+)/.exec(r.stderr)
  return { wall: out.wallSeconds, cpu: t === null ? NaN : Number(t[1]) + Number(t[2]) }
}
const demos = { threads: [] as Array<{ wall: number; cpu: number }>, cluster: [] as Array<{ wall: number; cpu: number }> }
for (let i = 0; i < demoRounds; i++) {
  const order: ReadonlyArray<"threads" | "cluster"> = i % 2 === 0 ? ["threads", "cluster"] : ["cluster", "threads"]
  for (const arm of order) demos[arm].push(demo(arm === "cluster"))
}
const summary = (xs: ReadonlyArray<{ wall: number; cpu: number }>) => ({
  medianWallSeconds: quantile(xs.map((x) => x.wall), 0.5),
  minWallSeconds: Math.min(...xs.map((x) => x.wall)),
  medianCpuSeconds: quantile(xs.map((x) => x.cpu), 0.5)
})
const result = {
  load: { before: load0, after: loadavg() },
  trivial,
  demo: { threads: summary(demos.threads), cluster: summary(demos.cluster), rounds: demoRounds }
}
if (json) console.log(JSON.stringify(result))
else {
  console.log(`load average before ${load0.map((x) => x.toFixed(2)).join(" ")}, after ${result.load.after.map((x) => x.toFixed(2)).join(" ")}`)
  console.log(`trivial computes on a LocalCluster of 2 worker processes (${rounds} each):`)
  for (const t of trivial) {
    console.log(`  ${t.graph.padEnd(10)} ${String(t.tasks).padStart(3)} tasks: median ${t.medianMs.toFixed(2)} ms (p10 ${t.p10Ms.toFixed(2)}, p90 ${t.p90Ms.toFixed(2)}), driver CPU ${t.driverCpuMs.toFixed(2)} ms per compute`)
  }
  const d = result.demo
  console.log(`demo (${demoRounds} fresh processes each; wall = the demo's wallSeconds, CPU = the process tree's user + system):`)
  console.log(`  2 worker threads:    median ${d.threads.medianWallSeconds.toFixed(2)} s (min ${d.threads.minWallSeconds.toFixed(2)}), CPU ${d.threads.medianCpuSeconds.toFixed(2)} s`)
  console.log(`  --cluster local:2:   median ${d.cluster.medianWallSeconds.toFixed(2)} s (min ${d.cluster.minWallSeconds.toFixed(2)}), CPU ${d.cluster.medianCpuSeconds.toFixed(2)} s`)
  console.log(`  ratio (medians):     ${(d.cluster.medianWallSeconds / d.threads.medianWallSeconds).toFixed(1)}x wall, ${(d.cluster.medianCpuSeconds / d.threads.medianCpuSeconds).toFixed(1)}x CPU`)
}

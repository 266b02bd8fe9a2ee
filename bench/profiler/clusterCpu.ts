/**
 * Where the profiler's cost goes on a cluster (issue 17): CPU milliseconds a run by
 * process and thread (the driver's `MainThread` and `V8Worker`s, the worker processes'
 * `child MainThread`, `child WorkerThread`, ...: bench/profiler/threadCpu.ts) on a warm
 * LocalCluster of 2 worker processes, for several profiling arms run alternately:
 *
 * - `unprofiled`;
 * - `records`: no-op `task` and `memory` hooks (the engine's records reach the driver,
 *   nothing is written);
 * - `trace`: `Trace.layer` (each worker writes its host's file through its plugin);
 * - `rm`: `ResourceMonitor.layer` (the driver reads the worker processes from /proc);
 * - `profiled`: `DefaultProfiler.layer` (both, as `--profile` sets them up).
 *
 * Workloads: `demo` (the demo, 100,000 samples x 2, chunks of 5,000: what
 * bench/profiler/overhead.ts --only cluster times), `computes` (20 one-task computes a run:
 * the fixed cost per profiled run), `tree` (a 1,023-task no-op tree computed 20 times a
 * run: the cost per task). Each arm runs twice to warm up, then `--rounds` rounds, the
 * order reversed every other round. CPU comes from /proc in 10 ms ticks: compare means
 * over many rounds, not single runs; on a loaded machine even these move by ±100 ms a
 * demo run between identical runs.
 *
 * Usage: node bench/profiler/clusterCpu.ts [demo|computes|tree] [--rounds N] [--arms unprofiled,profiled,...]
 * Default: demo, 8 rounds, arms unprofiled,records,trace,rm,profiled (about 2 minutes on 2 quiet cores).
 *
 * @since 0.1.0
 */
import { Effect, type Layer, ManagedRuntime } from "effect"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import * as BenchGraphs from "../engine/BenchGraphs.ts"
import { threadTimes, usedByName } from "./threadCpu.ts"

const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(name)
  return i >= 0 ? argv[i + 1] : undefined
}
const work = argv[0] !== undefined && !argv[0].startsWith("--") ? argv[0] : "demo"
const rounds = Number(flag("--rounds") ?? 8)
const armNames = (flag("--arms") ?? "unprofiled,records,trace,rm,profiled").split(",")
if (!["demo", "computes", "tree"].includes(work) || !Number.isInteger(rounds) || rounds < 1) {
  console.error("usage: node bench/profiler/clusterCpu.ts [demo|computes|tree] [--rounds N] [--arms a,b,...]")
  process.exit(2)
}

const dir = mkdtempSync(join(tmpdir(), "tessera-cluster-cpu-"))
const plugins = new URL("../../src/profiler/WorkerPlugins.ts", import.meta.url).href
const rt = ManagedRuntime.make(Executor.layerCluster({ local: 2, threads: 1, preload: [plugins] }))
const demoOptions = { samples: 100_000, chunkRows: 5_000, log: () => {} }
const twenty = (g: BenchGraphs.BenchGraph) =>
  Effect.forEach(Array.from({ length: 20 }), () => Engine.compute(g.graph, { keys: g.keys }), { discard: true })
const program: Effect.Effect<unknown, unknown, Executor.Executor> = work === "demo"
  ? Tutorial5.run(demoOptions)
  : twenty(work === "tree" ? BenchGraphs.tree(1023) : BenchGraphs.chain(1))
const pipeline = work === "demo" ? Tutorial5.make(demoOptions).pipeline : undefined

let n = 0
const under = (layer: Layer.Layer<never, unknown> | undefined) => () =>
  rt.runPromise(layer === undefined ? program : program.pipe(Effect.provide(layer)))
const arms: Record<string, () => Layer.Layer<never, unknown> | undefined> = {
  unprofiled: () => undefined,
  records: () => Hooks.layer({ task: () => {}, memory: () => {} }),
  trace: () => Trace.layer({ file: join(dir, `t${n++}.msgpack`) }),
  rm: () => ResourceMonitor.layer({ file: join(dir, `r${n++}.msgpack`) }),
  profiled: () => DefaultProfiler.layer({ name: `p${n++}`, directory: dir, log: () => {}, ...(pipeline !== undefined ? { pipeline } : {}) })
}
for (const a of armNames) {
  if (arms[a] === undefined) {
    console.error(`unknown arm ${a}: one of ${Object.keys(arms).join(", ")}`)
    process.exit(2)
  }
}

const load0 = loadavg()
for (const a of armNames) for (let i = 0; i < 2; i++) await under(arms[a]!())()
const acc = new Map<string, { wall: number; byName: Map<string, number> }>()
for (let r = 0; r < rounds; r++) {
  for (const a of r % 2 === 0 ? armNames : [...armNames].reverse()) {
    const layer = arms[a]!()
    const th0 = threadTimes(true)
    const t0 = performance.now()
    await under(layer)()
    const wall = performance.now() - t0
    const e = acc.get(a) ?? { wall: 0, byName: new Map<string, number>() }
    acc.set(a, e)
    e.wall += wall
    for (const [name, ms] of usedByName(th0, threadTimes(true))) e.byName.set(name, (e.byName.get(name) ?? 0) + ms)
  }
  for (const f of readdirSync(dir)) rmSync(join(dir, f), { force: true })
}
await rt.dispose()
rmSync(dir, { recursive: true, force: true })

const names = [...new Set([...acc.values()].flatMap((e) => [...e.byName.keys()]))].sort()
console.log(`${work}, ${rounds} rounds, load average before ${load0.map((x) => x.toFixed(1)).join(" ")}, after ${loadavg().map((x) => x.toFixed(1)).join(" ")}`)
console.log("mean a run: wall ms, CPU ms in all, CPU ms by thread")
for (const [a, e] of acc) {
  const cpu = [...e.byName.values()].reduce((x, y) => x + y, 0) / rounds
  const parts = names.map((nm) => [nm, (e.byName.get(nm) ?? 0) / rounds] as const).filter(([, ms]) => ms >= 1)
  console.log(`  ${a.padEnd(10)} wall ${(e.wall / rounds).toFixed(1)}, CPU ${cpu.toFixed(1)}: ${parts.map(([nm, ms]) => `${nm} ${ms.toFixed(1)}`).join(", ")}`)
}

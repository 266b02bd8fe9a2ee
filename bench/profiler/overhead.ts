/**
 * Wall-time overhead of the default profiler (Trace + ResourceMonitor, both writing their
 * files, as `registerDefaultProfiler` / `--profile` set them up) on:
 *
 * 1. the 100,000-task no-op fan-out (BenchGraphs.fanout) on a 2-worker pool: the worst
 *    case, every task is pure scheduling overhead and yields two trace events;
 * 2. the demo (DASF tutorial 5, 100,000 samples x 2, chunks of 5,000 rows) on a 2-worker
 *    pool, the pipeline's stage DAG included;
 * 3. the demo as users run it: `tessera demo --json` against `tessera demo --json
 *    --profile NAME`, each a fresh process (pool start-up and the profiler's files
 *    included), timed by the demo's own `wallSeconds` and as whole processes;
 * 4. dask.diagnostics' Profiler + ResourceProfiler(dt=0.1) + CacheProfiler on the same
 *    fan-out under dask.threaded with 2 workers (bench/profiler/dask_diagnostics.py via
 *    /usr/bin/python3; skipped with a message when dask cannot be imported).
 *
 * Each Tessera workload also has the arm "Trace + ResourceMonitor + StatisticalProfiler"
 * (issue 18's configuration, `--profile` as the CLI sets it up: V8's sampling profiler
 * on every worker at 10 ms, the layer's defaults, `--sample-interval MS` to change it;
 * its database is written and deleted like the others) and the same with the main thread
 * sampled too (`driver: true`, "main thread too"). Those arms run on a second warm pool
 * of their own, so that the unprofiled arms never run on workers whose V8 profiler is
 * still running (a pool keeps it for `Sampling.lingerSeconds` after a layer closes; the
 * first layer on a pool pays V8's start, which the warm-up run takes and `sample-cost`
 * reports). `--only cluster` runs the demo on a LocalCluster of 2 worker processes
 * (issue 17): unprofiled, under Trace + ResourceMonitor (each host's files written by the
 * workers), and on worker threads in this process for comparison. `--only sample-cost` measures the sampler
 * itself on one thread: a fixed CPU loop with and without sampling at 1 ms (the
 * difference over the samples taken: the cost of one sample), and what starting
 * (session + V8's start) and taking a window (`ThreadSampler.take`: serialisation +
 * conversion, the profiler left running) cost.
 *
 * `--breakdown` adds five arms: "engine records only" (no-op `task` / `memory` hooks:
 * what the engine's profiling mode costs before the profiler writes anything), "Trace
 * only", "ResourceMonitor only" and "StatisticalProfiler only" (each layer alone,
 * writing its file), and "workers sampling for nobody" (no hook at all, on a third pool
 * whose workers run V8's profiler from boot: `Executor.layerWorkers({ sampleInterval })`,
 * so its difference to unprofiled is the samples' own cost on the workers), so that the
 * overhead can be split between the engine's records, the trace and the sampler.
 *
 * Method: one warm pool per workload (pool start-up is not profiler overhead); one warm-up
 * run of each arm; then ROUNDS rounds, each running every arm once, the order rotating
 * from round to round (AB, BA, ...) so that drift and order effects fall on all arms
 * alike. Reported per arm: median wall time with its interquartile range, the overhead as
 * the median of the per-round ratios (arm / unprofiled - 1) with their interquartile
 * range and a bootstrap 95% interval of that median (on a shared 2-core machine single
 * runs vary by +-10%: the interval says how far the median itself can be trusted), the
 * ratio of the two arms' 10th percentiles (their fast runs, least disturbed by other
 * load), the median per-round difference per task (µs), and CPU time per run (user +
 * system of the whole process, all threads, and of the main thread alone: less sensitive
 * to other load than wall time; the baseline's median against the arm's, and the added
 * CPU as the median of per-round ratios), and on Linux the CPU of each kind of thread
 * (mean a run, by thread name from /proc: `MainThread`, the pool's `WorkerThread`s, V8's
 * `V8Worker` GC and compiler threads, `v8:ProfEvntProc` for each thread V8's CPU
 * profiler samples; bench/profiler/threadCpu.ts; on the cluster the worker processes'
 * threads too, as `child MainThread`, `child WorkerThread`, ...). Every pool of the workload lives for the
 * whole bench, so a sampled pool's profiler threads (sampling for nobody while they
 * linger, `Sampling.lingerSeconds`) run beside every arm: their CPU shows in each arm's
 * `v8:ProfEvntProc`. The notes give the load average before and
 * after (a loaded machine's figures are not the quiet machine's). Trace files are deleted after
 * each run (outside the timed part). dask runs fewer rounds: one fan-out takes it ~9 s.
 *
 * `--only cluster-costs` (only when asked for) splits the cluster's figure: no-op fan-outs
 * on a LocalCluster of 2 processes, unprofiled and under Trace + ResourceMonitor, give
 * what a profiled run pays once, per task and per compute (the note sums them for the
 * demo's 110 computes and 2,676 tasks).
 *
 * Usage: node bench/profiler/overhead.ts [--quick] [--json] [--breakdown] [--rounds N]
 *        [--dask-rounds N] [--cli-rounds N] [--tasks N] [--samples N] [--no-dask]
 *        [--only fanout|demo|cluster|cluster-costs|cli|dask|sample-cost] [--sample-interval MS]
 * Default (8 rounds fan-out, 40 demo, 10 CLI, 4 dask) runs in about 3 minutes on 2 cores,
 * about 5 with --breakdown; --quick (3/3/2 rounds, 20,000 tasks and samples) in about
 * 20 s. Run it on a quiet machine for figures.
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { Worker } from "node:worker_threads"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"
import * as BenchGraphs from "../engine/BenchGraphs.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import type { PipelineLike } from "../../src/profiler/PipelineGraph.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import * as StatisticalProfiler from "../../src/profiler/StatisticalProfiler.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import { ThreadSampler } from "../../src/engine/ThreadSampler.ts"
import { threadTimes, usedByName } from "./threadCpu.ts"

const argv = process.argv.slice(2)
const flag = (name: string) => argv.includes(name)
const opt = (name: string, dflt: number) => {
  const i = argv.indexOf(name)
  return i >= 0 && argv[i + 1] !== undefined ? Number(argv[i + 1]) : dflt
}
const quick = flag("--quick")
const json = flag("--json")
const breakdown = flag("--breakdown")
const onlyAt = argv.indexOf("--only")
const only = onlyAt >= 0 ? argv[onlyAt + 1] : undefined
if (only !== undefined && !["fanout", "demo", "cluster", "cluster-costs", "cli", "dask", "sample-cost"].includes(only)) {
  console.error(`--only takes fanout, demo, cluster, cluster-costs, cli, dask or sample-cost, got ${only}`)
  process.exit(2)
}
// cluster-costs only when asked for: it explains the cluster's figure, it is not one
const runs = (workload: "fanout" | "demo" | "cluster" | "cluster-costs" | "cli" | "dask" | "sample-cost") =>
  only === workload || only === undefined && workload !== "cluster-costs"
const SAMPLE_MS = opt("--sample-interval", 10)
const cliRounds = opt("--cli-rounds", quick ? 2 : 10)
const TASKS = opt("--tasks", quick ? 20_000 : 100_000)
const SAMPLES = opt("--samples", quick ? 20_000 : 100_000)
const fanoutRounds = opt("--rounds", quick ? 3 : 8)
const demoRounds = opt("--rounds", quick ? 3 : 40)
const daskRounds = opt("--dask-rounds", quick ? 2 : 4)
const WORKERS = 2
const dir = mkdtempSync(join(tmpdir(), "tessera-overhead-"))
const quiet = () => {}

const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  const at = (s.length - 1) * q
  const lo = Math.floor(at)
  const hi = Math.ceil(at)
  return s[lo]! + (s[hi]! - s[lo]!) * (at - lo)
}
const ms = (x: number) => Math.round(x)
const pct = (x: number) => `${(x * 100).toFixed(1)}%`
const iqr = (xs: ReadonlyArray<number>, f: (x: number) => string | number, sep = "-") =>
  `${f(quantile(xs, 0.5))} [${f(quantile(xs, 0.25))}${sep}${f(quantile(xs, 0.75))}]`

interface Arm {
  readonly name: string
  readonly run: () => Promise<void>
}

/**
 * CPU time of a run, ms, by arm and round: `all` is the whole process (user + system,
 * the main thread and every worker thread: `process.cpuUsage`), `main` the main thread
 * alone (`process.threadCpuUsage`). Less sensitive to other load on the machine than
 * wall time (a descheduled thread is not charged), though not immune to it.
 */
interface CpuTimes {
  readonly all: Array<Array<number>>
  readonly main: Array<Array<number>>
  /** per arm, CPU ms by thread name summed over its rounds (Linux: bench/profiler/threadCpu.ts) */
  readonly threads: Array<Map<string, number>>
}
const cpuByArm = new Map<ReadonlyArray<ReadonlyArray<number>>, CpuTimes>()
const threadCpu = (): number => {
  const c = process.threadCpuUsage()
  return (c.user + c.system) / 1000
}

/** Warm-up of each arm, then `rounds` rounds in rotating order; ms per run, by arm (CPU times in `cpuByArm`). */
const interleaved = async (rounds: number, arms: ReadonlyArray<Arm>, children = false): Promise<Array<Array<number>>> => {
  for (const a of arms) await a.run()
  const times = arms.map(() => [] as Array<number>)
  const cpu: CpuTimes = { all: arms.map(() => []), main: arms.map(() => []), threads: arms.map(() => new Map()) }
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < arms.length; j++) {
      const k = (r % 2 === 0 ? j : arms.length - 1 - j)
      const th0 = threadTimes(children)
      const c0 = process.cpuUsage()
      const m0 = threadCpu()
      const t0 = performance.now()
      await arms[k]!.run()
      times[k]!.push(performance.now() - t0)
      const c = process.cpuUsage(c0)
      cpu.main[k]!.push(threadCpu() - m0)
      cpu.all[k]!.push((c.user + c.system) / 1000)
      for (const [name, ms] of usedByName(th0, threadTimes(children))) cpu.threads[k]!.set(name, (cpu.threads[k]!.get(name) ?? 0) + ms)
    }
  }
  cpuByArm.set(times, cpu)
  return times
}

/**
 * 95% interval of the median of `xs` by bootstrap (2,000 resamples, fixed seed: the same
 * data give the same interval).
 */
const medianInterval = (xs: ReadonlyArray<number>): [number, number] => {
  let seed = 0x2545f491
  const next = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
    return seed / 0x100000000
  }
  const medians: Array<number> = []
  for (let b = 0; b < 2000; b++) medians.push(quantile(xs.map(() => xs[Math.floor(next() * xs.length)]!), 0.5))
  return [quantile(medians, 0.025), quantile(medians, 0.975)]
}

interface Row {
  readonly workload: string
  readonly arm: string
  readonly rounds: number
  readonly "unprofiled ms (median [IQR])": string
  readonly "arm ms (median [IQR])": string
  readonly "overhead (median of rounds [IQR])": string
  readonly "median's 95% interval": string
  readonly "fast runs (p10 vs p10)": string
  readonly "µs/task added": string
  readonly "CPU ms, all threads (median [IQR])": string
  readonly "CPU added, all threads": string
  readonly "main thread CPU ms (median [IQR])": string
  readonly "CPU by thread, mean ms a run (unprofiled -> arm)": string
  readonly overhead: number
  readonly overheadInterval: readonly [number, number]
  readonly perTask: number
  readonly armMedianMs: number
}

/** A row per non-baseline arm; `times[0]` is the baseline, `tasks` for the per-task column (0: none). */
const rowsOf = (workload: string, names: ReadonlyArray<string>, times: ReadonlyArray<ReadonlyArray<number>>, tasks: number): Array<Row> => {
  const base = times[0]!
  return names.slice(1).map((arm, i) => {
    const t = times[i + 1]!
    const ratios = base.map((b, r) => t[r]! / b - 1)
    const perTask = base.map((b, r) => ((t[r]! - b) / tasks) * 1000)
    const interval = medianInterval(ratios)
    const cpu = cpuByArm.get(times)
    const cpuRatios = cpu === undefined ? [] : cpu.all[0]!.map((b, r) => cpu.all[i + 1]![r]! / b - 1)
    return {
      workload,
      arm,
      rounds: base.length,
      "unprofiled ms (median [IQR])": iqr(base, ms),
      "arm ms (median [IQR])": iqr(t, ms),
      "overhead (median of rounds [IQR])": iqr(ratios, pct, " to "),
      "median's 95% interval": `${pct(interval[0])} to ${pct(interval[1])}`,
      "fast runs (p10 vs p10)": pct(quantile(t, 0.1) / quantile(base, 0.1) - 1),
      "µs/task added": tasks > 0 ? quantile(perTask, 0.5).toFixed(2) : "",
      "CPU ms, all threads (median [IQR])": cpu === undefined ? "" : `${ms(quantile(cpu.all[0]!, 0.5))} vs ${iqr(cpu.all[i + 1]!, ms)}`,
      "CPU added, all threads": cpu === undefined ? "" : iqr(cpuRatios, pct, " to "),
      "main thread CPU ms (median [IQR])": cpu === undefined ? "" : `${ms(quantile(cpu.main[0]!, 0.5))} vs ${iqr(cpu.main[i + 1]!, ms)}`,
      "CPU by thread, mean ms a run (unprofiled -> arm)": cpu === undefined ? "" : byThread(cpu.threads[0]!, cpu.threads[i + 1]!, base.length),
      overhead: quantile(ratios, 0.5),
      overheadInterval: interval,
      perTask: quantile(perTask, 0.5),
      armMedianMs: quantile(t, 0.5)
    }
  })
}

/** "name a -> b" per thread name, mean ms a run, names with at least 1 ms in either. */
const byThread = (base: ReadonlyMap<string, number>, arm: ReadonlyMap<string, number>, rounds: number): string => {
  const names = [...new Set([...base.keys(), ...arm.keys()])].sort()
  const mean = (m: ReadonlyMap<string, number>, n: string) => (m.get(n) ?? 0) / rounds
  return names.filter((n) => mean(base, n) >= 1 || mean(arm, n) >= 1).map((n) => `${n} ${ms(mean(base, n))} -> ${ms(mean(arm, n))}`).join(", ") || "(no /proc)"
}

/** Runs one compute under `layer` on the warm runtime. */
type Runner = (layer: Layer.Layer<never, unknown> | undefined) => Promise<void>

/** An arm that runs under the layer `make` builds for a fresh file path, then deletes it. */
let fileNo = 0
const writing = (run: Runner, name: string, make: (file: string) => Layer.Layer<never, unknown>): Arm => ({
  name,
  run: async () => {
    const file = join(dir, `bench-${fileNo++}.msgpack`)
    try {
      await run(make(file))
    } finally {
      rmSync(file, { force: true })
    }
  }
})

/**
 * The arms of one Tessera workload: unprofiled, [the breakdown's three], default profiler,
 * and with the statistical profiler. Arms that sample run on their own warm pool
 * (`runSampled`): a pool's workers keep V8's profiler running for `Sampling.lingerSeconds`
 * after a layer lets go, and the unprofiled arms must not run on sampled workers.
 */
/**
 * The demo (SAMPLES samples, chunks of 5,000) as a workload: its pipeline, the tasks a
 * run makes (for the per-task column; counted in one warm-up run on `first`), and a
 * runner on any executor's runtime.
 */
const demoWorkload = async (first: ManagedRuntime.ManagedRuntime<Executor.Executor, unknown>) => {
  const options = { samples: SAMPLES, chunkRows: 5_000, log: quiet }
  const demo = Tutorial5.run(options)
  let tasks = 0
  await first.runPromise(demo.pipe(Effect.provide(Hooks.layer({ posttask: () => void tasks++ }))))
  const on = (r: ManagedRuntime.ManagedRuntime<Executor.Executor, unknown>): Runner => (layer) =>
    r.runPromise(layer === undefined ? demo : demo.pipe(Effect.provide(layer))).then(() => {})
  return { pipeline: Tutorial5.make(options).pipeline, tasks, on }
}

const tesseraArms = (run: Runner, runSampled: Runner, runSampling: Runner, pipeline?: PipelineLike): Array<Arm> => {
  const arms: Array<Arm> = [{ name: "unprofiled", run: () => run(undefined) }]
  if (breakdown) {
    arms.push(
      { name: "engine records only (no-op hooks)", run: () => run(Hooks.layer({ task: () => {}, memory: () => {} })) },
      writing(run, "Trace only", (file) => Trace.layer({ file })),
      writing(run, "ResourceMonitor only", (file) => ResourceMonitor.layer({ file }))
    )
  }
  if (breakdown) {
    arms.push(
      writing(runSampled, `StatisticalProfiler only (${SAMPLE_MS} ms)`, (file) => StatisticalProfiler.layer({ file, interval: SAMPLE_MS })),
      { name: `workers sampling for nobody (${SAMPLE_MS} ms, no hook)`, run: () => runSampling(undefined) }
    )
  }
  const profiledArm = (name: string, sample: "none" | "default" | "driver"): Arm => ({
    name,
    run: async () => {
      const options = { name: `bench-${fileNo++}`, directory: dir, log: quiet, ...(pipeline !== undefined ? { pipeline } : {}) }
      const f = DefaultProfiler.files(options, 0)
      const sampleFile = StatisticalProfiler.fileFor(options.name, undefined, dir)
      const layer = DefaultProfiler.layer(options)
      try {
        // stacked as the CLI stacks them (src/cli/profiling.ts)
        if (sample === "none") await run(layer)
        else {
          const sampler = StatisticalProfiler.layer({ file: sampleFile, interval: SAMPLE_MS, ...(sample === "driver" ? { driver: true } : {}) })
          await runSampled(layer.pipe(Layer.provideMerge(sampler)))
        }
      } finally {
        for (const file of [f.traceFile, f.resourceFile, sampleFile]) rmSync(file, { force: true })
      }
    }
  })
  arms.push(
    profiledArm("Trace + ResourceMonitor", "none"),
    // the configuration: the layer's defaults (workers sampled; the main thread only where tasks run on it)
    profiledArm(`Trace + ResourceMonitor + StatisticalProfiler (${SAMPLE_MS} ms)`, "default"),
    // the main thread too: V8's start there logs all its code (Effect, ...), once per layer
    profiledArm(`Trace + ResourceMonitor + StatisticalProfiler (${SAMPLE_MS} ms, main thread too)`, "driver")
  )
  return arms
}

const rows: Array<Row> = []
const notes: Array<string> = []
const load = () => loadavg().map((x) => x.toFixed(1)).join(" / ")
const loadBefore = load()

// ------------------------------------------------------------------ 1. fan-out
if (runs("fanout")) {
  const g = BenchGraphs.fanout(TASKS)
  const rt = ManagedRuntime.make(Executor.layerWorkers({ workers: WORKERS }))
  const rtSampled = ManagedRuntime.make(Executor.layerWorkers({ workers: WORKERS }))
  const rtSampling = ManagedRuntime.make(Executor.layerWorkers({ workers: WORKERS, sampleInterval: SAMPLE_MS }))
  const compute = Engine.compute(g.graph, { keys: g.keys })
  const on = (r: typeof rt): Runner => (layer) => r.runPromise(layer === undefined ? compute : compute.pipe(Effect.provide(layer))).then(() => {})
  const arms = tesseraArms(on(rt), on(rtSampled), on(rtSampling))
  const times = await interleaved(fanoutRounds, arms)
  for (const r of [rt, rtSampled, rtSampling]) await r.dispose()
  rows.push(...rowsOf(`fan-out ${g.graph.size} no-op tasks (${WORKERS} workers)`, arms.map((a) => a.name), times, g.graph.size))
}

// ------------------------------------------------------------------ 2. demo
if (runs("demo")) {
  const rt = ManagedRuntime.make(Executor.layerWorkers({ workers: WORKERS }))
  const rtSampled = ManagedRuntime.make(Executor.layerWorkers({ workers: WORKERS }))
  const rtSampling = ManagedRuntime.make(Executor.layerWorkers({ workers: WORKERS, sampleInterval: SAMPLE_MS }))
  const { pipeline, tasks, on } = await demoWorkload(rt)
  const arms = tesseraArms(on(rt), on(rtSampled), on(rtSampling), pipeline)
  const times = await interleaved(demoRounds, arms)
  for (const r of [rt, rtSampled, rtSampling]) await r.dispose()
  rows.push(...rowsOf(`demo ${SAMPLES} samples x 2, chunks of 5000, ${tasks} tasks (${WORKERS} workers)`, arms.map((a) => a.name), times, tasks))
}

// ------------------------------------------------------------------ 2b. the demo on a local cluster
// issue 17: the profiler's overhead on a LocalCluster of WORKERS processes (one thread
// each; the per-host files written by the workers through the profiler's worker plugins,
// preloaded as the CLI does), and the same demo on worker threads in this process beside it
if (runs("cluster")) {
  const plugins = new URL("../../src/profiler/WorkerPlugins.ts", import.meta.url).href
  const cluster = ManagedRuntime.make(Executor.layerCluster({ local: WORKERS, threads: 1, preload: [plugins] }))
  const threads = ManagedRuntime.make(Executor.layerWorkers({ workers: WORKERS }))
  const { pipeline, tasks, on } = await demoWorkload(cluster)
  // unprofiled and Trace + ResourceMonitor on the cluster (with `--breakdown`, also the
  // engine's records alone and each layer alone; the sampled arms would need clusters of
  // their own, as the demo's pools do), then worker threads unprofiled
  const unsampled = (a: Arm) => !a.name.includes("StatisticalProfiler") && !a.name.startsWith("workers sampling")
  const arms = [
    ...tesseraArms(on(cluster), on(cluster), on(cluster), pipeline).filter(unsampled),
    { name: `worker threads in one process instead (${WORKERS}, unprofiled)`, run: () => on(threads)(undefined) }
  ]
  // the worker processes' threads too ("child MainThread", "child WorkerThread", ...)
  const times = await interleaved(demoRounds, arms, true)
  for (const r of [cluster, threads]) await r.dispose()
  rows.push(...rowsOf(`demo ${SAMPLES} samples x 2 on a LocalCluster of ${WORKERS} processes, ${tasks} tasks`, arms.map((a) => a.name), times, tasks))
}

// ------------------------------------------------------------------ 2c. where the cluster's overhead comes from
// The profiler's cost on a LocalCluster split into what a profiled run pays once (the
// layer's start and close: files, plugins on every worker, the resource monitor), per
// compute and per task, from no-op fan-outs of the demo's shape: one compute of 2 tasks
// (the fixed cost), one of 10,000 (per task: (added - fixed) / 9,998) and 110 computes
// of 24 (the demo's count and mean size: per compute, what is left after the fixed and
// per-task costs). The demo's own overhead minus these is what its data adds (transfers,
// results' sizes).
if (runs("cluster-costs")) {
  const plugins = new URL("../../src/profiler/WorkerPlugins.ts", import.meta.url).href
  const cluster = ManagedRuntime.make(Executor.layerCluster({ local: WORKERS, threads: 1, preload: [plugins] }))
  const shapes = [
    { name: "1 compute of 2 no-op tasks", computes: 1, tasks: 2 },
    { name: "1 compute of 10,000 no-op tasks", computes: 1, tasks: 10_000 },
    { name: "110 computes of 24 no-op tasks", computes: 110, tasks: 24 }
  ]
  const added: Array<number> = []
  for (const shape of shapes) {
    const g = BenchGraphs.fanout(shape.tasks)
    const one = Engine.compute(g.graph, { keys: g.keys })
    const work = shape.computes === 1 ? one : Effect.forEach(Array.from({ length: shape.computes }), () => one, { discard: true })
    const run: Runner = (layer) => cluster.runPromise(layer === undefined ? work : work.pipe(Effect.provide(layer))).then(() => {})
    const arms = tesseraArms(run, run, run).filter((a) => a.name === "unprofiled" || a.name === "Trace + ResourceMonitor")
    const times = await interleaved(demoRounds, arms, true)
    const tasks = shape.computes * shape.tasks
    rows.push(...rowsOf(`${shape.name} on a LocalCluster of ${WORKERS} processes`, arms.map((a) => a.name), times, tasks))
    added.push(quantile(times[0]!.map((b, r) => times[1]![r]! - b), 0.5))
  }
  await cluster.dispose()
  const [fixed, big, many] = added as [number, number, number]
  const perTask = (big - fixed) / (10_000 - 2)
  const perCompute = (many - fixed - perTask * 110 * 24) / 110
  notes.push(
    `cluster costs of Trace + ResourceMonitor (medians of per-round differences): ${fixed.toFixed(1)} ms once a run, ` +
      `${(perTask * 1000).toFixed(2)} µs a task, ${perCompute.toFixed(3)} ms a compute; the demo's 110 computes and 2,676 tasks: ` +
      `${(fixed + perTask * 2676 + perCompute * 110).toFixed(0)} ms a run`
  )
}

// ------------------------------------------------------------------ 3. the demo's CLI
if (runs("cli")) {
  const main = new URL("../../src/cli/main.ts", import.meta.url).pathname
  const cwd = mkdtempSync(join(dir, "cli-"))
  /** One `tessera demo` process: [its reported wallSeconds, the whole process] in ms. */
  const demoProcess = (extra: ReadonlyArray<string>): [number, number] => {
    const t0 = performance.now()
    const p = spawnSync(process.execPath, [main, "demo", "--json", "--samples", String(SAMPLES), ...extra], { cwd, encoding: "utf8" })
    const whole = performance.now() - t0
    if (p.status !== 0) throw new Error(`tessera demo ${extra.join(" ")} failed: ${p.stderr}`)
    const out = JSON.parse(p.stdout.trim().split("\n").at(-1)!) as { wallSeconds: number }
    rmSync(cwd, { recursive: true, force: true })
    mkdirSync(cwd)
    return [out.wallSeconds * 1000, whole]
  }
  // `--profile` samples stacks since issue 18; `--no-sample` is the profile without them
  const extras: ReadonlyArray<ReadonlyArray<string>> = [[], ["--profile", "bench", "--no-sample"], ["--profile", "bench"]]
  const names = ["unprofiled", "--profile bench --no-sample", "--profile bench"]
  const wall: Array<Array<number>> = extras.map(() => [])
  const whole: Array<Array<number>> = extras.map(() => [])
  for (const e of extras) demoProcess(e)
  for (let r = 0; r < cliRounds; r++) {
    const order = extras.map((_, k) => k)
    for (const k of r % 2 === 0 ? order : order.reverse()) {
      const [w, p] = demoProcess(extras[k]!)
      wall[k]!.push(w)
      whole[k]!.push(p)
    }
  }
  rows.push(...rowsOf(`tessera demo --samples ${SAMPLES}: its wallSeconds`, names, wall, 0))
  rows.push(...rowsOf(`tessera demo --samples ${SAMPLES}: whole process`, names, whole, 0))
}

// ------------------------------------------------------------------ 5. one sample's cost
if (runs("sample-cost")) {
  const loop = (n: number): number => {
    let x = 0
    for (let i = 0; i < n; i++) x = (x + Math.sqrt(i + x)) % 1e9
    return x
  }
  const N = quick ? 20_000_000 : 100_000_000
  const plain: Array<number> = [], sampled: Array<number> = [], counts: Array<number> = [], starts: Array<number> = [], takes: Array<number> = []
  loop(N / 10)
  for (let r = 0; r < (quick ? 3 : 10); r++) {
    // plain first in even rounds, sampled first in odd ones
    const plainRun = () => {
      const t0 = performance.now()
      loop(N)
      plain.push(performance.now() - t0)
    }
    if (r % 2 === 0) plainRun()
    let t0 = performance.now()
    const s = new ThreadSampler(1)
    starts.push(performance.now() - t0)
    t0 = performance.now()
    loop(N)
    sampled.push(performance.now() - t0)
    const t1 = performance.now()
    const chunk = s.take(true)
    takes.push(performance.now() - t1)
    s.close()
    counts.push(chunk.samples.length)
    if (r % 2 === 1) plainRun()
  }
  const workerStarts: Array<number> = [], workerTakes: Array<number> = [], workerStops: Array<number> = []
  for (let r = 0; r < (quick ? 2 : 5); r++) {
    const w = new Worker(new URL("./samplerStart.ts", import.meta.url))
    const m = await new Promise<{ start: number; take: number; stop: number }>((resolve) => w.once("message", resolve))
    await w.terminate()
    workerStarts.push(m.start)
    workerTakes.push(m.take)
    workerStops.push(m.stop)
  }
  const perSample = sampled.map((x, r) => ((x - plain[r]!) / Math.max(1, counts[r]!)) * 1000)
  rows.push(...rowsOf("one thread, fixed CPU loop, sampled every 1 ms", ["unprofiled", "sampled (1 ms)"], [plain, sampled], 0))
  notes.push(
    `per sample: ${iqr(perSample, (x) => x.toFixed(1))} µs (median [IQR] of ${perSample.length} rounds, ${quantile(counts, 0.5)} samples a round); ` +
      `session + V8's start: ${iqr(starts, (x) => x.toFixed(1))} ms; taking a window of ${quantile(counts, 0.5)} samples (profiler left running): ${iqr(takes, (x) => x.toFixed(1))} ms (main thread, this bench's code loaded); ` +
      `in a fresh worker with the engine's kernel loader and the cluster kernels: start ${iqr(workerStarts, (x) => x.toFixed(1))} ms, a ~100 ms window taken ${iqr(workerTakes, (x) => x.toFixed(2))} ms, stop ${iqr(workerStops, (x) => x.toFixed(2))} ms`
  )
}

// ------------------------------------------------------------------ 4. dask.diagnostics
if (flag("--no-dask") || !runs("dask")) {
  if (runs("dask")) notes.push("dask skipped: --no-dask")
} else {
  const script = new URL("./dask_diagnostics.py", import.meta.url).pathname
  const py = spawnSync("/usr/bin/python3", [script, String(TASKS), String(WORKERS), String(daskRounds)], { encoding: "utf8", timeout: 300_000 })
  if (py.status === 0) {
    const d = JSON.parse(py.stdout.trim().split("\n").at(-1)!) as { version: string; plain_all: Array<number>; profiled_all: Array<number> }
    rows.push(
      ...rowsOf(`dask ${d.version}: fan-out ${TASKS} (threaded, ${WORKERS} workers)`, ["unprofiled", "Profiler + ResourceProfiler + CacheProfiler"], [
        d.plain_all,
        d.profiled_all
      ], TASKS)
    )
  } else {
    notes.push(`dask skipped: ${(py.stderr || py.error?.message || "python3 failed").trim().split("\n").at(-1)}`)
  }
}
rmSync(dir, { recursive: true, force: true })

const profiled = rows.filter((r) => r.arm === "Trace + ResourceMonitor")
const fan = profiled.find((r) => r.workload.startsWith("fan-out"))
const demoRow = profiled.find((r) => r.workload.startsWith("demo"))
const demoSampled = rows.find((r) => r.workload.startsWith("demo") && r.arm === `Trace + ResourceMonitor + StatisticalProfiler (${SAMPLE_MS} ms)`)
const dask = rows.find((r) => r.workload.startsWith("dask"))
if (dask !== undefined && fan !== undefined) {
  notes.push(
    `fan-out, Tessera vs dask: overhead ${pct(fan.overhead)} vs ${pct(dask.overhead)} (ratio ${(fan.overhead / dask.overhead).toFixed(2)}); ` +
      `added per task ${fan.perTask.toFixed(2)} µs vs ${dask.perTask.toFixed(2)} µs (ratio ${(fan.perTask / dask.perTask).toFixed(2)}); ` +
      `profiled wall time ${ms(fan.armMedianMs)} ms vs ${ms(dask.armMedianMs)} ms (ratio ${(fan.armMedianMs / dask.armMedianMs).toFixed(3)})`
  )
}
const cliRow = rows.find((r) => r.workload.endsWith("its wallSeconds") && r.arm === "--profile bench")
if (cliRow !== undefined) {
  notes.push(
    `tessera demo --profile overhead ${pct(cliRow.overhead)}, 95% interval ${pct(cliRow.overheadInterval[0])} to ${pct(cliRow.overheadInterval[1])} (its own wallSeconds)`
  )
}
if (demoRow !== undefined) {
  notes.push(
    `demo overhead ${pct(demoRow.overhead)}, 95% interval ${pct(demoRow.overheadInterval[0])} to ${pct(demoRow.overheadInterval[1])} (goal <= 5%)`
  )
}

if (demoSampled !== undefined) {
  notes.push(
    `demo overhead with the statistical profiler: ${pct(demoSampled.overhead)}, 95% interval ${pct(demoSampled.overheadInterval[0])} to ${pct(demoSampled.overheadInterval[1])} (goal <= 5%)`
  )
}

notes.push(`load average (1 / 5 / 15 min) before: ${loadBefore}, after: ${load()}`)

if (json) {
  console.log(JSON.stringify({ tasks: TASKS, samples: SAMPLES, workers: WORKERS, rows, notes }))
} else {
  console.table(rows.map(({ overhead: _o, overheadInterval: _i, perTask: _p, armMedianMs: _m, ...r }) => r))
  for (const n of notes) console.log(n)
}

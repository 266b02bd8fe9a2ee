/**
 * `tessera bench FILE… [--rounds N] [--warmup N] [--processes | --warm] [--env K=V[,K=V]]…
 * [--save NAME] [--json]` (issue 36): micro-benchmarks of users' pipeline files, the
 * files `tessera run` takes.
 *
 * - A series is one file under one setting (`--env`: environment variables set while the
 *   pipeline is built, each `--env` one setting). Two or more series are interleaved:
 *   round r runs every series, in order on even rounds and in reverse on odd ones, so a
 *   drift of the machine (heat, another job) falls on every series alike.
 * - `--warm` (the default): every round in this process on one worker pool started
 *   once, after `--warmup` rounds that are not counted: what a pipeline costs once
 *   Node's JIT, the pool and the caches are warm — the steady state a micro-benchmark is
 *   after, with the least noise. `--processes`: each round a fresh `tessera run` process
 *   (start-up, module loading, pool start and JIT included): what one run costs a user.
 * - Each round runs under the trace profiler (databases in a temporary folder, removed
 *   after), and is measured as `tessera diff` measures a run (analysis/Diff.ts): the
 *   pipeline's wall time (this process's clock around the run; with `--processes`, the
 *   child's), per stage and function the task time, tasks, items and bytes of results,
 *   peak task memory, time on the critical path; peak host memory (the resource
 *   monitor's samples and, warm, this process's resident set every 10 ms) and device
 *   memory where GPU workers report it.
 * - It prints per series the medians with 95% bootstrap intervals, the dispersion
 *   (relative median absolute deviation), Tukey outliers, throughput (items/s, bytes/s
 *   of each stage's results over its wall time), and warnings where the timer is too
 *   coarse for a group or the rounds vary too much to conclude; then each later series
 *   against the first, as `tessera diff` compares runs.
 * - `--save NAME`: NAME.json (several series: NAME-<series>.json each), with the machine
 *   (CPU model, cores, memory, Node, load average before and after), the project's git
 *   commit and Tessera's version; `tessera diff` reads them as a side.
 *
 * @since 0.1.0
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as Os from "node:os"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as References from "effect/References"
import { alignColumns as align, type BenchResult, type DiffResult, type RunMeasures } from "../analysis/Diff.ts"
import { median as medianOf, type Summary } from "../analysis/Stats.ts"
import { executorFor } from "./cluster.ts"
import * as Output from "./output.ts"

/**
 * A benchmark that cannot run as asked: names what. `usage`: the command line is wrong
 * (exit 2), not the run.
 *
 * @since 0.1.0
 * @category errors
 */
export class BenchFailed extends Data.TaggedError("BenchFailed")<{ readonly message: string; readonly usage?: boolean }> {}

/**
 * What `tessera bench FILE…` was asked.
 *
 * @since 0.1.0
 * @category models
 */
export interface PipelineBenchOptions {
  readonly files: ReadonlyArray<string>
  readonly rounds: number
  readonly warmup: number
  readonly processes: boolean
  /** each a setting: `K=V,K=V` */
  readonly env: ReadonlyArray<string>
  readonly workers: number
  readonly gpu: boolean
  readonly cluster: Option.Option<string>
  readonly save: Option.Option<string>
  readonly json: boolean
  /** what the series' comparisons test stages and functions on (as `tessera diff --measure`) */
  readonly measure?: "time" | "cpu"
}

/**
 * One series measured: its rounds and their summaries.
 *
 * @since 0.1.0
 * @category models
 */
export interface SeriesResult {
  readonly name: string
  readonly file: string
  readonly setting: string
  readonly runs: Array<RunMeasures>
  readonly wall: Summary
  readonly groups: ReadonlyArray<GroupSummary>
  readonly warnings: ReadonlyArray<string>
}

/**
 * A stage's or function's numbers over the rounds.
 *
 * @since 0.1.0
 * @category models
 */
export interface GroupSummary {
  readonly kind: "stage" | "function"
  readonly stage: string
  readonly fn: string
  readonly taskTime: Summary
  readonly tasks: number
  /** stages: their wall time over the rounds */
  readonly wall: Summary | undefined
  /** medians over the rounds, per second of the stage's wall time (stages) or task time (functions) */
  readonly itemsPerSecond: number
  readonly bytesPerSecond: number
  readonly peakMemory: number
}

/** Parses `K=V,K=V` into pairs; a usage error names the bad part. */
const parseSetting = (s: string): Array<readonly [string, string]> =>
  s === "" ? [] : s.split(",").map((kv) => {
    const i = kv.indexOf("=")
    if (i <= 0) throw new BenchFailed({ message: `--env ${s}: "${kv}" is not NAME=VALUE`, usage: true })
    return [kv.slice(0, i), kv.slice(i + 1)] as const
  })

/** Runs `f` with the setting's variables set, then puts the environment back. */
const withEnv = async <A>(pairs: ReadonlyArray<readonly [string, string]>, f: () => Promise<A>): Promise<A> => {
  const before = pairs.map(([k]) => [k, process.env[k]] as const)
  for (const [k, v] of pairs) process.env[k] = v
  try {
    return await f()
  } finally {
    for (const [k, v] of before) v === undefined ? delete process.env[k] : (process.env[k] = v)
  }
}

/** The smallest step of `performance.now()` seen in a few thousand reads (seconds). */
const timerResolution = (): number => {
  let best = Infinity
  let last = performance.now()
  for (let i = 0; i < 5000; i++) {
    const t = performance.now()
    if (t > last && t - last < best) best = t - last
    last = t
  }
  return best / 1000
}

/** The git commit of the folder (undefined outside a repository). */
const gitCommit = (dir: string): Promise<string | undefined> =>
  new Promise((resolve) => {
    try {
      const p = spawn("git", ["rev-parse", "HEAD"], { cwd: dir, stdio: ["ignore", "pipe", "ignore"] })
      let out = ""
      p.stdout.on("data", (d) => (out += String(d)))
      p.on("error", () => resolve(undefined))
      p.on("close", (code) => resolve(code === 0 && /^[0-9a-f]{40}$/.test(out.trim()) ? out.trim() : undefined))
    } catch {
      resolve(undefined)
    }
  })

/** Tessera's version (its package.json). */
const tesseraVersion = (): string => {
  try {
    return String((JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as { version?: unknown }).version)
  } catch {
    return "unknown"
  }
}

/**
 * The machine and what makes results comparable.
 *
 * @since 0.1.0
 * @category models
 */
export const machineInfo = (): Record<string, unknown> => ({
  cpu: Os.cpus()[0]?.model ?? "unknown",
  cores: Os.availableParallelism(),
  memoryBytes: Os.totalmem(),
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
  hostname: Os.hostname()
})

/** Peak resident set of this process while `f` runs, polled every 10 ms. */
const withPeakRss = async <A>(f: () => Promise<A>): Promise<{ readonly value: A; readonly peak: number }> => {
  let peak = process.memoryUsage.rss()
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10)
  try {
    const value = await f()
    return { value, peak: Math.max(peak, process.memoryUsage.rss()) }
  } finally {
    clearInterval(timer)
  }
}

/** The trace databases a `--profile` name wrote (TracePlugin and ResourceMonitor). */
const traceFiles = async (prefix: string): Promise<Array<string>> => {
  const { readdirSync } = await import("node:fs")
  const dir = NodePath.dirname(prefix)
  const base = NodePath.basename(prefix)
  return readdirSync(dir)
    .filter((f) => f.startsWith(`${base}-TracePlugin-`) || f.startsWith(`${base}-ResourceMonitor-`))
    .map((f) => NodePath.join(dir, f))
}

/** Measures a round's databases, then removes them. */
const measureFiles = async (prefix: string, label: string, wall: number, peakRss: number): Promise<RunMeasures> => {
  const Diff = await import("../analysis/Diff.ts")
  const { loadPromise } = await import("../analysis/Load.ts")
  const files = await traceFiles(prefix)
  if (files.length === 0) throw new BenchFailed({ message: `${label}: the round wrote no trace database` })
  const tables = await loadPromise(files, { columns: Diff.diffColumns })
  for (const f of files) rmSync(f, { force: true })
  const m = Diff.withWall(Diff.measureRun(tables, label), wall)
  // the saved result keeps no per-task durations (rounds are compared as runs)
  const { durations: _d, cpuDurations: _c, ...rest } = m
  return { ...rest, peakMemory: Math.max(Number.isFinite(m.peakMemory) ? m.peakMemory : 0, peakRss) || NaN }
}

/** One round in a fresh `tessera run` process: its wall time and the measures of its trace. */
const processRound = (
  file: string,
  setting: ReadonlyArray<readonly [string, string]>,
  prefix: string,
  label: string,
  o: PipelineBenchOptions
): Promise<RunMeasures> =>
  new Promise((resolve, reject) => {
    const main = process.argv[1]!
    const args = [...process.execArgv, main, "run", file, "--profile", prefix, "--overwrite", "--no-sample", "--json", "--log-level", "none"]
    if (Option.isSome(o.cluster)) args.push("--cluster", o.cluster.value)
    else args.push("--workers", String(o.workers))
    if (o.gpu) args.push("--gpu")
    const child = spawn(process.execPath, args, { env: { ...process.env, ...Object.fromEntries(setting) }, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (d) => (out += String(d)))
    child.stderr.on("data", (d) => (err += String(d)))
    child.on("error", (e) => reject(new BenchFailed({ message: `${label}: cannot start tessera run: ${e.message}` })))
    child.on("close", (code) => {
      if (code !== 0) return reject(new BenchFailed({ message: `${label}: tessera run exited ${code}: ${err.trim().split("\n").at(-1) ?? ""}` }))
      let wall: number
      try {
        wall = (JSON.parse(out.trim().split("\n").at(-1)!) as { wallSeconds: number }).wallSeconds
      } catch {
        return reject(new BenchFailed({ message: `${label}: tessera run printed no result` }))
      }
      measureFiles(prefix, label, wall, 0).then(resolve, reject)
    })
  })

const summarizeSeries = async (s: Omit<SeriesResult, "wall" | "groups" | "warnings">, resolution: number): Promise<SeriesResult> => {
  const { summarize, median } = await import("../analysis/Stats.ts")
  const { parseGroupKey } = await import("../analysis/Diff.ts")
  const walls = s.runs.map((r) => r.wall)
  const wall = summarize(walls)
  const warnings: Array<string> = []
  if (wall.median < 1000 * resolution) {
    warnings.push(`the pipeline's median wall time (${wall.median} s) is under 1000 ticks of the timer (${resolution * 1e6} µs): too coarse to measure it well`)
  }
  if (wall.n >= 3 && (wall.hi - wall.lo) / wall.median > 0.1) {
    warnings.push(
      `the rounds vary too much to conclude below ~${(((wall.hi - wall.lo) / wall.median) * 50).toFixed(0)}%: the median's 95% interval is ` +
        `${wall.lo.toFixed(4)}..${wall.hi.toFixed(4)} s (rmad ${(wall.rmad * 100).toFixed(1)}%); more rounds, or a quieter machine`
    )
  }
  if (wall.n < 3) warnings.push(`${wall.n} round(s): no interval; 10 or more are recommended`)
  const keys = [...new Set(s.runs.flatMap((r) => Object.keys(r.groups)))].sort()
  const groups = keys.map((k): GroupSummary => {
    const g = parseGroupKey(k)
    const per = s.runs.map((r) => r.groups[k])
    const taskTime = summarize(per.map((x) => x?.taskTime ?? 0))
    const tasks = median(per.map((x) => x?.tasks ?? 0))
    const wallS = g.kind === "stage" ? summarize(per.map((x) => x?.wall ?? NaN)) : undefined
    const over = g.kind === "stage" ? (x: number | undefined) => x ?? NaN : () => NaN
    const per1 = (f: (x: NonNullable<typeof per[number]>) => number) =>
      median(per.map((x) => (x === undefined ? NaN : f(x) / (g.kind === "stage" ? over(x.wall) : x.taskTime))))
    if (tasks > 0 && taskTime.median / tasks < 100 * 1e-6) {
      warnings.push(`${g.kind === "stage" ? `stage ${g.stage}` : `${g.fn} (stage ${g.stage})`}: its tasks take ${((taskTime.median / tasks) * 1e6).toFixed(1)} µs each, near the trace's µs timestamps: too coarse per task; compare its task time summed over rounds`)
    }
    return {
      kind: g.kind,
      stage: g.stage,
      fn: g.fn,
      taskTime,
      tasks,
      wall: wallS,
      itemsPerSecond: per1((x) => x.items),
      bytesPerSecond: per1((x) => x.bytes),
      peakMemory: median(per.map((x) => x?.peakMemory ?? NaN))
    }
  })
  return { ...s, wall, groups, warnings }
}

/**
 * Runs the benchmark (see the module header): the series' results, their comparisons
 * against the first, and the result as saved.
 *
 * @since 0.1.0
 * @category testing
 */
export const benchPipelines = (o: PipelineBenchOptions, log: (line: string) => void) =>
  Effect.gen(function*() {
    if (o.files.length === 0) return yield* new BenchFailed({ message: "no pipeline file given (tessera bench FILE…, or tessera bench engine|cluster)", usage: true })
    const settings = yield* Effect.try({
      try: () => (o.env.length === 0 ? [""] : [...o.env]).map((s) => ({ text: s, pairs: parseSetting(s) })),
      catch: (e) => (e instanceof BenchFailed ? e : new BenchFailed({ message: String(e) }))
    })
    const series = o.files.flatMap((file) =>
      settings.map((st) => ({
        file,
        setting: st.text,
        pairs: st.pairs,
        name: `${NodePath.basename(file).replace(/\.[^.]+$/, "")}${st.text === "" ? "" : `[${st.text}]`}`,
        runs: [] as Array<RunMeasures>
      }))
    )
    const names = new Set(series.map((s) => s.name))
    if (names.size < series.length) return yield* new BenchFailed({ message: "two series have the same name: give each file once, and each --env setting once", usage: true })
    const dir = mkdtempSync(NodePath.join(Os.tmpdir(), "tessera-bench-"))
    const loadBefore = Os.loadavg()
    const started = new Date().toISOString()
    const resolution = timerResolution()
    const { loadPipeline } = yield* Effect.promise(() => import("./commands/run.ts"))
    const { profiled } = yield* Effect.promise(() => import("./profiling.ts"))
    const executor = yield* executorFor(o, log)
    const what = o.processes ? `a fresh process per round (${executor.what})` : `a warm pool: ${executor.what}, started once`
    log(`bench: ${series.length} series × ${o.rounds} rounds${o.processes ? "" : ` after ${o.warmup} warm-up round(s)`}, on ${what}`)
    const body = Effect.gen(function*() {
      const context = o.processes ? undefined : yield* Layer.build(executor.layer)
      const warmRound = (s: typeof series[number], prefix: string, label: string) =>
        Effect.gen(function*() {
          const p = yield* Effect.promise(() => withEnv(s.pairs, () => Effect.runPromise(Effect.exit(loadPipeline(s.file))))).pipe(Effect.flatten)
          const t0 = performance.now()
          let t1 = t0
          const r = yield* Effect.promise(() =>
            withPeakRss(() =>
              Effect.runPromise(profiled(p.run().pipe(
                Effect.tap(() => Effect.sync(() => (t1 = performance.now()))),
                // the pipeline's INFO lines would flood a benchmark's output: warnings only
                Effect.provideService(References.MinimumLogLevel, "Warn"),
                Effect.provide(context!)
              ), {
                profile: Option.some(prefix),
                report: Option.none(),
                overwrite: true,
                sample: false,
                defaultName: p.name,
                title: "",
                pipeline: p,
                log: () => {}
              }))
            )
          )
          if (Exit.isFailure(r.value.exit)) return yield* new BenchFailed({ message: `${label}: the pipeline failed: ${String(r.value.exit.cause)}` })
          return yield* Effect.tryPromise({
            try: () => measureFiles(prefix, label, (t1 - t0) / 1000, r.peak),
            catch: (e) => (e instanceof BenchFailed ? e : new BenchFailed({ message: `${label}: ${(e as Error).message}` }))
          })
        })
      const round = (s: typeof series[number], k: number, counted: boolean) => {
        const label = `${s.name} round ${counted ? k + 1 : `warm-up ${k + 1}`}`
        const prefix = NodePath.join(dir, `s${series.indexOf(s)}-r${counted ? k : `w${k}`}`)
        return o.processes
          ? Effect.tryPromise({ try: () => processRound(s.file, s.pairs, prefix, label, o), catch: (e) => (e instanceof BenchFailed ? e : new BenchFailed({ message: String(e) })) })
          : warmRound(s, prefix, label)
      }
      if (!o.processes) {
        for (let k = 0; k < o.warmup; k++) for (const s of series) yield* round(s, k, false)
      }
      for (let k = 0; k < o.rounds; k++) {
        // interleaved, the order reversed every other round (ABBA)
        const order = k % 2 === 0 ? series : [...series].reverse()
        for (const s of order) {
          const m = yield* round(s, k, true)
          s.runs.push(m)
          Output.info(`bench: ${m.label}: ${m.wall.toFixed(4)} s`)
        }
      }
    })
    yield* Effect.scoped(body).pipe(Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
    const loadAfter = Os.loadavg()
    const commit = yield* Effect.promise(() => gitCommit(NodePath.dirname(NodePath.resolve(o.files[0]!))))
    const results = yield* Effect.promise(() => Promise.all(series.map((s) => summarizeSeries({ name: s.name, file: s.file, setting: s.setting, runs: s.runs }, resolution))))
    const Diff = yield* Effect.promise(() => import("../analysis/Diff.ts"))
    const comparisons: Array<{ readonly name: string; readonly diff: DiffResult }> = []
    const notCompared: Array<string> = []
    for (const s of results.slice(1)) {
      try {
        comparisons.push({ name: `${s.name} against ${results[0]!.name}`, diff: Diff.compare(results[0]!.runs, s.runs, { measure: o.measure ?? "time" }) })
      } catch (e) {
        // two different pipelines benchmarked side by side: their numbers stand, the comparison does not
        if (!(e instanceof Diff.DiffRefused)) throw e
        notCompared.push(`${s.name} not compared against ${results[0]!.name}: ${e.message}`)
      }
    }
    const machine = { ...machineInfo(), loadAverageBefore: loadBefore, loadAverageAfter: loadAfter, timerResolutionSeconds: resolution }
    const settingsSaved = {
      mode: o.processes ? "processes" : "warm",
      executor: executor.what,
      rounds: o.rounds,
      warmup: o.processes ? 0 : o.warmup,
      commit: commit ?? null,
      tessera: tesseraVersion(),
      started
    }
    const saved = (rs: ReadonlyArray<SeriesResult>): BenchResult => ({
      format: "tessera-bench",
      version: 1,
      created: new Date().toISOString(),
      machine,
      settings: settingsSaved,
      series: rs.map((s) => ({ name: s.name, file: s.file, setting: s.setting, runs: s.runs }))
    })
    const written: Array<string> = []
    if (Option.isSome(o.save)) {
      const base = o.save.value.replace(/\.json$/i, "")
      const targets = results.length === 1 ? [[`${base}.json`, results]] as const : results.map((s) => [`${base}-${s.name.replace(/[^A-Za-z0-9._-]+/g, "_")}.json`, [s]] as const)
      for (const [f, rs] of targets) {
        yield* Effect.try({
          try: () => writeFileSync(f, JSON.stringify(saved(rs), (_, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v), 1) + "\n"),
          catch: (e) => new BenchFailed({ message: `--save ${f}: ${(e as Error).message}` })
        })
        written.push(f)
      }
    }
    return { results, comparisons, notCompared, machine, settings: settingsSaved, written }
  })

const fmt = (x: number, digits = 4) => (Number.isFinite(x) ? x.toFixed(digits) : "-")
const rate = (x: number) => (!Number.isFinite(x) || x === 0 ? "-" : x >= 1e9 ? `${(x / 1e9).toFixed(2)} G` : x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : x >= 1e3 ? `${(x / 1e3).toFixed(2)} k` : x.toFixed(1))
const mib = (x: number) => (Number.isFinite(x) ? `${(x / 2 ** 20).toFixed(1)}` : "-")

/**
 * The benchmark's result as text.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatBench = (
  r: {
    readonly results: ReadonlyArray<SeriesResult>
    readonly comparisons: ReadonlyArray<{ readonly name: string; readonly diff: DiffResult }>
    readonly notCompared: ReadonlyArray<string>
    readonly settings: Readonly<Record<string, unknown>>
    readonly written: ReadonlyArray<string>
  },
  formatDiff: (d: DiffResult) => string
): string => {
  const out: Array<string> = []
  for (const s of r.results) {
    const w = s.wall
    out.push(
      `${s.name} (${s.file}${s.setting === "" ? "" : `, ${s.setting}`}): ${w.n} rounds, ${r.settings.mode === "warm" ? `warm, after ${r.settings.warmup} warm-up` : "a fresh process each"}`,
      `  wall time: median ${fmt(w.median)} s, 95% interval ${fmt(w.lo)}..${fmt(w.hi)} s; mean ${fmt(w.mean)} ± ${fmt(w.sd)} s (sd); rmad ${fmt(w.rmad * 100, 1)}%; ` +
        `min ${fmt(w.min)}, max ${fmt(w.max)}; ${w.outliers} outlier(s)`,
      ...align([
        ["  Group", "Tasks", "Task time median (s)", "95% interval", "rmad %", "Outliers", "Wall median (s)", "Items/s", "Bytes/s", "Peak task MiB"],
        ...s.groups.map((g) => [
          `  ${g.kind === "stage" ? `stage ${g.stage}` : `${g.fn} (stage ${g.stage})`}`,
          String(g.tasks),
          fmt(g.taskTime.median),
          `${fmt(g.taskTime.lo)}..${fmt(g.taskTime.hi)}`,
          fmt(g.taskTime.rmad * 100, 1),
          String(g.taskTime.outliers),
          g.wall === undefined ? "-" : fmt(g.wall.median),
          rate(g.itemsPerSecond),
          rate(g.bytesPerSecond),
          mib(g.peakMemory)
        ])
      ]),
      `  peak host memory: median ${mib(medianOf(s.runs.map((x) => x.peakMemory)))} MiB` +
        (s.runs.some((x) => (x.peakDeviceMemory ?? 0) > 0) ? `; peak device memory: median ${mib(medianOf(s.runs.map((x) => x.peakDeviceMemory ?? NaN)))} MiB` : "")
    )
    for (const wline of s.warnings) out.push(`  warning: ${wline}`)
    out.push("")
  }
  for (const c of r.comparisons) out.push(`== ${c.name} ==`, formatDiff(c.diff), "")
  for (const n of r.notCompared) out.push(`note: ${n}`)
  for (const f of r.written) out.push(`saved: ${f}`)
  return out.join("\n").trimEnd()
}

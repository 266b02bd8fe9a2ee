/**
 * `tessera bench FILE… [--rounds N] [--warmup N] [--processes | --warm] [--env K=V,…]…
 * [--save NAME] [--json]`: micro-benchmarks of users' pipeline files (the files `tessera
 * run` takes), interleaved when several files or settings are given; medians with 95%
 * bootstrap intervals, per stage and function; saved results `tessera diff` reads
 * (src/cli/benchPipeline.ts, docs/bench.md).
 *
 * `tessera bench engine [--graph fanout|tree|chain] [--tasks N] [--workers N] [--json]`:
 * runs a no-op task graph on a worker pool and prints tasks/s and the scheduler overhead
 * in µs per task (JSON with `tasksPerSecond` and `overheadMicros` under `--json`).
 * Graph shapes and the overhead measure are defined in bench/engine/BenchGraphs.ts.
 *
 * `tessera bench cluster [--graph fanout|tree] [--tasks N] [--workers N] [--json]`: the same
 * graphs on a LocalCluster of N worker processes (JSON with `tasksPerSecond`).
 *
 * `--workers` of both is bounded like every count of workers (the engine's
 * `maxWorkers()`): beyond it, a usage error naming the bound (exit 2) before anything starts.
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Argument, Command, Flag } from "effect/cli"
import { clusterFlag } from "../cluster.ts"
import { intAtLeast, threadsFlag, withDefaultShown, workersFlag } from "../flags.ts"
import { gpuFlag } from "../gpu.ts"
import * as RunLog from "../runLog.ts"

const engine = Command.make(
  "engine",
  {
    graph: Flag.Literals("graph", ["fanout", "tree", "chain"]).pipe(
      withDefaultShown<"fanout" | "tree" | "chain">("graph shape: fanout (root + n-1 leaves), tree (binary reduction), chain", "fanout")
    ),
    tasks: intAtLeast("tasks", 1, "number of tasks (tree: rounded up to 2L-1)", 10_000),
    workers: workersFlag,
    repeats: intAtLeast("repeats", 1, "timed runs after one warm-up; the median is reported", 5),
    json: Flag.Boolean("json").pipe(withDefaultShown("print one JSON object", false))
  },
  (c) =>
    Effect.gen(function*() {
      const BenchGraphs = yield* Effect.promise(() => import("../../../bench/engine/BenchGraphs.ts"))
      const m = yield* Effect.promise(() => BenchGraphs.measure({ graph: c.graph, tasks: c.tasks, workers: c.workers, repeats: c.repeats }))
      if (c.json) {
        yield* Console.log(JSON.stringify(m))
      } else {
        yield* Console.log(
          `${m.graph}: ${m.tasks} no-op tasks on ${m.workers} workers: ${Math.round(m.tasksPerSecond)} tasks/s ` +
            `(median of ${m.repeats}: ${(m.seconds * 1000).toFixed(1)} ms); scheduler overhead ${m.overheadMicros.toFixed(2)} µs/task`
        )
      }
    })
).pipe(Command.withDescription("Throughput of the task engine on no-op graphs, and scheduler overhead per task."))

const cluster = Command.make(
  "cluster",
  {
    graph: Flag.Literals("graph", ["fanout", "tree"]).pipe(
      withDefaultShown<"fanout" | "tree">("graph shape: fanout (root + n-1 leaves), tree (binary reduction)", "fanout")
    ),
    tasks: intAtLeast("tasks", 1, "number of tasks (tree: rounded up to 2L-1)", 10_000),
    workers: threadsFlag("workers", "worker processes of the local cluster", 2),
    repeats: intAtLeast("repeats", 1, "timed runs after one warm-up (which starts the cluster); the median is reported", 3),
    json: Flag.Boolean("json").pipe(withDefaultShown("print one JSON object", false))
  },
  (c) =>
    Effect.gen(function*() {
      const BenchGraphs = yield* Effect.promise(() => import("../../../bench/engine/BenchGraphs.ts"))
      const m = yield* Effect.promise(() => BenchGraphs.measureCluster({ graph: c.graph, tasks: c.tasks, workers: c.workers, repeats: c.repeats }))
      if (c.json) yield* Console.log(JSON.stringify(m))
      else {
        yield* Console.log(
          `${m.graph}: ${m.tasks} no-op tasks on a local cluster of ${m.workers} worker processes: ${Math.round(m.tasksPerSecond)} tasks/s ` +
            `(median of ${m.repeats}: ${(m.seconds * 1000).toFixed(1)} ms; start-up not timed)`
        )
      }
    })
).pipe(Command.withDescription("Throughput of the cluster executor on no-op graphs, on a local cluster of worker processes."))

/**
 * The `bench` subcommand (with `engine` and `cluster`).
 *
 * @since 0.1.0
 * @category cli
 */
export const bench = Command.make(
  "bench",
  {
    files: Argument.String("file").pipe(
      Argument.withDescription("pipeline modules, as tessera run takes (several: interleaved and compared against the first)"),
      Argument.variadic()
    ),
    rounds: intAtLeast("rounds", 1, "measured rounds of each series", 10),
    warmup: intAtLeast("warmup", 0, "rounds run first and not counted (warm mode)", 2),
    processes: Flag.Boolean("processes").pipe(withDefaultShown("each round in a fresh tessera run process (start-up included)", false)),
    warm: Flag.Boolean("warm").pipe(withDefaultShown("every round in this process on one worker pool started once (the default)", false)),
    env: Flag.String("env").pipe(
      Flag.withMetavar("K=V[,K=V]"),
      Flag.withDescription("a setting: environment variables set while the pipeline is built; each --env is one more series (default: none)"),
      Flag.atLeast(0)
    ),
    workers: workersFlag,
    gpu: gpuFlag,
    cluster: clusterFlag,
    measure: Flag.Literals("measure", ["time", "cpu"] as const).pipe(
      withDefaultShown<"time" | "cpu">("what the series' comparisons test stages and functions on, as tessera diff --measure", "time")
    ),
    save: Flag.String("save").pipe(Flag.withMetavar("NAME"), Flag.withDescription("write NAME.json (several series: NAME-<series>.json), which tessera diff reads (default: none)"), Flag.optional),
    json: Flag.Boolean("json").pipe(withDefaultShown("print one JSON object", false))
  },
  (c) =>
    Effect.gen(function*() {
      const B = yield* Effect.promise(() => import("../benchPipeline.ts"))
      if (c.files.length === 0) {
        return yield* new B.BenchFailed({ message: "give pipeline files (tessera bench FILE…) or a subcommand (tessera bench engine|cluster)", usage: true })
      }
      if (c.processes && c.warm) return yield* new B.BenchFailed({ message: "--processes and --warm: choose one", usage: true })
      const log = RunLog.make("bench")
      const r = yield* B.benchPipelines({ ...c, processes: c.processes }, log.info)
      const { formatDiff, diffJson } = yield* Effect.promise(() => import("../../analysis/Diff.ts"))
      if (c.json) {
        const clean = (x: unknown) => JSON.parse(JSON.stringify(x, (_, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v)))
        yield* Console.log(JSON.stringify({
          machine: r.machine,
          settings: r.settings,
          series: clean(r.results),
          comparisons: r.comparisons.map((x) => ({ name: x.name, diff: diffJson(x.diff) })),
          notCompared: r.notCompared,
          saved: r.written
        }))
      } else yield* Console.log(B.formatBench(r, formatDiff))
    })
).pipe(
  Command.withDescription("Benchmark pipeline files (tessera bench FILE…), or Tessera's own machinery (engine, cluster)."),
  Command.withSubcommands([engine, cluster])
)

/**
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
import { Command, Flag } from "effect/cli"
import { intAtLeast, threadsFlag, withDefaultShown, workersFlag } from "../flags.ts"

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
 * @category commands
 */
export const bench = Command.make("bench").pipe(
  Command.withDescription("Benchmarks of Tessera's own machinery."),
  Command.withSubcommands([engine, cluster])
)

/**
 * `tessera bench engine [--graph fanout|tree|chain] [--tasks N] [--workers N] [--json]`:
 * runs a no-op task graph on a worker pool and prints tasks/s and the scheduler overhead
 * in µs per task (JSON with `tasksPerSecond` and `overheadMicros` under `--json`).
 * Graph shapes and the overhead measure are defined in src/engine/BenchGraphs.ts.
 *
 * @since 0.1.0
 */
import { availableParallelism } from "node:os"
import { Console, Data, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import * as BenchGraphs from "../../engine/BenchGraphs.ts"

class BenchInputError extends Data.TaggedError("BenchInputError")<{ readonly message: string }> {}

const engine = Command.make(
  "engine",
  {
    graph: Flag.Literals("graph", ["fanout", "tree", "chain"]).pipe(
      Flag.withDescription("graph shape: fanout (root + n-1 leaves), tree (binary reduction), chain"),
      Flag.withDefault("fanout" as const)
    ),
    tasks: Flag.Int("tasks").pipe(Flag.withDescription("number of tasks (tree: rounded up to 2L-1)"), Flag.withDefault(10_000)),
    workers: Flag.Int("workers").pipe(Flag.withDescription("worker threads (default: available parallelism)"), Flag.withDefault(availableParallelism())),
    repeats: Flag.Int("repeats").pipe(Flag.withDescription("timed runs after one warm-up; the median is reported"), Flag.withDefault(5)),
    json: Flag.Boolean("json").pipe(Flag.withDescription("print one JSON object"), Flag.withDefault(false))
  },
  (c) =>
    Effect.gen(function*() {
      if (c.tasks < 1) return yield* new BenchInputError({ message: `--tasks must be at least 1, got ${c.tasks}` })
      if (c.workers < 1) return yield* new BenchInputError({ message: `--workers must be at least 1, got ${c.workers}` })
      if (c.repeats < 1) return yield* new BenchInputError({ message: `--repeats must be at least 1, got ${c.repeats}` })
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

/**
 * The `bench` subcommand (with `engine`).
 *
 * @since 0.1.0
 * @category commands
 */
export const bench = Command.make("bench").pipe(
  Command.withDescription("Benchmarks of Tessera's own machinery."),
  Command.withSubcommands([engine])
)

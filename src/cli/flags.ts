/**
 * Flags shared by several `tessera` commands, written once so that every command spells
 * them the same way, and help shows every default.
 *
 * `effect/cli`'s help lists a flag's description but not its default, so the helpers
 * here append `(default: X)` to the description of every flag that has one.
 *
 * @since 0.1.0
 */
import { availableParallelism } from "node:os"
import * as Effect from "effect/Effect"
import { Flag } from "effect/cli"
import { maxWorkers } from "../engine/WorkerCount.ts"
import { findInputAsOutput } from "../trace/OutputFile.ts"
import type { OutputIsInput } from "../trace/OutputFile.ts"

/**
 * A description with the default appended: `rows per chunk (default: 5000)`.
 *
 * @since 0.1.0
 * @category cli
 */
export const withDefaultShown = <A>(description: string, value: A, shown: string = String(value)) =>
  (self: Flag.Flag<A>): Flag.Flag<A> =>
    self.pipe(Flag.withDescription(`${description} (default: ${shown})`), Flag.withDefault(value))

/**
 * An integer flag with a lower bound and a default shown in help; a value below the
 * bound is a usage error naming the flag and the value.
 *
 * @since 0.1.0
 * @category cli
 */
export const intAtLeast = (name: string, min: number, description: string, value: number, shown?: string): Flag.Flag<number> =>
  Flag.Int(name).pipe(
    Flag.filter((n) => n >= min, () => `an integer of at least ${min}`),
    withDefaultShown(description, value, shown)
  )

/**
 * A count of threads (or worker processes): an integer from 1 to the engine's
 * `maxWorkers()` (engine/WorkerCount.ts, the bound `Executor.layerWorkers` and
 * `layerCluster` check too: four per core, or free memory at 64 MiB each, whichever is
 * more), default shown in help; a value out of range is a usage error (exit 2) naming the
 * flag, the bound and why.
 *
 * @since 0.1.0
 * @category cli
 */
export const threadsFlag = (name: string, description: string, value: number, shown?: string): Flag.Flag<number> =>
  Flag.Int(name).pipe(
    Flag.filter((n) => n >= 1, () => "an integer of at least 1"),
    Flag.filter((n) => n <= maxWorkers().bound, () => {
      const { bound, why } = maxWorkers()
      return `an integer of at most ${bound}, ${why}`
    }),
    withDefaultShown(description, value, shown)
  )

/**
 * `--workers N`: worker threads, 1 to the engine's `maxWorkers()`, default the machine's available
 * parallelism.
 *
 * @since 0.1.0
 * @category cli
 */
export const workersFlag = threadsFlag("workers", "worker threads", availableParallelism(), `available parallelism, ${availableParallelism()} here`)

/**
 * `-d/--databases DB [DB...]`: the trace databases, in every command that reads them
 * (`analyze`, `report`, `export`, `plot hist`). Several paths may follow one `-d`, and
 * `-d` may repeat (src/cli/argv.ts turns `-d a b` into `-d a -d b` before parsing);
 * `--db` is an alias. At least one unless `optional` (analyze also takes positional
 * databases, as DASF's does).
 *
 * @since 0.1.0
 * @category cli
 */
export const databasesFlag = (options: { readonly optional?: boolean } = {}): Flag.Flag<ReadonlyArray<string>> =>
  Flag.String("databases").pipe(
    Flag.withAlias("d"),
    Flag.withMetavar("DB..."),
    Flag.withDescription("trace database file(s): several may follow one -d, and -d may repeat"),
    Flag.atLeast(options.optional === true ? 0 : 1)
  )

/**
 * `--overwrite`: replace existing trace databases of the same name instead of failing.
 *
 * @since 0.1.0
 * @category cli
 */
export const overwriteFlag = Flag.Boolean("overwrite").pipe(
  withDefaultShown("replace existing trace databases of the same --profile name", false)
)

/**
 * `--no-sample`: profile without the statistical profiler (demo, run).
 *
 * @since 0.1.0
 * @category cli
 */
export const noSampleFlag = Flag.Boolean("no-sample").pipe(
  withDefaultShown("with --profile/--report: no statistical profiler (stack samples every 10 ms)", false)
)

/**
 * `--sample-driver`: the statistical profiler samples the driver's main thread too (demo,
 * run); by default only the workers (and the main thread when tasks run on it).
 *
 * @since 0.1.0
 * @category cli
 */
export const sampleDriverFlag = Flag.Boolean("sample-driver").pipe(
  withDefaultShown("with --profile/--report: sample the driver's main thread too (its samples outside tasks read \"driver\"; starting V8's profiler there costs 50-300 ms once)", false)
)

/**
 * `--profile NAME` (demo, run).
 *
 * @since 0.1.0
 * @category cli
 */
export const profileFlag = Flag.String("profile").pipe(
  Flag.withMetavar("NAME"),
  Flag.withDescription("write trace databases NAME-TracePlugin-{host}.msgpack and NAME-ResourceMonitor-{host}.msgpack (default: none, no profiling)"),
  Flag.optional
)

/**
 * `--report FILE` (demo, run).
 *
 * @since 0.1.0
 * @category cli
 */
export const reportFlag = Flag.String("report").pipe(
  Flag.withMetavar("FILE"),
  Flag.withDescription("write a self-contained HTML performance report to FILE (default: none)"),
  Flag.optional
)

/**
 * Fails with `OutputIsInput` (exit 1, one line naming both) when a file the command
 * would write is one of its input databases: the same device and inode, so the same path,
 * a symbolic link or a hard link to it (`trace/OutputFile.ts`). Checked before the
 * databases are loaded; the writers check again as they open each output.
 *
 * @since 0.1.0
 * @category guards
 */
export const refuseInputAsOutput = (
  flag: string,
  outputs: ReadonlyArray<string>,
  inputs: ReadonlyArray<string>
): Effect.Effect<void, OutputIsInput> =>
  Effect.suspend(() => {
    const clash = findInputAsOutput(outputs, inputs, flag)
    return clash === undefined ? Effect.void : Effect.fail(clash)
  })

/**
 * `--dashboard [HOST:]PORT` (demo, run): the live dashboard (src/dashboard/) on that
 * address; HOST defaults to 127.0.0.1 (loopback), bound elsewhere it needs the token it prints.
 *
 * @since 0.1.0
 * @category cli
 */
export const dashboardFlag = Flag.String("dashboard").pipe(
  Flag.withMetavar("[HOST:]PORT"),
  Flag.withDescription("serve the live dashboard while the program runs and after it, until Ctrl-C (e.g. 8787: http://127.0.0.1:8787/; bound off loopback a token is required and printed) (default: none)"),
  Flag.optional
)

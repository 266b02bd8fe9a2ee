/**
 * `tessera run FILE.ts [--workers N]`: loads a user pipeline module and runs it on the
 * worker-thread executor. The module's default export is a `Pipeline` (from
 * src/dsl/Pipeline.ts) or a function (possibly async) returning one. Prints the DASF-style
 * run log and one line per stage output.
 *
 * @since 0.1.0
 */
import { availableParallelism } from "node:os"
import * as NodePath from "node:path"
import { pathToFileURL } from "node:url"
import { Console, Data, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Executor from "../../engine/Executor.ts"
import { Pipeline } from "../../dsl/Pipeline.ts"

class RunInputError extends Data.TaggedError("RunInputError")<{ readonly message: string }> {}

const describeValue = (v: unknown): string => {
  if (v !== null && typeof v === "object" && "shape" in v && "dtype" in v) {
    const a = v as { shape: ReadonlyArray<number>; dtype: string; blocks?: ReadonlyArray<unknown> }
    return `${a.dtype} [${a.shape.join(", ")}]${a.blocks ? ` in ${a.blocks.length} chunks` : ""}`
  }
  return typeof v
}

/**
 * Loads `file` and returns its pipeline, or a typed error naming the file and the problem.
 *
 * @since 0.1.0
 * @category loading
 */
export const loadPipeline = (file: string) =>
  Effect.gen(function*() {
    const url = pathToFileURL(NodePath.resolve(file)).href
    const mod = yield* Effect.tryPromise({
      try: () => import(url) as Promise<{ default?: unknown }>,
      catch: (e) => new RunInputError({ message: `${file}: cannot load module: ${(e as Error).message}` })
    })
    const d = mod.default
    const p = typeof d === "function"
      ? yield* Effect.tryPromise({
        try: async () => (await (d as () => unknown)()) as unknown,
        catch: (e) => new RunInputError({ message: `${file}: default export threw: ${(e as Error).message}` })
      })
      : d
    if (!(p instanceof Pipeline)) {
      return yield* new RunInputError({ message: `${file}: default export must be a Pipeline or a function returning one, got ${typeof p}` })
    }
    return p
  })

/**
 * The `run` subcommand.
 *
 * @since 0.1.0
 * @category commands
 */
export const run = Command.make(
  "run",
  {
    file: Argument.String("file").pipe(Argument.withDescription("pipeline module (.ts/.js) whose default export is a Pipeline or returns one")),
    workers: Flag.Int("workers").pipe(Flag.withDescription("worker threads (default: available parallelism)"), Flag.withDefault(availableParallelism()))
  },
  (c) =>
    Effect.gen(function*() {
      if (c.workers < 1) return yield* new RunInputError({ message: `--workers must be at least 1, got ${c.workers}` })
      const p = yield* loadPipeline(c.file)
      const t0 = performance.now()
      const outputs = yield* p.run().pipe(Effect.provide(Executor.layerWorkers({ workers: c.workers })))
      yield* Console.log(`\npipeline ${p.name}: ${outputs.size} stages in ${((performance.now() - t0) / 1000).toFixed(2)} s on ${c.workers} workers`)
      for (const [k, v] of outputs) yield* Console.log(`  ${k}: ${describeValue(v)}`)
    })
).pipe(Command.withDescription("Run a user pipeline module (default export: a Pipeline or a function returning one)."))

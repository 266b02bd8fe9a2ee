/**
 * `tessera run FILE.ts [--workers N [--gpu] | --cluster local:N|HOST:PORT] [--profile NAME [--overwrite] [--no-sample] [--sample-driver]] [--report FILE]`: loads a user
 * pipeline module and runs it on the worker-thread executor (`--gpu`: plus a GPU worker,
 * src/cli/gpu.ts; `--cluster`: worker processes, src/cli/cluster.ts). The module's default export
 * is a `Pipeline` (from src/dsl/Pipeline.ts) or a function (possibly async) returning
 * one. Prints the DASF-style run log and one line per stage output.
 *
 * `--profile NAME` registers the default profiler for the run (DASF's registration
 * lines; `{NAME}-TracePlugin-{host}.msgpack` with the pipeline's stage DAG and
 * `{NAME}-ResourceMonitor-{host}.msgpack` in the working directory); `--report FILE`
 * writes the HTML report of those databases (profiling into a temporary folder when no
 * `--profile` is given); `--overwrite` replaces databases of an earlier run with the same
 * name. All through src/cli/profiling.ts, shared with `tessera demo`.
 *
 * @since 0.1.0
 */
import * as NodePath from "node:path"
import { pathToFileURL } from "node:url"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { Argument, Command } from "effect/cli"
import { clusterFlag, executorFor } from "../cluster.ts"
import { noSampleFlag, overwriteFlag, profileFlag, reportFlag, sampleDriverFlag, workersFlag } from "../flags.ts"
import { gpuFlag } from "../gpu.ts"

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
    const { Pipeline } = yield* Effect.promise(() => import("../../dsl/Pipeline.ts"))
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
    workers: workersFlag,
    gpu: gpuFlag,
    cluster: clusterFlag,
    profile: profileFlag,
    report: reportFlag,
    overwrite: overwriteFlag,
    noSample: noSampleFlag,
    sampleDriver: sampleDriverFlag
  },
  (c) =>
    Effect.gen(function*() {
      const p = yield* loadPipeline(c.file)
      const { profiled } = yield* Effect.promise(() => import("../profiling.ts"))
      const executor = yield* executorFor(c, console.log)
      const r = yield* profiled(p.run().pipe(Effect.provide(executor.layer)), {
        profile: c.profile,
        report: c.report,
        overwrite: c.overwrite,
        sample: !c.noSample,
        sampleDriver: c.sampleDriver,
        defaultName: p.name,
        title: `tessera run: ${p.name}`,
        pipeline: p
      })
      const outputs = r.value
      yield* Console.log(`\npipeline ${p.name}: ${outputs.size} stages in ${r.wallSeconds.toFixed(2)} s on ${executor.what}`)
      for (const [k, v] of outputs) yield* Console.log(`  ${k}: ${describeValue(v)}`)
      for (const d of r.databases) yield* Console.log(`trace database: ${d}`)
      if (r.report !== undefined) yield* Console.log(`report: ${r.report.file} (${(r.report.bytes / 2 ** 20).toFixed(1)} MiB)`)
    })
).pipe(Command.withDescription("Run a user pipeline module (default export: a Pipeline or a function returning one)."))

/**
 * `tessera demo [--workers N] [--samples N] [--chunk-rows N] [--profile NAME] [--report FILE] [--json]`:
 * DASF's tutorial 5 (blobs -> Normalize -> KMeans and SOM -> Persist) on the
 * worker-thread executor. `--profile NAME` registers the default profiler (trace and
 * resource databases named as DASF names them, in the working directory); `--report
 * FILE` writes the HTML report of those databases (profiling into a temporary folder
 * when no `--profile` is given).
 *
 * @since 0.1.0
 */
import { mkdtempSync } from "node:fs"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { Console, Data, Effect, Layer, Option } from "effect"
import { Command, Flag } from "effect/cli"
import * as Executor from "../../engine/Executor.ts"
import * as Tutorial5 from "../../dsl/Tutorial5.ts"
import * as DefaultProfiler from "../../profiler/DefaultProfiler.ts"
import { writeReport } from "../../report/buildReport.ts"

class DemoInputError extends Data.TaggedError("DemoInputError")<{ readonly message: string }> {}

const fmt = (p: ReadonlyArray<number>) => `(${p.map((v) => v.toFixed(3)).join(", ")})`

/**
 * The `demo` subcommand.
 *
 * @since 0.1.0
 * @category commands
 */
export const demo = Command.make(
  "demo",
  {
    workers: Flag.Int("workers").pipe(Flag.withDescription("worker threads (default: available parallelism)"), Flag.withDefault(availableParallelism())),
    samples: Flag.Int("samples").pipe(Flag.withDescription("rows of blobs"), Flag.withDefault(100_000)),
    chunkRows: Flag.Int("chunk-rows").pipe(Flag.withDescription("rows per chunk"), Flag.withDefault(5_000)),
    profile: Flag.String("profile").pipe(Flag.withDescription("write trace databases {NAME}-TracePlugin-{host}.msgpack and {NAME}-ResourceMonitor-{host}.msgpack"), Flag.optional),
    report: Flag.String("report").pipe(Flag.withDescription("write a self-contained HTML performance report to FILE"), Flag.optional),
    json: Flag.Boolean("json").pipe(Flag.withDescription("print a JSON summary only"), Flag.withDefault(false))
  },
  (c) =>
    Effect.gen(function*() {
      if (c.workers < 1) return yield* new DemoInputError({ message: `--workers must be at least 1, got ${c.workers}` })
      if (c.samples < 3) return yield* new DemoInputError({ message: `--samples must be at least 3, got ${c.samples}` })
      if (c.chunkRows < 1) return yield* new DemoInputError({ message: `--chunk-rows must be at least 1, got ${c.chunkRows}` })
      const quiet = c.json ? { log: () => {} } : {}
      const profile = Option.isSome(c.profile)
        ? { name: c.profile.value }
        : Option.isSome(c.report)
        ? { name: "demo", directory: mkdtempSync(join(tmpdir(), "tessera-demo-")) }
        : undefined
      const profiler = profile === undefined ? Layer.empty : DefaultProfiler.layer({ ...profile, ...quiet })
      const t0 = performance.now()
      // The profiler's layer closes (flushing both databases) before the report reads them.
      const r = yield* Tutorial5.run({ samples: c.samples, chunkRows: c.chunkRows, ...quiet }).pipe(
        Effect.provide(Layer.merge(Executor.layerWorkers({ workers: c.workers }), profiler))
      )
      const wallSeconds = (performance.now() - t0) / 1000
      const files = profile === undefined ? undefined : DefaultProfiler.files(profile, 0)
      const databases = files === undefined ? [] : [files.traceFile, files.resourceFile]
      if (Option.isSome(c.report)) {
        const out = c.report.value
        const written = yield* Effect.promise(() => writeReport(databases, out, { title: "tessera demo (DASF tutorial 5)" }))
        if (!c.json) yield* Console.log(`report: ${out} (${(written.bytes / 2 ** 20).toFixed(1)} MiB)`)
      }
      const s = r.summary
      if (c.json) {
        yield* Console.log(JSON.stringify({ wallSeconds, workers: c.workers, samples: c.samples, chunkRows: c.chunkRows, databases, ...s }))
        return
      }
      yield* Console.log(`\nwall time: ${wallSeconds.toFixed(2)} s on ${c.workers} worker threads (${c.samples} x 2 samples, chunks of ${c.chunkRows} rows)`)
      yield* Console.log(`KMeans centers (original units): ${s.kmeans.centers.map(fmt).join(" ")} after ${s.kmeans.iterations} iterations; ARI vs truth ${s.kmeans.ari.toFixed(4)}`)
      yield* Console.log(`SOM 1x3 nodes (original units): ${s.som.weights.map(fmt).join(" ")}; quantization error ${s.som.quantizationError.toFixed(4)}; ARI ${s.som.ari.toFixed(4)}`)
      for (const o of s.outputs) yield* Console.log(`output ${o.stage}: int32 [${o.shape.join(", ")}] persisted in ${o.chunks} shared-memory chunks`)
      for (const d of databases) yield* Console.log(`trace database: ${d}`)
    })
).pipe(Command.withDescription("DASF tutorial 5: blobs -> Normalize -> KMeans + SOM -> Persist, on worker threads."))

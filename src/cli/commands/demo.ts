/**
 * `tessera demo [--workers N] [--samples N] [--chunk-rows N] [--json]`: DASF's tutorial 5
 * (blobs -> Normalize -> KMeans and SOM -> Persist) on the worker-thread executor.
 *
 * @since 0.1.0
 */
import { availableParallelism } from "node:os"
import { Console, Data, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import * as Executor from "../../engine/Executor.ts"
import * as Tutorial5 from "../../dsl/Tutorial5.ts"

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
    json: Flag.Boolean("json").pipe(Flag.withDescription("print a JSON summary only"), Flag.withDefault(false))
  },
  (c) =>
    Effect.gen(function*() {
      if (c.workers < 1) return yield* new DemoInputError({ message: `--workers must be at least 1, got ${c.workers}` })
      if (c.samples < 3) return yield* new DemoInputError({ message: `--samples must be at least 3, got ${c.samples}` })
      if (c.chunkRows < 1) return yield* new DemoInputError({ message: `--chunk-rows must be at least 1, got ${c.chunkRows}` })
      const t0 = performance.now()
      const r = yield* Tutorial5.run({
        samples: c.samples,
        chunkRows: c.chunkRows,
        ...(c.json ? { log: () => {} } : {})
      }).pipe(Effect.provide(Executor.layerWorkers({ workers: c.workers })))
      const wallSeconds = (performance.now() - t0) / 1000
      const s = r.summary
      if (c.json) {
        yield* Console.log(JSON.stringify({ wallSeconds, workers: c.workers, samples: c.samples, chunkRows: c.chunkRows, ...s }))
        return
      }
      yield* Console.log(`\nwall time: ${wallSeconds.toFixed(2)} s on ${c.workers} worker threads (${c.samples} x 2 samples, chunks of ${c.chunkRows} rows)`)
      yield* Console.log(`KMeans centers (original units): ${s.kmeans.centers.map(fmt).join(" ")} after ${s.kmeans.iterations} iterations; ARI vs truth ${s.kmeans.ari.toFixed(4)}`)
      yield* Console.log(`SOM 1x3 nodes (original units): ${s.som.weights.map(fmt).join(" ")}; quantization error ${s.som.quantizationError.toFixed(4)}; ARI ${s.som.ari.toFixed(4)}`)
      for (const o of s.outputs) yield* Console.log(`output ${o.stage}: int32 [${o.shape.join(", ")}] persisted in ${o.chunks} shared-memory chunks`)
    })
).pipe(Command.withDescription("DASF tutorial 5: blobs -> Normalize -> KMeans + SOM -> Persist, on worker threads."))

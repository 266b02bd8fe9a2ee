/**
 * Runs pipelines in this process on one warm worker pool, each run under the trace
 * profiler, and measures each run as `tessera diff` does (analysis/Diff.ts): the helper
 * of the diff calibration (calibrate.ts) and of test/bench/Diff.test.ts (issue 36).
 * Sides are interleaved, the order reversed every other round (ABBA).
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, type Layer, ManagedRuntime, Option } from "effect"
import * as References from "effect/References"
import { profiled } from "../../src/cli/profiling.ts"
import * as Diff from "../../src/analysis/Diff.ts"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Executor from "../../src/engine/Executor.ts"
import type { PipelineLike } from "../../src/profiler/PipelineGraph.ts"

/** A run to make: the program and the pipeline whose graph goes into the trace. */
export interface Runnable {
  readonly program: Effect.Effect<unknown, unknown, Executor.Executor>
  readonly pipeline: PipelineLike
}

/** One side: how to build a run (called once per run, with the side's environment set). */
export interface Side {
  readonly env?: Readonly<Record<string, string>>
  readonly build: () => Runnable
}

/** A pool of `workers` worker threads, kept warm across runs; `dispose` when done. */
export const pool = (workers = 2) => ManagedRuntime.make(Executor.layerWorkers({ workers }) as Layer.Layer<Executor.Executor>)

/**
 * `rounds` measured runs of every side (after `warmup` unmeasured ones), interleaved;
 * per side, its runs' measures.
 */
export const measuredRuns = async (
  rt: ReturnType<typeof pool>,
  sides: ReadonlyArray<Side>,
  rounds: number,
  warmup = 1
): Promise<Array<Array<Diff.RunMeasures>>> => {
  const dir = mkdtempSync(join(tmpdir(), "tessera-diffruns-"))
  const out = sides.map(() => [] as Array<Diff.RunMeasures>)
  try {
    for (let k = -warmup; k < rounds; k++) {
      const order = sides.map((_, i) => i)
      if (k % 2 !== 0) order.reverse()
      for (const i of order) {
        const side = sides[i]!
        const saved = Object.entries(side.env ?? {}).map(([key]) => [key, process.env[key]] as const)
        for (const [key, v] of Object.entries(side.env ?? {})) process.env[key] = v
        let r: Runnable
        try {
          r = side.build()
        } finally {
          for (const [key, v] of saved) v === undefined ? delete process.env[key] : (process.env[key] = v)
        }
        const name = `s${i}-r${k + warmup}`
        const done = await rt.runPromise(
          profiled(r.program.pipe(Effect.provideService(References.MinimumLogLevel, "Warn")), {
            profile: Option.some(join(dir, name)),
            report: Option.none(),
            overwrite: true,
            sample: false,
            defaultName: name,
            title: "",
            pipeline: r.pipeline,
            log: () => {}
          })
        )
        if (done.exit._tag === "Failure") throw new Error(`run ${name} failed: ${String(done.exit.cause)}`)
        const files = readdirSync(dir).filter((f) => f.startsWith(`${name}-`)).map((f) => join(dir, f))
        if (k >= 0) out[i]!.push(Diff.measureRun(await loadPromise(files, { columns: Diff.diffColumns }), name))
        for (const f of files) rmSync(f, { force: true })
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return out
}

/**
 * Runs a gallery pipeline (examples/faults) in this process, profiled as `tessera run
 * --profile` profiles it (trace, resources, stack samples), on two worker threads or a
 * local cluster, and diagnoses the databases it wrote.
 *
 * @since 0.1.0
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { type Diagnosis, diagnoseFilesPromise, type ThresholdSettings } from "../../src/analysis/Diagnose.ts"
import type * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"

export const quiet = { log: () => {}, warn: () => {} }

let shared: ManagedRuntime.ManagedRuntime<Executor.Executor, unknown> | undefined

/**
 * One pool of two worker threads for every gallery run (booted once, as the diagnosis's
 * own fix for start-up advises): a run's trace then shows its pipeline, not the boot.
 */
export const sharedPool = (): ManagedRuntime.ManagedRuntime<Executor.Executor, unknown> =>
  shared ??= ManagedRuntime.make(Executor.layerWorkers({ workers: 2 }))

/** Dispose of the shared pool (call in `after`). */
export const closePool = async (): Promise<void> => {
  const rt = shared
  shared = undefined
  if (rt !== undefined) await rt.dispose()
}

/**
 * Run `make()`'s pipeline profiled into a temporary folder; the diagnosis of what it
 * wrote. On the shared pool unless `executor` is given (a fresh one, booted in the run).
 */
export const runAndDiagnose = async (
  name: string,
  make: () => Pipeline.Pipeline | Promise<Pipeline.Pipeline>,
  options: {
    readonly executor?: Layer.Layer<Executor.Executor, unknown>
    /** a pool booted before the run (as the shared one), instead of `executor` */
    readonly runtime?: ManagedRuntime.ManagedRuntime<Executor.Executor, unknown>
    readonly sampleInterval?: number
    /** thresholds, or how to decide them from the databases the run wrote */
    readonly thresholds?: ThresholdSettings | ((files: ReadonlyArray<string>) => Promise<ThresholdSettings>)
  } = {}
): Promise<Diagnosis & { readonly files: ReadonlyArray<string> }> => {
  const dir = mkdtempSync(join(tmpdir(), `tessera-fault-${name}-`))
  try {
    const p = await make()
    const profiler = DefaultProfiler.layer({ name, directory: dir, host: "gallery", pipeline: p, sample: true, sampleInterval: options.sampleInterval ?? 5, ...quiet })
    const run = p.run() as Effect.Effect<unknown, unknown, Executor.Executor>
    if (options.executor !== undefined) await Effect.runPromise(run.pipe(Effect.provide(Layer.mergeAll(options.executor, profiler))))
    else await (options.runtime ?? sharedPool()).runPromise(run.pipe(Effect.provide(profiler)))
    const files = readdirSync(dir).filter((f) => f.endsWith(".msgpack")).map((f) => join(dir, f))
    // the shared pool started before the profiler: its size is not in the trace
    const thresholds = typeof options.thresholds === "function" ? await options.thresholds(files) : options.thresholds
    const d = await diagnoseFilesPromise(files, { ...(options.executor === undefined && options.runtime === undefined ? { workers: 2 } : {}), ...(thresholds !== undefined ? { thresholds } : {}) })
    return { ...d, files }
  } finally {
    if (process.env.TESSERA_KEEP_FAULTS === undefined) rmSync(dir, { recursive: true, force: true })
    else console.error(`kept ${dir}`)
  }
}

/** The rule ids of a diagnosis's findings, in order. */
export const rulesOf = (d: Diagnosis): Array<string> => d.findings.map((f) => f.rule)

/** One line per finding, for assertion messages. */
export const show = (d: Diagnosis): string => d.findings.map((f) => `${f.severity} ${f.rule} ${f.saving.seconds.toFixed(3)}s: ${f.message}`).join("\n")

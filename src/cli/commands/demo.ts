/**
 * `tessera demo [--workers N [--gpu] | --cluster local:N|HOST:PORT] [--samples N] [--chunk-rows N] [--profile NAME [--overwrite] [--no-sample] [--sample-driver]] [--report FILE] [--json]`:
 * DASF's tutorial 5 (blobs -> Normalize -> KMeans and SOM -> Persist) on the
 * worker-thread executor (`--gpu`: plus a GPU worker, src/cli/gpu.ts). `--profile NAME` registers the default profiler (trace and
 * resource databases named as DASF names them, in the working directory, the trace with
 * the pipeline's stage DAG); `--report FILE` writes the HTML report of those databases
 * (profiling into a temporary folder when no `--profile` is given); `--overwrite`
 * replaces databases of an earlier run with the same name. All through
 * src/cli/profiling.ts, shared with `tessera run`. stdout carries the results only (or
 * `--json`'s one object); the run's log and progress go to stderr under `--log-level`
 * (src/cli/runLog.ts). A failed run still writes its databases and report, prints them,
 * then the error.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Command, Flag } from "effect/cli"
import { clusterFlag, executorFor, insecureFlag, tokenFileFlag } from "../cluster.ts"
import { withDashboard } from "../liveDashboard.ts"
import { dashboardFlag, intAtLeast, noSampleFlag, overwriteFlag, profileFlag, reportFlag, sampleDriverFlag, withDefaultShown, workersFlag } from "../flags.ts"
import { gpuFlag } from "../gpu.ts"
import * as RunLog from "../runLog.ts"

const fmt = (p: ReadonlyArray<number>) => `(${p.map((v) => v.toFixed(3)).join(", ")})`

/**
 * The `demo` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const demo = Command.make(
  "demo",
  {
    workers: workersFlag,
    gpu: gpuFlag,
    cluster: clusterFlag,
    tokenFile: tokenFileFlag("with --cluster HOST:PORT or postgres://…: the file holding the cluster's token (tessera scheduler prints where it is); default: TESSERA_CLUSTER_TOKEN"),
    insecure: insecureFlag,
    samples: intAtLeast("samples", 3, "rows of blobs", 100_000),
    chunkRows: intAtLeast("chunk-rows", 1, "rows per chunk", 5_000),
    profile: profileFlag,
    report: reportFlag,
    overwrite: overwriteFlag,
    noSample: noSampleFlag,
    sampleDriver: sampleDriverFlag,
    dashboard: dashboardFlag,
    json: Flag.Boolean("json").pipe(withDefaultShown("print one JSON summary only", false))
  },
  (c) =>
    withDashboard(c.dashboard, { title: "tessera demo (DASF tutorial 5)", records: c.profile._tag === "Some" || c.report._tag === "Some" || c.cluster._tag === "Some", profile: c.profile, sample: c.profile._tag === "Some" && !c.noSample }, (provide, stages, traces) => Effect.gen(function*() {
      // loaded only now: `tessera --help` and the other commands need none of it
      const [Executor, { DslError }, Tutorial5, { profiled }] = yield* Effect.promise(() =>
        Promise.all([import("../../engine/Executor.ts"), import("../../dsl/DslError.ts"), import("../../../examples/tutorial5/Tutorial5.ts"), import("../profiling.ts")])
      )
      // stdout: the results; the run's log and progress: stderr (src/cli/runLog.ts)
      const log = RunLog.make("demo")
      const out = (line: string) => Effect.sync(() => void process.stdout.write(line + "\n"))
      const options = { samples: c.samples, chunkRows: c.chunkRows, log: log.info }
      // before anything is made: a run that cannot fit says so now, not at the OOM killer
      const needed = Tutorial5.memoryNeeded(options)
      const available = Executor.availableMemory()
      if (needed > available) return yield* DslError.outOfMemory("tessera demo", `DASF tutorial 5 on ${c.samples} x 2 samples`, needed, available)
      const tutorial = Tutorial5.make(options)
      const pipeline = tutorial.pipeline
      stages(pipeline)
      const executor = yield* executorFor(c, log.info)
      const p = yield* log.around(profiled(Tutorial5.run(options, tutorial).pipe(Effect.provide(log.layer), Effect.provide(executor.layer), provide), {
        profile: c.profile,
        report: c.report,
        overwrite: c.overwrite,
        sample: !c.noSample,
        sampleDriver: c.sampleDriver,
        defaultName: "demo",
        title: "tessera demo (DASF tutorial 5)",
        pipeline,
        log: log.info
      }))
      const { databases, exit, wallSeconds } = p
      // the Findings tab diagnoses the databases --profile keeps (--report's alone are temporary)
      if (c.profile._tag === "Some") traces(databases)
      if (Exit.isFailure(exit)) {
        if (c.json) yield* out(JSON.stringify({ ok: false, wallSeconds, databases, report: p.report ?? null }))
        else {
          for (const d of databases) yield* out(`trace database: ${d}`)
          if (p.report !== undefined) yield* out(`report: ${p.report.file} (${(p.report.bytes / 2 ** 20).toFixed(1)} MiB)`)
        }
        return yield* exit
      }
      const s = exit.value.summary
      if (c.json) {
        yield* out(JSON.stringify({ wallSeconds, workers: c.workers, gpu: c.gpu, ...(c.cluster._tag === "Some" ? { cluster: c.cluster.value } : {}), samples: c.samples, chunkRows: c.chunkRows, databases, ...(p.report !== undefined ? { report: p.report } : {}), ...s }))
        // a report that could not be written: the error after the result (exit 1)
        if (p.reportFailed !== undefined) return yield* p.reportFailed
        return
      }
      yield* out(`wall time: ${wallSeconds.toFixed(2)} s on ${executor.what} (${c.samples} x 2 samples, chunks of ${c.chunkRows} rows)`)
      yield* out(`KMeans centers (original units): ${s.kmeans.centers.map(fmt).join(" ")} after ${s.kmeans.iterations} iterations; ARI vs truth ${s.kmeans.ari.toFixed(4)}`)
      yield* out(`SOM 1x3 nodes (original units): ${s.som.weights.map(fmt).join(" ")}; quantization error ${s.som.quantizationError.toFixed(4)}; ARI ${s.som.ari.toFixed(4)}`)
      for (const o of s.outputs) yield* out(`output ${o.stage}: int32 [${o.shape.join(", ")}] persisted in ${o.chunks} shared-memory chunks`)
      for (const d of databases) yield* out(`trace database: ${d}`)
      if (p.report !== undefined) yield* out(`report: ${p.report.file} (${(p.report.bytes / 2 ** 20).toFixed(1)} MiB)`)
      if (p.reportFailed !== undefined) return yield* p.reportFailed
    }))
).pipe(Command.withDescription("DASF tutorial 5: blobs -> Normalize -> KMeans + SOM -> Persist, on worker threads."))

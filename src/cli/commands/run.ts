/**
 * `tessera run FILE.ts [--workers N [--gpu] | --cluster local:N|HOST:PORT] [--profile NAME [--overwrite] [--no-sample] [--sample-driver]] [--report FILE] [--json]`: loads a user
 * pipeline module and runs it on the worker-thread executor (`--gpu`: plus a GPU worker,
 * src/cli/gpu.ts; `--cluster`: worker processes, src/cli/cluster.ts). The module's default export
 * is a `Pipeline` (from src/dsl/Pipeline.ts) or a function (possibly async) returning
 * one. The file may live anywhere: `import ... from "tessera"` (and `"tessera/<layer>/<Module>"`)
 * is this Tessera, and packages its folder lacks (`effect`) are Tessera's own
 * (src/cli/resolveHook.ts).
 *
 * stdout carries the results only: one line per stage output (its dtype, shape and
 * chunks; whether it was computed or is still lazy), the trace databases and the report
 * written; `--json`: one JSON object instead. The DASF-style run log, the registration
 * lines and progress go to stderr (src/cli/runLog.ts), under `--log-level`.
 *
 * `--profile NAME` registers the default profiler for the run (DASF's registration
 * lines; `{NAME}-TracePlugin-{host}.msgpack` with the pipeline's stage DAG and
 * `{NAME}-ResourceMonitor-{host}.msgpack` in the working directory); `--report FILE`
 * writes the HTML report of those databases (profiling into a temporary folder when no
 * `--profile` is given); `--overwrite` replaces databases of an earlier run with the same
 * name. All through src/cli/profiling.ts, shared with `tessera demo`.
 *
 * A run that fails still writes its databases and its report (of what ran), prints
 * them, then the error (exit 1). A module that cannot be loaded names the file, and for a
 * syntax error its line and column.
 *
 * @since 0.1.0
 */
import * as NodePath from "node:path"
import { pathToFileURL } from "node:url"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Argument, Command, Flag } from "effect/cli"
import { clusterFlag, executorFor, insecureFlag, tokenFileFlag } from "../cluster.ts"
import { withDashboard } from "../liveDashboard.ts"
import { dashboardFlag, noSampleFlag, overwriteFlag, profileFlag, reportFlag, sampleDriverFlag, withDefaultShown, workersFlag } from "../flags.ts"
import { gpuFlag } from "../gpu.ts"
import { registerTesseraResolve } from "../resolveHook.ts"
import * as RunLog from "../runLog.ts"

/**
 * The pipeline module could not be loaded or is not a pipeline: names the file (and,
 * for a syntax error, the line and column).
 *
 * @since 0.1.0
 * @category errors
 */
export class RunInputError extends Data.TaggedError("RunInputError")<{ readonly message: string }> {}

/**
 * What a stage's output is, for the results: a chunked array's dtype, shape and chunks
 * and whether it was computed (every chunk in memory), partly, or not at all (lazy: its
 * tasks never ran); a reduction's lazy value; a plain value's type.
 *
 * @since 0.1.0
 * @category models
 */
export interface OutputDescription {
  readonly stage: string
  readonly kind: "array" | "value" | "other"
  readonly state: "computed" | "partial" | "lazy"
  readonly dtype?: string
  readonly shape?: ReadonlyArray<number>
  readonly chunks?: number
  readonly computedChunks?: number
  readonly type?: string
}

/**
 * Describes one stage output (see {@link OutputDescription}).
 *
 * @since 0.1.0
 * @category formatting
 */
export const describeOutput = (stage: string, v: unknown): OutputDescription => {
  if (v !== null && typeof v === "object" && (v as { _tag?: unknown })._tag === "ChunkedArray") {
    const a = v as { shape: ReadonlyArray<number>; dtype: string; blocks: ReadonlyArray<{ readonly _tag: string }> }
    const computedChunks = a.blocks.filter((b) => b._tag === "Value").length
    const state = computedChunks === a.blocks.length ? "computed" : computedChunks === 0 ? "lazy" : "partial"
    return { stage, kind: "array", state, dtype: a.dtype, shape: [...a.shape], chunks: a.blocks.length, computedChunks }
  }
  if (v !== null && typeof v === "object" && (v as { _tag?: unknown })._tag === "Delayed") return { stage, kind: "value", state: "lazy" }
  const type = v === null ? "null" : typeof v === "object" ? (v.constructor?.name ?? "object") : typeof v
  return { stage, kind: "other", state: "computed", type }
}

/**
 * One line for an output: `float64 [1500, 2] in 3 chunks, computed`,
 * `int32 [300000] in 15 chunks, lazy: not computed`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatOutput = (d: OutputDescription): string => {
  if (d.kind === "value") return "a single value, lazy: not computed"
  if (d.kind === "other") return d.type ?? "value"
  const what = `${d.dtype} [${(d.shape ?? []).join(", ")}] in ${d.chunks} chunks`
  return d.state === "computed"
    ? `${what}, computed`
    : d.state === "lazy"
    ? `${what}, lazy: not computed`
    : `${what}, ${d.computedChunks} of ${d.chunks} chunks computed, the rest lazy`
}

/**
 * A syntax error's place, `file:line:column`, from the stack Node gives it (its first
 * line is `file:line`, then the source line(s) and a caret line under the place).
 */
const syntaxPlace = (e: unknown): string | undefined => {
  if (!(e instanceof SyntaxError) || typeof e.stack !== "string") return undefined
  const lines = e.stack.split("\n")
  const m = /^(.+):(\d+)$/.exec(lines[0] ?? "")
  if (m === null) return undefined
  const caret = lines.findIndex((l, i) => i > 0 && /^\s*\^+\s*$/.test(l))
  const column = caret < 0 ? undefined : lines[caret]!.indexOf("^") + 1
  const file = m[1]!.startsWith("file://") ? NodePath.relative(".", new URL(m[1]!).pathname) : m[1]!
  return `${file}:${m[2]}${column === undefined ? "" : `:${column}`}`
}

/**
 * Loads `file` and returns its pipeline, or a typed error naming the file and the problem.
 *
 * @since 0.1.0
 * @category encoding
 */
export const loadPipeline = (file: string) =>
  Effect.gen(function*() {
    const url = pathToFileURL(NodePath.resolve(file)).href
    registerTesseraResolve()
    // its kernel modules live beside it: workers may import from its folder (issue 32 item 4)
    const { allowModules } = yield* Effect.promise(() => import("../../engine/Executor.ts"))
    allowModules([NodePath.dirname(NodePath.resolve(file))])
    const mod = yield* Effect.tryPromise({
      try: () => import(url) as Promise<{ default?: unknown }>,
      catch: (e) => {
        const place = syntaxPlace(e)
        return new RunInputError({
          message: place !== undefined
            ? `${place}: syntax error: ${(e as Error).message}`
            : `${file}: cannot load module: ${(e as Error).message}`
        })
      }
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

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1)

/**
 * The `run` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const run = Command.make(
  "run",
  {
    file: Argument.String("file").pipe(Argument.withDescription("pipeline module (.ts/.js) whose default export is a Pipeline or returns one")),
    workers: workersFlag,
    gpu: gpuFlag,
    cluster: clusterFlag,
    tokenFile: tokenFileFlag("with --cluster HOST:PORT or postgres://…: the file holding the cluster's token (tessera scheduler prints where it is); default: TESSERA_CLUSTER_TOKEN"),
    insecure: insecureFlag,
    profile: profileFlag,
    report: reportFlag,
    overwrite: overwriteFlag,
    noSample: noSampleFlag,
    sampleDriver: sampleDriverFlag,
    dashboard: dashboardFlag,
    json: Flag.Boolean("json").pipe(withDefaultShown("print one JSON object with the results only", false))
  },
  (c) =>
    withDashboard(c.dashboard, { title: "tessera run", records: c.profile._tag === "Some" || c.report._tag === "Some" || c.cluster._tag === "Some", profile: c.profile, sample: c.profile._tag === "Some" && !c.noSample }, (provide, stages, traces) => Effect.gen(function*() {
      const log = RunLog.make("run")
      const out = (line: string) => Effect.sync(() => void process.stdout.write(line + "\n"))
      const p = yield* log.around(loadPipeline(c.file))
      stages(p)
      const { profiled } = yield* Effect.promise(() => import("../profiling.ts"))
      const executor = yield* executorFor(c, log.info)
      const r = yield* log.around(profiled(p.run().pipe(Effect.provide(log.layer), Effect.provide(executor.layer), provide), {
        profile: c.profile,
        report: c.report,
        overwrite: c.overwrite,
        sample: !c.noSample,
        sampleDriver: c.sampleDriver,
        defaultName: p.name,
        title: `tessera run: ${p.name}`,
        pipeline: p,
        log: log.info
      }))
      // the Findings tab diagnoses the databases --profile keeps (--report's alone are temporary)
      if (c.profile._tag === "Some") traces(r.databases)
      const outputs = Exit.isSuccess(r.exit) ? [...r.exit.value].map(([k, v]) => describeOutput(k, v)) : []
      if (c.json) {
        yield* out(JSON.stringify({
          pipeline: p.name,
          ok: Exit.isSuccess(r.exit),
          wallSeconds: r.wallSeconds,
          executor: executor.what,
          outputs,
          databases: r.databases,
          report: r.report ?? null
        }))
      } else {
        if (Exit.isSuccess(r.exit)) {
          yield* out(`pipeline ${p.name}: ${outputs.length} stages in ${r.wallSeconds.toFixed(2)} s on ${executor.what}`)
          for (const o of outputs) yield* out(`  ${o.stage}: ${formatOutput(o)}`)
        } else {
          yield* out(`pipeline ${p.name}: failed after ${r.wallSeconds.toFixed(2)} s on ${executor.what}`)
        }
        for (const d of r.databases) yield* out(`trace database: ${d}`)
        if (r.report !== undefined) yield* out(`report: ${r.report.file} (${mib(r.report.bytes)} MiB)`)
      }
      // the run's own error last, after the files it left (exit 1); or the report's
      if (Exit.isFailure(r.exit)) return yield* r.exit
      if (r.reportFailed !== undefined) return yield* r.reportFailed
    }))
).pipe(Command.withDescription("Run a user pipeline module (default export: a Pipeline or a function returning one)."))

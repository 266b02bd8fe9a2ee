/**
 * `--profile NAME` and `--report FILE` for the commands that run a pipeline (`tessera
 * demo`, `tessera run`): one place that wraps a program in the default profiler and
 * writes the HTML report of what it recorded.
 *
 * - `--profile NAME`: the default profiler (Trace + ResourceMonitor) for the program's
 *   lifetime, printing DASF's registration lines and writing
 *   `{NAME}-TracePlugin-{host}.msgpack` and `{NAME}-ResourceMonitor-{host}.msgpack` in
 *   the working directory (NAME may be a path: `--profile runs/demo` writes under
 *   `runs/`, creating the folder as `--report` does); with a pipeline, the trace also holds its stage DAG (the
 *   "Pipeline Graph" event).
 * - the statistical profiler (`{NAME}-StatisticalProfiler-{host}.msgpack`: stack samples
 *   of the worker threads every 10 ms, profiler/StatisticalProfiler.ts) with
 *   them, unless `--no-sample`.
 * - `--overwrite`: the profiler truncates databases of an earlier run with the same
 *   name instead of appending to them (appending warns on stderr).
 * - `--report FILE`: the HTML report of those databases once the program is done (the
 *   profiler's layer closes, flushing both files, before the report reads them). Without
 *   `--profile`, the databases go to a temporary folder, removed after the report.
 * - a program that fails still has its databases closed and its report written (of what
 *   ran): the caller gets the program's exit beside the files, prints them, then the
 *   error. A report that cannot be written then is a warning, not a second error.
 *   Interruption (Ctrl-C) writes no report.
 * - a report that cannot be written after a program that succeeded is `reportFailed`: the
 *   caller prints the program's result first, then fails with it (exit 1; issue 32 item 3).
 * - a profiler that could not start (its files locked by another live run with the same
 *   name, issue 32 item 2; a folder that cannot be made) fails the run before the
 *   program starts: no database is listed (the files there are not this run's) and no
 *   report is written. A profiler whose writes fail later (a full disk) stops with one
 *   warning, and the program goes on (FileDatabase `stopOnWriteError`).
 *
 * Leaves out: running the program (the command provides its executor) and the report
 * itself (src/report/Report.ts).
 *
 * @since 0.1.0
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { makeDirectorySync } from "../trace/Directory.ts"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { Cause, Data, Effect, Exit, Layer, Option } from "effect"
import type { DatabaseError } from "../profiler/EventDatabase.ts"
import * as DefaultProfiler from "../profiler/DefaultProfiler.ts"
import type { PipelineLike } from "../profiler/PipelineGraph.ts"
import { writeReportPromise as writeReport } from "../report/Report.ts"
import * as Output from "./output.ts"

/**
 * The report could not be written: names the output file and the reason.
 *
 * @since 0.1.0
 * @category errors
 */
export class ReportFailed extends Data.TaggedError("ReportFailed")<{ readonly file: string; readonly reason: string }> {
  override get message(): string {
    return `--report ${this.file}: ${this.reason}`
  }
}

/**
 * What to record and where.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProfileRequest {
  /** `--profile NAME` */
  readonly profile: Option.Option<string>
  /** `--report FILE` */
  readonly report: Option.Option<string>
  /** database name when only `--report` is given */
  readonly defaultName: string
  /** the report's title */
  readonly title: string
  /** whose stage DAG goes into the trace */
  readonly pipeline?: PipelineLike
  /** printer of the registration lines (default console.log) */
  readonly log?: (line: string) => void
  /** `--overwrite`: truncate databases of an earlier run with the same name instead of appending */
  readonly overwrite?: boolean
  /** the statistical profiler too (default true; `--no-sample`: false) */
  readonly sample?: boolean
  /** it samples the driver's main thread too (`--sample-driver`) */
  readonly sampleDriver?: boolean
}

/**
 * The program's exit (its value, or its failure: the report and the databases are
 * written either way), the databases kept (none when only `--report` was asked for;
 * only those that exist), the report written, and the program's wall time (profiler
 * start and flush included).
 *
 * @since 0.1.0
 * @category models
 */
export interface Profiled<A, E> {
  readonly exit: Exit.Exit<A, E>
  readonly wallSeconds: number
  readonly databases: ReadonlyArray<string>
  readonly report: { readonly file: string; readonly bytes: number } | undefined
  /** the report could not be written after the program succeeded: the caller's error, after its results */
  readonly reportFailed: ReportFailed | undefined
}

/**
 * Runs `program` under the profiler the request asks for, then writes the report.
 * With neither `--profile` nor `--report` the program runs unprofiled. Never fails: the
 * program's failure is `exit`, a report that could not be written `reportFailed` (or a
 * warning, after a failed program).
 *
 * @since 0.1.0
 * @category combinators
 */
export const profiled = <A, E, R>(
  program: Effect.Effect<A, E, R>,
  request: ProfileRequest
): Effect.Effect<Profiled<A, E | DatabaseError>, never, R> =>
  Effect.suspend(() => {
    const temporary = Option.isNone(request.profile) && Option.isSome(request.report)
      ? mkdtempSync(join(tmpdir(), "tessera-profile-"))
      : undefined
    const removeTemporary = Effect.sync(() => {
      if (temporary !== undefined) rmSync(temporary, { recursive: true, force: true })
    })
    return Effect.ensuring(run(program, request, temporary), removeTemporary)
  })

/**
 * The files of the same profile written for other hosts, next to `own` (DASF's names:
 * `{name}-{Plugin}-{host}.msgpack`): what `--report` reads besides the driver's.
 *
 * @since 0.1.0
 * @category getters
 */
export const otherHosts = (own: ReadonlyArray<string>): Array<string> => {
  const out: Array<string> = []
  for (const file of own) {
    const m = /^(.*-(?:TracePlugin|ResourceMonitor|StatisticalProfiler)-).*\.msgpack$/.exec(basename(file))
    if (m === null) continue
    let names: Array<string>
    try {
      names = readdirSync(dirname(file))
    } catch {
      continue
    }
    for (const n of names) {
      const other = join(dirname(file), n)
      if (n.startsWith(m[1]!) && n.endsWith(".msgpack") && !own.includes(other) && !out.includes(other)) out.push(other)
    }
  }
  return out
}

const run = <A, E, R>(program: Effect.Effect<A, E, R>, request: ProfileRequest, temporary: string | undefined) =>
  Effect.gen(function*() {
    const options: DefaultProfiler.DefaultProfilerOptions | undefined = Option.isSome(request.profile)
      ? { name: request.profile.value }
      : temporary !== undefined
      ? { name: request.defaultName, directory: temporary }
      : undefined
    const sample = options !== undefined && request.sample !== false
    // `--profile runs/demo`: the folder is made, as the report's is; where it cannot be
    // (a file in the way, no permission) the databases' open fails with its typed error
    // naming the path
    if (Option.isSome(request.profile)) {
      try {
        makeDirectorySync(dirname(request.profile.value))
      } catch {
        // reported by the open
      }
    }
    // DASF's two files, and the statistical profiler's on top of them (its registration
    // line last; cluster workers write their host's sidecar)
    const layer = options === undefined ? Layer.empty : DefaultProfiler.layer({
      ...options,
      ...(request.pipeline !== undefined ? { pipeline: request.pipeline } : {}),
      ...(request.log !== undefined ? { log: request.log } : {}),
      ...(request.overwrite === true ? { overwrite: true } : {}),
      ...(sample ? { sample: true } : {}),
      ...(sample && request.sampleDriver === true ? { sampleDriver: true } : {}),
      warn: Output.warn
    })
    const t0 = performance.now()
    // whether the profiler started (its layer built: files opened and locked)
    let started = false
    // the profiler's layer closes here, flushing both databases before the report reads
    // them, whether the program succeeded or not
    const exit = yield* Effect.exit(Effect.suspend(() => (started = true, program)).pipe(Effect.provide(layer)))
    // Ctrl-C: no report, the interruption goes on
    if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.interrupt
    const wallSeconds = (performance.now() - t0) / 1000
    const f = options === undefined ? undefined : DefaultProfiler.files(options, 0)
    const own = f === undefined ? [] : [f.traceFile, f.resourceFile, ...(sample ? [f.sampleFile] : [])]
    // and the other hosts' files of the same profile (cluster workers on other hosts);
    // those written (a profiler that could not open its files wrote none)
    // a profiler that did not start wrote nothing: files of that name are another run's
    const databases = started ? [...own, ...otherHosts(own)].filter((d) => existsSync(d)) : []
    let report: Profiled<A, E>["report"] = undefined
    let reportFailed: ReportFailed | undefined = undefined
    if (Option.isSome(request.report) && databases.length > 0) {
      const file = request.report.value
      const written = yield* Effect.tryPromise({
        try: () => writeReport(databases, file, { title: request.title }),
        catch: (e) => new ReportFailed({ file, reason: e instanceof Error ? e.message : String(e) })
      }).pipe(
        // after a failed run, the run's error is the one to report; after a run that
        // succeeded, the caller prints its result, then this error
        Effect.catch((e) =>
          Effect.sync(() => {
            if (Exit.isSuccess(exit)) reportFailed = e
            else Output.warn(`warning: ${e.message}`)
            return undefined
          })
        )
      )
      if (written !== undefined) report = { file, bytes: written.bytes }
    }
    const result: Profiled<A, E | DatabaseError> = { exit, wallSeconds, databases: temporary === undefined ? databases : [], report, reportFailed }
    return result
  })

/**
 * DASF's analysis command as a function: load trace databases, run named analyses,
 * print each as an aligned table under DASF's heading and, given a folder, write
 * `<analysis>.csv` (and `<analysis>.arrow`) there, as DASF's `TraceAnalyser` does.
 * `tessera analyze` is this plus argument parsing and progress (src/cli).
 *
 * Refuses, with a sentence naming what is missing or mixed (exit 1 in `tessera analyze`):
 * databases without any event (an empty file), `profile` without stack samples (or none
 * the filter keeps), and databases of several runs (Runs.ts: each run named by its start
 * time, pipeline, task count and files), whose tables would mix them.
 *
 * Leaves out: progress display (the caller's `onProgress`), argument syntax.
 *
 * @since 0.1.0
 */
import { availableParallelism } from "node:os"
import { join } from "node:path"
import type { Table } from "apache-arrow"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { makeDirectory } from "../trace/Directory.ts"
import { openOutput, writeOutputFile } from "../trace/OutputFile.ts"
import type { TraceFormatError } from "../trace/TraceFormat.ts"
import { analyses } from "./Analysis.ts"
import { analysisNames } from "./AnalysisNames.ts"
import { csvBlocks, csvColumns, csvHeader, summaryOf, toText } from "./Format.ts"
import { csvHelper, type CsvHelper, csvRowBlocks, sliceColumns, splitRow } from "./internal/csvWriter.ts"
import { taskView } from "./internal/taskView.ts"
import { taskBottleneckTable } from "./Bottleneck.ts"
import { load, parallelMinBytes } from "./Load.ts"
import type { EarlyTaskColumns, LoadProgress, TraceTables } from "./Load.ts"
import { type Decoding, fileSizes } from "./Decoding.ts"
import { analysisTitles, columnsOfNames, isUserAnalysis } from "./AnalysisNames.ts"
import { loadProfilePromise, profileTable, type SampleFilter } from "./Profile.ts"
import { loadAll as loadUserAnalyses } from "./Plugin.ts"
import type { QueryError } from "./Query.ts"
import { filesOfRuns, type Run, runsOf } from "./Runs.ts"

/**
 * An analysis name that is not one of {@link analysisNames}.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownAnalysis extends Data.TaggedError("UnknownAnalysis")<{
  readonly names: ReadonlyArray<string>
  readonly message: string
}> {}

/**
 * No database to analyse.
 *
 * @since 0.1.0
 * @category errors
 */
export class NoDatabase extends Data.TaggedError("NoDatabase")<{ readonly message: string }> {}

/**
 * The databases hold nothing the analyses need: no event at all (an empty or 0-byte
 * file), or, for `profile`, no stack sample (or none the filter keeps).
 *
 * @since 0.1.0
 * @category errors
 */
export class NothingToAnalyse extends Data.TaggedError("NothingToAnalyse")<{ readonly message: string }> {}

/**
 * The databases hold several runs (Runs.ts), which every analysis would mix: names
 * each run (start time, pipeline, tasks, files).
 *
 * @since 0.1.0
 * @category errors
 */
export class SeveralRuns extends Data.TaggedError("SeveralRuns")<{ readonly runs: ReadonlyArray<Run>; readonly files: ReadonlyArray<ReadonlyArray<string>>; readonly message: string }> {}

/**
 * An output file could not be written: names it, keeps the system's error as `cause`.
 *
 * @since 0.1.0
 * @category errors
 */
export class WriteFailed extends Data.TaggedError("WriteFailed")<{
  readonly file: string
  readonly cause: unknown
  readonly message: string
}> {}

/**
 * Why an analysis run failed (a trace that cannot be read fails with the trace layer's
 * own `TraceFormatError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type AnalyzeErrorReason = UnknownAnalysis | NoDatabase | WriteFailed | NothingToAnalyse | SeveralRuns

/**
 * The analysis run's error, with a tagged `reason`. `usage` says whether the request
 * itself was wrong (an unknown analysis, no database), as opposed to the run failing.
 *
 * @since 0.1.0
 * @category errors
 */
export class AnalyzeError extends Data.TaggedError("AnalyzeError")<{ readonly reason: AnalyzeErrorReason; readonly message: string }> {
  get usage(): boolean {
    return this.reason._tag === "UnknownAnalysis" || this.reason._tag === "NoDatabase"
  }
  static unknownAnalysis(names: ReadonlyArray<string>): AnalyzeError {
    const message = `unknown analysis ${names.join(", ")}; valid: ${analysisNames.join(", ")}`
    return new AnalyzeError({ reason: new UnknownAnalysis({ names, message }), message })
  }
  static noDatabase(): AnalyzeError {
    const message = "no database given (-d DB)"
    return new AnalyzeError({ reason: new NoDatabase({ message }), message })
  }
  static nothingToAnalyse(message: string): AnalyzeError {
    return new AnalyzeError({ reason: new NothingToAnalyse({ message }), message })
  }
  static severalRuns(runs: ReadonlyArray<Run>, files: ReadonlyArray<ReadonlyArray<string>>): AnalyzeError {
    const iso = (t: number) => new Date(t * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC")
    const each = runs.map((r, k) =>
      `run ${k + 1}${r.pipeline !== undefined ? ` (pipeline ${r.pipeline})` : ""} started ${iso(r.start)}, ${r.tasks} task(s)` +
      (files[k] !== undefined && files[k]!.length > 0 ? `, in ${files[k]!.join(", ")}` : "")
    )
    const message = `these databases hold ${runs.length} runs, which the analyses would mix: ${each.join("; ")}. ` +
      "Analyse one run at a time (pass only its files; --profile NAME --overwrite writes a fresh run)"
    return new AnalyzeError({ reason: new SeveralRuns({ runs, files, message }), message })
  }
  static writeFailed(file: string, cause: unknown): AnalyzeError {
    const why = cause instanceof Error ? cause.message : String(cause)
    const message = `could not write ${file}: ${why}`
    return new AnalyzeError({ reason: new WriteFailed({ file, cause, message }), message })
  }
}

/**
 * Guard for {@link AnalyzeError}.
 *
 * @since 0.1.0
 * @category guards
 */
export const isAnalyzeError = (u: unknown): u is AnalyzeError => u instanceof AnalyzeError

/**
 * What to analyse and where the results go.
 *
 * @since 0.1.0
 * @category models
 */
export interface AnalyzeOptions {
  readonly databases: ReadonlyArray<string>
  /** analysis names, in any order; they run in the registry's order; then user analyses (`.sql` files, modules: Plugin.ts), as given */
  readonly analyses: ReadonlyArray<string>
  /** folder for `<analysis>.csv` (created if missing) */
  readonly output?: string
  /** rows printed per table */
  readonly head: number
  /** `arrow` also writes `<analysis>.arrow` (Arrow IPC file) */
  readonly format: "csv" | "arrow"
  /** where each printed line goes (default: stdout) */
  readonly print?: (line: string) => void
  readonly onProgress?: (p: LoadProgress) => void
  /** called once the databases are loaded, before any analysis runs */
  readonly onLoaded?: (tables: TraceTables) => void
  /**
   * called as each analysis starts and when it is done: its table computed, printed and
   * written, except the last rows of a large CSV, which the CSV worker thread may still be
   * formatting (the effect succeeds only once every file is whole)
   */
  readonly onAnalysis?: (step: AnalysisStep) => void
  /** `profile`: only the samples of tasks of this function / stage */
  readonly profile?: { readonly function?: string | undefined; readonly stage?: string | undefined }
  /** decoding of `databases` already started (`Decoding.startDecoding`, with the columns these analyses read): taken over */
  readonly decoding?: Decoding
  /** run `.sql` user analyses with file access and extensions (default: safe mode, Plugin.ts) */
  readonly unsafeSql?: boolean
}

/**
 * Where {@link analyze} is: analysis `index` (from 1) of `count`, starting or done
 * (`seconds` from its start: computing, formatting and writing its files).
 *
 * @since 0.1.0
 * @category models
 */
export type AnalysisStep =
  | { readonly _tag: "Start"; readonly name: string; readonly index: number; readonly count: number }
  | {
    readonly _tag: "Done"
    readonly name: string
    readonly index: number
    readonly count: number
    readonly seconds: number
    readonly rows: number
    /** true when a worker thread computed its table (task_bottleneck of a large trace) */
    readonly worker?: boolean
  }

/** `profile`: the top frames of the databases' samples (read from the files). */
const profileAnalysis = (databases: ReadonlyArray<string>, filter: SampleFilter) => ({
  name: "profile",
  title: analysisTitles.profile + (filter.function !== undefined ? ` of ${filter.function}` : "") + (filter.stage !== undefined ? ` in stage ${filter.stage}` : ""),
  run: (_: TraceTables) =>
    Effect.flatMap(
      // the files loaded already: what could fail here did there
      Effect.tryPromise({ try: () => loadProfilePromise(databases), catch: (e) => e as TraceFormatError }),
      (d): Effect.Effect<Table, AnalyzeError> => {
        const n = d.samples.time.length
        if (n === 0) {
          return Effect.fail(AnalyzeError.nothingToAnalyse(
            `profile: no stack samples in ${databases.join(", ")}: pass the NAME-StatisticalProfiler-HOST.msgpack file that --profile NAME writes (unless --no-sample) with -d`
          ))
        }
        const table = profileTable(d, filter)
        if (table.numRows > 0) return Effect.succeed(table)
        const which = [filter.function !== undefined ? `function ${filter.function}` : "", filter.stage !== undefined ? `stage ${filter.stage}` : ""].filter((w) => w !== "").join(" and ")
        return Effect.fail(AnalyzeError.nothingToAnalyse(
          which === "" ? `profile: none of the ${n} stack samples has a frame` : `profile: none of the ${n} stack samples is of ${which}`
        ))
      }
    )
})

/** An output file, whole or not at all, and none of `inputs` (trace/OutputFile.ts). */
const write = (file: string, data: string | Uint8Array, inputs: ReadonlyArray<string>) =>
  Effect.tryPromise({ try: () => writeOutputFile(file, data, { inputs }), catch: (e) => AnalyzeError.writeFailed(file, e) })

/**
 * Tables with at least this many rows are formatted on two threads (on a machine with
 * more than one core): a worker formats the last rows (`workerCsvShare` of them) while
 * this thread formats and writes the first, then goes on with the next analysis.
 *
 * @since 0.1.0
 * @category constants
 */
export const splitCsvRows = 100_000

/**
 * The share of a large table's rows that the CSV worker formats. Under half: the worker
 * starts ~20 ms after this thread (the rows' numbers and codes are copied to it; a large
 * dictionary is shared, Load.ts), then this thread writes the worker's bytes too (on the
 * 1M-event bench trace each thread takes ~0.35 s for its share: 47% had them finish
 * within ~10 ms of each other).
 *
 * @since 0.1.0
 * @category constants
 */
export const workerCsvShare = 0.47

/**
 * The share of the per-task bottleneck's rows that the CSV worker formats when it also
 * computed them (`offloadTaskBottleneck`): it starts formatting at once, while this thread
 * first builds the table and its CSV columns.
 *
 * @since 0.1.0
 * @category constants
 */
export const offloadedCsvShare = 0.55

/**
 * Writes a table as CSV a block of rows at a time (a 500k-row task table never becomes
 * one string). A large one's last rows (`workerCsvShare` of them) are formatted by
 * `helper`'s worker meanwhile (if it fails, here instead: the bytes are the same either way); the effect then succeeds with `finish`,
 * the promise of the file's end (the worker's rows written, the file closed), so that
 * this thread goes on while the worker formats. Without a worker the file is whole when
 * the effect succeeds. The rows go to a file beside `file`, renamed over it once whole
 * (a failure or an interrupt leaves the previous `file` or none; trace/OutputFile.ts);
 * `file` must be none of `inputs`.
 */
const writeCsv = (
  file: string,
  inputs: ReadonlyArray<string>,
  table: Table,
  helper: () => Promise<CsvHelper> | undefined,
  formatted?: { readonly blocks: Promise<ReadonlyArray<Uint8Array>>; readonly share: number }
) =>
  Effect.tryPromise({
    // the file's end in an object: a promise returned from an async function would be awaited
    try: async (): Promise<{ readonly finish: Promise<void> }> => {
      const out = await openOutput(file, { inputs })
      const n = table.numRows
      const h = formatted !== undefined ? undefined : n >= splitCsvRows ? helper() : undefined
      let finish: Promise<void> | undefined
      try {
        if (h === undefined && formatted === undefined) {
          for (const block of csvBlocks(table)) await out.write(block)
          await out.commit()
          return { finish: Promise.resolve() }
        }
        const columns = csvColumns(table)
        const mid = splitRow(n, formatted?.share ?? workerCsvShare)
        const rest = formatted?.blocks ?? h!.then((w) => w.format(sliceColumns(columns, mid, n), n - mid))
        rest.catch(() => undefined) // awaited below
        await out.write(csvHeader(table))
        // each block written before the next is made: one buffer for all of them
        for (const block of csvRowBlocks(columns, 0, mid, { reuse: true })) await out.write(block)
        finish = (async () => {
          try {
            for (const block of await rest.catch(() => csvRowBlocks(columns, mid, n))) await out.write(block)
            await out.commit()
          } finally {
            await out.abort() // after commit: nothing to do
          }
        })().catch((e) => Promise.reject(AnalyzeError.writeFailed(file, e)))
        finish.catch(() => undefined) // the caller awaits it
        return { finish }
      } finally {
        // done (committed), or failed before the worker's part: the partial file removed
        if (finish === undefined) await out.abort()
      }
    },
    catch: (e) => AnalyzeError.writeFailed(file, e)
  })

/**
 * The per-task bottleneck computed on the CSV worker thread while this thread builds the
 * tables and runs the analyses before it (its rows are ~0.25 s of work on the 1M-event
 * trace, with the second core idle), the worker then formatting the last `share` of its
 * rows. Posted from the load's task columns (`LoadOptions.onTaskColumns`), while the
 * tables are still being built (the worker starts ~0.1 s sooner than from the built
 * tables): at once when `helper` has started (not on a later turn: the load goes on
 * building meanwhile), else when it has.
 *
 * Given the tables once they are built, it answers the table (the one `perTaskBottleneck`
 * gives: one function computes the rows on either thread), `undefined` if the worker
 * failed (the caller computes it, and formats every row: `blocks` rejects), and the CSV
 * bytes of the worker's rows. The worker sees task keys as the load's string ids
 * (`EarlyTaskColumns.keys`): the table takes its rows' keys from the tasks table's codes,
 * through each row's task row; the CSV bytes are the same either way (the same strings).
 *
 * @since 0.1.0
 * @internal
 */
export const offloadTaskBottleneck = (early: EarlyTaskColumns, helper: CsvHelper | Promise<CsvHelper>, share = offloadedCsvShare) => {
  const request = { ...early, share }
  const asked = helper instanceof Promise
    ? helper.then((h) => h.taskBottleneck(request))
    : Promise.resolve(helper.taskBottleneck(request))
  const rows = asked.then((a) => a.rows)
  const blocks = asked.then((a) => a.blocks)
  // both read later, or not at all (a load that fails after posting, an interruption:
  // the helper is closed and they reject, which must not end the process)
  rows.catch(() => undefined)
  blocks.catch(() => undefined)
  return (tables: TraceTables) => {
    const v = taskView(tables.tasks)
    // undefined if the worker failed (or was stopped): the caller computes it itself
    const table: Promise<Table | undefined> = rows.then((r) => {
      const key = new Int32Array(r.rows) // the rows' own keys are on shared memory, which the worker reads
      for (let i = 0; i < r.rows; i++) key[i] = v.key.codes[r.row[i]!]!
      return taskBottleneckTable({ ...r, key }, v)
    }, () => undefined)
    return { table, blocks, share }
  }
}

/**
 * Load, analyse, print and write (see the module header).
 *
 * @since 0.1.0
 * @category analysis
 */
export const analyze = (options: AnalyzeOptions): Effect.Effect<void, AnalyzeError | TraceFormatError | QueryError> =>
  Effect.suspend(() => {
    // a CSV worker thread (one per run of this effect), started by a large input or the first table large enough to need it
    let helper: Promise<CsvHelper> | undefined
    let started: CsvHelper | undefined // the helper, once started
    const needHelper = () => availableParallelism() > 1 ? (helper ??= csvHelper().then((h) => (started = h))) : undefined
    return Effect.gen(function*() {
      const unknown = options.analyses.filter((a) => !(analysisNames as ReadonlyArray<string>).includes(a) && !isUserAnalysis(a))
      if (unknown.length > 0) return yield* AnalyzeError.unknownAnalysis(unknown)
      if (options.databases.length === 0) return yield* AnalyzeError.noDatabase()
      const user = yield* loadUserAnalyses(options.analyses.filter(isUserAnalysis), { unsafeSql: options.unsafeSql === true })
      const builtIn = analyses.filter((x) => options.analyses.includes(x.name))
      const print = options.print ?? ((s: string) => process.stdout.write(s + "\n"))
      const chosen = [
        ...builtIn.map((a) => ({ ...a, builtIn: true, run: (t: TraceTables) => Effect.sync(() => a.run(t)) })),
        ...(options.analyses.includes("profile") ? [{ ...profileAnalysis(options.databases, options.profile ?? {}), builtIn: false }] : []),
        ...user.map((a) => ({ ...a, builtIn: false }))
      ]
      // only the columns the analyses read (user analyses and `profile` read any)
      const columns = columnsOfNames(options.analyses)
      // the output folder first: one that cannot be made fails before a long load
      const output = options.output
      if (output !== undefined) {
        yield* Effect.tryPromise({ try: () => makeDirectory(output), catch: (e) => AnalyzeError.writeFailed(output, e) })
      }
      // large inputs make large tables: the CSV worker starts while they load, to write
      // them, or to compute task_bottleneck while this thread runs another analysis
      const bytes = (yield* Effect.promise(() => fileSizes(options.databases))).reduce((a, b) => a + b, 0)
      const offloadable = builtIn.length > 1 && builtIn.some((a) => a.name === "task_bottleneck")
      if ((output !== undefined || offloadable) && bytes >= parallelMinBytes) void needHelper()?.catch(() => undefined)
      // the per-task bottleneck of a large table starts on the CSV worker (started with
      // the load: not worth waiting for otherwise) as soon as the load has its task
      // columns, when this thread has another built-in analysis to run meanwhile (alone,
      // it would wait for the worker); the worker formats its share of the CSV only when
      // there is one to write
      const share = output !== undefined ? offloadedCsvShare : 0
      let offload: ReturnType<typeof offloadTaskBottleneck> | undefined
      const onTaskColumns = (c: EarlyTaskColumns) => {
        if (c.columns.n >= splitCsvRows && helper !== undefined) offload = offloadTaskBottleneck(c, started ?? helper, share)
      }
      const tables = yield* load(options.databases, {
        ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
        ...(columns !== undefined ? { columns } : {}),
        ...(options.decoding !== undefined ? { decoding: options.decoding } : {}),
        // only where it can be used: the load then shares its strings (a copy of them on one thread)
        ...(offloadable && helper !== undefined ? { onTaskColumns } : {})
      })
      options.onLoaded?.(tables)
      // nothing to analyse, or several runs to mix: a sentence, not empty or merged tables
      if (tables.events === 0) {
        const sizes = yield* Effect.promise(() => fileSizes(options.databases))
        const each = options.databases.map((f, i) => `${f} (${sizes[i] ?? 0} bytes)`)
        return yield* AnalyzeError.nothingToAnalyse(`no trace events in ${each.join(", ")}: nothing to analyse`)
      }
      const runs = runsOf(tables)
      if (runs.length > 1) {
        const files = yield* Effect.promise(() => filesOfRuns(runs, tables.files, (f) => Effect.runPromise(load([f]))))
        return yield* AnalyzeError.severalRuns(runs, files)
      }
      const offloaded = offload?.(tables)
      // large CSVs still being finished by the worker thread
      const writing: Array<Promise<void>> = []
      // tables computed before their turn (or how they failed, surfaced at their turn), and how long each took
      const ahead = new Map<string, { readonly table: Exit.Exit<Table, TraceFormatError | QueryError | AnalyzeError>; readonly seconds: number }>()
      for (const [i, a] of chosen.entries()) {
        const step = { name: a.name, index: i + 1, count: chosen.length }
        options.onAnalysis?.({ _tag: "Start", ...step })
        const t0 = performance.now()
        const early = a.name === "task_bottleneck" && a.builtIn ? offloaded : undefined
        let table: Table
        let aside = 0 // seconds spent meanwhile on the analyses after it
        let onWorker = false // its table computed by the CSV worker
        if (early !== undefined) {
          // while the worker computes it: the built-in analyses after it, printed in their turn
          for (const b of chosen.slice(i + 1)) {
            if (!b.builtIn) break
            const t1 = performance.now()
            const run: Effect.Effect<Table, TraceFormatError | QueryError | AnalyzeError> = b.run(tables)
            const table = yield* Effect.exit(run)
            const seconds = (performance.now() - t1) / 1000
            ahead.set(b.name, { table, seconds })
            aside += seconds
          }
          const computed = yield* Effect.promise(() => early.table)
          onWorker = computed !== undefined
          table = computed ?? (yield* a.run(tables))
        } else {
          const computed = ahead.get(a.name)
          ahead.delete(a.name)
          if (computed !== undefined) (table = yield* computed.table, aside = -computed.seconds)
          else table = yield* a.run(tables)
        }
        if (output !== undefined) {
          writing.push((yield* writeCsv(join(output, `${a.name}.csv`), options.databases, table, needHelper, early)).finish)
          if (options.format === "arrow") {
            // loaded only here: Arrow's IPC writer is ~25 modules that a CSV run does not need
            const { tableToIPC } = yield* Effect.promise(() => import("apache-arrow/ipc/serialization"))
            yield* write(join(output, `${a.name}.arrow`), tableToIPC(table, "file"), options.databases)
          }
        }
        print("=".repeat(20) + a.title + "=".repeat(20))
        print(toText(table, options.head))
        const summary = summaryOf(table)
        if (summary !== undefined) print(summary)
        print("=".repeat(80) + "\n")
        options.onAnalysis?.({
          _tag: "Done",
          ...step,
          seconds: (performance.now() - t0) / 1000 - aside,
          rows: table.numRows,
          ...(early !== undefined ? { worker: onWorker } : {})
        })
      }
      yield* Effect.tryPromise({ try: () => Promise.all(writing), catch: (e) => e as AnalyzeError })
      print("Analyses finished!")
    }).pipe(Effect.ensuring(Effect.promise(() => (helper ?? Promise.resolve(undefined)).then((h) => h?.close(), () => undefined))))
  })

/**
 * {@link analyze} as a Promise.
 *
 * @since 0.1.0
 * @category analysis
 */
export const analyzePromise = (options: AnalyzeOptions): Promise<void> => Effect.runPromise(analyze(options))

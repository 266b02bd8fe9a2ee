/**
 * `tessera analyze -d DB [DB...] [-o DIR] [-a ANALYSIS...] [--head N] [--format csv|arrow]
 * [--function F] [--stage S]` (the last two filter `-a profile`, the statistical profiler's top frames):
 * DASF's analysis command re-created. Loads the databases into Arrow tables, prints
 * each analysis as an aligned table under DASF's headings, and with `-o DIR` writes
 * `DIR/<analysis>.csv` (`function_bottleneck.csv`, `task_bottleneck.csv`,
 * `task_balance.csv`, ...) and, with `--format arrow`, `DIR/<analysis>.arrow` (Arrow
 * IPC file) too. As in DASF, several databases may follow one `-d`; words after `-a`
 * that name an analysis are analyses. Progress goes to stderr while loading large
 * traces. A missing or corrupt database fails with an error naming it (exit 1).
 * A `.sql` analysis runs in safe mode (no file access, no extensions) unless
 * `--unsafe-sql`.
 *
 * @since 0.1.0
 */
import { join } from "node:path"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Argument, Command, Flag } from "effect/cli"
import { analysisNames, columnsOfNames, dasfAnalyses, outputName } from "../../analysis/AnalysisNames.ts"
import { splitArguments } from "../analyzeArgs.ts"
import { databasesFlag, refuseInputAsOutput, withDefaultShown } from "../flags.ts"
import { takeHeadStart } from "../headStart.ts"
import * as Output from "../output.ts"
import { registerTesseraResolve } from "../resolveHook.ts"

const names: ReadonlyArray<string> = analysisNames

/**
 * Split DASF-style arguments (databases and analyses; `analyzeArgs.ts`).
 *
 * @since 0.1.0
 * @category encoding
 */
export { splitArguments } from "../analyzeArgs.ts"

/**
 * The `analyze` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const analyze = Command.make(
  "analyze",
  {
    db: databasesFlag({ optional: true }),
    analyses: Flag.String("analyses").pipe(
      Flag.withAlias("a"),
      Flag.withMetavar("ANALYSIS..."),
      Flag.withDescription(`analyses to run, any of ${names.join(" ")}, or your own: a .sql file or a module (default: ${dasfAnalyses.join(" ")})`),
      Flag.atLeast(0)
    ),
    output: Flag.String("output").pipe(
      Flag.withAlias("o"),
      Flag.withDescription("directory to write <analysis>.csv (and .arrow) into (default: none, print only)"),
      Flag.optional
    ),
    head: Flag.Int("head").pipe(
      Flag.filter((n) => n >= 0, () => "an integer of at least 0"),
      withDefaultShown("rows to print per table", 30)
    ),
    format: Flag.Literals("format", ["csv", "arrow"] as const).pipe(
      withDefaultShown<"csv" | "arrow">("csv, or arrow to also write Arrow IPC files", "csv")
    ),
    fn: Flag.String("function").pipe(
      Flag.withDescription("with -a profile: only the samples of tasks of this function (or idle, driver)"),
      Flag.optional
    ),
    stage: Flag.String("stage").pipe(Flag.withDescription("with -a profile: only the samples of tasks of this stage"), Flag.optional),
    unsafeSql: Flag.Boolean("unsafe-sql").pipe(
      withDefaultShown("let -a FILE.sql read and write files and load extensions; without it a .sql analysis runs in safe mode (docs/queries.md)", false)
    ),
    rest: Argument.String("more").pipe(Argument.withDescription("more databases or analyses"), Argument.variadic())
  },
  (c) =>
    Effect.gen(function*() {
      const { analyses: chosen, databases } = splitArguments(c.db, c.analyses, c.rest)
      const output = c.output._tag === "Some" ? c.output.value : undefined
      const lines: Array<string> = []
      if (output !== undefined) {
        const written = chosen.flatMap((a) => [join(output, `${outputName(a)}.csv`), join(output, `${outputName(a)}.arrow`)])
        yield* refuseInputAsOutput("--output", written, databases)
      }
      const progress = Output.progress("analyze", databases)
      // Decoding began as the process started (`headStart.ts`) when main.ts read this
      // command line the same way; else it starts now (on worker threads for large
      // files), so that loading the analyses (Arrow, ...) overlaps it. `analyze` takes
      // it over. Loaded only now: `tessera --help` and usage errors need neither.
      const columns = columnsOfNames(chosen) // as `analyze` asks for them
      const decoding = (yield* Effect.promise(() => takeHeadStart(databases, columns, progress.onProgress))) ??
        (yield* Effect.promise(() => import("../../analysis/Decoding.ts"))).startDecoding(databases, {
          onProgress: progress.onProgress,
          ...(columns !== undefined ? { columns } : {})
        })
      // a user analysis module imports "tessera" as a `run` file does (resolveHook.ts)
      if (chosen.some((a) => /\.(ts|mts|js|mjs)$/i.test(a))) registerTesseraResolve()
      const { analyze } = yield* Effect.promise(() => import("../../analysis/Analyze.ts"))
      yield* analyze({
        databases,
        analyses: chosen,
        ...(output !== undefined ? { output } : {}),
        head: c.head,
        format: c.format,
        profile: {
          function: c.fn._tag === "Some" ? c.fn.value : undefined,
          stage: c.stage._tag === "Some" ? c.stage.value : undefined
        },
        decoding,
        unsafeSql: c.unsafeSql,
        print: (s) => lines.push(s),
        onProgress: progress.onProgress,
        onLoaded: (t) => {
          progress.loaded(t.events, t.files.length, t.droppedBytes)
          for (const w of t.warnings) Output.warn(`analyze: warning: ${w}`)
        },
        onAnalysis: (s) =>
          s._tag === "Start"
            ? progress.phase(`${s.name} (${s.index}/${s.count})`)
            : progress.done(`${s.name} (${s.index}/${s.count}): ${s.rows} rows in ${s.seconds.toFixed(2)} s${s.worker === true ? " (on a worker thread)" : ""}`)
      }).pipe(Effect.ensuring(Effect.sync(() => (decoding.abort(), progress.end()))))
      yield* Console.log(lines.join("\n"))
    })
).pipe(Command.withDescription("DASF-style trace analyses: function / task bottleneck, task balance, and more."))

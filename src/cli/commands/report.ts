/**
 * `tessera report -d DB [DB...] [-o report.html] [--title NAME] [--analysis FILE...]
 * [--unsafe-sql] [--baseline OLD...]`: the self-contained HTML report. A `.sql` analysis runs in safe mode
 * (no file access, no extensions) unless `--unsafe-sql`.
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import { databasesFlag, refuseInputAsOutput, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"
import { registerTesseraResolve } from "../resolveHook.ts"
import { exportCommand } from "./export.ts"
import { plot } from "./plot.ts"

/**
 * The `report` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const report = Command.make(
  "report",
  {
    db: databasesFlag(),
    output: Flag.String("output").pipe(Flag.withAlias("o"), withDefaultShown("HTML file to write", "report.html")),
    title: Flag.String("title").pipe(Flag.withDescription("run name shown in the header (default: from the database file names)"), Flag.optional),
    analysis: Flag.String("analysis").pipe(
      Flag.withMetavar("FILE"),
      Flag.withDescription("your own analysis (.sql file or module) as one more table; may repeat (default: none)"),
      Flag.atLeast(0)
    ),
    baseline: Flag.String("baseline").pipe(
      Flag.withMetavar("OLD..."),
      Flag.withDescription("compare against these databases or saved bench results, as tessera diff does, in a section of the report (default: none)"),
      Flag.atLeast(0)
    ),
    unsafeSql: Flag.Boolean("unsafe-sql").pipe(
      withDefaultShown("let --analysis FILE.sql read and write files and load extensions; without it a .sql analysis runs in safe mode (docs/queries.md)", false)
    )
  },
  (c) =>
    Effect.gen(function*() {
      const title = c.title._tag === "Some" ? c.title.value : undefined
      yield* refuseInputAsOutput("--output", [c.output], c.db)
      // a user analysis module imports "tessera" as a `run` file does (resolveHook.ts)
      if (c.analysis.some((a) => !/\.sql$/i.test(a))) registerTesseraResolve()
      const { writeReportPromise: writeReport } = yield* Effect.promise(() => import("../../report/Report.ts"))
      const r = yield* Output.tracked("report", c.db, `loading and rendering ${c.output}`, () =>
        writeReport(c.db, c.output, { ...(title === undefined ? {} : { title }), analyses: c.analysis, unsafeSql: c.unsafeSql, baseline: c.baseline }))
      for (const w of r.warnings) Output.warn(`report: warning: ${w}`)
      yield* Console.log(`wrote ${c.output} (${(r.bytes / 1024).toFixed(0)} KiB, ${r.data.tasks.start.length} tasks)`)
    })
).pipe(Command.withDescription("Write a self-contained HTML performance report of trace databases."))

/**
 * The report / export / plot subcommands, listed once in `commands/index.ts`.
 *
 * @since 0.1.0
 * @category cli
 */
export const reportCommands = [report, exportCommand, plot] as const

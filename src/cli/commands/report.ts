/**
 * `tessera report -d DB [-d DB ...] -o report.html`: the self-contained HTML report.
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { writeReportPromise as writeReport } from "../../report/buildReport.ts"
import { dbFlag, reportCause } from "../../report/cliFlags.ts"
import { exportCommand } from "./export.ts"
import { plot } from "./plot.ts"

/**
 * The `report` subcommand.
 *
 * @since 0.1.0
 * @category commands
 */
export const report = Command.make(
  "report",
  {
    db: dbFlag,
    output: Flag.String("output").pipe(Flag.withAlias("o"), Flag.withDescription("HTML file to write"), Flag.withDefault("report.html")),
    title: Flag.String("title").pipe(Flag.withDescription("run name shown in the header"), Flag.optional)
  },
  (c) =>
    Effect.gen(function*() {
      const title = c.title._tag === "Some" ? c.title.value : undefined
      const r = yield* Effect.tryPromise({
        try: () => writeReport(c.db, c.output, title === undefined ? {} : { title }),
        catch: reportCause
      })
      yield* Console.log(`wrote ${c.output} (${(r.bytes / 1024).toFixed(0)} KiB, ${r.data.tasks.start.length} tasks)`)
    })
).pipe(Command.withDescription("Write a self-contained HTML performance report of trace databases."))

/**
 * The report / export / plot subcommands, listed once in `commands/index.ts`.
 *
 * @since 0.1.0
 * @category commands
 */
export const reportCommands = [report, exportCommand, plot] as const

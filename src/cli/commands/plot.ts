/**
 * `tessera plot hist -d DB... --resource memory,duration,size,cores -o DIR`: Work Queue
 * style per-task histograms as SVG and PNG.
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { loadReportDataPromise as loadReportData } from "../../report/buildReport.ts"
import { histogramResources, writeHistograms } from "../../report/Figures.ts"
import { ReportInputError } from "../../report/loadEvents.ts"
import { dbFlag, reportCause } from "../../report/cliFlags.ts"

const hist = Command.make(
  "hist",
  {
    db: dbFlag,
    resource: Flag.String("resource").pipe(
      Flag.withDescription(`comma-separated: ${histogramResources.join(",")}`),
      Flag.withDefault(histogramResources.join(","))
    ),
    output: Flag.String("output").pipe(Flag.withAlias("o"), Flag.withDescription("directory for the figures"), Flag.withDefault("."))
  },
  (c) =>
    Effect.gen(function*() {
      const wanted = c.resource.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
      const unknown = wanted.filter((r) => !(histogramResources as ReadonlyArray<string>).includes(r))
      if (unknown.length > 0) {
        return yield* Effect.fail(ReportInputError.invalidArgument("--resource", `unknown resource ${unknown.join(", ")}; known: ${histogramResources.join(", ")}`))
      }
      const files = yield* Effect.tryPromise({
        try: async () => writeHistograms(await loadReportData(c.db), wanted, c.output),
        catch: reportCause
      })
      for (const f of files) yield* Console.log(`wrote ${f}`)
    })
).pipe(Command.withDescription("Histograms of per-task duration, output size, CPU cores and memory (SVG + PNG)."))

/**
 * The `plot` subcommand (with `hist`).
 *
 * @since 0.1.0
 * @category commands
 */
export const plot = Command.make("plot").pipe(
  Command.withDescription("Static figures of trace databases."),
  Command.withSubcommands([hist])
)

/**
 * `tessera plot hist -d DB [DB...] [--resource duration,size,cores,memory] [-o DIR]`:
 * Work Queue style per-task histograms as SVG and PNG.
 *
 * @since 0.1.0
 */
import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { histogramResources } from "../../report/HistogramResources.ts"
import { UsageError } from "../errors.ts"
import { databasesFlag, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"

const hist = Command.make(
  "hist",
  {
    db: databasesFlag(),
    resource: Flag.String("resource").pipe(
      withDefaultShown(`comma-separated, any of ${histogramResources.join(",")}`, histogramResources.join(",")),
    ),
    output: Flag.String("output").pipe(Flag.withAlias("o"), withDefaultShown("directory for the figures", "."))
  },
  (c) =>
    Effect.gen(function*() {
      const wanted = c.resource.split(",").map((s) => s.trim()).filter((s) => s.length > 0)
      const unknown = wanted.filter((r) => !(histogramResources as ReadonlyArray<string>).includes(r))
      if (unknown.length > 0 || wanted.length === 0) {
        return yield* new UsageError({
          flag: "--resource",
          value: c.resource,
          expected: `${unknown.length > 0 ? `unknown resource ${unknown.join(", ")}; ` : ""}expected a comma-separated list of ${histogramResources.join(", ")}`
        })
      }
      const [{ loadReportDataPromise: loadReportData }, { writeHistograms }] = yield* Effect.promise(() =>
        Promise.all([import("../../report/Report.ts"), import("../../report/Figure.ts")])
      )
      const files = yield* Output.tracked("plot hist", c.db, undefined, async (p) => {
        const data = await loadReportData(c.db)
        p.phase(`drawing ${wanted.length} histogram(s) into ${c.output}`)
        return writeHistograms(data, wanted, c.output)
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

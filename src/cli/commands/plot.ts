/**
 * `tessera plot hist -d DB [DB...] [--resource duration,size,...] [--by run|function] [-o DIR]`:
 * Work Queue style per-task histograms as SVG and PNG (`hist-{resource}`), or one per
 * resource and function with `--by function` (`hist-{resource}-{function}`, the function
 * name made safe for a file name). Drawn by `report/HistogramChart.ts`: log axes where
 * the values span decades, one labelled bar for a constant, SI ticks. A histogram without
 * values is not drawn: a line says so instead (`hist-peak_memory: nothing to draw, …`).
 *
 * @since 0.1.0
 */
import { makeDirectory } from "../../trace/Directory.ts"
import { join } from "node:path"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import { histogramGroupings, histogramResources } from "../../analysis/HistogramNames.ts"
import { UsageError } from "../errors.ts"
import { databasesFlag, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"

/** A function name as part of a file name: letters, digits, `._-` kept, the rest `_`. */
const fileSafe = (s: string): string => (s.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_") || "_").slice(0, 100)

const hist = Command.make(
  "hist",
  {
    db: databasesFlag(),
    resource: Flag.String("resource").pipe(
      withDefaultShown(`comma-separated, any of ${histogramResources.join(",")}`, histogramResources.join(",")),
    ),
    by: Flag.Literals("by", histogramGroupings).pipe(
      withDefaultShown<(typeof histogramGroupings)[number]>("run: one histogram per resource; function: one per resource and function", "run")
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
      const [{ loadPromise }, H, { writeFigure }, { histogramSpec, hasFigure, emptySentence }] = yield* Effect.promise(() =>
        Promise.all([
          import("../../analysis/Load.ts"),
          import("../../analysis/Histograms.ts"),
          import("../../report/Figure.ts"),
          import("../../report/HistogramChart.ts")
        ])
      )
      const files = yield* Output.tracked("plot hist", c.db, undefined, async (p) => {
        const data = H.taskSamplesOf(await loadPromise(c.db))
        const hists = c.by === "function" ? H.taskHistogramsByFunction(data, wanted) : H.taskHistograms(data, wanted)
        p.phase(`drawing ${hists.length} histogram(s) into ${c.output}`)
        await makeDirectory(c.output)
        const out: Array<string> = []
        const taken = new Set<string>()
        for (const h of hists) {
          let base = "function" in h ? `hist-${h.resource}-${fileSafe(h.function as string)}` : `hist-${h.resource}`
          for (let k = 2; taken.has(base); k++) base = `${base.replace(/~\d+$/, "")}~${k}`
          taken.add(base)
          // nothing drawn without values: the line says so instead of an empty figure
          if (!hasFigure(h)) out.push(`${base}: ${emptySentence(h, h.resource === "memory" ? "samples" : "tasks")}`)
          else for (const f of await writeFigure(histogramSpec(h, 480, 260), join(c.output, base))) out.push(`wrote ${f}`)
        }
        return out
      })
      for (const line of files) yield* Console.log(line)
    })
).pipe(Command.withDescription("Histograms of per-task duration, output size, CPU cores, memory, peak memory, bytes read and bytes in (SVG + PNG), per run or per function."))

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

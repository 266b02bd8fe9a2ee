/**
 * `tessera plot hist -d DB [DB...] [--resource duration,size,...] [--by run|function] [-o DIR]`:
 * Work Queue style per-task histograms as SVG and PNG (`hist-{resource}`), or one per
 * resource and function with `--by function` (`hist-{resource}-{function}`, the function
 * name made safe for a file name). Drawn by `report/HistogramChart.ts`: log axes where
 * the values span decades, one labelled bar for a constant, SI ticks. A histogram without
 * values is not drawn: a line says so instead (`hist-peak_memory: nothing to draw, …`).
 * `--by function` draws the `--top N` functions with the most task time (default 20); a
 * line says how many others were left out.
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

/**
 * How many functions `plot hist --by function` draws unless `--top` says otherwise.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTop = 20

/**
 * Keep the `top` functions with the most task time (summed durations; ties by name) of
 * `data`: the other functions' tasks lose their function (code -1), so no histogram is
 * made for them (issue 32 item 11: 20,000 functions were thousands of figures). `note`
 * says how many were left out, and names the largest of them, when any were.
 *
 * @since 0.1.0
 * @category formatting
 */
export const topFunctions = <T extends TaskSamplesLike>(data: T, top: number): { readonly data: T; readonly note?: string } => {
  const fn = data.tasks.functions
  if (fn === undefined) return { data }
  const time = new Float64Array(fn.names.length)
  const used = new Uint8Array(fn.names.length)
  const { codes } = fn
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!
    if (c < 0) continue
    used[c] = 1
    const d = data.tasks.end[i]! - data.tasks.start[i]!
    if (d > 0) time[c]! += d
  }
  const order: Array<number> = []
  for (let c = 0; c < used.length; c++) if (used[c] === 1) order.push(c)
  if (order.length <= top) return { data }
  order.sort((a, b) => time[b]! - time[a]! || (fn.names[a]! < fn.names[b]! ? -1 : fn.names[a]! > fn.names[b]! ? 1 : 0))
  const keep = new Uint8Array(fn.names.length)
  for (const c of order.slice(0, top)) keep[c] = 1
  const kept = new Int32Array(codes.length)
  for (let i = 0; i < codes.length; i++) kept[i] = codes[i]! >= 0 && keep[codes[i]!] === 1 ? codes[i]! : -1
  const left = order.length - top
  const named = order.slice(top, top + 3).map((c) => fn.names[c]!.slice(0, 60))
  const note = `plot hist: drew the ${top} of ${order.length.toLocaleString("en-US")} functions with the most task time; ` +
    `${left.toLocaleString("en-US")} left out (${named.join(", ")}${left > named.length ? ", …" : ""}; --top N draws more)`
  return { data: { ...data, tasks: { ...data.tasks, functions: { codes: kept, names: fn.names } } }, note }
}

/** What `topFunctions` reads of `Histograms.TaskSamples`. */
interface TaskSamplesLike {
  readonly tasks: {
    readonly start: ArrayLike<number>
    readonly end: ArrayLike<number>
    readonly functions?: { readonly codes: Int32Array; readonly names: ReadonlyArray<string> }
  }
}

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
    output: Flag.String("output").pipe(Flag.withAlias("o"), withDefaultShown("directory for the figures", ".")),
    top: Flag.Int("top").pipe(
      Flag.filter((n) => n >= 1, () => "an integer of at least 1"),
      withDefaultShown("with --by function: draw the N functions with the most task time (the others are named in a line)", defaultTop)
    )
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
        let notes: Array<string> = []
        let hists
        if (c.by === "function") {
          const top = topFunctions(data, c.top)
          notes = top.note === undefined ? [] : [top.note]
          hists = H.taskHistogramsByFunction(top.data, wanted)
        } else hists = H.taskHistograms(data, wanted)
        p.phase(`drawing ${hists.length} histogram(s) into ${c.output}`)
        await makeDirectory(c.output)
        const out: Array<string> = []
        // each figure whole or absent, and none of them a database (a hard link to one): trace/OutputFile.ts
        const inputs = { inputs: c.db, flag: "--output" }
        const taken = new Set<string>()
        for (const h of hists) {
          let base = "function" in h ? `hist-${h.resource}-${fileSafe(h.function as string)}` : `hist-${h.resource}`
          for (let k = 2; taken.has(base); k++) base = `${base.replace(/~\d+$/, "")}~${k}`
          taken.add(base)
          // nothing drawn without values: the line says so instead of an empty figure
          if (!hasFigure(h)) out.push(`${base}: ${emptySentence(h, h.resource === "memory" ? "samples" : "tasks")}`)
          else for (const f of await writeFigure(histogramSpec(h, 480, 260), join(c.output, base), inputs)) out.push(`wrote ${f}`)
        }
        return [...out, ...notes]
      })
      for (const line of files) yield* Console.log(line)
    })
).pipe(Command.withDescription("Histograms of per-task duration, output size, CPU cores, memory, peak memory, bytes read and bytes in (SVG + PNG), per run or per function."))

/**
 * The `plot` subcommand (with `hist`).
 *
 * @since 0.1.0
 * @category cli
 */
export const plot = Command.make("plot").pipe(
  Command.withDescription("Static figures of trace databases."),
  Command.withSubcommands([hist])
)

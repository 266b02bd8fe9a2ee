/**
 * `tessera analyze -d DB [DB...] [-o DIR] [-a ANALYSIS...] [--head N] [--format csv|arrow]`:
 * DASF's analysis command re-created. Loads the databases into Arrow tables, prints
 * each analysis as an aligned table under DASF's headings, and with `-o DIR` writes
 * `DIR/<analysis>.csv` (`function_bottleneck.csv`, `task_bottleneck.csv`,
 * `task_balance.csv`, ...) and, with `--format arrow`, `DIR/<analysis>.arrow` (Arrow
 * IPC file) too. As in DASF, several databases may follow one `-d`; words after `-a`
 * that name an analysis are analyses. Progress goes to stderr while loading large
 * traces. A missing or corrupt database fails with an error naming it (exit 1).
 *
 * @since 0.1.0
 */
import { mkdir, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { tableToIPC } from "apache-arrow"
import { Console, Data, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { analyses, dasfAnalyses, loadPromise, toCsv, toText } from "../../analysis/Analysis.ts"
import type { LoadProgress, TraceTables } from "../../analysis/Analysis.ts"
import { fromUnknown, isTraceFormatError, type TraceFormatError } from "../../trace/TraceFormatError.ts"

/**
 * Bad command-line use of `analyze` (unknown analysis, no database).
 *
 * @since 0.1.0
 * @category errors
 */
export class AnalyzeUsageError extends Data.TaggedError("AnalyzeUsageError")<{ readonly detail: string }> {
  override get message(): string {
    return `tessera analyze: ${this.detail}`
  }
}

const names = analyses.map((a) => a.name)

/**
 * Split DASF-style arguments: databases from `-d` plus positional words, analyses from
 * `-a` plus positional words that name an analysis.
 *
 * @since 0.1.0
 * @category parsing
 */
export const splitArguments = (
  db: ReadonlyArray<string>,
  analysisFlags: ReadonlyArray<string>,
  rest: ReadonlyArray<string>
): { readonly databases: Array<string>; readonly analyses: Array<string> } => {
  const databases = [...db]
  const chosen = [...analysisFlags]
  for (const w of rest) (names.includes(w) ? chosen : databases).push(w)
  return { databases, analyses: chosen.length > 0 ? chosen : [...dasfAnalyses] }
}

const progressPrinter = () => {
  let last = 0
  let shown = false
  const onProgress = (p: LoadProgress) => {
    if (p.bytesTotal < 16 * 1024 * 1024) return
    const now = performance.now()
    if (now - last < 250) return
    last = now
    shown = true
    const pct = ((p.bytesRead / p.bytesTotal) * 100).toFixed(0)
    process.stderr.write(
      `\rloading ${(p.bytesRead / 2 ** 20).toFixed(0)}/${(p.bytesTotal / 2 ** 20).toFixed(0)} MiB (${pct}%), ${p.events} events`
    )
  }
  const done = (t: TraceTables, ms: number) => {
    if (shown) process.stderr.write("\n")
    if (shown || t.droppedBytes > 0) {
      process.stderr.write(`loaded ${t.events} events from ${t.files.length} database(s) in ${(ms / 1000).toFixed(2)} s\n`)
    }
    if (t.droppedBytes > 0) process.stderr.write(`dropped ${t.droppedBytes} bytes of truncated record(s)\n`)
  }
  return { onProgress, done }
}

/**
 * Run the analyses; returns the text printed.
 *
 * @since 0.1.0
 * @category commands
 */
export const analyzePromise = async (options: {
  readonly databases: ReadonlyArray<string>
  readonly analyses: ReadonlyArray<string>
  readonly output?: string
  readonly head: number
  readonly format: "csv" | "arrow"
  readonly print?: (s: string) => void
}): Promise<void> => {
  const unknown = options.analyses.filter((a) => !names.includes(a))
  if (unknown.length > 0) {
    throw new AnalyzeUsageError({ detail: `unknown analysis ${unknown.join(", ")}; valid: ${names.join(", ")}` })
  }
  if (options.databases.length === 0) throw new AnalyzeUsageError({ detail: "no database given (-d DB)" })
  const progress = progressPrinter()
  const t0 = performance.now()
  const tables = await loadPromise(options.databases, { onProgress: progress.onProgress })
  progress.done(tables, performance.now() - t0)
  if (options.output !== undefined) await mkdir(options.output, { recursive: true })
  const print = options.print ?? ((s: string) => process.stdout.write(s + "\n"))
  for (const a of analyses.filter((x) => options.analyses.includes(x.name))) {
    const table = a.run(tables)
    if (options.output !== undefined) {
      await writeFile(join(options.output, `${a.name}.csv`), toCsv(table))
      if (options.format === "arrow") await writeFile(join(options.output, `${a.name}.arrow`), tableToIPC(table, "file"))
    }
    print("=".repeat(20) + a.title + "=".repeat(20))
    print(toText(table, options.head))
    print("=".repeat(80) + "\n")
  }
  print("Analyses finished!")
}

const asError = (e: unknown): TraceFormatError | AnalyzeUsageError =>
  isTraceFormatError(e) || e instanceof AnalyzeUsageError
    ? e
    : fromUnknown(e, "")

/**
 * The `analyze` subcommand.
 *
 * @since 0.1.0
 * @category commands
 */
export const analyze = Command.make(
  "analyze",
  {
    db: Flag.String("databases").pipe(
      Flag.withAlias("d"),
      Flag.withDescription("trace database(s) to analyse, any order (repeat -d, or list them after it)"),
      Flag.atLeast(0)
    ),
    analyses: Flag.String("analyses").pipe(
      Flag.withAlias("a"),
      Flag.withDescription(`analyses to run (default: ${dasfAnalyses.join(" ")}); any of ${names.join(" ")}`),
      Flag.atLeast(0)
    ),
    output: Flag.String("output").pipe(
      Flag.withAlias("o"),
      Flag.withDescription("directory to write <analysis>.csv (and .arrow) into"),
      Flag.optional
    ),
    head: Flag.Int("head").pipe(Flag.withDescription("rows to print per table"), Flag.withDefault(30)),
    format: Flag.Literals("format", ["csv", "arrow"] as const).pipe(
      Flag.withDescription("csv, or arrow to also write Arrow IPC files"),
      Flag.withDefault("csv" as const)
    ),
    rest: Argument.String("more").pipe(Argument.withDescription("more databases or analyses"), Argument.variadic())
  },
  (c) =>
    Effect.gen(function*() {
      const { analyses: chosen, databases } = splitArguments(c.db, c.analyses, c.rest)
      const output = c.output._tag === "Some" ? c.output.value : undefined
      const lines: Array<string> = []
      yield* Effect.tryPromise({
        try: () =>
          analyzePromise({
            databases,
            analyses: chosen,
            ...(output !== undefined ? { output } : {}),
            head: c.head,
            format: c.format,
            print: (s) => lines.push(s)
          }),
        catch: asError
      })
      yield* Console.log(lines.join("\n"))
    })
).pipe(Command.withDescription("DASF-style trace analyses: function / task bottleneck, task balance, and more."))

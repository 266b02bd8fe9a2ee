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
import type { TraceTables } from "../../analysis/Analysis.ts"
import { isTraceFormatError } from "../../trace/TraceFormat.ts"
import type { TraceFormatError } from "../../trace/TraceFormat.ts"
import { databasesFlag, refuseInputAsOutput, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"

/**
 * Bad command-line use of `analyze` (unknown analysis, no database).
 *
 * @since 0.1.0
 * @category errors
 */
export class AnalyzeUsageError extends Data.TaggedError("AnalyzeUsageError")<{ readonly detail: string }> {
  /** a usage error: exit status 2 (src/cli/errors.ts) */
  readonly usage = true
  override get message(): string {
    return this.detail
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
  const progress = Output.progress("analyze", options.databases)
  let tables: TraceTables
  try {
    tables = await loadPromise(options.databases, { onProgress: progress.onProgress })
  } finally {
    progress.end()
  }
  progress.loaded(tables.events, tables.files.length, tables.droppedBytes)
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

/**
 * A failure of `analyzePromise` that is neither a usage error nor a trace that could not
 * be read (writing the CSV files, say): keeps the original error as `cause`.
 *
 * @since 0.1.0
 * @category errors
 */
export class AnalyzeFailed extends Data.TaggedError("AnalyzeFailed")<{ readonly cause: unknown }> {
  override get message(): string {
    return this.cause instanceof Error ? this.cause.message : String(this.cause)
  }
}

const asError = (e: unknown): TraceFormatError | AnalyzeUsageError | AnalyzeFailed =>
  isTraceFormatError(e) || e instanceof AnalyzeUsageError ? e : new AnalyzeFailed({ cause: e })

/**
 * The `analyze` subcommand.
 *
 * @since 0.1.0
 * @category commands
 */
export const analyze = Command.make(
  "analyze",
  {
    db: databasesFlag({ optional: true }),
    analyses: Flag.String("analyses").pipe(
      Flag.withAlias("a"),
      Flag.withMetavar("ANALYSIS..."),
      Flag.withDescription(`analyses to run, any of ${names.join(" ")} (default: ${dasfAnalyses.join(" ")})`),
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
    rest: Argument.String("more").pipe(Argument.withDescription("more databases or analyses"), Argument.variadic())
  },
  (c) =>
    Effect.gen(function*() {
      const { analyses: chosen, databases } = splitArguments(c.db, c.analyses, c.rest)
      const output = c.output._tag === "Some" ? c.output.value : undefined
      const lines: Array<string> = []
      if (output !== undefined) {
        const written = chosen.flatMap((a) => [join(output, `${a}.csv`), join(output, `${a}.arrow`)])
        yield* refuseInputAsOutput("--output", written, databases)
      }
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

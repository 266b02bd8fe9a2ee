/**
 * `tessera sql -d DB [DB...] ["SELECT ..."] [--csv | --json | --arrow FILE] [--head N]`:
 * SQL over a run's traces (docs/queries.md). With a query: runs it and prints the
 * result as a terminal table (or CSV, or JSON lines; `--arrow FILE` writes an Arrow IPC
 * file). In a terminal table, time columns (`start`, `stop`, `timestamp`, `time`, ...,
 * when they hold epoch seconds) are seconds from the run's start, headed `NAME (+s)`,
 * with a line saying when the run started; CSV, JSON and Arrow keep epoch seconds. Without one: an interactive prompt (history with the arrow keys, Tab
 * completes table and column names; `.tables`, `.schema TABLE`, `.quit`). A bad query
 * fails with DuckDB's message and its position, exit 1. DuckDB is loaded inside the
 * handler, so `tessera --help` does not load it.
 *
 * A query is DuckDB's full SQL, as in DuckDB's own shell: it may read and write any file
 * this process may (`read_csv`, `COPY ... TO`, `ATTACH`) and `INSTALL` extensions.
 * `--safe` takes that away once the trace tables are loaded (`Query.OpenOptions`).
 * Ctrl-C (SIGINT) or SIGTERM interrupts a running query: the process exits 130 / 143
 * at once; in the prompt, Ctrl-C stops the query and the prompt goes on.
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Argument, Command, Flag } from "effect/cli"
import { databasesFlag, refuseInputAsOutput, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"
import { UsageError } from "../errors.ts"
import { writeOutputFile } from "../../trace/OutputFile.ts"

/**
 * The `sql` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const sql = Command.make(
  "sql",
  {
    db: databasesFlag(),
    csv: Flag.Boolean("csv").pipe(withDefaultShown("print CSV instead of a table", false)),
    json: Flag.Boolean("json").pipe(withDefaultShown("print one JSON object per row", false)),
    arrow: Flag.String("arrow").pipe(Flag.withMetavar("FILE"), Flag.withDescription("also write the result as an Arrow IPC file"), Flag.optional),
    safe: Flag.Boolean("safe").pipe(
      withDefaultShown("no file access and no extensions for the query (read_csv, COPY ... TO, ATTACH, INSTALL fail)", false)
    ),
    head: Flag.Int("head").pipe(
      Flag.filter((n) => n >= 0, () => "an integer of at least 0"),
      withDefaultShown("rows printed as a table", 1000)
    ),
    query: Argument.String("query").pipe(Argument.withDescription("the SQL (default: an interactive prompt)"), Argument.variadic())
  },
  (c) =>
    Effect.scoped(Effect.gen(function*() {
      if (c.query.length > 1) {
        return yield* new UsageError({ flag: "<query>", value: c.query[1]!, expected: "one query (quote it), after the databases" })
      }
      if (c.csv && c.json) return yield* new UsageError({ flag: "--json", value: "", expected: "not with --csv" })
      const arrow = c.arrow._tag === "Some" ? c.arrow.value : undefined
      if (arrow !== undefined) yield* refuseInputAsOutput("--arrow", [arrow], c.db)
      // loaded only now: DuckDB's native module costs ~0.2-0.5 s to load
      const { loadPromise } = yield* Effect.promise(() => import("../../analysis/Load.ts"))
      const Query = yield* Effect.promise(() => import("../../analysis/Query.ts"))
      const { toCsv, toText } = yield* Effect.promise(() => import("../../analysis/Format.ts"))
      const tables = yield* Output.tracked("sql", c.db, undefined, (p) => loadPromise(c.db, { onProgress: p.onProgress }))
      const query = c.query[0]
      const db = yield* Query.open(tables, { safe: c.safe })
      // terminal tables show times as seconds from the run's start (epoch seconds all
      // look alike); CSV, JSON and Arrow keep the epoch seconds
      const origin = c.csv || c.json ? undefined : yield* Query.runStart(db)
      const show = (t: import("apache-arrow").Table): string => {
        if (c.csv) return toCsv(t).trimEnd()
        if (c.json) return t.toArray().map((r) => JSON.stringify(r.toJSON(), (_k, v) => typeof v === "bigint" ? Number(v) : v)).join("\n")
        if (origin === undefined) return toText(t, c.head)
        const r = Query.relativeTimes(t, origin)
        if (r.columns.length === 0) return toText(t, c.head)
        const at = new Date(origin * 1000).toISOString().replace("T", " ").replace("Z", " UTC")
        return `${toText(r.table, c.head)}\n(+s): seconds since the run's start, ${at} (--csv, --json and --arrow give epoch seconds)`
      }
      if (query !== undefined) {
        const t = yield* db.sql(query)
        if (arrow !== undefined) {
          const { tableToIPC } = yield* Effect.promise(() => import("apache-arrow"))
          // whole or not at all, and never a database (trace/OutputFile.ts)
          yield* Effect.tryPromise({ try: () => writeOutputFile(arrow, tableToIPC(t, "file"), { inputs: c.db, flag: "--arrow" }), catch: (e) => Output.toTyped(e) })
        }
        const text = show(t)
        if (text.length > 0) yield* Console.log(text)
        return
      }
      const { prompt } = yield* Effect.promise(() => import("./sqlPrompt.ts"))
      yield* prompt(db, show)
    }))
).pipe(Command.withDescription("SQL over trace databases (DuckDB): tables tasks, dependencies, memory, resources, stages, workers, transfers, samples."))

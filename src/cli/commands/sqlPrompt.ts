/**
 * The interactive prompt of `tessera sql` (node:readline): one statement per line, or
 * several lines up to a `;`; arrow keys walk this session's history; Tab completes
 * table names, column names and the dot commands (`.tables`, `.schema TABLE`,
 * `.quit`). A failed query prints its one-line error and the prompt goes on. Ends at
 * `.quit` or end of input (Ctrl-D). Ctrl-C stops a running query (DuckDB's interrupt;
 * the prompt goes on), drops a statement being typed, or, at an empty prompt, ends
 * the prompt as Ctrl-D does. Off a terminal, SIGINT reaches the process, which
 * interrupts the query and exits 130.
 *
 * @since 0.1.0
 */
import { createInterface } from "node:readline"
import type { Table } from "apache-arrow"
import { Effect } from "effect"
import type { Database } from "../../analysis/Query.ts"

const dotCommands = [".tables", ".schema", ".quit", ".help"]

/**
 * Words Tab offers for the last word of `line`: table names, column names (all, or the
 * table's after `table.`), dot commands at the start of a line.
 *
 * @since 0.1.0
 * @category cli
 */
export const complete = (
  columns: ReadonlyArray<{ readonly table: string; readonly column: string }>,
  line: string
): [Array<string>, string] => {
  const word = /[\w.]*$/.exec(line)?.[0] ?? ""
  const tables = [...new Set(columns.map((c) => c.table))]
  let words: Array<string>
  if (line.trimStart().startsWith(".") && !line.includes(" ")) words = dotCommands
  else if (word.includes(".")) {
    const t = word.slice(0, word.indexOf("."))
    words = columns.filter((c) => c.table === t).map((c) => `${t}.${c.column}`)
  } else words = [...tables, ...new Set(columns.map((c) => c.column))]
  const hits = words.filter((w) => w.startsWith(word))
  return [hits.length > 0 ? hits : words, word]
}

/**
 * Run the prompt over `db`, printing results with `show`.
 *
 * @since 0.1.0
 * @category cli
 */
export const prompt = (db: Database, show: (t: Table) => string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const columns = yield* db.columns().pipe(Effect.orElseSucceed(() => []))
    const tables = [...new Set(columns.map((c) => c.table))]
    yield* Effect.callback<void>((resume) => {
      const rl = createInterface({
        input: process.stdin,
        output: process.stdout,
        terminal: process.stdin.isTTY === true,
        historySize: 1000,
        completer: (line: string) => complete(columns, line)
      })
      const out = (s: string) => process.stdout.write(s + "\n")
      out(`tables: ${tables.join(", ")}  (end each statement with ;  .schema TABLE  .quit)`)
      let pending = ""
      let closed = false
      let busy = Promise.resolve()
      let running = false
      const run = async (text: string) => {
        running = true
        const result = await Effect.runPromise(Effect.result(db.sql(text))).finally(() => (running = false))
        if (result._tag === "Success") out(show(result.success))
        else process.stderr.write(`error: ${result.failure.message}\n`)
      }
      // a terminal's Ctrl-C comes here (readline's raw mode), not as a process signal
      rl.on("SIGINT", () => {
        if (running) return db.interruptUnsafe()
        if (pending === "" && rl.line === "") return void rl.close()
        pending = ""
        process.stdout.write("^C\n")
        rl.setPrompt("sql> ")
        rl.write(null, { ctrl: true, name: "e" }) // to the line's end, then delete back to its start
        rl.write(null, { ctrl: true, name: "u" })
        rl.prompt()
      })
      const ask = rl.prompt.bind(rl)
      rl.prompt = () => (closed ? undefined : ask())
      rl.setPrompt("sql> ")
      rl.prompt()
      rl.on("line", (line) => {
        busy = busy.then(async () => {
          const text = pending === "" ? line.trim() : `${pending}\n${line}`
          if (text.trim() === "") return rl.prompt()
          if (pending === "" && text.startsWith(".")) {
            const [cmd, arg] = text.split(/\s+/)
            if (cmd === ".quit" || cmd === ".exit") return void rl.close()
            if (cmd === ".tables") out(tables.join("\n"))
            else if (cmd === ".schema") {
              out(columns.filter((c) => arg === undefined || c.table === arg).map((c) => `${c.table}.${c.column}  ${(c as { type?: string }).type ?? ""}`).join("\n"))
            } else out(".tables  .schema [TABLE]  .quit")
            return rl.prompt()
          }
          // a statement ends with ';' (as in duckdb's and sqlite's shells); an empty line runs what is pending
          if (line.trim() !== "" && !text.trimEnd().endsWith(";")) {
            pending = text
            rl.setPrompt("...> ")
            return rl.prompt()
          }
          pending = ""
          rl.setPrompt("sql> ")
          await run(text)
          rl.prompt()
        })
      })
      rl.on("close", () => {
        closed = true
        void busy.then(async () => {
          if (pending.trim() !== "") await run(pending) // input ended inside a statement: run it
          resume(Effect.void)
        })
      })
    })
  })

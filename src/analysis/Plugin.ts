/**
 * User analyses: a `.sql` file (one query over the tables of docs/queries.md) or a
 * module (`.ts`, `.mts`, `.js`, `.mjs`) whose default export (or, without one, its first
 * exported function) takes the loaded `TraceTables` and returns an Arrow table (or a
 * Promise or an Effect of one). `tessera analyze -a ./mine.sql` runs one beside the
 * built-ins, with the same printing and `-o DIR` CSV / Arrow output
 * (`DIR/mine.csv`); `tessera report --analysis ./mine.sql` adds it to the report's
 * analyses. Its name is the file's base name without the extension.
 *
 * A `.sql` file runs in safe mode by default (`Query.OpenOptions`: no file access, no
 * extensions), so an analysis someone sent you cannot read or write your files;
 * `{ unsafeSql: true }` (`--unsafe-sql` on the command line) gives it DuckDB's full SQL.
 * A module is code: it runs as any module does.
 *
 * **Example** (A module analysis)
 *
 * ```ts
 * // mine.ts
 * import type { TraceTables } from "tessera/analysis/Load"
 * import * as Query from "tessera/analysis/Query"
 * export default (tables: TraceTables) => Query.sqlPromise(tables, "SELECT worker, busy FROM workers")
 * ```
 *
 * @since 0.1.0
 */
import { readFile } from "node:fs/promises"
import { basename, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { Table } from "apache-arrow/table"
import * as Effect from "effect/Effect"
import { outputName } from "./AnalysisNames.ts"
import type { TraceTables } from "./Load.ts"
import { QueryError, sql } from "./Query.ts"

/**
 * A loaded user analysis.
 *
 * @since 0.1.0
 * @category models
 */
export interface UserAnalysis {
  /** the file's base name without extension: the CSV's base name */
  readonly name: string
  /** the heading it is printed under */
  readonly title: string
  readonly file: string
  readonly run: (tables: TraceTables) => Effect.Effect<Table, QueryError>
}

export { isUserAnalysis, outputName } from "./AnalysisNames.ts"

const isTable = (u: unknown): u is Table => u instanceof Table || (typeof u === "object" && u !== null && "schema" in u && "numRows" in u && "getChild" in u)

const fromModule = (file: string, f: (tables: TraceTables) => unknown) => (tables: TraceTables): Effect.Effect<Table, QueryError> =>
  Effect.gen(function*() {
    const out = yield* Effect.try({ try: () => f(tables), catch: (e) => QueryError.pluginFailed(file, `threw: ${e instanceof Error ? e.message : String(e)}`, e) })
    const value = Effect.isEffect(out)
      ? yield* (out as Effect.Effect<unknown, unknown>).pipe(Effect.mapError((e) => e instanceof QueryError ? e : QueryError.pluginFailed(file, `failed: ${String((e as { message?: unknown })?.message ?? e)}`, e)))
      : out instanceof Promise
      ? yield* Effect.tryPromise({ try: () => out, catch: (e) => e instanceof QueryError ? e : QueryError.pluginFailed(file, `rejected: ${e instanceof Error ? e.message : String(e)}`, e) })
      : out
    if (!isTable(value)) return yield* QueryError.pluginFailed(file, "its function did not return an Arrow table")
    return value
  })

/**
 * Options of {@link load}: `unsafeSql` runs a `.sql` file with file access and
 * extensions (default false: safe mode).
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadOptions {
  readonly unsafeSql?: boolean
}

/**
 * Read a user analysis: a `.sql` file's text, or a module's function.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (file: string, options: LoadOptions = {}): Effect.Effect<UserAnalysis, QueryError> =>
  Effect.gen(function*() {
    const name = outputName(file)
    const title = basename(file)
    if (/\.sql$/i.test(file)) {
      const text = yield* Effect.tryPromise({
        try: () => readFile(file, "utf8"),
        catch: (e) => QueryError.pluginFailed(file, `cannot read it: ${e instanceof Error ? e.message : String(e)}`, e)
      })
      return { name, title, file, run: (tables: TraceTables) => sql(tables, text, { safe: options.unsafeSql !== true }) }
    }
    const mod = yield* Effect.tryPromise({
      try: () => import(pathToFileURL(resolve(file)).href) as Promise<Record<string, unknown>>,
      catch: (e) => QueryError.pluginFailed(file, `cannot import it: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`, e)
    })
    const f = typeof mod.default === "function" ? mod.default : Object.values(mod).find((v) => typeof v === "function")
    if (typeof f !== "function") return yield* QueryError.pluginFailed(file, "exports no function (export default (tables) => table)")
    return { name, title, file, run: fromModule(file, f as (tables: TraceTables) => unknown) }
  })

/**
 * Read several user analyses, in order.
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadAll = (files: ReadonlyArray<string>, options: LoadOptions = {}): Effect.Effect<ReadonlyArray<UserAnalysis>, QueryError> =>
  Effect.forEach(files, (f) => load(f, options))

/**
 * Run user analyses over `tables`: each one's title and result, for the report.
 *
 * @since 0.1.0
 * @category analysis
 */
export const runAll = (
  files: ReadonlyArray<string>,
  tables: TraceTables,
  options: LoadOptions = {}
): Effect.Effect<ReadonlyArray<{ readonly title: string; readonly table: Table }>, QueryError> =>
  Effect.flatMap(loadAll(files, options), (as) => Effect.forEach(as, (a) => Effect.map(a.run(tables), (table) => ({ title: a.title, table }))))

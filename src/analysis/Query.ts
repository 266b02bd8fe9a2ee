/**
 * SQL over a run's traces: the loaded tables (Load.ts) go into an in-memory DuckDB
 * database as the documented tables of QueryViews.ts (`tasks`, `dependencies`,
 * `memory`, `resources`, `stages`, `workers`, `transfers`, `samples`), and a query's result comes back as an
 * Arrow table, like every analysis.
 *
 * **Example** (Slowest function)
 *
 * ```ts
 * import { Effect } from "effect"
 * import * as Query from "tessera/analysis/Query"
 * import { loadPromise } from "tessera/analysis/Load"
 *
 * const tables = await loadPromise(["test/fixtures/dasf-small/small-TracePlugin.msgpack"])
 * const top = await Query.sqlPromise(tables, "SELECT function, sum(duration) AS s FROM tasks GROUP BY 1 ORDER BY s DESC LIMIT 1")
 * console.log(top.get(0)?.toJSON())
 * ```
 *
 * DuckDB (`@duckdb/node-api`, built-in functions only: no extension is loaded) is
 * imported when a database is first opened, not when this module is, so importing it
 * costs nothing until a query runs. A database opened by `sql(tables, ...)` is kept
 * for those tables (a WeakMap), so a second query does not load them again.
 *
 * What a query may do: DuckDB's full SQL, as in DuckDB's own shell: it may read and
 * write any file the process may (`read_csv('/etc/passwd')`, `COPY ... TO`, `ATTACH`)
 * and `INSTALL` extensions over the network. `{ safe: true }` takes that away once the
 * trace tables are loaded: no file access, no extension installed or loaded, and the
 * configuration locked so a query cannot turn it back on (DuckDB's
 * `enable_external_access`, `autoinstall_known_extensions`,
 * `autoload_known_extensions`, `allow_community_extensions`, `lock_configuration`);
 * queries over the tables, and tables of their own in memory, work as before.
 *
 * Interrupting a query's Effect interrupts DuckDB's query (`connection.interrupt()`),
 * so its threads stop; and every query still running when the process exits is
 * interrupted first (DuckDB would otherwise keep the process alive until the query
 * ends: a recursive CTE never does).
 *
 * Typed queries: `select("tasks", ["function", "duration"], { ... })` checks its column
 * names against the table's type at compile time and `run` returns a `TypedTable`
 * of exactly those columns.
 *
 * @since 0.1.0
 */
import { vectorFromArray } from "apache-arrow/factories"
import { Table } from "apache-arrow/table"
import { Bool, Float64, Int32, Int64, Utf8 } from "apache-arrow/type"
import type { DataType, TypeMap, Vector } from "apache-arrow"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { TraceTables, TypedTable } from "./Load.ts"
import type { ViewName, Views } from "./QueryViews.ts"
import { viewNames } from "./QueryViews.ts"

export type { ViewName, Views } from "./QueryViews.ts"
export { viewNames } from "./QueryViews.ts"

// ---------------------------------------------------------------------------
// Errors

/**
 * DuckDB rejected a query: its own message (first line), and where, when DuckDB
 * points at a place (1-based line and column of the query text).
 *
 * @since 0.1.0
 * @category errors
 */
export class SqlFailed extends Data.TaggedError("SqlFailed")<{
  readonly query: string
  /** DuckDB's message, first line (`Parser Error: syntax error at or near "FRM"`) */
  readonly detail: string
  readonly line: number | undefined
  readonly column: number | undefined
  readonly message: string
}> {}

/**
 * DuckDB could not be loaded or could not take the tables.
 *
 * @since 0.1.0
 * @category errors
 */
export class EngineFailed extends Data.TaggedError("EngineFailed")<{ readonly cause: unknown; readonly message: string }> {}

/**
 * A user analysis (a `.sql` file or a module) could not be read, or its module does not
 * export a function returning an Arrow table.
 *
 * @since 0.1.0
 * @category errors
 */
export class PluginFailed extends Data.TaggedError("PluginFailed")<{
  readonly file: string
  readonly cause: unknown
  readonly message: string
}> {}

/**
 * Why a query failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type QueryErrorReason = SqlFailed | EngineFailed | PluginFailed

const firstLine = (s: string) => s.split("\n").find((l) => l.trim().length > 0)?.trim() ?? s

/**
 * The query layer's error, with a tagged `reason`.
 *
 * @since 0.1.0
 * @category errors
 */
export class QueryError extends Data.TaggedError("QueryError")<{ readonly reason: QueryErrorReason; readonly message: string }> {
  /** DuckDB's error for `query`; the position from its `LINE n: ...` / caret lines. */
  static sqlFailed(query: string, cause: unknown, safe = false): QueryError {
    const text = cause instanceof Error ? cause.message : String(cause)
    const { column, line } = position(query, text)
    const first = firstLine(text)
    // a refusal of safe mode says so: DuckDB's own words name only "configuration"
    const detail = safe && /^Permission Error/.test(first) ? `${first} (safe mode: no file access, no extensions)` : first
    const message = line === undefined ? detail : `${detail} (line ${line}, column ${column})`
    return new QueryError({ reason: new SqlFailed({ query, detail, line, column, message }), message })
  }
  static engineFailed(cause: unknown): QueryError {
    const message = `DuckDB failed: ${cause instanceof Error ? firstLine(cause.message) : String(cause)}`
    return new QueryError({ reason: new EngineFailed({ cause, message }), message })
  }
  static pluginFailed(file: string, why: string, cause?: unknown): QueryError {
    const message = `analysis ${file}: ${why}`
    return new QueryError({ reason: new PluginFailed({ file, cause, message }), message })
  }
}

/**
 * Guard for {@link QueryError}.
 *
 * @since 0.1.0
 * @category guards
 */
export const isQueryError = (u: unknown): u is QueryError => u instanceof QueryError

/**
 * Line and column (1-based) DuckDB points at: its message ends with `LINE n: <text>`
 * and a caret under the place; the text may be a window of a long line (with `...`).
 */
const position = (query: string, message: string): { line: number | undefined; column: number | undefined } => {
  const lines = message.split("\n")
  const at = lines.findIndex((l) => /^LINE \d+: /.test(l))
  if (at < 0 || at + 1 >= lines.length) return { line: undefined, column: undefined }
  const m = /^LINE (\d+): /.exec(lines[at])!
  const line = Number(m[1])
  const shown = lines[at].slice(m[0].length)
  const caret = lines[at + 1].indexOf("^") - m[0].length
  if (caret < 0) return { line, column: undefined }
  const src = query.split("\n")[line - 1] ?? ""
  const window = shown.startsWith("...") ? shown.slice(3) : shown
  const skip = shown.startsWith("...") ? 3 : 0
  const found = src.indexOf(window.endsWith("...") ? window.slice(0, -3) : window)
  return { line, column: (found < 0 ? 0 : found) + caret - skip + 1 }
}

// ---------------------------------------------------------------------------
// Databases

/**
 * An open DuckDB database holding one run's tables.
 *
 * @since 0.1.0
 * @category models
 */
export interface Database {
  /** Run one statement (or several; the last one's result) and return its result. */
  readonly sql: (query: string) => Effect.Effect<Table, QueryError>
  /** Every table's and view's columns (for completion and `.tables`). */
  readonly columns: () => Effect.Effect<ReadonlyArray<{ readonly table: string; readonly column: string; readonly type: string }>, QueryError>
  /** Milliseconds spent appending the columns, the dictionaries' strings, and building the tables. */
  readonly loadMs: { readonly append: number; readonly dictionaries: number; readonly build: number }
  /** Whether file access and extensions are off ({@link OpenOptions}). */
  readonly safe: boolean
  /** Interrupt the query now running, if any (it fails with DuckDB's `INTERRUPT Error`). */
  readonly interruptUnsafe: () => void
  /** Close the database (idempotent); a query still running is interrupted first. */
  readonly closeUnsafe: () => void
}

/**
 * Options of {@link open}, {@link cached} and {@link sql}.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenOptions {
  /**
   * No file access and no extensions for queries: DuckDB's `enable_external_access`,
   * `autoinstall_known_extensions`, `autoload_known_extensions` and
   * `allow_community_extensions` off, then `lock_configuration` on, set after the trace
   * tables are loaded. `read_csv`, `COPY ... TO`, `ATTACH`, `INSTALL` and `LOAD` fail
   * with DuckDB's `Permission Error`. Default false: DuckDB's full SQL.
   */
  readonly safe?: boolean
}

/** The settings {@link OpenOptions.safe} applies, in order (the lock last). */
const safeSettings = [
  "SET enable_external_access = false",
  "SET autoinstall_known_extensions = false",
  "SET autoload_known_extensions = false",
  "SET allow_community_extensions = false",
  "SET lock_configuration = true"
]

type Duck = typeof import("@duckdb/node-api")
type Connection = import("@duckdb/node-api").DuckDBConnection
type DuckType = import("@duckdb/node-api").DuckDBType

const duckTypeToArrow = (duck: Duck, t: DuckType): DataType | undefined => {
  const id = t.typeId
  const T = duck.DuckDBTypeId
  if (id === T.DOUBLE || id === T.FLOAT || id === T.DECIMAL) return new Float64()
  if (id === T.TINYINT || id === T.SMALLINT || id === T.INTEGER || id === T.UTINYINT || id === T.USMALLINT) return new Int32()
  if (id === T.BIGINT || id === T.UINTEGER || id === T.HUGEINT || id === T.UBIGINT || id === T.UHUGEINT) return new Int64()
  if (id === T.BOOLEAN) return new Bool()
  if (id === T.VARCHAR || id === T.ENUM) return new Utf8()
  return undefined // anything else: its JSON text
}

const toArrow = async (duck: Duck, con: Connection, query: string): Promise<Table> => {
  const reader = await con.runAndReadAll(query)
  const names = reader.columnNames()
  const types = reader.columnTypes()
  const js = reader.getColumnsJS()
  let json: ReadonlyArray<ReadonlyArray<unknown>> | undefined
  const cols: Record<string, Vector> = {}
  names.forEach((name, j) => {
    const type = duckTypeToArrow(duck, types[j])
    js[j] ??= [] // no rows: no chunks, no columns
    if (type instanceof Int64) {
      // 64-bit integers (count(*)) as BigInt64, clamped to what Int64 holds
      cols[name] = vectorFromArray((js[j] as Array<bigint | null>).map((x) => x === null ? null : BigInt.asIntN(64, x)), type)
    } else if (type !== undefined) cols[name] = vectorFromArray(js[j] as Array<unknown>, type)
    else {
      json ??= reader.getColumnsJson()
      cols[name] = vectorFromArray((json[j] ?? []).map((x) => x === null ? null : typeof x === "string" ? x : JSON.stringify(x)), new Utf8())
    }
  })
  return new Table(cols)
}

// Connections loading or with a query running: interrupted at exit, where a running
// statement would otherwise hold the process (its native threads) until it ends. Only
// while one runs, so that a cached database is still collected with its tables.
const live = new Set<Connection>()
let exitHook = false
const interruptAll = () => {
  for (const con of live) con.interrupt()
}

const openPromise = async (tables: TraceTables, options: OpenOptions = {}): Promise<Database> => {
  const duck = await import("@duckdb/node-api")
  const { loadTables } = await import("./internal/duckLoad.ts")
  const instance = await duck.DuckDBInstance.create(":memory:", { autoinstall_known_extensions: "false", autoload_known_extensions: "false" })
  const con = await instance.connect()
  if (!exitHook) {
    exitHook = true
    process.on("exit", interruptAll)
  }
  let closed = false
  const state = { running: 0, closeWhenIdle: false }
  const closeNow = () => {
    con.closeSync()
    instance.closeSync()
  }
  const closeUnsafe = () => {
    if (closed) return
    closed = true
    if (state.running === 0) return closeNow()
    // a query runs: closing does not stop it, interrupting does; and closing before it
    // has stopped can block this thread on DuckDB's lock while the query waits for it
    con.interrupt()
    state.closeWhenIdle = true
  }
  live.add(con) // loading runs statements too (CREATE TABLE ... AS SELECT over large tables)
  try {
    const loadMs = await loadTables(con, tables)
    // transfers and samples: a second pass over the files, only where the run has them
    const { loadExtraTables } = await import("./internal/duckExtra.ts")
    await loadExtraTables(con, tables)
    // after the tables are in: loading them needs nothing these take away
    if (options.safe === true) for (const s of safeSettings) await con.run(s)
    live.delete(con)
    return makeDatabase(duck, con, loadMs, options.safe === true, () => closed, closeUnsafe, state, closeNow)
  } catch (e) {
    live.delete(con)
    closeUnsafe()
    throw e
  }
}

const makeDatabase = (
  duck: Duck,
  con: Connection,
  loadMs: Database["loadMs"],
  safe: boolean,
  isClosed: () => boolean,
  closeUnsafe: () => void,
  state: { running: number; closeWhenIdle: boolean },
  closeNow: () => void
): Database => {
  // an interrupted fiber aborts `signal`: DuckDB's query is interrupted too (else it runs on)
  const run = <A>(query: string, f: () => Promise<A>) =>
    Effect.tryPromise({
      try: (signal) => {
        if (isClosed()) return Promise.reject(new Error("the database is closed"))
        const stop = () => con.interrupt()
        signal.addEventListener("abort", stop, { once: true })
        state.running++
        live.add(con)
        return f().finally(() => {
          signal.removeEventListener("abort", stop)
          if (--state.running > 0) return
          live.delete(con)
          if (state.closeWhenIdle) {
            state.closeWhenIdle = false
            closeNow()
          }
        })
      },
      catch: (e) => QueryError.sqlFailed(query, e, safe)
    })
  return {
    loadMs,
    safe,
    interruptUnsafe: () => {
      if (state.running > 0 && !isClosed()) con.interrupt()
    },
    sql: (query) => run(query, () => toArrow(duck, con, query)),
    columns: () => {
      const q = "SELECT table_name, column_name, data_type FROM information_schema.columns " +
        "WHERE table_schema = 'main' AND table_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY table_name, ordinal_position"
      return run(q, async () => (await con.runAndReadAll(q)).getRows().map(([table, column, type]) => ({ table: String(table), column: String(column), type: String(type) })))
    },
    closeUnsafe
  }
}

/**
 * Open an in-memory DuckDB database holding `tables` as the documented tables; it
 * closes with the scope. `{ safe: true }`: no file access, no extensions
 * ({@link OpenOptions}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = (tables: TraceTables, options: OpenOptions = {}): Effect.Effect<Database, QueryError, import("effect").Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => openPromise(tables, options), catch: (e) => QueryError.engineFailed(e) }),
    (db) => Effect.sync(() => db.closeUnsafe())
  )

// one database per tables and mode: a safe query never runs where file access is on
const cache = new WeakMap<TraceTables, { full?: Promise<Database>; safe?: Promise<Database> }>()

/**
 * The database kept for `tables` (opened on first use, closed when `tables` are
 * garbage-collected with it); a safe one ({@link OpenOptions}) is kept apart.
 *
 * @since 0.1.0
 * @category constructors
 */
export const cached = (tables: TraceTables, options: OpenOptions = {}): Effect.Effect<Database, QueryError> =>
  Effect.tryPromise({
    try: () => {
      const mode = options.safe === true ? "safe" : "full"
      let entry = cache.get(tables)
      if (entry === undefined) cache.set(tables, entry = {})
      let db = entry[mode]
      if (db === undefined) {
        db = openPromise(tables, options)
        db.catch(() => delete entry[mode])
        entry[mode] = db
      }
      return db
    },
    catch: (e) => QueryError.engineFailed(e)
  })

/**
 * Run SQL over a run's tables; the result as an Arrow table. Given tables, the query
 * runs in the database kept for them ({@link cached}; `options.safe` picks the safe
 * one); given a `Database`, there, as it was opened.
 *
 * @since 0.1.0
 * @category analysis
 */
export const sql = (tables: TraceTables | Database, query: string, options: OpenOptions = {}): Effect.Effect<Table, QueryError> =>
  Effect.flatMap("sql" in tables ? Effect.succeed(tables) : cached(tables, options), (db) => db.sql(query))

/**
 * {@link sql} as a Promise.
 *
 * @since 0.1.0
 * @category analysis
 */
export const sqlPromise = (tables: TraceTables | Database, query: string, options: OpenOptions = {}): Promise<Table> =>
  Effect.runPromise(sql(tables, query, options))

// ---------------------------------------------------------------------------
// Times for people

/**
 * Column names that hold times (`start`, `stop`, `timestamp`, `time`, `first_start`,
 * `last_stop`, `min_start`, ...): {@link relativeTimes} turns such a column into
 * seconds from the run's start when all its values are epoch seconds.
 *
 * @since 0.1.0
 * @category analysis
 */
export const timeColumnPattern: RegExp = /(^|_)(start|stop|end|timestamp|time)$/

/** Epoch seconds from 2001-09-09 to 2286: Load.ts's `epochMin` and a bound above. */
const isEpoch = (x: number) => x >= 1e9 && x < 1e10

/**
 * The run's start: the earliest time of every table (tasks, resources, memory, samples,
 * transfers), epoch seconds; undefined for a trace without times or on a monotonic clock.
 *
 * @since 0.1.0
 * @category analysis
 */
export const runStart = (db: Database): Effect.Effect<number | undefined, QueryError> =>
  Effect.map(
    db.sql(
      "SELECT min(t) AS t FROM (SELECT min(start) AS t FROM tasks UNION ALL SELECT min(timestamp) FROM resources " +
        "UNION ALL SELECT min(timestamp) FROM memory UNION ALL SELECT min(time) FROM samples UNION ALL SELECT min(start) FROM transfers)"
    ),
    (t) => {
      const v = t.getChild("t")?.get(0) as number | null | undefined
      return typeof v === "number" && isEpoch(v) ? v : undefined
    }
  )

/**
 * `table` with its time columns ({@link timeColumnPattern}, every value epoch seconds)
 * as seconds from `origin`, renamed `NAME (+s)` so that a reader knows; the other
 * columns as they are. For terminal tables: CSV, JSON and Arrow keep the epoch values.
 *
 * @since 0.1.0
 * @category analysis
 */
export const relativeTimes = (table: Table, origin: number): { readonly table: Table; readonly columns: ReadonlyArray<string> } => {
  const cols: Record<string, Vector> = {}
  const changed: Array<string> = []
  for (const f of table.schema.fields) {
    const v = table.getChild(f.name)!
    if (timeColumnPattern.test(f.name) && (f.type instanceof Float64 || f.typeId === new Float64().typeId)) {
      const values: Array<number | null> = []
      let epoch = true
      for (let i = 0; i < v.length && epoch; i++) {
        const x = v.get(i) as number | null
        if (x === null || Number.isNaN(x)) values.push(null)
        else if (isEpoch(x)) values.push(x - origin)
        else epoch = false
      }
      if (epoch && values.some((x) => x !== null)) {
        cols[`${f.name} (+s)`] = vectorFromArray(values, new Float64())
        changed.push(f.name)
        continue
      }
    }
    cols[f.name] = v
  }
  return { table: changed.length === 0 ? table : new Table(cols), columns: changed }
}

// ---------------------------------------------------------------------------
// Typed queries

/**
 * A query whose result columns are known: `Row` maps each column to its Arrow type.
 *
 * @since 0.1.0
 * @category models
 */
export interface TypedQuery<Row extends TypeMap> {
  readonly sql: string
  /** phantom: the result's columns */
  readonly _Row?: Row
}

/**
 * Options of {@link select}: a WHERE clause (SQL), ordering by the selected columns,
 * and a row limit.
 *
 * @since 0.1.0
 * @category models
 */
export interface SelectOptions<C extends string> {
  readonly where?: string
  readonly orderBy?: ReadonlyArray<C | { readonly column: C; readonly descending: boolean }>
  readonly limit?: number
}

const ident = (s: string) => `"${s.replaceAll("\"", "\"\"")}"`

/**
 * `SELECT columns FROM view`, checked at compile time: a column the table does not have
 * is a type error.
 *
 * @since 0.1.0
 * @category analysis
 */
export const select = <V extends ViewName, const C extends keyof Views[V] & string>(
  view: V,
  columns: ReadonlyArray<C>,
  options: SelectOptions<NoInfer<C>> = {}
): TypedQuery<{ [K in C]: Views[V][K] extends DataType ? Views[V][K] : never }> => {
  if (!viewNames.includes(view)) throw new Error(`unknown table ${view}`)
  const order = (options.orderBy ?? []).map((o) => typeof o === "string" ? ident(o) : `${ident(o.column)}${o.descending ? " DESC" : ""}`)
  return {
    sql: `SELECT ${columns.map(ident).join(", ")} FROM ${view}` +
      (options.where !== undefined ? ` WHERE ${options.where}` : "") +
      (order.length > 0 ? ` ORDER BY ${order.join(", ")}` : "") +
      (options.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(options.limit))}` : "")
  }
}

/**
 * Run a typed query: a `TypedTable` of its columns.
 *
 * @since 0.1.0
 * @category analysis
 */
export const run = <Row extends TypeMap>(tables: TraceTables | Database, query: TypedQuery<Row>): Effect.Effect<TypedTable<Row>, QueryError> =>
  sql(tables, query.sql) as Effect.Effect<TypedTable<Row>, QueryError>

/**
 * {@link run} as a Promise.
 *
 * @since 0.1.0
 * @category analysis
 */
export const runPromise = <Row extends TypeMap>(tables: TraceTables | Database, query: TypedQuery<Row>): Promise<TypedTable<Row>> =>
  Effect.runPromise(run(tables, query))

/**
 * Loads a run's trace tables (Load.ts's `TraceTables`) into a DuckDB connection
 * without a row-by-row detour, then builds the documented views (QueryViews.ts).
 *
 * How (measured in BENCHMARKS.md, 2026-11-24):
 *
 * - `@duckdb/node-api` 1.5 does not expose DuckDB's Arrow import (the C API's
 *   `duckdb_data_chunk_from_arrow` is not bound), so there is no zero-copy Arrow scan.
 *   What it does bind is `copy_data_to_vector` / `copy_data_to_vector_validity`: a
 *   memcpy into a data chunk's vector. Every numeric column and every string column's
 *   Int32 dictionary codes go in that way, 2,048 rows (DuckDB's vector size) per chunk,
 *   through the appender's `append_data_chunk`: one native call per column per chunk.
 * - Strings: each distinct Arrow dictionary (tasks' `key`, dependency keys and the
 *   memory table's `key` share one) becomes a table `(id, s)`, its strings assigned from
 *   the dictionary's UTF-8 bytes (`vector_assign_string_element_len`, no JS string). A
 *   `CREATE TABLE ... AS SELECT` joins codes to strings inside DuckDB. Tried and
 *   slower: ENUM-typed chunks cast to VARCHAR on append (creating a 378k-member ENUM
 *   takes ~2 s), and one big string split with `string_split` (~1.9 s vs ~1 s under the
 *   same load for 378k keys).
 *
 * @since 0.1.0
 */
import duckdb from "@duckdb/node-bindings"
import type { DuckDBConnection } from "@duckdb/node-api"
import type { Data, Vector } from "apache-arrow"
import type { TraceTables } from "../Load.ts"
import { viewDefinitions } from "../QueryViews.ts"

const vectorSize = 2048

/** A column flattened to one buffer: numbers (Float64) or dictionary codes (Int32). */
interface Flat {
  readonly values: Float64Array | Int32Array
  /** Arrow validity bits (LSB first), or undefined when no value is null */
  readonly validity: Uint8Array | undefined
}

const flatten = (data: ReadonlyArray<Data>, kind: "f64" | "i32"): Flat => {
  if (data.length === 1 && data[0].offset === 0) {
    const d = data[0]
    return { values: d.values as Float64Array | Int32Array, validity: d.nullCount > 0 ? d.nullBitmap : undefined }
  }
  // several batches or a sliced column: copy once into one buffer
  const n = data.reduce((a, d) => a + d.length, 0)
  const values = kind === "f64" ? new Float64Array(n) : new Int32Array(n)
  const nulls = data.some((d) => d.nullCount > 0)
  const validity = nulls ? new Uint8Array((n + 7) >> 3) : undefined
  let at = 0
  for (const d of data) {
    values.set((d.values as Float64Array | Int32Array).subarray(d.offset, d.offset + d.length), at)
    if (validity !== undefined) for (let i = 0; i < d.length; i++) if (d.getValid(i)) validity[(at + i) >> 3] |= 1 << ((at + i) & 7)
    at += d.length
  }
  return { values, validity }
}

/** A column to append: SQL type and its flat buffer. */
interface Column {
  readonly name: string
  readonly type: "DOUBLE" | "INTEGER"
  readonly flat: Flat
}

type Raw = { readonly connection: duckdb.Connection }

const appendColumns = async (con: DuckDBConnection, table: string, cols: ReadonlyArray<Column>, n: number) => {
  await con.run(`CREATE TABLE ${table} (${cols.map((c) => `"${c.name}" ${c.type}`).join(", ")})`)
  const raw = (con as unknown as Raw).connection
  const types = cols.map((c) => duckdb.create_logical_type(c.type === "DOUBLE" ? duckdb.Type.DOUBLE : duckdb.Type.INTEGER))
  const appender = duckdb.appender_create(raw, null, table)
  const chunk = duckdb.create_data_chunk(types)
  const allValid = new Uint8Array(vectorSize / 8).fill(0xff)
  for (let off = 0; off < n; off += vectorSize) {
    const m = Math.min(vectorSize, n - off)
    for (let j = 0; j < cols.length; j++) {
      const { validity, values } = cols[j].flat
      const v = duckdb.data_chunk_get_vector(chunk, j)
      duckdb.copy_data_to_vector(v, 0, values.buffer as ArrayBuffer, values.byteOffset + off * values.BYTES_PER_ELEMENT, m * values.BYTES_PER_ELEMENT)
      // off is a multiple of 2048, so the chunk's bits start on a byte boundary
      if (validity !== undefined || off > 0) duckdb.vector_ensure_validity_writable(v)
      if (validity !== undefined) duckdb.copy_data_to_vector_validity(v, 0, validity.buffer as ArrayBuffer, validity.byteOffset + off / 8, (m + 7) >> 3)
      else if (off > 0) duckdb.copy_data_to_vector_validity(v, 0, allValid.buffer, 0, (m + 7) >> 3)
    }
    duckdb.data_chunk_set_size(chunk, m)
    duckdb.append_data_chunk(appender, chunk)
    duckdb.data_chunk_reset(chunk)
  }
  duckdb.appender_close_sync(appender)
}

/** A dictionary's strings into `table (id INTEGER, s VARCHAR)`, from its UTF-8 bytes. */
const appendDictionary = async (con: DuckDBConnection, table: string, dict: Vector) => {
  await con.run(`CREATE TABLE ${table} (id INTEGER, s VARCHAR)`)
  const raw = (con as unknown as Raw).connection
  const appender = duckdb.appender_create(raw, null, table)
  const chunk = duckdb.create_data_chunk([duckdb.create_logical_type(duckdb.Type.INTEGER), duckdb.create_logical_type(duckdb.Type.VARCHAR)])
  const ids = new Int32Array(vectorSize)
  let base = 0
  for (const d of dict.data) {
    const offsets = d.valueOffsets as Int32Array
    const bytes = d.values as Uint8Array
    for (let off = 0; off < d.length; off += vectorSize) {
      const m = Math.min(vectorSize, d.length - off)
      for (let i = 0; i < m; i++) ids[i] = base + off + i
      const idv = duckdb.data_chunk_get_vector(chunk, 0)
      duckdb.copy_data_to_vector(idv, 0, ids.buffer, 0, m * 4)
      const sv = duckdb.data_chunk_get_vector(chunk, 1)
      for (let i = 0; i < m; i++) {
        const r = d.offset + off + i
        duckdb.vector_assign_string_element_len(sv, i, bytes.subarray(offsets[r], offsets[r + 1]))
      }
      duckdb.data_chunk_set_size(chunk, m)
      duckdb.append_data_chunk(appender, chunk)
      duckdb.data_chunk_reset(chunk)
    }
    base += d.length
  }
  duckdb.appender_close_sync(appender)
}

/** Where each phase of a load went, in milliseconds. */
export interface LoadTimings {
  /** the tables' columns, copied into data chunks */
  readonly append: number
  /** the dictionaries' strings */
  readonly dictionaries: number
  /** the documented tables (joins, `bytes_in`) */
  readonly build: number
}

const dictionaryOf = (col: Vector): Vector | undefined => (col.data[0] as Data | undefined)?.dictionary

/**
 * Append the tables' columns and dictionaries, then create the documented tables
 * (QueryViews.ts). Raw tables hold codes; views `_tasks`, `_memory`, `_resources`
 * resolve them to strings by joins on the dictionary tables, and QueryViews.ts
 * materialises only what every query reads. The connection's database must be empty.
 */
export const loadTables = async (con: DuckDBConnection, t: TraceTables): Promise<LoadTimings> => {
  const t0 = performance.now()
  const keys = dictionaryOf(t.tasks.getChild("key")!)
  const deps = t.tasks.getChild("dependencies")!
  const depKeys = deps.data[0]?.children[0]?.dictionary
  const memKeys = dictionaryOf(t.memory.getChild("key")!)
  // Load.ts builds task keys, dependency keys and memory keys on ONE dictionary: joins on codes
  if ((depKeys !== undefined && depKeys !== keys) || (t.memory.numRows > 0 && memKeys !== keys)) {
    throw new Error("the tables' key, dependencies and memory key columns must share one dictionary, as Load.ts builds them")
  }
  const dicts = new Map<Vector, string>()
  if (keys !== undefined) dicts.set(keys, "_keys")
  const joins: Record<string, Array<{ readonly col: string; readonly dict: string }>> = {}
  const stringCol = (table: string, name: string, col: Vector): Column => {
    const dict = dictionaryOf(col)
    if (dict === undefined) throw new Error(`column ${name} is not dictionary-encoded`)
    let d = dicts.get(dict)
    if (d === undefined) dicts.set(dict, d = `_dict${dicts.size}`)
    ;(joins[table] ??= []).push({ col: name, dict: d })
    return { name, type: "INTEGER", flat: flatten(col.data, "i32") }
  }
  const numCol = (name: string, col: Vector): Column => ({ name, type: "DOUBLE", flat: flatten(col.data, "f64") })

  const tasks = t.tasks
  const n = tasks.numRows
  const taskIds = new Int32Array(n)
  for (let i = 0; i < n; i++) taskIds[i] = i
  await appendColumns(con, "_tasks_raw", [
    { name: "task_id", type: "INTEGER", flat: { values: taskIds, validity: undefined } },
    ...(["host", "worker", "key", "function", "state", "stage", "type", "dtype", "shape"] as const).map((c) => stringCol("_tasks", c, tasks.getChild(c)!)),
    ...([
      "start", "end", "duration", "size", "cpu_time", "gather_start", "gather_end", "compute_start", "compute_end",
      "transfer_start", "transfer_end", "peak_memory", "io_bytes", "cores"
    ] as const).map((c) => numCol(c, tasks.getChild(c)!))
  ], n)

  // dependency edges: (task row, dependency key code), from the list offsets
  let edges = 0
  for (const d of deps.data) edges += d.valueOffsets[d.offset + d.length] - d.valueOffsets[d.offset]
  const edgeTask = new Int32Array(edges)
  const edgeKey = new Int32Array(edges)
  let e = 0
  let row = 0
  for (const d of deps.data) {
    const child = d.children[0]
    const codes = child.values as Int32Array
    for (let i = 0; i < d.length; i++, row++) {
      for (let j = d.valueOffsets[d.offset + i]; j < d.valueOffsets[d.offset + i + 1]; j++) {
        if (!child.getValid(j)) continue
        edgeTask[e] = row
        edgeKey[e++] = codes[child.offset + j]
      }
    }
  }
  await appendColumns(con, "_edges", [
    { name: "task_id", type: "INTEGER", flat: { values: edgeTask.subarray(0, e), validity: undefined } },
    { name: "dependency_id", type: "INTEGER", flat: { values: edgeKey.subarray(0, e), validity: undefined } }
  ], e)

  const memory = t.memory
  await appendColumns(con, "_memory_raw", [
    ...(["host", "worker", "key", "state"] as const).map((c) => stringCol("_memory", c, memory.getChild(c)!)),
    ...(["timestamp", "size", "tasks"] as const).map((c) => numCol(c, memory.getChild(c)!))
  ], memory.numRows)

  const res = t.resources
  const resNums = res.schema.fields.map((f) => f.name).filter((c) => c !== "host")
  await appendColumns(con, "_resources_raw", [
    stringCol("_resources", "host", res.getChild("host")!),
    ...resNums.map((c) => numCol(c, res.getChild(c as "timestamp")!))
  ], res.numRows)

  const tDict = performance.now()
  if (keys === undefined) await con.run("CREATE TABLE _keys (id INTEGER, s VARCHAR)")
  for (const [dict, name] of dicts) await appendDictionary(con, name, dict)
  const t1 = performance.now()

  // views resolving codes to strings; the raw code of `key` stays as key_id (joins on codes)
  for (const table of ["_tasks", "_memory", "_resources"]) {
    const js = joins[table] ?? []
    const strings = new Set(js.map((j) => j.col))
    await con.run(
      `CREATE VIEW ${table} AS SELECT r.* EXCLUDE (${[...strings].map((c) => `"${c}"`).join(", ")}), ` +
        (strings.has("key") ? `r."key" AS key_id, ` : "") +
        js.map((j, i) => `d${i}.s AS "${j.col}"`).join(", ") +
        ` FROM ${table}_raw r ` + js.map((j, i) => `LEFT JOIN ${j.dict} d${i} ON d${i}.id = r."${j.col}"`).join(" ")
    )
  }
  for (const sql of viewDefinitions) await con.run(sql)
  return { append: tDict - t0, dictionaries: t1 - tDict, build: performance.now() - t1 }
}

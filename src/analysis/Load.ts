/**
 * Load one or many trace databases (DASF- or Tessera-written, in any order, not
 * chronological inside) into three Arrow tables:
 *
 * - `tasks` (one row per `Compute` X event): host, worker, key, function, state
 *   (dictionary Utf8); start, end, duration (s), size (bytes), cpu_time (s) (Float64,
 *   null when absent); dependencies (List of dictionary Utf8 keys). `end` is the
 *   event's timestamp (DASF takes it when the task ENDS), `start = end - duration`.
 *   `key`, the dependency and dependent lists and the memory table's `key` share one
 *   dictionary (codes are comparable).
 *   `function` is `args.name` when the event carries one, else `functionName(key)`.
 *   Then what Tessera records and DASF does not (null where the event lacks it, so a
 *   DASF trace's rows have the same values in the columns above and nulls here; DASF
 *   does write shape, dtype and type): stage, type, dtype, shape ("1000x3", "" for a
 *   scalar; dictionary Utf8); dependents (List, like dependencies); the
 *   `startstops` phases gather_start, gather_end, compute_start, compute_end,
 *   transfer_start, transfer_end (s, on the same clock and shift as start/end);
 *   peak_memory, io_bytes (bytes) and cores (`cpu_time / duration`, null when either
 *   is null or the duration is 0) (Float64).
 * - `memory` (`Managed Memory` I events): timestamp, host, worker, key, state, size
 *   (bytes held by the worker), tasks (chunks held), device (bytes a GPU worker holds on
 *   its device; null for other workers and DASF traces).
 * - `resources` (`Resource Usage` I events): timestamp, host and DASF's numeric args
 *   under DASF's names (cpu, memory, gpu_utilization, gpu_memory_used,
 *   host_net_io.read_bps, ..., num_fds, time); null where a sample lacks the arg
 *   (no GPU: DASF-NOTES 1).
 * - `driver` (`Driver` X events, Tessera's driver segments; see Driver.ts).
 * - `transfers` (`Transfer` X events: cluster peer fetches and GPU host↔device copies;
 *   empty for DASF traces and single-process runs): host, worker (receiving row), peer
 *   (sending worker's row; null for a device copy), direction (`host-to-device` /
 *   `device-to-host`; null for a peer fetch), keys (List of Utf8), n_keys, bytes, start,
 *   stop, duration, serialize, deserialize (s; null for a device copy).
 * - `clockOffsets` (`Clock Offset` I events, one per cluster worker and compute): host,
 *   worker (its first row), name (`tessera-worker@HOST:PORT`), time, offset (worker
 *   clock − scheduler clock, s), uncertainty (s: half the fastest round trip).
 *
 * - `metadata`: the metadata events, whole (`TraceEvent`s): the `Pipeline Graph` event
 *   (stage DAG) and any other `M` event; every other event is only counted
 *   (`eventCounts`). `Transfer` and `Clock Offset` events are decoded whole in the same
 *   pass (few next to `Compute`), and a trace without them pays nothing more.
 *   Profiler samples are read by the SQL layer (internal/duckExtra.ts) with a second pass
 *   over the files, only when these counts show the run has them.
 *
 * Each table's columns are typed (`TypedTable<TasksSchema>`, `MemorySchema`,
 * `ResourcesSchema`): `getChild` takes only column names, rows have typed fields.
 *
 * A column projection (`LoadOptions.columns`: the columns the caller will read) loads the
 * other task and memory columns as all-null columns of the same type and length, and
 * the decoder steps over their args without decoding them (strings never interned):
 * the projected columns hold exactly what a full load gives. `tessera analyze` loads
 * only what its analyses read (`Analysis.ts`, `columnsOf`).
 *
 * Decoding streams each file through the specialised `TraceReader.ColumnDecoder`; large loads
 * decode batches of records on worker threads (`internal/parallelDecode.ts`) and
 * merge their columns, with the same result.
 *
 * What loading finds beside the rows (docs/analysis.md, "Anomalies" and "Clock
 * domains"): `recomputed` (tasks whose key appears again: kept, DASF N15), each file's
 * clock (`clocks`: monotonic or epoch; a monotonic file loaded with epoch files is
 * shifted onto the epoch by its `Resource Usage` samples' `time - timestamp` when it
 * has them) and `warnings`, the lines `analyze` and `report` print on stderr. Records
 * with anomalous times are rejected by the trace readers (`NotAnEvent`), never here.
 * Errors are `TraceFormatError`s naming the file being read; a failure not about its
 * bytes keeps its cause (reason `Unexpected`).
 *
 * @since 0.1.0
 */
import { makeData } from "apache-arrow/data"
import { Field } from "apache-arrow/schema"
import { Table } from "apache-arrow/table"
import { Dictionary, Float64, Int32, List, Utf8 } from "apache-arrow/type"
import { makeVector } from "apache-arrow/vector"
import type { Data, DataType, StructRowProxy, TypeMap, Vector } from "apache-arrow"
import * as Effect from "effect/Effect"
import { checkTailUnsafe, scanFramesUnsafe } from "../trace/TraceFormat.ts"
import type { TraceEvent } from "../trace/TraceEvent.ts"
import { isTraceFormatError, type TraceFormatError, unexpected } from "../trace/TraceFormatError.ts"
import { type DriverSegment, driverSegmentOf, driverTable } from "./Driver.ts"
import { functionName } from "./FunctionName.ts"
import { ColumnDecoder, F64 as F64Column, type F64, type I32, resourceArgs, type StringPool } from "../trace/TraceReader.ts"
import type { resourceArgs as ResourceArgNames } from "../trace/TraceReader.ts"
import { alwaysLoaded, argSkipOf, type DecodeOptions, decodePromise, type Decoding, markFile, sameDecoding } from "./Decoding.ts"
import { codesOf, utf8Strings } from "./internal/access.ts"
import type { Utf8Strings } from "./internal/csvWriter.ts"
import { sharedColumnRows } from "./internal/parallelDecode.ts"
import type { BottleneckTaskColumns } from "./internal/taskRows.ts"

export { argSkipOf, decodeThreads, parallelMinBytes } from "./Decoding.ts"
import { extraTables } from "./internal/transferTables.ts"

/**
 * A string column: dictionary-encoded Utf8 with Int32 codes (Arrow's
 * `Dictionary<Utf8, Int32>`). Arrow types a dictionary vector's `toArray()` as its codes'
 * array, but it returns the decoded strings (null for a null row): `TArray` says so.
 *
 * @since 0.1.0
 * @category models
 */
export interface StringColumn extends Omit<Dictionary<Utf8, Int32>, "TArray"> {
  readonly TArray: Array<string | null>
}

/**
 * Columns of the `tasks` table (one row per `Compute` X event). Numbers are Float64,
 * null when the event lacks them; `key` and `dependencies` share one dictionary with
 * the memory table's `key`.
 *
 * @since 0.1.0
 * @category models
 */
export type TasksSchema = {
  readonly host: StringColumn
  readonly worker: StringColumn
  readonly key: StringColumn
  readonly function: StringColumn
  readonly state: StringColumn
  /** seconds: `end - duration` */
  readonly start: Float64
  /** seconds: the event's timestamp (the task's end) */
  readonly end: Float64
  /** seconds */
  readonly duration: Float64
  /** bytes */
  readonly size: Float64
  /** thread CPU seconds */
  readonly cpu_time: Float64
  readonly dependencies: List<StringColumn>
  /** the pipeline stage that made the task (Tessera's `stage` arg) */
  readonly stage: StringColumn
  /** result type (`Chunk`, `Float64Array`, `number`, ...) */
  readonly type: StringColumn
  readonly dtype: StringColumn
  /** result shape: dimensions joined by "x" ("1000x3"), "" for a scalar */
  readonly shape: StringColumn
  /** keys of the tasks that take this task's result (shares `key`'s dictionary) */
  readonly dependents: List<StringColumn>
  /** seconds: the `startstops` phases (same clock as start/end) */
  readonly gather_start: Float64
  readonly gather_end: Float64
  readonly compute_start: Float64
  readonly compute_end: Float64
  readonly transfer_start: Float64
  readonly transfer_end: Float64
  /** bytes: the worker's heap + external high-water mark while the task ran */
  readonly peak_memory: Float64
  /** bytes the task's kernel read from files */
  readonly io_bytes: Float64
  /** `cpu_time / duration` (CPU cores the task kept busy, on average) */
  readonly cores: Float64
}

/**
 * Columns of the `memory` table (`Managed Memory` events).
 *
 * @since 0.1.0
 * @category models
 */
export type MemorySchema = {
  readonly timestamp: Float64
  readonly host: StringColumn
  readonly worker: StringColumn
  readonly key: StringColumn
  readonly state: StringColumn
  /** bytes held by the worker */
  readonly size: Float64
  /** chunks held by the worker */
  readonly tasks: Float64
  /** bytes a GPU worker holds on its device (null for other workers) */
  readonly device: Float64
}

/**
 * Columns of the `transfers` table (`Transfer` events): one row per cluster peer fetch
 * (peer set, direction null) or GPU host↔device copy (direction set, peer null).
 *
 * @since 0.1.0
 * @category models
 */
export type TransfersSchema = {
  readonly host: StringColumn
  /** the receiving worker's row (the GPU worker's, for a device copy both ways) */
  readonly worker: StringColumn
  /** the sending worker's first row, `worker-{host}-{index × 16}` (peer fetches) */
  readonly peer: StringColumn
  /** `host-to-device` | `device-to-host` (GPU copies) */
  readonly direction: StringColumn
  /** the keys whose results moved */
  readonly keys: List<Utf8>
  readonly n_keys: Int32
  /** bytes on the wire (encoded) */
  readonly bytes: Float64
  /** seconds, on the trace's clock (with the file's shift) */
  readonly start: Float64
  readonly stop: Float64
  readonly duration: Float64
  /** seconds the sender serialised / the receiver deserialised (peer fetches) */
  readonly serialize: Float64
  readonly deserialize: Float64
}

/**
 * Columns of the `clockOffsets` table (`Clock Offset` events, cluster runs).
 *
 * @since 0.1.0
 * @category models
 */
export type ClockOffsetsSchema = {
  readonly host: StringColumn
  /** the worker's first row (`worker-{host}-{index × 16}`) */
  readonly worker: StringColumn
  /** the worker's name (`tessera-worker@HOST:PORT`) */
  readonly name: StringColumn
  /** seconds: when it was recorded (a compute's start) */
  readonly time: Float64
  /** seconds: worker clock − scheduler clock (timestamps are already corrected by it) */
  readonly offset: Float64
  /** seconds: half the fastest round trip it was measured with */
  readonly uncertainty: Float64
}

/**
 * Columns of the `resources` table (`Resource Usage` events): timestamp, host and one
 * Float64 column per DASF numeric arg (cpu, memory, gpu_utilization, gpu_memory_used,
 * host_net_io.read_bps, host_net_io.write_bps, host_disk_io.read_bps,
 * host_disk_io.write_bps, num_fds, time), null where a sample lacks it.
 *
 * @since 0.1.0
 * @category models
 */
export type ResourcesSchema =
  & {
    readonly timestamp: Float64
    readonly host: StringColumn
  }
  & { readonly [K in (typeof ResourceArgNames)[number]]: Float64 }

/**
 * An Arrow table whose columns are known: `getChild` takes only its column names and
 * returns typed vectors; rows (`get`, iteration, `toArray`) have typed fields. The same
 * `Table` object at run time.
 *
 * @since 0.1.0
 * @category models
 */
export interface TypedTable<T extends TypeMap> extends Table<T> {
  [Symbol.iterator](): IterableIterator<StructRowProxy<T>>
  toArray(): Array<StructRowProxy<T>>
}

/**
 * The loaded tables plus what loading found.
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceTables {
  readonly tasks: TypedTable<TasksSchema>
  readonly memory: TypedTable<MemorySchema>
  readonly resources: TypedTable<ResourcesSchema>
  /** `Driver` events (Tessera's driver segments; empty for DASF traces): see Driver.ts */
  readonly driver: Table
  /** `Transfer` events (empty without cluster peer fetches or GPU copies) */
  readonly transfers: TypedTable<TransfersSchema>
  /** `Clock Offset` events (empty outside cluster runs) */
  readonly clockOffsets: TypedTable<ClockOffsetsSchema>
  readonly files: ReadonlyArray<string>
  /** events per event name, over all files */
  readonly eventCounts: Readonly<Record<string, number>>
  readonly events: number
  readonly droppedBytes: number
  /** records decoded by the generic fallback instead of the specialised decoder */
  readonly fallbackRecords: number
  /**
   * Metadata events, whole, in file order: the `Pipeline Graph` event (the stage DAG as
   * DOT in `args.dot`; find it with `TraceEvent.isPipelineGraphEvent`) and any other
   * `M` event no table takes. Kept so that nothing has to decode a file twice.
   */
  readonly metadata: ReadonlyArray<TraceEvent>
  /**
   * `Compute` events whose task key appeared in an earlier one: recomputations (DASF
   * N15: a recomputed key appears more than once). Every row is kept.
   */
  readonly recomputed: number
  /** each file's clock, in file order */
  readonly clocks: ReadonlyArray<FileClock>
  /** what a user should know about the data (recomputations, clocks), one line each */
  readonly warnings: ReadonlyArray<string>
}

/**
 * A file's clock: `monotonic` (its times are below `epochMin`, as DASF's
 * `time.monotonic()` gives: seconds since boot), `epoch` (wall-clock seconds since
 * 1970, as Tessera writes) or `none` (no timed rows). `shift`: seconds added to every
 * time of the file's rows to put it on the epoch clock (0 when not shifted).
 *
 * @since 0.1.0
 * @category models
 */
export interface FileClock {
  readonly file: string
  readonly domain: "monotonic" | "epoch" | "none"
  readonly shift: number
}

/**
 * Times below this (seconds; 2001-09-09 as epoch time) are on a monotonic clock.
 *
 * @since 0.1.0
 * @category constants
 */
export const epochMin = 1e9

/**
 * Loading progress: bytes read so far of all files, and the total.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadProgress {
  readonly file: string
  readonly bytesRead: number
  readonly bytesTotal: number
  readonly events: number
}

/**
 * Options for loading.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadOptions extends DecodeOptions {
  /** decoding already started (`startDecoding`) of the same files and columns: taken over, not done again */
  readonly decoding?: Decoding
  /**
   * Called once, while the tables are built, with the task columns the per-task
   * bottleneck reads (`EarlyTaskColumns`), so that another thread can start on it
   * before the tables are done (`tessera analyze`, Analyze.ts).
   * @internal
   */
  readonly onTaskColumns?: (early: EarlyTaskColumns) => void
}

/**
 * The task columns of a load that the per-task bottleneck reads (`internal/taskRows.ts`),
 * given to `LoadOptions.onTaskColumns` before the tables are built: host and worker as
 * the codes of the tasks table's dictionaries (`hosts`, `workers`), but keys as ids into
 * `keys`, the strings the load's decoder met (every one, task keys among them): building
 * the task keys' own dictionary (~0.1 s for the 1M-event trace's 378k keys) is most of
 * what the table build has left then. Row `r` is row `r` of the tasks table. On shared
 * memory where the decode put them there (a large load on several threads), else plain
 * arrays; none of them changes afterwards.
 *
 * @since 0.1.0
 * @internal
 */
export interface EarlyTaskColumns {
  readonly columns: BottleneckTaskColumns
  readonly hosts: Utf8Strings
  readonly workers: ReadonlyArray<string>
  readonly keys: Utf8Strings
}

/**
 * A column projection: per table, the columns the caller reads (a table not named:
 * all of its columns). The `tasks` table's host, worker, key, function, start, end and
 * duration and every `resources` column are always loaded.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadColumns {
  readonly tasks?: ReadonlyArray<keyof TasksSchema>
  readonly memory?: ReadonlyArray<keyof MemorySchema>
}

/**
 * Load databases into tables. Rejects with `TraceFormatError` naming the file.
 *
 * @since 0.1.0
 * @category encoding
 */
export const loadPromise = async (files: ReadonlyArray<string>, options?: LoadOptions): Promise<TraceTables> => {
  // a started decoding of the same files and columns is taken over (this thread joins in)
  const started = options?.decoding
  const taken = started !== undefined && sameDecoding(started, files, options?.columns)
  if (taken) started.join()
  const d = taken ? await started.decoded : await decodePromise(files, options)
  return buildTablesNamed(d.dec, files, d.events, d.droppedBytes, d.fileRowEnds, d.fileExtraEnds, options?.columns, options?.onTaskColumns)
}

/** `buildTables`, its failures (an allocation, ...) named after the files. */
const buildTablesNamed = (...args: Parameters<typeof buildTables>): TraceTables => {
  try {
    return buildTables(...args)
  } catch (e) {
    throw unexpected(args[1].join(", ") || "(no files)", 0, e)
  }
}

/**
 * Load databases already in memory (whole files' bytes) into tables, synchronously.
 * Throws `TraceFormatError`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const loadBytesUnsafe = (
  databases: ReadonlyArray<{ readonly file: string; readonly bytes: Uint8Array }>,
  columns?: LoadColumns,
  /** as `LoadOptions.onTaskColumns` @internal */
  onTaskColumns?: (early: EarlyTaskColumns) => void
): TraceTables => {
  const dec = new ColumnDecoder(undefined, argSkipOf(columns))
  let dropped = 0
  let events = 0
  const rowEnds = new Int32Array(3 * databases.length)
  const extraEnds = new Int32Array(databases.length)
  databases.forEach(({ bytes, file }, f) => {
    let whole = 0
    let stop: number
    try {
      stop = scanFramesUnsafe(bytes, file, 0, (_, e) => (whole = e))
    } catch (e) {
      dec.decodeFrames(bytes, whole, file, 0) // the first error in file order, as streaming reports
      throw e
    }
    events += dec.decodeFrames(bytes, stop, file, 0)
    checkTailUnsafe(bytes.subarray(stop), file, stop)
    dropped += bytes.length - stop
    markFile(rowEnds, f, dec)
    extraEnds[f] = dec.extra.length
  })
  return buildTablesNamed(dec, databases.map((d) => d.file), events, dropped, rowEnds, extraEnds, columns, onTaskColumns)
}

/**
 * Load databases into tables.
 *
 * @since 0.1.0
 * @category encoding
 */
export const load = (
  files: ReadonlyArray<string>,
  options?: LoadOptions
): Effect.Effect<TraceTables, TraceFormatError> =>
  Effect.tryPromise({
    try: () => loadPromise(files, options),
    catch: (e) => (isTraceFormatError(e) ? e : unexpected(files.join(", ") || "(no files)", 0, e))
  })

// ---------------------------------------------------------------------------
// Table build

const dictType = () => new Dictionary(new Utf8(), new Int32())

/**
 * A dictionary of at least this many bytes of strings (the task keys of a large trace)
 * is built on `SharedArrayBuffer`s: `tessera analyze`'s CSV worker formats a large
 * table's rows from it without a copy (20 MB of keys for the 1M-event trace: copying
 * them to the worker and back into its heap cost ~25 ms of this thread and delayed the
 * worker's start by ~60 ms). The table sees an ordinary Uint8Array.
 */
const sharedDictionaryBytes = 1 << 20

/**
 * Dictionary columns from pool ids (-1 = null) sharing ONE compacted dictionary (so a
 * task's `key` codes and its `dependencies` codes are comparable without strings).
 */
const dictColumns = (
  idss: ReadonlyArray<Int32Array>,
  pool: StringPool
): Array<Data<StringColumn>> => {
  const remap = new Int32Array(pool.size).fill(-1)
  const used: Array<number> = []
  const parts = idss.map((ids) => {
    const out = ids.length >= sharedColumnRows ? new Int32Array(new SharedArrayBuffer(ids.length * 4)) : new Int32Array(ids.length)
    let nulls = 0
    let bitmap: Uint8Array | undefined
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]
      if (id < 0) {
        if (bitmap === undefined) bitmap = new Uint8Array((ids.length + 7) >> 3).fill(0xff)
        bitmap[i >> 3] &= ~(1 << (i & 7))
        nulls++
        continue
      }
      let r = remap[id]
      if (r < 0) {
        r = remap[id] = used.length
        used.push(id)
      }
      out[i] = r
    }
    return { out, nulls, bitmap }
  })
  const { data, offsets } = pool.utf8Buffers(used, sharedDictionaryBytes)
  const dictionary = makeVector(makeData({ type: new Utf8(), length: used.length, nullCount: 0, valueOffsets: offsets, data }))
  return parts.map(({ bitmap, nulls, out }) =>
    makeData({
      type: dictType(),
      length: out.length,
      nullCount: nulls,
      ...(bitmap !== undefined ? { nullBitmap: bitmap } : {}),
      data: out,
      dictionary
    }) as unknown as Data<StringColumn> // the same Data; StringColumn only re-types toArray()
  )
}

const dictColumn = (ids: Int32Array, pool: StringPool): Data<StringColumn> =>
  dictColumns([ids], pool)[0]

/** A Float64 column, NaN = null. */
const f64Column = (xs: Float64Array): Data<Float64> => {
  let bitmap: Uint8Array | undefined
  let nulls = 0
  for (let i = 0; i < xs.length; i++) {
    if (xs[i] !== xs[i]) {
      if (bitmap === undefined) bitmap = new Uint8Array((xs.length + 7) >> 3).fill(0xff)
      bitmap[i >> 3] &= ~(1 << (i & 7))
      nulls++
    }
  }
  return makeData({
    type: new Float64(),
    length: xs.length,
    nullCount: nulls,
    ...(bitmap !== undefined ? { nullBitmap: bitmap } : {}),
    data: xs
  })
}

/**
 * A Float64 column of Tessera's optional task details, NaN = null, over the decoder's
 * own buffer (not copied): one that holds no value at all (DASF's traces) is an
 * all-null column over zeroed buffers, without a pass that builds its bitmap.
 */
const detailColumn = (c: F64): Data<Float64> => {
  const xs = c.view()
  for (let i = 0; i < xs.length; i++) if (xs[i] === xs[i]) return f64Column(xs)
  const n = xs.length
  return makeData({ type: new Float64(), length: n, nullCount: n, nullBitmap: new Uint8Array((n + 7) >> 3), data: new Float64Array(n) })
}

/** An all-null column of `type`, `n` rows (a projected-out column). */
const nullColumn = <T extends DataType>(type: T, n: number): Data<T> => {
  const nullBitmap = new Uint8Array((n + 7) >> 3)
  if (type instanceof Float64) return makeData({ type, length: n, nullCount: n, nullBitmap, data: new Float64Array(n) }) as Data<T>
  const dictionary = makeVector(makeData({ type: new Utf8(), length: 0, nullCount: 0, valueOffsets: new Int32Array(1), data: new Uint8Array(0) }))
  if (type instanceof Dictionary) return makeData({ type, length: n, nullCount: n, nullBitmap, data: new Int32Array(n), dictionary }) as unknown as Data<T>
  const child = makeData({ type: dictType(), length: 0, nullCount: 0, data: new Int32Array(0), dictionary })
  return makeData({ type: type as unknown as List, length: n, nullCount: n, nullBitmap, valueOffsets: new Int32Array(n + 1), child }) as unknown as Data<T>
}

/**
 * A table of `n` rows from column builders: a column `want` refuses is not built but
 * all null (its type from the column's name: the key lists, the string columns, else
 * Float64).
 */
const table = <T extends TypeMap>(
  n: number,
  want: (column: keyof T & string) => boolean,
  cols: { readonly [K in keyof T]: () => Data<T[K]> }
): TypedTable<T> => {
  const vectors: Record<string, Vector> = {}
  for (const [k, build] of Object.entries(cols) as Array<[keyof T & string, () => Data]>) {
    vectors[k] = makeVector(want(k) ? build() : nullColumn(nullType(k), n))
  }
  return new Table(vectors) as unknown as TypedTable<T>
}

const stringColumns: ReadonlySet<string> = new Set(["host", "worker", "key", "function", "state", "stage", "type", "dtype", "shape"])
const nullType = (column: string): DataType =>
  column === "dependencies" || column === "dependents" ? keyListType() : stringColumns.has(column) ? dictType() : new Float64()
const keyListType = () => new List(new Field("item", dictType(), false))


// ---------------------------------------------------------------------------
// Clock domains

const median = (xs: Array<number>): number => {
  xs.sort((a, b) => a - b)
  const h = xs.length >> 1
  return xs.length % 2 === 1 ? xs[h] : (xs[h - 1] + xs[h]) / 2
}

/**
 * Find each file's clock from its rows' times; when epoch and monotonic files are
 * loaded together, shift each monotonic file that has `Resource Usage` samples with a
 * wall-clock `time` by the median of `time - timestamp` (in place), and warn once
 * naming the files that could not be aligned.
 */
const alignClocks = (
  dec: ColumnDecoder,
  files: ReadonlyArray<string>,
  rowEnds: Int32Array
): { readonly clocks: Array<FileClock>; readonly warnings: Array<string> } => {
  const ends = dec.tasks.end.view()
  const memTs = dec.memory.timestamp.view()
  const resTs = dec.resources.timestamp.view()
  const wall = dec.resources.values[resourceArgs.indexOf("time")].view()
  const range = (f: number, k: number) => [f === 0 ? 0 : rowEnds[3 * (f - 1) + k], rowEnds[3 * f + k]] as const
  const domains = files.map((_, f) => {
    let min = Infinity
    for (const [col, k] of [[ends, 0], [memTs, 1], [resTs, 2]] as const) {
      const [a, b] = range(f, k)
      for (let i = a; i < b; i++) if (col[i] < min) min = col[i]
    }
    return min === Infinity ? "none" as const : min < epochMin ? "monotonic" as const : "epoch" as const
  })
  const shifts = files.map(() => 0)
  const warnings: Array<string> = []
  if (domains.includes("epoch") && domains.includes("monotonic")) {
    const unaligned: Array<string> = []
    files.forEach((file, f) => {
      if (domains[f] !== "monotonic") return
      const [a, b] = range(f, 2)
      const diffs: Array<number> = []
      for (let i = a; i < b; i++) if (wall[i] >= epochMin && wall[i] - wall[i] === 0) diffs.push(wall[i] - resTs[i])
      if (diffs.length === 0) return void unaligned.push(file)
      const shift = median(diffs)
      shifts[f] = shift
      for (const [col, k] of [[ends, 0], [memTs, 1], [resTs, 2], ...dec.tasks.phases.map((c) => [c.view(), 0] as const)] as const) {
        const [x, y] = range(f, k)
        for (let i = x; i < y; i++) col[i] += shift
      }
      warnings.push(
        `${file}: monotonic clock shifted by ${shift.toFixed(3)} s onto the epoch clock of the other files (median of ${diffs.length} Resource Usage time - timestamp)`
      )
    })
    if (unaligned.length > 0) {
      warnings.push(
        `clocks differ: ${unaligned.join(", ")} on a monotonic clock (times < 1e9 s) with no Resource Usage \`time\` to align it, the others on epoch time; times are not comparable across the two groups (load them separately)`
      )
    }
  }
  return { clocks: files.map((file, f) => ({ file, domain: domains[f], shift: shifts[f] })), warnings }
}

const buildTables = (
  dec: ColumnDecoder,
  files: ReadonlyArray<string>,
  events: number,
  dropped: number,
  rowEnds: Int32Array,
  extraEnds: Int32Array,
  columns?: LoadColumns,
  onTaskColumns?: (early: EarlyTaskColumns) => void
): TraceTables => {
  dec.tasks.complete()
  const { clocks, warnings } = alignClocks(dec, files, rowEnds)
  const strings = dec.pool
  const t = dec.tasks
  const n = t.length
  // the decoder's buffers become the columns (views, not copies: the decoder is done)
  const end = t.end.view()
  const duration = t.duration.view()
  const hostCol = dictColumn(t.host.view(), strings)
  const workerCol = dictColumn(t.worker.view(), strings)
  if (onTaskColumns !== undefined) {
    const host = codesOf(makeVector(hostCol), n)
    const worker = codesOf(makeVector(workerCol), n)
    onTaskColumns({
      columns: { n, host: host.codes, worker: worker.codes, key: t.key.view(), duration, end, size: t.size.view() },
      hosts: utf8Strings(host.source as Vector)!, // one Utf8 batch, no nulls: `dictColumns` makes it so
      workers: Array.from({ length: worker.size }, (_, c) => worker.at(c)),
      keys: strings.sharedUtf8()
    })
  }
  // function per task: args.name when present and non-empty, else from the key
  const fnIds = new Int32Array(n)
  const byKey = new Map<number, number>()
  const nameIds = t.name.view()
  const keyIds = t.key.view()
  for (let i = 0; i < n; i++) {
    const nm = nameIds[i]
    if (nm >= 0 && strings.byteLength(nm) > 0) {
      fnIds[i] = nm
      continue
    }
    const k = keyIds[i]
    let f = byKey.get(k)
    if (f === undefined) {
      f = k < 0 ? -1 : dec.pool.intern(functionName(strings.get(k)))
      byKey.set(k, f)
    }
    fnIds[i] = f
  }
  // recomputations: a task key seen in an earlier Compute event
  let recomputed = 0
  const seen = new Uint8Array(strings.size)
  for (let i = 0; i < n; i++) {
    const k = keyIds[i]
    if (k < 0) continue
    if (seen[k] === 1) recomputed++
    else seen[k] = 1
  }
  if (recomputed > 0) {
    warnings.unshift(`${recomputed} task(s) recomputed: their keys appear in more than one Compute event; every run is kept (DASF N15)`)
  }
  const start = new Float64Array(n)
  for (let i = 0; i < n; i++) start[i] = end[i] - duration[i]
  const m = dec.memory
  const wantTask = (c: keyof TasksSchema) => columns?.tasks === undefined || columns.tasks.includes(c) || alwaysLoaded.includes(c)
  const wantMemory = (c: keyof MemorySchema) => columns?.memory === undefined || columns.memory.includes(c)
  const none = new Int32Array(0)
  // task keys, dependency keys and memory-event keys share one dictionary: one copy
  // of the (large) key strings, and codes comparable across the three
  const [keyCol, depChild, dependentChild, memKeyCol] = dictColumns([
    keyIds,
    wantTask("dependencies") ? t.deps.view() : none,
    wantTask("dependents") ? t.dependents.view() : none,
    wantMemory("key") ? m.key.view() : none
  ], strings)
  const keyList = (offsets: I32, child: Data<StringColumn>) =>
    makeData({
      type: keyListType(),
      length: n,
      nullCount: 0,
      valueOffsets: offsets.view(),
      child: child as unknown as Data<Dictionary<Utf8, Int32>>
    }) as unknown as Data<List<StringColumn>>
  // the task details' few distinct strings share one small dictionary (one pass over
  // the pool's ids instead of four)
  const details = (["stage", "type", "dtype", "shape"] as const).map((c) => wantTask(c) ? t[c].view() : none)
  const [stageCol, typeCol, dtypeCol, shapeCol] = dictColumns(details, strings)
  const cpu = t.cpuTime.view()
  const cores = () => {
    const c = new F64Column()
    c.padTo(n)
    for (let i = 0; i < n; i++) c.data[i] = duration[i] > 0 ? cpu[i] / duration[i] : NaN
    return detailColumn(c)
  }
  const phase = (j: number) => () => detailColumn(t.phases[j])
  const tasks = table<TasksSchema>(n, wantTask, {
    host: () => hostCol,
    worker: () => workerCol,
    key: () => keyCol,
    function: () => dictColumn(fnIds, strings),
    state: () => dictColumn(t.state.view(), strings),
    start: () => f64Column(start),
    end: () => f64Column(end),
    duration: () => f64Column(duration),
    size: () => f64Column(t.size.view()),
    cpu_time: () => f64Column(cpu),
    dependencies: () => keyList(t.depOffsets, depChild),
    stage: () => stageCol,
    type: () => typeCol,
    dtype: () => dtypeCol,
    shape: () => shapeCol,
    dependents: () => keyList(t.dependentOffsets, dependentChild),
    gather_start: phase(0),
    gather_end: phase(1),
    compute_start: phase(2),
    compute_end: phase(3),
    transfer_start: phase(4),
    transfer_end: phase(5),
    peak_memory: () => detailColumn(t.peakMemory),
    io_bytes: () => detailColumn(t.ioBytes),
    cores
  })
  const memory = table<MemorySchema>(m.length, wantMemory, {
    timestamp: () => f64Column(m.timestamp.view()),
    host: () => dictColumn(m.host.view(), strings),
    worker: () => dictColumn(m.worker.view(), strings),
    key: () => memKeyCol,
    state: () => dictColumn(m.state.view(), strings),
    size: () => f64Column(m.size.view()),
    tasks: () => f64Column(m.tasks.view()),
    device: () => detailColumn(m.device)
  })
  const r = dec.resources
  const resCols: Record<string, () => Data> = {
    timestamp: () => f64Column(r.timestamp.view()),
    host: () => dictColumn(r.host.view(), strings)
  }
  resourceArgs.forEach((k, j) => (resCols[k] = () => f64Column(r.values[j].view())))
  const eventCounts: Record<string, number> = {}
  for (const [id, c] of dec.counts) eventCounts[strings.get(id)] = c
  return {
    tasks,
    memory,
    resources: table<ResourcesSchema>(r.length, () => true, resCols as { readonly [K in keyof ResourcesSchema]: () => Data<ResourcesSchema[K]> }),
    files,
    eventCounts,
    events,
    droppedBytes: dropped,
    fallbackRecords: dec.fallbacks,
    metadata: dec.metadata,
    driver: driverTable(dec.driver.map(driverSegmentOf).filter((x): x is DriverSegment => x !== undefined)),
    ...extraTables(dec.extra, extraEnds, clocks.map((c) => c.shift)),
    recomputed,
    clocks,
    warnings
  }
}

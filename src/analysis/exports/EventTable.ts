/**
 * CSV and Arrow IPC export of trace events as one flat table: the event fields
 * (`name, phase, timestamp, start, duration, process_id, thread_id, scope`) followed by
 * one `args.<key>` column per argument key seen in the trace. `start` is the event's
 * start in seconds (`timestamp - duration` for complete events, whose timestamp is the
 * END). Numeric argument columns are Float64; all other values are strings (arrays
 * and maps as JSON), dictionary-encoded in Arrow.
 *
 * `eventCsvChunks` and `writeEventArrow` write the same table from a source read twice
 * (argument columns and dictionaries first, then rows a batch at a time: one Arrow
 * record batch per batch of events), holding one batch, never the whole trace (issue 32
 * items 9, 11).
 *
 * Leaves out: analyses (those are tables from `src/analysis`, which can be written the
 * same way with `tableToCsv`).
 *
 * @since 0.1.0
 */
import { Dictionary, Field, Float64, Int32, RecordBatch, RecordBatchFileWriter, Schema, Struct, Table, Utf8, makeData, makeVector, tableToIPC, vectorFromArray } from "apache-arrow"
import type { Data, Vector } from "apache-arrow"
import type { TraceEvent } from "../../trace/TraceEvent.ts"
import type { EventBatches } from "./EventBatches.ts"

const asRecord = (u: unknown): Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : {}

const str = (u: unknown): string | null =>
  u === null || u === undefined ? null : typeof u === "string" ? u : typeof u === "object" ? JSON.stringify(u) : String(u)

/**
 * Build the flat event table. Plain loops: one pass to find argument keys and their
 * types, one to fill columns.
 *
 * @since 0.1.0
 * @category constructors
 */
export const eventTable = (events: ReadonlyArray<TraceEvent>): Table => {
  const n = events.length
  const argKind = new Map<string, "number" | "string">()
  for (const e of events) {
    for (const [k, v] of Object.entries(asRecord(e.args))) {
      if (v === null || v === undefined) continue
      const kind = typeof v === "number" || typeof v === "bigint" ? "number" : "string"
      const prev = argKind.get(k)
      if (prev === undefined) argKind.set(k, kind)
      else if (prev !== kind) argKind.set(k, "string")
    }
  }
  const name = new Array<string>(n)
  const phase = new Array<string>(n)
  const timestamp = new Float64Array(n)
  const start = new Float64Array(n)
  const duration = new Array<number | null>(n)
  const pid = new Array<string | null>(n)
  const tid = new Array<string | null>(n)
  const scope = new Array<string | null>(n)
  const argCols = new Map<string, Array<number | string | null>>()
  for (const k of argKind.keys()) argCols.set(k, new Array(n).fill(null))
  for (let i = 0; i < n; i++) {
    const e = events[i]!
    name[i] = e.name
    phase[i] = e.phase
    timestamp[i] = e.timestamp
    const d = e.phase === "X" && typeof e.duration === "number" ? e.duration : null
    duration[i] = d
    start[i] = e.timestamp - (d ?? 0)
    pid[i] = str(e.process_id)
    tid[i] = str(e.thread_id)
    scope[i] = str(e.scope)
    for (const [k, v] of Object.entries(asRecord(e.args))) {
      if (v === null || v === undefined) continue
      argCols.get(k)![i] = argKind.get(k) === "number" ? Number(v) : str(v)
    }
  }
  const dict = () => new Dictionary(new Utf8(), new Int32())
  const columns: Record<string, Vector> = {
    name: vectorFromArray(name, dict()),
    phase: vectorFromArray(phase, dict()),
    timestamp: makeVector(timestamp),
    start: makeVector(start),
    duration: vectorFromArray(duration, new Float64()),
    process_id: vectorFromArray(pid, dict()),
    thread_id: vectorFromArray(tid, dict()),
    scope: vectorFromArray(scope, dict())
  }
  for (const [k, col] of argCols) {
    columns[`args.${k}`] = argKind.get(k) === "number"
      ? vectorFromArray(col as Array<number | null>, new Float64())
      : vectorFromArray(col as Array<string | null>, new Utf8())
  }
  return new Table(columns)
}

const csvCell = (v: unknown): string => {
  if (v === null || v === undefined) return ""
  const s = typeof v === "number" ? (Number.isFinite(v) ? String(v) : "") : String(v)
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

/**
 * Any Arrow table as CSV text (RFC 4180 quoting, header row, empty cell for null).
 *
 * @since 0.1.0
 * @category encoding
 */
export const tableToCsv = (table: Table): string => {
  const names = table.schema.fields.map((f) => f.name)
  const cols = names.map((c) => table.getChild(c)!)
  const lines = [names.map(csvCell).join(",")]
  for (let i = 0; i < table.numRows; i++) {
    lines.push(cols.map((c) => csvCell(c.get(i))).join(","))
  }
  return lines.join("\n") + "\n"
}

/**
 * Any Arrow table as an Arrow IPC file (the random-access "file" format).
 *
 * @since 0.1.0
 * @category encoding
 */
export const tableToArrowFile = (table: Table): Uint8Array => tableToIPC(table, "file")

/** The argument columns of a trace and their kinds, in order of first appearance. */
const argKinds = (): { readonly kinds: Map<string, "number" | "string">; add(e: TraceEvent): void } => {
  const kinds = new Map<string, "number" | "string">()
  return {
    kinds,
    add(e) {
      const a = e.args as unknown
      if (typeof a !== "object" || a === null || Array.isArray(a)) return
      for (const k in a) {
        const v = (a as Record<string, unknown>)[k]
        if (v === null || v === undefined) continue
        const kind = typeof v === "number" || typeof v === "bigint" ? "number" : "string"
        const prev = kinds.get(k)
        if (prev === undefined) kinds.set(k, kind)
        else if (prev !== kind) kinds.set(k, "string")
      }
    }
  }
}

const eventFields = ["name", "phase", "timestamp", "start", "duration", "process_id", "thread_id", "scope"] as const

const numberCell = (x: number | null): string => (x === null || !Number.isFinite(x) ? "" : String(x))

/**
 * The flat event table of `source` as CSV text, a piece at a time: byte for byte
 * `tableToCsv(eventTable(events))`, without the table.
 *
 * @since 0.1.0
 * @category encoding
 */
export const eventCsvChunks = async function*(source: EventBatches): AsyncGenerator<string> {
  const args = argKinds()
  for await (const batch of source()) for (const e of batch) args.add(e)
  const keys = [...args.kinds.keys()]
  const numeric = keys.map((k) => args.kinds.get(k) === "number")
  yield [...eventFields, ...keys.map((k) => `args.${k}`)].map(csvCell).join(",") + "\n"
  const row: Array<string> = []
  for await (const batch of source()) {
    const lines: Array<string> = []
    for (const e of batch) {
      const d = e.phase === "X" && typeof e.duration === "number" ? e.duration : null
      row.length = 0
      row.push(csvCell(e.name), csvCell(e.phase), numberCell(e.timestamp), numberCell(e.timestamp - (d ?? 0)), numberCell(d))
      row.push(csvCell(str(e.process_id)), csvCell(str(e.thread_id)), csvCell(str(e.scope)))
      const a = asRecord(e.args)
      for (let j = 0; j < keys.length; j++) {
        const v = a[keys[j]!]
        row.push(v === null || v === undefined ? "" : numeric[j] ? numberCell(Number(v)) : csvCell(str(v)))
      }
      lines.push(row.join(","))
    }
    if (lines.length > 0) yield lines.join("\n") + "\n"
  }
}

/** Nulls as a validity bitmap (undefined: none), for `makeData`. */
const validity = (valid: ReadonlyArray<boolean>): { nullCount: number; nullBitmap?: Uint8Array } => {
  let nulls = 0
  for (const v of valid) if (!v) nulls++
  if (nulls === 0) return { nullCount: 0 }
  const bitmap = new Uint8Array((valid.length + 7) >> 3)
  valid.forEach((v, i) => v && (bitmap[i >> 3]! |= 1 << (i & 7)))
  return { nullCount: nulls, nullBitmap: bitmap }
}

/**
 * Write the flat event table of `source` as an Arrow IPC file through `write` (called
 * with each piece in order; it may be slow: the next record batch waits for it): one
 * record batch per batch of events, the string columns' dictionaries (learnt in a first
 * pass) written once. Reads as `eventTable(events)` does (`tableFromIPC`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const writeEventArrow = async (source: EventBatches, write: (bytes: Uint8Array) => void | Promise<void>): Promise<void> => {
  const args = argKinds()
  const dictFields = ["name", "phase", "process_id", "thread_id", "scope"] as const
  const codes = dictFields.map(() => new Map<string, number>())
  const valueOf: Record<(typeof dictFields)[number], (e: TraceEvent) => string | null> = {
    name: (e) => e.name,
    phase: (e) => e.phase,
    process_id: (e) => str(e.process_id),
    thread_id: (e) => str(e.thread_id),
    scope: (e) => str(e.scope)
  }
  for await (const batch of source()) {
    for (const e of batch) {
      args.add(e)
      dictFields.forEach((f, j) => {
        const v = valueOf[f](e)
        if (v !== null && !codes[j]!.has(v)) codes[j]!.set(v, codes[j]!.size)
      })
    }
  }
  const keys = [...args.kinds.keys()]
  // one dictionary per string column, the same for every record batch (written once)
  const dictTypes = dictFields.map((_, j) => new Dictionary(new Utf8(), new Int32(), j))
  const dictionaries = codes.map((m) => vectorFromArray([...m.keys()], new Utf8()))
  const fields: Array<Field> = []
  const types: Record<string, Field> = {}
  const field = (name: string, type: Dictionary | Float64 | Utf8) => {
    const f = new Field(name, type, true)
    fields.push(f)
    types[name] = f
  }
  for (const f of eventFields) {
    const j = (dictFields as ReadonlyArray<string>).indexOf(f)
    field(f, j >= 0 ? dictTypes[j]! : new Float64())
  }
  for (const k of keys) field(`args.${k}`, args.kinds.get(k) === "number" ? new Float64() : new Utf8())
  const schema = new Schema(fields)
  const writer = new RecordBatchFileWriter()
  writer.reset(undefined, schema)
  // the writer queues its bytes; this drains them, in order, through `write`. `busy`
  // while a write is under way: a record batch is made only once the last one's bytes
  // are all handed on (a queued piece is taken within microtasks, so after a turn of the
  // event loop the pump is either writing or waiting on an empty queue)
  let busy = false
  let failed: { readonly error: unknown } | undefined
  const pump = (async () => {
    for await (const bytes of writer) {
      busy = true
      await write(bytes)
      busy = false
    }
  })().catch((error: unknown) => {
    failed = { error }
    busy = false
  })
  const drained = async () => {
    do await new Promise((resolve) => setImmediate(resolve))
    while (busy)
    if (failed !== undefined) throw failed.error
  }
  const f64 = (values: Float64Array, valid: ReadonlyArray<boolean> | undefined) =>
    makeData({ type: new Float64(), length: values.length, data: values, ...(valid === undefined ? { nullCount: 0 } : validity(valid)) })
  for await (const batch of source()) {
    const n = batch.length
    if (n === 0) continue
    const children: Array<Data> = []
    for (const f of eventFields) {
      const j = (dictFields as ReadonlyArray<string>).indexOf(f)
      if (j >= 0) {
        const ids = new Int32Array(n)
        const valid = new Array<boolean>(n)
        for (let i = 0; i < n; i++) {
          const v = valueOf[dictFields[j]!](batch[i]!)
          valid[i] = v !== null
          ids[i] = v === null ? 0 : codes[j]!.get(v)!
        }
        children.push(makeData({ type: dictTypes[j]!, length: n, data: ids, dictionary: dictionaries[j]!, ...validity(valid) }))
        continue
      }
      const xs = new Float64Array(n)
      const valid = f === "duration" ? new Array<boolean>(n) : undefined
      for (let i = 0; i < n; i++) {
        const e = batch[i]!
        const d = e.phase === "X" && typeof e.duration === "number" ? e.duration : null
        if (f === "timestamp") xs[i] = e.timestamp
        else if (f === "start") xs[i] = e.timestamp - (d ?? 0)
        else {
          xs[i] = d ?? 0
          valid![i] = d !== null
        }
      }
      children.push(f64(xs, valid))
    }
    for (const k of keys) {
      const valid = new Array<boolean>(n)
      if (args.kinds.get(k) === "number") {
        const xs = new Float64Array(n)
        for (let i = 0; i < n; i++) {
          const v = asRecord(batch[i]!.args)[k]
          valid[i] = v !== null && v !== undefined
          xs[i] = valid[i] ? Number(v) : 0
        }
        children.push(f64(xs, valid))
      } else {
        const vs = new Array<string | null>(n)
        for (let i = 0; i < n; i++) vs[i] = str(asRecord(batch[i]!.args)[k])
        children.push(vectorFromArray(vs, new Utf8()).data[0]!)
      }
    }
    const data = makeData({ type: new Struct(fields), length: n, nullCount: 0, children })
    writer.write(new RecordBatch(schema, data))
    await drained()
  }
  writer.finish()
  await pump
  if (failed !== undefined) throw failed.error
}

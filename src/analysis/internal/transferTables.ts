/**
 * Load.ts's `transfers` and `clockOffsets` tables, from the `Transfer` and `Clock Offset`
 * events the column decoder keeps whole (`ColumnDecoder.extra`). These are few next to
 * `Compute` events (a transfer per peer fetch or device copy, a clock offset per worker
 * and compute), so they are built row by row with Arrow's `vectorFromArray`; a trace
 * without them gets two empty tables.
 *
 * Times get their file's clock shift (Load.ts "Clock domains"). A `Transfer` reads its
 * start/stop from args, else from timestamp and duration (as `tessera sql`'s table,
 * internal/duckExtra.ts). Values of the wrong type are null, never guessed.
 *
 * @since 0.1.0
 * @internal
 */
import { vectorFromArray } from "apache-arrow/factories"
import { Field } from "apache-arrow/schema"
import { Table } from "apache-arrow/table"
import { Dictionary, Float64, Int32, List, Utf8 } from "apache-arrow/type"
import type { TraceEvent } from "../../trace/TraceEvent.ts"
import type { ClockOffsetsSchema, TransfersSchema, TypedTable } from "../Load.ts"

const num = (u: unknown): number | null => (typeof u === "number" && Number.isFinite(u) ? u : null)
const str = (u: unknown): string | null => (typeof u === "string" ? u : typeof u === "number" ? String(u) : null)

const dict = () => new Dictionary(new Utf8(), new Int32())
const strings = (xs: Array<string | null>) => vectorFromArray(xs, dict())
const floats = (xs: Array<number | null>) => vectorFromArray(xs, new Float64())

/**
 * The two tables from the kept events; `ends[f]`: where file f's events end,
 * `shifts[f]`: seconds added to its times.
 *
 * @since 0.1.0
 * @internal
 */
export const extraTables = (
  events: ReadonlyArray<TraceEvent>,
  ends: Int32Array,
  shifts: ReadonlyArray<number>
): { readonly transfers: TypedTable<TransfersSchema>; readonly clockOffsets: TypedTable<ClockOffsetsSchema> } => {
  const t = {
    host: [] as Array<string | null>,
    worker: [] as Array<string | null>,
    peer: [] as Array<string | null>,
    direction: [] as Array<string | null>,
    keys: [] as Array<Array<string>>,
    n_keys: [] as Array<number>,
    bytes: [] as Array<number | null>,
    start: [] as Array<number>,
    stop: [] as Array<number>,
    duration: [] as Array<number>,
    serialize: [] as Array<number | null>,
    deserialize: [] as Array<number | null>
  }
  const c = {
    host: [] as Array<string | null>,
    worker: [] as Array<string | null>,
    name: [] as Array<string | null>,
    time: [] as Array<number>,
    offset: [] as Array<number | null>,
    uncertainty: [] as Array<number | null>
  }
  let f = 0
  events.forEach((e, i) => {
    while (f < ends.length - 1 && i >= ends[f]!) f++
    const shift = shifts[f] ?? 0
    const a = (e.args ?? {}) as Record<string, unknown>
    if (e.name === "Transfer") {
      const duration = num(e.duration) ?? 0
      const stop = num(a.stop) ?? e.timestamp
      const start = num(a.start) ?? stop - duration
      const keys = Array.isArray(a.keys) ? a.keys.map(String) : []
      t.host.push(str(e.process_id))
      t.worker.push(str(a.worker) ?? str(e.thread_id))
      t.peer.push(str(a.peer))
      t.direction.push(str(a.direction))
      t.keys.push(keys)
      t.n_keys.push(keys.length)
      t.bytes.push(num(a.bytes))
      t.start.push(start + shift)
      t.stop.push(stop + shift)
      t.duration.push(stop - start)
      t.serialize.push(num(a.serialize))
      t.deserialize.push(num(a.deserialize))
    } else if (e.name === "Clock Offset") {
      c.host.push(str(e.process_id))
      c.worker.push(str(e.thread_id))
      c.name.push(str(a.worker))
      c.time.push(e.timestamp + shift)
      c.offset.push(num(a.offset))
      c.uncertainty.push(num(a.uncertainty))
    }
  })
  const transfers = new Table({
    host: strings(t.host),
    worker: strings(t.worker),
    peer: strings(t.peer),
    direction: strings(t.direction),
    keys: vectorFromArray(t.keys, new List(new Field("item", new Utf8(), true))),
    n_keys: vectorFromArray(t.n_keys, new Int32()),
    bytes: floats(t.bytes),
    start: floats(t.start),
    stop: floats(t.stop),
    duration: floats(t.duration),
    serialize: floats(t.serialize),
    deserialize: floats(t.deserialize)
  }) as unknown as TypedTable<TransfersSchema>
  const clockOffsets = new Table({
    host: strings(c.host),
    worker: strings(c.worker),
    name: strings(c.name),
    time: floats(c.time),
    offset: floats(c.offset),
    uncertainty: floats(c.uncertainty)
  }) as unknown as TypedTable<ClockOffsetsSchema>
  return { transfers, clockOffsets }
}

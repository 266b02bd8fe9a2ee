/**
 * EventProfiler: records trace events into a database (DASF's `EventProfiler`). Unlike
 * DASF, a duration END is written with phase "E" (DASF writes "B", DASF-NOTES 17), and a
 * reader never appends anything (DASF-NOTES 18): only `record*` calls write.
 *
 * Every `record*` method but `record` writes phase X, I, B or E only, the phases DASF's
 * reader accepts (any other is a `KeyError` in `get_traces`): `recordCounter` writes an
 * instant event of process scope (`scope: "p"`) whose args are the counter values, and
 * `recordMetadata` an instant event of global scope. `record` writes the event it is
 * given, whatever its phase.
 *
 * @since 0.1.0
 */
import type { Scope, TraceEvent } from "../trace/TraceEvent.ts"
import type { EventDatabase } from "./EventDatabase.ts"
import { FileDatabase, type FileDatabaseOptions } from "./FileDatabase.ts"
import * as MemoryDatabase from "./MemoryDatabase.ts"

type Id = string | number | null
type Args = Readonly<Record<string, unknown>>

/**
 * A profiler over one database.
 *
 * @since 0.1.0
 * @category models
 */
export interface EventProfiler {
  readonly database: EventDatabase
  readonly record: (event: TraceEvent) => void
  readonly recordComplete: (name: string, timestamp: number, duration: number, processId: Id, threadId: Id, args?: Args) => void
  readonly recordInstant: (name: string, timestamp: number, processId: Id, threadId: Id, args?: Args, scope?: Scope) => void
  readonly recordDurationBegin: (name: string, timestamp: number, processId: Id, threadId: Id, args?: Args) => void
  readonly recordDurationEnd: (name: string, timestamp: number, processId: Id, threadId: Id, args?: Args) => void
  /** counter values: an instant event (phase "I", scope "p") with `values` as args, readable by DASF */
  readonly recordCounter: (name: string, timestamp: number, processId: Id, threadId: Id, values: Args) => void
  /** metadata: an instant event (phase "I", scope "g"), readable by DASF */
  readonly recordMetadata: (name: string, timestamp: number, processId: Id, threadId: Id, args: Args) => void
  /** Commits, then every event of the database. */
  readonly getTraces: () => Promise<Array<TraceEvent>>
  readonly commit: () => void
  readonly close: () => void
}

/**
 * A profiler over `database`: an `EventDatabase`, a file path (a `FileDatabase`), or
 * nothing (a `MemoryDatabase`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (database?: EventDatabase | string, options: FileDatabaseOptions = {}): EventProfiler => {
  const db: EventDatabase = database === undefined
    ? MemoryDatabase.make()
    : typeof database === "string"
    ? new FileDatabase(database, options)
    : database
  const record = db.record
  const simple = (phase: "B" | "E") => (name: string, timestamp: number, processId: Id, threadId: Id, args: Args = {}) =>
    record({ name, timestamp, phase, process_id: processId, thread_id: threadId, args })
  return {
    database: db,
    record,
    recordComplete: (name, timestamp, duration, processId, threadId, args = {}) =>
      record({ name, timestamp, duration, phase: "X", process_id: processId, thread_id: threadId, args }),
    recordInstant: (name, timestamp, processId, threadId, args = {}, scope = "g") =>
      record({ name, timestamp, phase: "I", scope, process_id: processId, thread_id: threadId, args }),
    recordDurationBegin: simple("B"),
    recordDurationEnd: simple("E"),
    recordCounter: (name, timestamp, processId, threadId, values) =>
      record({ name, timestamp, phase: "I", scope: "p", process_id: processId, thread_id: threadId, args: values }),
    recordMetadata: (name, timestamp, processId, threadId, args) =>
      record({ name, timestamp, phase: "I", scope: "g", process_id: processId, thread_id: threadId, args }),
    getTraces: async () => {
      const out: Array<TraceEvent> = []
      for await (const e of db.events()) out.push(e)
      return out
    },
    commit: db.commit,
    close: db.close
  }
}

/**
 * EventDatabase: where profiler layers put trace events (DASF's `EventDatabase`). A
 * database records events (buffered), commits them (makes them durable / visible), lists
 * them back, and closes. Implementations: `FileDatabase` (DASF's on-disk format),
 * `MemoryDatabase` (tests, in-process analysis), `MultiEventDatabase` (read several).
 *
 * Leaves out: the encoding (src/trace/TraceFormat, src/trace/TraceWriter).
 *
 * @since 0.1.0
 */
import { Data, Effect } from "effect"
import type { DriverRecord, MemoryRecord, TaskRecord } from "../engine/EngineEvents.ts"
import type { TraceEvent } from "../trace/TraceEvent.ts"

/**
 * A database's own way to take the engine's records: the same events as
 * `record(Trace.computeEvent(r))` / `record(Trace.memoryEvent(m))`, written without
 * building the event objects (FileDatabase encodes them straight into its buffer).
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordSink {
  readonly task: (record: TaskRecord) => void
  readonly memory: (record: MemoryRecord) => void
  /** the same event as `record(Trace.driverEvent(d))`, when the database has a fast path for it */
  readonly driver?: (record: DriverRecord) => void
}

/**
 * A sink and source of trace events. `record` and `commit` are synchronous so engine
 * hooks (which are synchronous) can call them; they throw `DatabaseError`.
 *
 * @since 0.1.0
 * @category models
 */
export interface EventDatabase {
  /** a label for messages: the file path, or `<memory>` */
  readonly label: string
  /** Buffers one event; commits when the batch reaches the commit threshold. */
  readonly record: (event: TraceEvent) => void
  /** Writes out every buffered event. */
  readonly commit: () => void
  /** Every committed event (after committing what is buffered), in stored order. */
  readonly events: () => AsyncIterable<TraceEvent>
  /** Commits and releases the database; later `record` calls fail with `Closed`. */
  readonly close: () => void
  /**
   * Optional fast path for engine records; the Trace layer uses it when present and
   * otherwise records `Trace.computeEvent` / `Trace.memoryEvent` through `record`.
   */
  readonly records?: RecordSink
}

/**
 * The database (or the file) cannot be opened.
 *
 * @since 0.1.0
 * @category errors
 */
export class OpenFailed extends Data.TaggedError("OpenFailed")<{ readonly detail: string; readonly message: string }> {}

/**
 * A batch could not be written.
 *
 * @since 0.1.0
 * @category errors
 */
export class WriteFailed extends Data.TaggedError("WriteFailed")<{ readonly detail: string; readonly message: string }> {}

/**
 * The database was used after `close`.
 *
 * @since 0.1.0
 * @category errors
 */
export class Closed extends Data.TaggedError("Closed")<{ readonly detail: string; readonly message: string }> {}

/**
 * The database only reads (a MultiEventDatabase).
 *
 * @since 0.1.0
 * @category errors
 */
export class ReadOnly extends Data.TaggedError("ReadOnly")<{ readonly detail: string; readonly message: string }> {}

/**
 * An option is out of range.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidOption extends Data.TaggedError("InvalidOption")<{ readonly detail: string; readonly message: string }> {}

/**
 * An event cannot be encoded.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidEvent extends Data.TaggedError("InvalidEvent")<{ readonly detail: string; readonly message: string }> {}

/**
 * Another live process (or another profiler of this process) writes the database: its
 * lock file `{file}.lock` names it (pid, host, start time). Issue 32 item 2.
 *
 * @since 0.1.0
 * @category errors
 */
export class Locked extends Data.TaggedError("Locked")<{ readonly detail: string; readonly message: string }> {}

/**
 * Why a database operation failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type DatabaseErrorReason = OpenFailed | WriteFailed | Closed | ReadOnly | InvalidOption | InvalidEvent | Locked

/**
 * A database could not be written: names the database (file) and what went wrong.
 *
 * @since 0.1.0
 * @category errors
 */
export class DatabaseError extends Data.TaggedError("DatabaseError")<{
  readonly database: string
  readonly reason: DatabaseErrorReason
  readonly message: string
}> {}

const reasons = { OpenFailed, WriteFailed, Closed, ReadOnly, InvalidOption, InvalidEvent, Locked } as const

/**
 * Builds a `DatabaseError` (the one place its messages are written):
 * `{database}: {detail} ({reason})`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const databaseError = (database: string, tag: DatabaseErrorReason["_tag"], detail: string): DatabaseError => {
  const message = `${database}: ${detail} (${tag})`
  return new DatabaseError({ database, reason: new reasons[tag]({ detail, message }), message })
}

/**
 * Guard for `DatabaseError`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDatabaseError = (u: unknown): u is DatabaseError => u instanceof DatabaseError

/**
 * Runs a synchronous database call as an Effect: its `DatabaseError` is the failure,
 * anything else it throws is a defect (a bug).
 *
 * @since 0.1.0
 * @category constructors
 */
export const attempt = <A>(f: () => A): Effect.Effect<A, DatabaseError> =>
  Effect.catch(
    Effect.try({ try: f, catch: (e) => e }),
    (e) => (isDatabaseError(e) ? Effect.fail(e) : Effect.die(e))
  )

/**
 * Reads every event of a database into an array.
 *
 * @since 0.1.0
 * @category getters
 */
export const collectPromise = async (db: Pick<EventDatabase, "events">): Promise<Array<TraceEvent>> => {
  const out: Array<TraceEvent> = []
  for await (const e of db.events()) out.push(e)
  return out
}

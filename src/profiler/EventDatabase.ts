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
import { Data } from "effect"
import type { TraceEvent } from "../trace/TraceEvent.ts"

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
}

/**
 * Why a database operation failed.
 *
 * @since 0.1.0
 * @category errors
 */
export type DatabaseErrorReason = "OpenFailed" | "WriteFailed" | "Closed" | "ReadOnly" | "InvalidOption" | "InvalidEvent"

/**
 * A database could not be written: names the database (file) and what went wrong.
 *
 * @since 0.1.0
 * @category errors
 */
export class DatabaseError extends Data.TaggedError("DatabaseError")<{
  readonly database: string
  readonly reason: DatabaseErrorReason
  readonly detail: string
}> {
  override get message(): string {
    return `${this.database}: ${this.detail} (${this.reason})`
  }
}

/**
 * Guard for `DatabaseError`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isDatabaseError = (u: unknown): u is DatabaseError => u instanceof DatabaseError

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

/**
 * MemoryDatabase: an in-memory `EventDatabase` (DASF's `MemoryDatabase`). Recording
 * appends to a list; there is nothing to flush. For tests, and for profiling a run whose
 * events are analysed in the same process.
 *
 * @since 0.1.0
 */
import type { TraceEvent } from "../trace/TraceEvent.ts"
import { databaseError, type EventDatabase } from "./EventDatabase.ts"

/**
 * An in-memory database; `list` holds the recorded events in order.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryDatabase extends EventDatabase {
  readonly list: ReadonlyArray<TraceEvent>
}

/**
 * A new, empty in-memory database.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): MemoryDatabase => {
  const list: Array<TraceEvent> = []
  let closed = false
  return {
    label: "<memory>",
    list,
    record: (event) => {
      if (closed) throw databaseError("<memory>", "Closed", "record after close")
      list.push(event)
    },
    commit: () => undefined,
    events: async function*() {
      for (let i = 0; i < list.length; i++) yield list[i]!
    },
    close: () => {
      closed = true
    }
  }
}

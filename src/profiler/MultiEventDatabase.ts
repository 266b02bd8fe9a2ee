/**
 * MultiEventDatabase: iterates several databases one after another (DASF's
 * `MultiEventDatabase`), e.g. a TracePlugin file and a ResourceMonitor file. Read-only.
 *
 * @since 0.1.0
 */
import type { TraceEvent } from "../trace/TraceEvent.ts"
import { databaseError, type EventDatabase } from "./EventDatabase.ts"

/**
 * Several databases read as one (in the order given).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (databases: ReadonlyArray<Pick<EventDatabase, "events" | "label">>): EventDatabase => {
  const label = `[${databases.map((d) => d.label).join(", ")}]`
  const readOnly = (what: string) => () => {
    throw databaseError(label, "ReadOnly", `${what} on a MultiEventDatabase`)
  }
  return {
    label,
    record: readOnly("record"),
    commit: () => undefined,
    events: async function*(): AsyncGenerator<TraceEvent> {
      for (const db of databases) yield* db.events()
    },
    close: () => undefined
  }
}

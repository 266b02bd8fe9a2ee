/**
 * `tessera/testing`: fast-check arbitraries for task graphs and traces with known ground
 * truth (Traces.ts), naive reference implementations of the built-in analyses
 * (Reference.ts), and a loader of a generated trace into the analyses' tables. Needs
 * `fast-check` in the project that imports it (docs/diagnosis.md, "The test kit").
 *
 * @since 0.1.0
 */
import { type HostMemory, hostMemoryOfEvents, hostMemoryOfTable } from "../analysis/diagnosis/HostMemory.ts"
import { loadBytesUnsafe, type TraceTables } from "../analysis/Load.ts"
import { type GeneratedTrace, toBytes } from "./Traces.ts"

export * as Reference from "./Reference.ts"
export * from "./Traces.ts"

/**
 * Load a generated trace into the tables every analysis reads (as one database file),
 * with the hosts' memory samples the diagnosis reads (`hostMemory`: from the resource
 * table, or the events where the table does not keep those args).
 *
 * @since 0.1.0
 * @category constructors
 */
export const tablesOf = (trace: Pick<GeneratedTrace, "events">): TraceTables & { readonly hostMemory: ReadonlyArray<HostMemory> } => {
  const tables = loadBytesUnsafe([{ file: "generated.msgpack", bytes: toBytes(trace) }])
  return { ...tables, hostMemory: hostMemoryOfTable(tables.resources) ?? hostMemoryOfEvents(trace.events) }
}

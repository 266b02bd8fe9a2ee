/**
 * `tessera export -d DB... --format chrome|csv|arrow -o FILE`: Chrome Trace Event JSON
 * for Perfetto / chrome://tracing, or the flat event table as CSV or Arrow IPC.
 *
 * @since 0.1.0
 */
import { writeFile } from "node:fs/promises"
import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { chromeTraceJson, toChromeTrace } from "../../analysis/exports/ChromeTrace.ts"
import { eventTable, tableToArrowFile, tableToCsv } from "../../analysis/exports/EventTable.ts"
import { loadEvents } from "../../report/loadEvents.ts"
import { dbFlag, reportCause } from "../../report/cliFlags.ts"

/**
 * Export `files` in `format` to `out`; returns the number of bytes written.
 *
 * @since 0.1.0
 * @category exports
 */
export const exportTrace = async (files: ReadonlyArray<string>, format: "chrome" | "csv" | "arrow", out: string): Promise<number> => {
  const { events } = await loadEvents(files)
  const bytes: string | Uint8Array = format === "chrome"
    ? chromeTraceJson(toChromeTrace(events))
    : format === "csv"
    ? tableToCsv(eventTable(events))
    : tableToArrowFile(eventTable(events))
  await writeFile(out, bytes)
  return typeof bytes === "string" ? Buffer.byteLength(bytes) : bytes.byteLength
}

/**
 * The `export` subcommand.
 *
 * @since 0.1.0
 * @category commands
 */
export const exportCommand = Command.make(
  "export",
  {
    db: dbFlag,
    format: Flag.Literals("format", ["chrome", "csv", "arrow"] as const).pipe(Flag.withDescription("chrome (Trace Event JSON), csv or arrow (IPC file)"), Flag.withDefault("chrome" as const)),
    output: Flag.String("output").pipe(Flag.withAlias("o"), Flag.withDescription("file to write"))
  },
  (c) =>
    Effect.gen(function*() {
      const n = yield* Effect.tryPromise({ try: () => exportTrace(c.db, c.format, c.output), catch: reportCause })
      yield* Console.log(`wrote ${c.output} (${c.format}, ${(n / 1024).toFixed(0)} KiB)`)
    })
).pipe(Command.withDescription("Export trace databases as Chrome Trace Event JSON, CSV or Arrow IPC."))

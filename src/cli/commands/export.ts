/**
 * `tessera export -d DB [DB...] --format chrome|csv|arrow -o FILE`: Chrome Trace Event
 * JSON for Perfetto / chrome://tracing, or the flat event table as CSV or Arrow IPC;
 * `--format cpuprofile -o DIR [--by worker|function]`: the statistical profiler's
 * samples as `.cpuprofile` files (analysis/exports/CpuProfile.ts). The output's missing
 * folders are made (as `report -o` does).
 *
 * @since 0.1.0
 */
import { writeFile } from "node:fs/promises"
import { dirname } from "node:path"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import { makeDirectory } from "../../trace/Directory.ts"
import { databasesFlag, refuseInputAsOutput, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"

/**
 * Export `files` in `format` to `out`; returns the number of bytes written.
 * `onPhase` hears `converting` and `writing FILE`.
 *
 * @since 0.1.0
 * @category exports
 */
export const exportTrace = async (
  files: ReadonlyArray<string>,
  format: "chrome" | "csv" | "arrow",
  out: string,
  onPhase: (phase: string) => void = () => {}
): Promise<number> => {
  // loaded only now, so that the CLI starts without them
  const [{ chromeTraceJson, toChromeTrace }, { eventTable, tableToArrowFile, tableToCsv }, { loadEvents }] = await Promise.all([
    import("../../analysis/exports/ChromeTrace.ts"),
    import("../../analysis/exports/EventTable.ts"),
    import("../../report/LoadEvents.ts")
  ])
  const { events } = await loadEvents(files)
  onPhase(`converting ${events.length} events to ${format}`)
  const bytes: string | Uint8Array = format === "chrome"
    ? chromeTraceJson(toChromeTrace(events))
    : format === "csv"
    ? tableToCsv(eventTable(events))
    : tableToArrowFile(eventTable(events))
  onPhase(`writing ${out}`)
  try {
    // a missing folder is made, as `report -o` makes its own
    await makeDirectory(dirname(out))
    await writeFile(out, bytes)
  } catch (e) {
    // a system error still (Output.tracked reports it as a failure), saying it is the output
    const err = e as NodeJS.ErrnoException
    throw Object.assign(new Error(`cannot write ${out}: ${err.message}`, { cause: e }), { code: err.code, syscall: err.syscall, path: err.path })
  }
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
    db: databasesFlag(),
    format: Flag.Literals("format", ["chrome", "csv", "arrow", "cpuprofile"] as const).pipe(
      withDefaultShown<"chrome" | "csv" | "arrow" | "cpuprofile">("chrome (Trace Event JSON), csv, arrow (IPC file), or cpuprofile (a folder of .cpuprofile files)", "chrome")
    ),
    by: Flag.Literals("by", ["worker", "function"] as const).pipe(
      withDefaultShown<"worker" | "function">("with --format cpuprofile: one file per worker thread or per task function", "worker")
    ),
    output: Flag.String("output").pipe(Flag.withAlias("o"), Flag.withDescription("file to write (a folder for cpuprofile; required)"))
  },
  (c) =>
    Effect.gen(function*() {
      yield* refuseInputAsOutput("--output", [c.output], c.db)
      if (c.format === "cpuprofile") {
        const format = c.format
        const written = yield* Output.tracked("export", c.db, undefined, async () => {
          const { writeCpuProfiles } = await import("../../analysis/exports/CpuProfile.ts")
          return writeCpuProfiles(c.db, c.output, c.by)
        })
        for (const w of written) yield* Console.log(`wrote ${w.file} (${format}, ${w.samples} samples)`)
        return
      }
      const format = c.format
      const n = yield* Output.tracked("export", c.db, undefined, (p) => exportTrace(c.db, format, c.output, p.phase))
      yield* Console.log(`wrote ${c.output} (${format}, ${(n / 1024).toFixed(0)} KiB)`)
    })
).pipe(Command.withDescription("Export trace databases as Chrome Trace Event JSON, CSV, Arrow IPC, or .cpuprofile files."))

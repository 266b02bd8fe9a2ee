/**
 * `tessera export -d DB [DB...] --format chrome|csv|arrow -o FILE`: Chrome Trace Event
 * JSON for Perfetto / chrome://tracing, or the flat event table as CSV or Arrow IPC;
 * `--format cpuprofile -o DIR [--by worker|function]`: the statistical profiler's
 * samples as `.cpuprofile` files (analysis/exports/CpuProfile.ts). The output's missing
 * folders are made (as `report -o` does). Every file is written beside its name and
 * renamed once whole; an output that is one of the databases (a hard link included) is
 * refused (trace/OutputFile.ts).
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import { writeOutput } from "../../trace/OutputFile.ts"
import { databasesFlag, refuseInputAsOutput, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"

/**
 * Write `out` from the pieces `produce` hands to its `write` (in order), through
 * `OutputFile.writeOutput` (beside it, renamed once whole; never one of `inputs`; its
 * missing folders made); returns the bytes written. The streaming exports' one way to
 * their output.
 *
 * @since 0.1.0
 * @category encoding
 */
export const writeStreamed = (
  out: string,
  inputs: ReadonlyArray<string>,
  produce: (write: (piece: string | Uint8Array) => Promise<void>) => Promise<void>
): Promise<number> =>
  writeOutput(out, async (o) => {
    await produce(o.write)
    return o.bytes()
  }, { inputs, makeFolder: true, flag: "--output" })

/**
 * Export `files` in `format` to `out`; returns the number of bytes written. Streams
 * (issue 32 items 9, 11): the databases are read twice, a batch of records at a time
 * (`EventBatches.fileBatches`), and the output is written as it is made, so memory holds
 * one batch and what the output's header needs, not the trace.
 * `onPhase` hears `indexing`, `converting` and `writing FILE`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const exportTrace = async (
  files: ReadonlyArray<string>,
  format: "chrome" | "csv" | "arrow",
  out: string,
  onPhase: (phase: string) => void = () => {}
): Promise<number> => {
  // loaded only now, so that the CLI starts without them
  const [{ chromeTraceChunks }, { eventCsvChunks, writeEventArrow }, { fileBatches }] = await Promise.all([
    import("../../analysis/exports/ChromeTrace.ts"),
    import("../../analysis/exports/EventTable.ts"),
    import("../../analysis/exports/EventBatches.ts")
  ])
  let pass = 0
  const read = fileBatches(files)
  // the phases: a first pass over the files, then the writing one
  const source = () => {
    const at = pass++
    onPhase(at === 0 ? `reading ${files.length} database(s) for the ${format} header` : `converting to ${format}, writing ${out}`)
    return read()
  }
  return writeStreamed(out, files, async (write) => {
    if (format === "arrow") return writeEventArrow(source, write)
    for await (const piece of format === "chrome" ? chromeTraceChunks(source) : eventCsvChunks(source)) await write(piece)
  })
}

/**
 * The `export` subcommand.
 *
 * @since 0.1.0
 * @category cli
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
        for (const d of written.dropped) {
          Output.warn(`export: warning: ${d.file}: the ${d.bytes} byte(s) from byte offset ${d.offset} are not a whole record (a truncated or corrupt record); the samples before them were exported`)
        }
        return
      }
      const format = c.format
      const n = yield* Output.tracked("export", c.db, undefined, (p) => exportTrace(c.db, format, c.output, p.phase))
      yield* Console.log(`wrote ${c.output} (${format}, ${(n / 1024).toFixed(0)} KiB)`)
    })
).pipe(Command.withDescription("Export trace databases as Chrome Trace Event JSON, CSV, Arrow IPC, or .cpuprofile files."))

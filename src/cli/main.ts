/**
 * The `tessera` command's entry point: starts `tessera analyze`'s decoding before
 * anything else is loaded (`headStart.ts`: a few milliseconds of work for any other
 * command line), then loads and runs the command-line program (`program.ts`: the CLI
 * framework and every command). With `--gpu` and a `--log-level` that hides warnings, the
 * command line runs in a child whose stderr is read without Dawn's native warnings
 * (`nativeLog.ts`).
 *
 * @since 0.1.0
 */
import { startHeadStart } from "./headStart.ts"
import { needsFilter, relaunchFiltered } from "./nativeLog.ts"

const argv = process.argv.slice(2)
if (needsFilter(argv)) {
  process.exitCode = await relaunchFiltered()
} else {
  await startHeadStart(argv)
  await import("./program.ts")
}

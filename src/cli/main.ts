/**
 * The `tessera` command's entry point: starts `tessera analyze`'s decoding before
 * anything else is loaded (`headStart.ts`: a few milliseconds of work for any other
 * command line), then loads and runs the command-line program (`program.ts`: the CLI
 * framework and every command).
 *
 * @since 0.1.0
 */
import { startHeadStart } from "./headStart.ts"

await startHeadStart(process.argv.slice(2))
await import("./program.ts")

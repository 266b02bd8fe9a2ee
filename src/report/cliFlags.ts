/**
 * Command-line pieces shared by `tessera report`, `export` and `plot`.
 *
 * @since 0.1.0
 */
import { Flag } from "effect/cli"
import { ReportInputError } from "./loadEvents.ts"

/**
 * Map a rejected promise of the report modules to a typed error.
 *
 * @since 0.1.0
 * @category errors
 */
export const reportCause = (e: unknown): ReportInputError =>
  e instanceof ReportInputError ? e : ReportInputError.unexpected(e)

/**
 * The `-d/--db` flag shared by report, export and plot.
 *
 * @since 0.1.0
 * @category flags
 */
export const dbFlag = Flag.String("db").pipe(
  Flag.withAlias("d"),
  Flag.withDescription("trace database file (repeat for several)"),
  Flag.atLeast(1)
)


/**
 * Function (task group) names from task keys. `functionName` is the trace layer's
 * `keySplit` (dask's `key_split`, src/trace/KeySplit.ts), the one rule the profiler
 * also writes with, under the name the analysis API has always used. DASF's own
 * derivation (`"-".join(key.split(",")[0][2:-1].split("-")[:-1])`) only works for
 * tuple keys (DASF-NOTES 8); it is kept to show (and test) how it differs.
 *
 * @since 0.1.0
 */
import { keySplit } from "../trace/KeySplit.ts"

/**
 * The function name of a task key: `keySplit` (see src/trace/KeySplit.ts for the rule).
 *
 * @since 0.1.0
 * @category analysis
 */
export const functionName: (key: string) => string = keySplit

/**
 * DASF's own derivation, kept to show (and test) how it differs.
 *
 * @since 0.1.0
 * @category analysis
 */
export const dasfFunctionName = (key: string): string =>
  key.split(",")[0].slice(2, -1).split("-").slice(0, -1).join("-")

/**
 * The per-task resources and groupings `tessera plot hist` knows, in a module that
 * imports nothing, so that the command line can validate `--resource` and `--by`
 * without loading the charting code (Histograms.ts computes them).
 *
 * @since 0.1.0
 */

/**
 * The per-task resources of the histograms: duration, output size, CPU cores, worker
 * memory (per Managed Memory sample), and Work Queue's per-task peak memory, bytes read
 * from files and bytes in.
 *
 * @since 0.1.0
 * @category models
 */
export const histogramResources = ["duration", "size", "cores", "memory", "peak_memory", "io_bytes", "bytes_in"] as const

/**
 * How `tessera plot hist --by` groups the tasks: `run` (one histogram per resource) or
 * `function` (one per resource and function).
 *
 * @since 0.1.0
 * @category models
 */
export const histogramGroupings = ["run", "function"] as const

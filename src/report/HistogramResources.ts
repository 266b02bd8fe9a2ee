/**
 * The per-task resources `tessera plot hist` knows, in a module that imports nothing, so
 * that the command line can validate `--resource` without loading the charting code.
 *
 * @since 0.1.0
 */

/**
 * The per-task resources `tessera plot hist` knows.
 *
 * @since 0.1.0
 * @category models
 */
export const histogramResources = ["duration", "size", "cores", "memory"] as const

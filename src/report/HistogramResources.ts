/**
 * The per-task resources `tessera plot hist` and the report's histograms know, where the
 * report layer once kept its own (shorter, stale) list: the one list is
 * `analysis/HistogramNames.ts`, re-exported here for code that imports it from
 * `tessera/report/HistogramResources`.
 *
 * @since 0.1.0
 */

/**
 * The per-task resources of the histograms (`analysis/HistogramNames.ts`).
 *
 * @since 0.1.0
 * @category models
 */
export { histogramResources } from "../analysis/HistogramNames.ts"

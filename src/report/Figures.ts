/**
 * Static figures: Vega-Lite specs rendered to SVG in Node with Vega's headless View,
 * and to PNG with @resvg/resvg-js. Used by `tessera plot hist`, `visualize` and
 * `MemorySampler.plot`.
 *
 * @since 0.1.0
 */
import { mkdir } from "node:fs/promises"
import { join } from "node:path"
import { writeFigure } from "../report/Figure.ts"
import { histogramSpec, taskHistograms } from "./Charts.ts"
import type { ReportData } from "./ReportData.ts"

export { histogramResources } from "./HistogramResources.ts"

/**
 * Write one SVG and one PNG histogram per resource to `dir` (`hist-{resource}.svg|png`).
 * A resource the trace did not record (e.g. cores without cpu_time) still gets a
 * figure, whose subtitle says so.
 *
 * @since 0.1.0
 * @category rendering
 */
export const writeHistograms = async (
  data: ReportData,
  resources: ReadonlyArray<string>,
  dir: string
): Promise<ReadonlyArray<string>> => {
  await mkdir(dir, { recursive: true })
  const out: Array<string> = []
  for (const h of taskHistograms(data, resources)) {
    out.push(...(await writeFigure(histogramSpec(h, 480, 260), join(dir, `hist-${h.resource}`))))
  }
  return out
}

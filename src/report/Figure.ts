/**
 * Figure: static figures. Renders a Vega-Lite spec to SVG (vega's headless View) and PNG
 * (resvg) and writes both; `writeHistograms` writes the per-task histograms that
 * `tessera plot hist` draws. `MemorySamplerPlot.plot` and `Visualize` draw with it too.
 *
 * @since 0.1.0
 */
import { makeDirectory } from "../trace/Directory.ts"
import { writeOutputFile } from "../trace/OutputFile.ts"
import type { OutputOptions } from "../trace/OutputFile.ts"
import { join } from "node:path"
import { Resvg } from "@resvg/resvg-js"
import * as vega from "vega"
import { compile } from "vega-lite"
import type { TopLevelSpec } from "vega-lite"
import { taskHistograms } from "../analysis/Histograms.ts"
import type { TaskSamples } from "../analysis/Histograms.ts"
import { histogramSpec } from "./Charts.ts"

/**
 * Render a Vega-Lite spec to SVG text in Node (no DOM needed).
 *
 * @since 0.1.0
 * @category formatting
 */
export const renderSvg = async (spec: TopLevelSpec): Promise<string> => {
  const view = new vega.View(vega.parse(compile(spec).spec as vega.Spec), { renderer: "none" })
  try {
    return await view.toSVG()
  } finally {
    view.finalize()
  }
}

/**
 * Rasterise SVG text to PNG bytes at `scale` (2 = twice the SVG's pixel size).
 *
 * @since 0.1.0
 * @category formatting
 */
export const svgToPng = (svg: string, scale = 2): Uint8Array => {
  const r = new Resvg(svg, {
    fitTo: { mode: "zoom", value: scale },
    background: "white",
    font: { loadSystemFonts: true, defaultFontFamily: "DejaVu Sans", sansSerifFamily: "DejaVu Sans" }
  })
  return r.render().asPng()
}

/**
 * Write a Vega-Lite spec as `{base}.svg` and `{base}.png`; returns both paths. Each file
 * is written beside its name and renamed once whole; with `options.inputs`, a file that
 * is one of them (a hard link included) is refused with `OutputIsInput`
 * (trace/OutputFile.ts).
 *
 * @since 0.1.0
 * @category formatting
 */
export const writeFigure = async (spec: TopLevelSpec, base: string, options: OutputOptions = {}): Promise<ReadonlyArray<string>> => {
  const svg = await renderSvg(spec)
  await writeOutputFile(`${base}.svg`, svg, options)
  await writeOutputFile(`${base}.png`, svgToPng(svg), options)
  return [`${base}.svg`, `${base}.png`]
}

/**
 * Write one SVG and one PNG histogram per resource to `dir` (`hist-{resource}.svg|png`).
 * A resource the trace did not record (e.g. cores without cpu_time) still gets a
 * figure, whose subtitle says so.
 *
 * @since 0.1.0
 * @category formatting
 */
export const writeHistograms = async (
  data: TaskSamples,
  resources: ReadonlyArray<string>,
  dir: string
): Promise<ReadonlyArray<string>> => {
  await makeDirectory(dir)
  const out: Array<string> = []
  for (const h of taskHistograms(data, resources)) {
    out.push(...(await writeFigure(histogramSpec(h, 480, 260), join(dir, `hist-${h.resource}`))))
  }
  return out
}

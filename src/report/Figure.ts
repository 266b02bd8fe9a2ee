/**
 * Figure: renders a Vega-Lite spec to SVG (vega's headless View) and PNG (resvg), and
 * writes both. A neutral module: the profiler (MemorySampler) and the report both draw
 * with it, and it knows nothing of either.
 *
 * @since 0.1.0
 */
import { writeFile } from "node:fs/promises"
import { Resvg } from "@resvg/resvg-js"
import * as vega from "vega"
import { compile } from "vega-lite"
import type { TopLevelSpec } from "vega-lite"

/**
 * Render a Vega-Lite spec to SVG text in Node (no DOM needed).
 *
 * @since 0.1.0
 * @category rendering
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
 * @category rendering
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
 * Write a Vega-Lite spec as `{base}.svg` and `{base}.png`; returns both paths.
 *
 * @since 0.1.0
 * @category rendering
 */
export const writeFigure = async (spec: TopLevelSpec, base: string): Promise<ReadonlyArray<string>> => {
  const svg = await renderSvg(spec)
  await writeFile(`${base}.svg`, svg)
  await writeFile(`${base}.png`, svgToPng(svg))
  return [`${base}.svg`, `${base}.png`]
}


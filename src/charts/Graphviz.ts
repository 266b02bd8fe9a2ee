/**
 * Graphviz: lays out a DOT graph and renders it to SVG with Graphviz itself, compiled
 * to WebAssembly by @viz-js/viz (a well-kept build of the real `dot` layout engine; a
 * hand-written layout would be worse). Pure computation, no I/O: the DSL's
 * `Pipeline.visualizeSvg` and the report's stage DAG both draw with it.
 *
 * @since 0.1.0
 */
import { instance } from "@viz-js/viz"
import type { Viz } from "@viz-js/viz"

let shared: Promise<Viz> | undefined

/**
 * Graphviz could not lay out a graph; `errors` are Graphviz's own messages (the line
 * of the DOT text they concern, where Graphviz gives one).
 *
 * @since 0.1.0
 * @category errors
 */
export class GraphvizError extends Error {
  readonly _tag = "GraphvizError"
  readonly errors: ReadonlyArray<string>
  constructor(errors: ReadonlyArray<string>) {
    super(`Graphviz could not render the graph: ${errors.join("; ") || "unknown error"}`)
    this.name = "GraphvizError"
    this.errors = errors
  }
}

/**
 * Render DOT text to an SVG document (no XML prolog, ready to inline into HTML).
 * The WebAssembly module is instantiated once per process and reused.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderDot = async (dot: string, engine: "dot" | "neato" | "fdp" = "dot"): Promise<string> => {
  shared ??= instance()
  const viz = await shared
  const result = viz.render(dot, { format: "svg", engine })
  if (result.status !== "success") throw new GraphvizError(result.errors.map((e) => e.message))
  const svg = result.output
  const at = svg.indexOf("<svg")
  return at > 0 ? svg.slice(at) : svg
}

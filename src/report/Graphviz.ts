/**
 * Graphviz: lays out a DOT graph and renders it to SVG with Graphviz itself, compiled
 * to WebAssembly by @viz-js/viz (a well-kept build of the real `dot` layout engine; a
 * hand-written layout would be worse). Pure computation, no I/O: the report's stage DAG
 * draws with it, and `Report.renderDot(pipeline.visualize())` draws a pipeline's.
 *
 * `renderDot` is the Effect; `renderDotPromise` the same as a Promise.
 *
 * @since 0.1.0
 */
import { instance } from "@viz-js/viz"
import type { Viz } from "@viz-js/viz"
import { Data, Effect } from "effect"

let shared: Promise<Viz> | undefined

/**
 * Graphviz rejected the graph; `errors` are Graphviz's own messages (the line of the
 * DOT text they concern, where Graphviz gives one).
 *
 * @since 0.1.0
 * @category errors
 */
export class LayoutFailed extends Data.TaggedError("LayoutFailed")<{
  readonly errors: ReadonlyArray<string>
  readonly message: string
}> {}

/**
 * Why Graphviz could not draw a graph.
 *
 * @since 0.1.0
 * @category errors
 */
export type GraphvizErrorReason = LayoutFailed

/**
 * Graphviz could not lay out a graph; see `reason`.
 *
 * @since 0.1.0
 * @category errors
 */
export class GraphvizError extends Data.TaggedError("GraphvizError")<{
  readonly reason: GraphvizErrorReason
  readonly message: string
}> {}

/**
 * A `GraphvizError` for Graphviz's own error messages (the one place its message is written).
 *
 * @since 0.1.0
 * @category constructors
 */
export const layoutFailed = (errors: ReadonlyArray<string>): GraphvizError => {
  const reason = new LayoutFailed({ errors, message: `Graphviz could not render the graph: ${errors.join("; ") || "unknown error"}` })
  return new GraphvizError({ reason, message: reason.message })
}

/**
 * Guard for `GraphvizError`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isGraphvizError = (u: unknown): u is GraphvizError => u instanceof GraphvizError

/**
 * Render DOT text to an SVG document (no XML prolog, ready to inline into HTML).
 * The WebAssembly module is instantiated once per process and reused (failing to
 * instantiate it is a defect).
 *
 * @since 0.1.0
 * @category formatting
 */
export const renderDot = (dot: string, engine: "dot" | "neato" | "fdp" = "dot"): Effect.Effect<string, GraphvizError> =>
  Effect.flatMap(
    Effect.promise(() => (shared ??= instance())),
    (viz) => {
      const result = viz.render(dot, { format: "svg", engine })
      if (result.status !== "success") return Effect.fail(layoutFailed(result.errors.map((e) => e.message)))
      const svg = result.output
      const at = svg.indexOf("<svg")
      return Effect.succeed(at > 0 ? svg.slice(at) : svg)
    }
  )

/**
 * `renderDot` as a Promise (rejects with the GraphvizError).
 *
 * @since 0.1.0
 * @category formatting
 */
export const renderDotPromise = (dot: string, engine: "dot" | "neato" | "fdp" = "dot"): Promise<string> =>
  Effect.runPromise(renderDot(dot, engine))

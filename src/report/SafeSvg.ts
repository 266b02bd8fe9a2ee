/**
 * Inert SVG: re-writes an SVG document (Graphviz's output) keeping only drawing
 * elements and presentation attributes from an allow-list, so that SVG laid out from a
 * DOT graph read from a trace cannot run anything when inlined in a page.
 *
 * Why an allow-list over Graphviz's output rather than escaping the DOT: a DOT graph
 * from a trace database is data from another machine, and Graphviz turns its `URL`,
 * `href`, `tooltip`, `id` and `class` attributes into `<a xlink:href="…">`, ids and
 * classes of its own. Whatever the DOT says, only these elements and attributes reach
 * the page:
 * - elements: svg, g, title, text, tspan, path, polygon, polyline, ellipse, circle,
 *   line, rect, defs, linearGradient, radialGradient, stop. Every other element (`a`,
 *   `script`, `foreignObject`, `image`, `style`, `use`, `animate`, …) is dropped; its
 *   children are kept when they are themselves allowed (an `<a>` around a node keeps
 *   the node, without the link), except under script/style/foreignObject, which go
 *   whole.
 * - attributes: geometry and presentation only (no `href`, `xlink:href`, `on*`, `style`,
 *   `id`, `class`), and none whose value mentions `url(`, `javascript:` or `data:`.
 * Text is kept as Graphviz escaped it; comments, processing instructions and doctypes go.
 *
 * Leaves out: rendering (report/Graphviz.ts) and parsing arbitrary XML (the input is
 * Graphviz's own well-formed output; anything the scanner does not recognise is
 * escaped as text).
 *
 * @since 0.1.0
 */

const elements = new Set([
  "svg", "g", "title", "text", "tspan", "path", "polygon", "polyline", "ellipse", "circle",
  "line", "rect", "defs", "lineargradient", "radialgradient", "stop"
])

/** Elements dropped with everything inside them. */
const opaque = new Set(["script", "style", "foreignobject"])

const attributes = new Set([
  "width", "height", "viewbox", "preserveaspectratio", "xmlns", "version", "transform",
  "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "d", "points", "dx", "dy",
  "fill", "fill-opacity", "stroke", "stroke-width", "stroke-opacity", "stroke-dasharray",
  "stroke-linecap", "stroke-linejoin", "opacity", "font-family", "font-size", "font-weight",
  "font-style", "text-anchor", "dominant-baseline", "offset", "stop-color", "stop-opacity",
  "gradientunits", "gradienttransform"
])

const dangerousValue = /url\s*\(|javascript:|data:|vbscript:/i

const token = /<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<![A-Za-z][^>]*>|<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>|[^<]+|</g
const attribute = /([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g

const escapeText = (s: string) => s.replace(/</g, "&lt;")
const escapeAttr = (s: string) => s.replace(/&(?!(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);)/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;")

/**
 * The SVG with everything outside the allow-list removed (see the module header).
 *
 * @example
 * ```ts
 * sanitize('<svg><a xlink:href="javascript:alert(1)"><g onclick="x()"><text>n</text></g></a></svg>')
 * // '<svg><g><text>n</text></g></svg>'
 * ```
 *
 * @since 0.1.0
 * @category formatting
 */
export const sanitize = (svg: string): string => {
  const out: Array<string> = []
  // depth inside an opaque element: nothing is written until it closes
  let hidden = 0
  // open elements, lower-cased, with the name as written (closing tags repeat it)
  const stack: Array<{ readonly lower: string; readonly name: string }> = []
  for (const m of svg.matchAll(token)) {
    const whole = m[0]
    const name = m[2]?.toLowerCase()
    if (name === undefined) {
      if (hidden > 0 || whole.startsWith("<!") || whole.startsWith("<?")) continue
      out.push(whole === "<" ? "&lt;" : escapeText(whole))
      continue
    }
    const closing = m[1] === "/"
    const selfClosing = m[4] === "/"
    if (closing) {
      // close the innermost open element of that name (Graphviz's output is well formed)
      const at = stack.findLastIndex((e) => e.lower === name)
      if (at < 0) continue
      for (const open of stack.splice(at).reverse()) {
        if (opaque.has(open.lower)) hidden--
        else if (hidden === 0 && elements.has(open.lower)) out.push(`</${open.name}>`)
      }
      continue
    }
    if (opaque.has(name)) {
      if (!selfClosing) {
        stack.push({ lower: name, name: m[2]! })
        hidden++
      }
      continue
    }
    if (!selfClosing) stack.push({ lower: name, name: m[2]! })
    if (hidden > 0 || !elements.has(name)) continue
    const kept: Array<string> = []
    for (const a of (m[3] ?? "").matchAll(attribute)) {
      const key = a[1]!.toLowerCase()
      const value = a[2] ?? a[3] ?? ""
      if (!attributes.has(key) || dangerousValue.test(value)) continue
      kept.push(` ${a[1]}="${escapeAttr(value)}"`)
    }
    out.push(`<${m[2]}${kept.join("")}${selfClosing ? "/>" : ">"}`)
  }
  // elements left open by a truncated input are closed, so nothing leaks into the page
  if (hidden === 0) for (const open of stack.reverse()) if (elements.has(open.lower)) out.push(`</${open.name}>`)
  return out.join("")
}

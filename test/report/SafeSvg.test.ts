/**
 * The stage DAG drawn from a trace's DOT is inert in the report: no link, script, event
 * handler or `javascript:` survives Graphviz + sanitize, whatever the DOT says.
 */
import assert from "node:assert/strict"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { renderDotPromise as renderDot } from "../../src/report/Graphviz.ts"
import { sanitize } from "../../src/report/SafeSvg.ts"
import { writeReportPromise as writeReport } from "../../src/report/Report.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import { hostileDot } from "../fixtures/hostile.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"


const forbidden = [/<a[\s>]/i, /href/i, /javascript:/i, /<script/i, /\son\w+\s*=/i, /data:/i, /<foreignObject/i, /xlink:/i]

/** Checks the markup only: text between tags (a node's label) may say anything. */
const assertInert = (html: string) => {
  const markup = html.replace(/>[^<]*</g, "><")
  for (const re of forbidden) assert.ok(!re.test(markup), `${re} found in:\n${html.slice(0, 3000)}`)
}

describe("SafeSvg", () => {
  it("keeps drawing elements and drops links, handlers and scripts", () => {
    const out = sanitize(
      `<?xml version="1.0"?><!DOCTYPE svg><svg width="10" viewBox="0 0 1 1" onload="x()"><!-- c --><a xlink:href="javascript:alert(1)"><g id="n" class="node" onclick="x()"><title>a&amp;b</title><polygon points="0,0 1,1" fill="url(javascript:x)" stroke="black"/><text x="1">n&lt;script&gt;</text></g></a><script>alert(1)</script><foreignObject><div onclick="x()">hi</div></foreignObject></svg>`
    )
    assert.equal(
      out,
      `<svg width="10" viewBox="0 0 1 1"><g><title>a&amp;b</title><polygon points="0,0 1,1" stroke="black"/><text x="1">n&lt;script&gt;</text></g></svg>`
    )
  })

  it("closes what a truncated input left open and escapes a stray '<'", () => {
    assert.equal(sanitize(`<svg><g><text>a < b`), `<svg><g><text>a &lt; b</text></g></svg>`)
    assert.equal(sanitize(`<svg><script>alert(1)`), `<svg>`)
  })

  it("Graphviz's SVG of a hostile DOT graph is inert after sanitize, and still draws every node", async () => {
    const raw = await renderDot(hostileDot)
    assert.match(raw, /javascript:/, "the raw Graphviz output links to javascript: (the attack is real)")
    const out = sanitize(raw)
    assertInert(out)
    assert.equal((out.match(/<polygon|<ellipse/g) ?? []).length >= 3, true)
    assert.match(out, /Normalize/)
    assert.match(out, /&lt;script&gt;alert\(4\)/) // label text stays text
  })

  it("random attribute values in a DOT graph never yield a live attribute", async () => {
    const value = fc.oneof(
      fc.string(),
      fc.constantFrom("javascript:alert(1)", "\" onclick=\"alert(1)", "data:text/html,x", "<script>x</script>", "url(javascript:x)")
    )
    const attr = fc.constantFrom("URL", "href", "tooltip", "id", "class", "label", "target", "style", "fontname")
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(attr, value), { minLength: 1, maxLength: 4 }), async (attrs) => {
        const list = attrs.map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`).join(" ")
        let raw: string
        try {
          raw = await renderDot(`digraph G { a [${list}]; a -> b [${list}]; }`)
        } catch {
          return // Graphviz rejected the graph: nothing is drawn
        }
        assertInert(sanitize(raw))
      }),
      { numRuns: 60 }
    )
  })

  it("a report of a trace whose Pipeline Graph is hostile holds no live link or script", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-xss-"))
    try {
      const events: Array<TraceEvent> = [
        { name: "Pipeline Graph", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: "main", args: { pipeline: "p", dot: hostileDot } },
        {
          name: "Compute", timestamp: 2, phase: "X", process_id: "h", thread_id: "worker-h-0", duration: 0.5,
          args: { key: "<img src=x onerror=alert(1)>-0", name: "x", state: "memory", size: 8, dependencies: [], dependents: [] }
        }
      ]
      const db = join(dir, "xss-TracePlugin-h.msgpack")
      writeFileSync(db, encodeRecords(events))
      const out = join(dir, "r.html")
      await writeReport([db], out)
      const html = readFileSync(out, "utf8")
      const dag = /<div class="dag">([\s\S]*?)<\/div><\/section>/.exec(html)
      assert.ok(dag !== null, "the report draws the stage DAG")
      assertInert(dag[1]!)
      assert.ok(!html.includes("<img src=x"), "a key from the trace is never markup")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

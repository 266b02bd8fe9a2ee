/**
 * Issue 35 in the dashboard, without a browser: the Findings tab's panel
 * (src/dashboard/Diagnosis.ts) is `tessera diagnose`'s diagnosis of the same databases
 * (rule ids, order, sentences), its evidence ranges on the page's axis; `/api/findings`
 * serves it as JSON; no databases, or a file that is not one, say so instead.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import fc from "fast-check"
import { diagnoseFilesPromise } from "../../src/analysis/Diagnose.ts"
import { diagnoseInto, noTraces } from "../../src/dashboard/Diagnosis.ts"
import { LiveState } from "../../src/dashboard/LiveState.ts"
import { startServer } from "../../src/dashboard/Server.ts"
import { toBytes, traceArb } from "../../src/testing/index.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-dashboard-findings-"))
after(() => rmSync(dir, { recursive: true, force: true }))

describe("issue 35: the dashboard's Findings tab", () => {
  it("is tessera diagnose's findings of the same databases, ranges on the page's axis", async () => {
    // traces with a seeded straggler: at least one finding to compare
    const traces = fc.sample(traceArb({ minTasks: 12, maxTasks: 40, faults: ["straggler"] }), { numRuns: 4, seed: 3534 })
    let withFindings = 0
    for (const [i, trace] of traces.entries()) {
      const file = join(dir, `t${i}.msgpack`)
      writeFileSync(file, toBytes(trace))
      const expected = await diagnoseFilesPromise([file])
      const t0 = expected.runStart - 1.25 // any origin: the page's
      const state = new LiveState({ t0 })
      const panel = await diagnoseInto(state, [file], t0)
      assert.equal(panel.status, "ready", JSON.stringify(panel))
      assert.equal(state.findings, panel)
      if (panel.status !== "ready") continue
      assert.deepEqual(panel.findings.map((f) => f.rule), expected.findings.map((f) => f.rule))
      assert.deepEqual(panel.findings.map((f) => f.message), expected.findings.map((f) => f.message))
      assert.equal(panel.clean, expected.clean)
      assert.equal(panel.tasks, expected.tasks)
      panel.findings.forEach((f, k) => {
        const e = expected.findings[k]!.evidence
        // the evidence's time range from the page's t0 (widened to 1 ms when narrower)
        const a = expected.runStart + e.start - t0, b = expected.runStart + e.end - t0
        assert.ok(f.from <= (a + b) / 2 && f.to >= (a + b) / 2, `${f.rule}: ${f.from}-${f.to} holds ${a}-${b}`)
        if (b - a >= 1e-3) assert.deepEqual([f.from, f.to], [a, b])
        else assert.ok(Math.abs(f.to - f.from - 1e-3) < 1e-9)
      })
      if (panel.findings.length > 0) withFindings++
    }
    assert.ok(withFindings > 0, "some trace had findings")
  })

  it("says why there are none: no databases, a file that is not a trace", async () => {
    const state = new LiveState({ t0: 0 })
    assert.equal(state.findings, noTraces, "a live run starts without")
    assert.equal((await diagnoseInto(state, [], 0)).status, "none")
    const bad = join(dir, "not-a-trace.msgpack")
    writeFileSync(bad, "<script>alert(1)</script> is not msgpack")
    const p = await diagnoseInto(state, [bad], 0)
    assert.equal(p.status, "error")
    if (p.status === "error") assert.match(p.message, /not-a-trace\.msgpack/, "the error names the file")
    const missing = await diagnoseInto(state, [join(dir, "absent.msgpack")], 0)
    assert.equal(missing.status, "error")
  })

  it("/api/findings serves the panel as JSON", async () => {
    const state = new LiveState({ t0: 0 })
    const file = join(dir, "api.msgpack")
    writeFileSync(file, toBytes(fc.sample(traceArb({ minTasks: 12, maxTasks: 20, faults: ["straggler"] }), { numRuns: 1, seed: 35 })[0]!))
    await diagnoseInto(state, [file], 0)
    const server = await startServer(state, { port: 0, sampleHost: false }, () => Promise.resolve({}))
    try {
      const r = await fetch(`http://127.0.0.1:${server.port}/api/findings`)
      assert.equal(r.status, 200)
      assert.match(r.headers.get("content-type") ?? "", /application\/json/)
      assert.deepEqual(await r.json(), JSON.parse(JSON.stringify(state.findings)))
    } finally {
      await server.close()
    }
  })
})

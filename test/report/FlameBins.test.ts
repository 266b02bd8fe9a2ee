/**
 * Issue 32 item 11, the report's flame graph: above `maxPageSamples` samples the page
 * gets time bins × (node, function, stage) with their weights and counts summed, not the
 * samples, so a report of millions of samples fits a small heap; the totals (seconds and
 * samples, per call-tree node) are those of the exact rows. Real files and a child process.
 */
import assert from "node:assert/strict"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { flamePayload, flameSection } from "../../src/report/FlameGraph.ts"
import { ProfileReader, SampleEncoder } from "../../src/trace/SampleEvents.ts"
import { sampleEvents, show, tessera, writeTrace } from "../cli/fixtures/issue32.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-flame-bins-"))
after(() => rmSync(dir, { recursive: true, force: true }))

type Payload = ReturnType<typeof flamePayload>

// what the page script sums (FlameGraph's `build`): per call-tree node (and per
// function, key "fn:NAME") the rows' µs and samples, over the rows in `[from, to]`
const totals = (p: Payload, from = -Infinity, to = Infinity) => {
  const out = new Map<string, { us: number; n: number }>()
  const bump = (k: string, us: number, n: number) => {
    const o = out.get(k) ?? { us: 0, n: 0 }
    o.us += us, o.n += n
    out.set(k, o)
  }
  const S = p.samples
  for (let k = 0; k < S.t.length; k++) {
    if (S.t[k]! < from || S.t[k]! > to) continue
    const us = Math.round(S.w[k]! * 1e6), n = S.c ? S.c[k]! : 1
    bump("all", us, n)
    bump(`fn:${p.fns[S.fn[k]!]}/${p.stages[S.stage[k]!]}`, us, n)
    for (let v = S.node[k]!; v >= 0; v = p.parent[v]!) bump(`node:${v}`, us, n)
  }
  return out
}

const profile = (total: number) => {
  const enc = new SampleEncoder()
  const reader = new ProfileReader()
  for (const e of [...sampleEvents(enc, total), ...sampleEvents(enc, Math.floor(total / 3), 6, "worker-h-1")]) reader.add(e)
  return reader.data()
}

describe("issue 32: the report's flame graph, bounded", () => {
  it("issue 32 item 11: binned flame rows keep the exact totals (seconds and samples per node, function and stage)", () => {
    const d = profile(30_000)
    const n = d.samples.time.length
    const exact = flamePayload(d, 1000)
    assert.equal(exact.samples.c, undefined)
    assert.equal(exact.bin, 0)
    assert.equal(exact.samples.t.length, n)
    const binned = flamePayload(d, 1000, { maxSamples: 1000, maxBins: 200 })
    assert.ok(binned.samples.c !== undefined)
    assert.ok(binned.samples.t.length <= 1000, `${binned.samples.t.length} rows`)
    assert.ok(binned.bin > 0)
    assert.equal(binned.samples.c.reduce((a, b) => a + b, 0), n)
    // the same call tree, functions and stages; the same totals everywhere
    assert.deepEqual([binned.parent, binned.frame, binned.names], [exact.parent, exact.frame, exact.names])
    const a = totals(exact), b = totals(binned)
    assert.equal(a.get("all")!.n, n)
    assert.deepEqual([...b.entries()].sort(), [...a.entries()].sort())
    // rows in time order, a bin's middle within the run
    const t = binned.samples.t
    for (let k = 1; k < t.length; k++) assert.ok(t[k]! >= t[k - 1]!)
    assert.ok(t[0]! >= exact.samples.t[0]! && t[t.length - 1]! <= exact.samples.t[n - 1]!)
    // a window selects at bin resolution: within a bin of the exact count at either edge
    const from = 10, to = 20
    const w = totals(binned, from, to).get("all")!, e = totals(exact, from, to).get("all")!
    const perBin = Math.ceil(n / ((exact.samples.t[n - 1]! - exact.samples.t[0]!) / binned.bin)) * 2
    assert.ok(Math.abs(w.n - e.n) <= 2 * perBin, `window: ${w.n} binned vs ${e.n} exact samples (${perBin} a bin)`)
    // many bins' rows: the bins widen until the rows fit
    const few = flamePayload(d, 1000, { maxSamples: 20, maxBins: 2000 })
    assert.ok(few.samples.t.length <= 20, `${few.samples.t.length} rows`)
    assert.deepEqual([...totals(few).entries()].sort(), [...a.entries()].sort())
    // the page says so
    const html = flameSection(d, 1000, { maxSamples: 1000, maxBins: 200 }).html
    assert.match(html, new RegExp(`The run's ${n} samples are binned by time \\(${binned.bin} s bins`))
    assert.doesNotMatch(flameSection(d, 1000).html, /binned/)
  })

  // 1,000,000 samples: per-sample arrays and their JSON aborted an 80 MB heap (measured
  // before binning); binned, the flame data is a few thousand rows and 40 MB suffice
  it("issue 32 item 11: the report's flame graph is bounded: 1,000,000 samples make a report in a 64 MB heap, its flame data binned", async () => {
    const trace = writeTrace(join(dir, "samples1m.msgpack"), sampleEvents(new SampleEncoder(), 1_000_000))
    const out = join(dir, "report.html")
    const r = await tessera(["report", "-d", trace, "-o", out], ["--max-old-space-size=64"])
    assert.equal(r.code, 0, show(r))
    const html = readFileSync(out, "utf8")
    const m = /<script id="tessera-flame" type="application\/json">([\s\S]*?)<\/script>/.exec(html)
    assert.ok(m !== null, "the page has its flame data")
    const p = JSON.parse(m[1]!) as Payload
    assert.ok(p.samples.c !== undefined, "binned")
    assert.equal(p.samples.c.reduce((a, b) => a + b, 0), 1_000_000)
    assert.ok(p.samples.t.length <= 200_000, `${p.samples.t.length} rows`)
    // bins × the 2 leaf nodes × the 2 functions: a few thousand rows, well under a MB
    assert.ok(m[1]!.length < 1_000_000, `${m[1]!.length} characters of flame data`)
    assert.match(html, /The run's 1000000 samples are binned by time/)
  })
})

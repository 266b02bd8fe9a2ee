/**
 * Issue 32, outputs that scale with their input (items 9, 11): tables printed with
 * capped widths, `plot hist --by function` bounded to the top functions, exports that
 * stream in a small heap. Real files and child processes; the memory cases run the CLI
 * with a small heap. The samples' cases are in Issue32Samples.test.ts.
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { tableFromIPC } from "apache-arrow"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { compute, show, tessera, writeTrace } from "./fixtures/issue32.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-issue32-outputs-"))
after(() => rmSync(dir, { recursive: true, force: true }))

describe("issue 32: bounded tables and figures", () => {
  it("issue 32 item 11: a 2 MB task key prints capped in analyze's table, whole in its CSV", async () => {
    const huge = `('${"k".repeat(2 * 1024 * 1024)}', 0)`
    const trace = writeTrace(join(dir, "hugekey.msgpack"), [compute(huge, "f", 1000.5, 0.5), compute("('g-1', 0)", "g", 1001, 0.2)])
    const out = join(dir, "hugekey-out")
    const r = await tessera(["analyze", "-d", trace, "-a", "task_bottleneck", "-o", out])
    assert.equal(r.code, 0, show(r))
    assert.ok(r.stdout.length < 10_000, `${r.stdout.length} characters printed`)
    assert.match(r.stdout, /\('k{70,}…/)
    assert.match(r.stdout, /cell\(s\) longer than 80 characters cut/)
    assert.ok(r.stdout.split("\n").every((l) => l.length < 400), "no line padded to the key's width")
    const csv = readdirSync(out).find((f) => f.startsWith("task_bottleneck"))!
    assert.ok(readFileSync(join(out, csv), "utf8").includes(huge), "the CSV keeps the key whole")
  })

  it("issue 32 item 11: plot hist --by function on 1,000 functions draws the top N by task time and says how many were left out", async () => {
    const events: Array<TraceEvent> = []
    // function f{i} has (i % 7) + 1 tasks lasting i ms: f999, f998, ... have the most time
    for (let i = 0; i < 1000; i++) for (let k = 0; k <= i % 7; k++) events.push(compute(`('f${i}-x', ${k})`, `f${i}`, 1000 + i + k * 0.01, (i + 1) / 1000))
    const trace = writeTrace(join(dir, "functions.msgpack"), events)
    const total = (i: number) => ((i % 7) + 1) * (i + 1)
    const ranked = Array.from({ length: 1000 }, (_, i) => i).sort((a, b) => total(b) - total(a))
    const figures = join(dir, "hist-top")
    const r = await tessera(["plot", "hist", "-d", trace, "--resource", "duration", "--by", "function", "--top", "5", "-o", figures])
    assert.equal(r.code, 0, show(r))
    const svgs = readdirSync(figures).filter((f) => f.endsWith(".svg")).sort()
    assert.deepEqual(svgs, ranked.slice(0, 5).map((i) => `hist-duration-f${i}.svg`).sort())
    assert.match(r.stdout, /drew the 5 of 1,000 functions with the most task time; 995 left out \(f\d+, f\d+, f\d+, …; --top N draws more\)/)
    // the default: 20
    const d = await tessera(["plot", "hist", "-d", trace, "--resource", "duration", "--by", "function", "-o", join(dir, "hist-default")])
    assert.equal(d.code, 0, show(d))
    assert.equal(readdirSync(join(dir, "hist-default")).filter((f) => f.endsWith(".svg")).length, 20)
    assert.match(d.stdout, /980 left out/)
  })
})

describe("issue 32: exports stream", () => {
  const generate = fileURLToPath(new URL("../../bench/analysis/generate.ts", import.meta.url))

  // 60,000 events (17 MB): the exports that held every event aborted at a 48 MB heap
  // (V8's "heap out of memory", all three formats); streamed, they pass at 32 MB
  it("issue 32 item 9: export --format chrome, csv and arrow stream: 60,000 events in a 48 MB heap (item 11: no export holds every event), each file whole", async () => {
    const trace = join(dir, "t60k.msgpack")
    const made = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [generate, trace, "--events", "60000"], (e, stdout) => (e === null ? resolve(stdout) : reject(e))))
    const events = Number(/wrote (\d+) events/.exec(made)![1])
    const small = ["--max-old-space-size=48"]
    const [chrome, csv, arrow] = await Promise.all((["chrome", "csv", "arrow"] as const).map((f) =>
      tessera(["export", "-d", trace, "--format", f, "-o", join(dir, `t.${f}`)], small)))
    for (const r of [chrome, csv, arrow]) assert.equal(r.code, 0, show(r))
    const doc = JSON.parse(readFileSync(join(dir, "t.chrome"), "utf8")) as { traceEvents: Array<{ ph: string }> }
    assert.ok(doc.traceEvents.filter((e) => e.ph !== "M" && e.ph !== "s" && e.ph !== "f" && e.ph !== "C").length === events, "every event")
    assert.equal(readFileSync(join(dir, "t.csv"), "utf8").trimEnd().split("\n").length, events + 1)
    assert.equal(tableFromIPC(readFileSync(join(dir, "t.arrow"))).numRows, events)
  })
})

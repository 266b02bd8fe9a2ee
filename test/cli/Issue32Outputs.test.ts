/**
 * Issue 32, outputs that scale with their input (items 9, 11, 12): tables printed with
 * capped widths, `plot hist --by function` bounded to the top functions, exports that
 * stream in a small heap, and the `.cpuprofile` export's corrupt or odd sample records.
 * Real files and child processes; the memory cases run the CLI with a small heap.
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { tableFromIPC } from "apache-arrow"
import { SampleEncoder } from "../../src/trace/SampleEvents.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "tessera-issue32-outputs-"))
after(() => rmSync(dir, { recursive: true, force: true }))

interface Result {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}
/** The CLI in a child process (`node [nodeArgs] main.ts args`), never rejecting. */
const tessera = (args: ReadonlyArray<string>, nodeArgs: ReadonlyArray<string> = []): Promise<Result> =>
  new Promise((resolve) => {
    execFile(process.execPath, [...nodeArgs, main, ...args], { timeout: 240_000, maxBuffer: 1 << 26, env: { ...process.env, TESSERA_PROGRESS: "off" } }, (e, stdout, stderr) =>
      resolve({ code: e === null ? 0 : typeof e.code === "number" ? e.code : 1, stdout, stderr }))
  })
const show = (r: Result) => `exit ${r.code}\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr.slice(0, 2000)}`

const compute = (key: string, name: string, end: number, duration: number, thread = "worker-h-0", deps: Array<string> = []): TraceEvent => ({
  name: "Compute",
  timestamp: end,
  phase: "X",
  process_id: "h",
  thread_id: thread,
  args: { key, name, state: "memory", size: 8, dependencies: deps, dependents: [] },
  duration
})
const writeTrace = (file: string, events: Iterable<TraceEvent>): string => {
  writeFileSync(file, encodeRecords(events))
  return file
}

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

/** A thread's samples as events (`SampleEncoder`): `depth` frames under the root, samples alternating between its two deepest nodes. */
const sampleEvents = (enc: SampleEncoder, total: number, depth = 4, thread = "worker-h-0"): Array<TraceEvent> => {
  const nodes = [{ id: 1, parent: 0, functionName: "(root)", url: "", line: -1, column: -1 }]
  for (let i = 0; i < depth; i++) nodes.push({ id: i + 2, parent: i + 1, functionName: `f${i}`, url: "file:///k.js", line: i, column: 0 })
  const per = 10_000
  const out: Array<TraceEvent> = []
  let t = 1000
  for (let done = 0; done < total; done += per) {
    const n = Math.min(per, total - done)
    const samples = Array.from({ length: n }, (_, q) => (q % 3 === 0 ? depth : depth + 1))
    const times = Array.from({ length: n }, (_, q) => t + q * 0.001)
    t += n * 0.001
    out.push(...enc.encode({ host: "h", threadId: thread, interval: 0.001, nodes, samples, times, task: samples.map((_, q) => q % 2), keys: ["k-1"], names: ["k"], stages: ["s"], weights: samples.map(() => 0.001) }))
  }
  return out
}

describe("issue 32: stack samples", () => {
  // 1,000,000 samples (10 MB): held as arrays of numbers and strings (~64 bytes a sample)
  // they aborted a 40 MB heap; in typed columns they take none of it
  it("issue 32 item 11: analyze -a profile of 1,000,000 samples succeeds in a 40 MB heap (samples in typed columns)", async () => {
    const trace = writeTrace(join(dir, "samples1m.msgpack"), sampleEvents(new SampleEncoder(), 1_000_000))
    const r = await tessera(["analyze", "-d", trace, "-a", "profile"], ["--max-old-space-size=40"])
    assert.equal(r.code, 0, show(r))
    assert.match(r.stdout, /f3 /)
    assert.match(r.stdout, /Analyses finished!/)
  })

  it("issue 32 item 12: a 10,000-frame stack exports to .cpuprofile and analyses (no recursion)", async () => {
    const trace = writeTrace(join(dir, "deep.msgpack"), sampleEvents(new SampleEncoder(), 50, 10_000))
    const out = join(dir, "deep-profiles")
    const r = await tessera(["export", "-d", trace, "--format", "cpuprofile", "-o", out])
    assert.equal(r.code, 0, show(r))
    const p = JSON.parse(readFileSync(join(out, "worker-h-0.cpuprofile"), "utf8")) as { nodes: Array<{ id: number; children: Array<number> }> }
    assert.ok(p.nodes.length >= 10_000, `${p.nodes.length} nodes`)
    const a = await tessera(["analyze", "-d", trace, "-a", "profile", "--head", "3"])
    assert.equal(a.code, 0, show(a))
  })

  it("issue 32 item 12: a corrupt sample record is a typed error naming the file and its byte offset, not 'no profile samples'", async () => {
    const enc = new SampleEncoder()
    const good = sampleEvents(enc, 20)
    const stacksRecord = encodeRecords([good[0]!])
    const offset = stacksRecord.byteLength // where the samples record begins
    const cases: Array<[string, (e: TraceEvent) => TraceEvent, RegExp]> = [
      ["notarrays", (e) => ({ ...e, args: { ...e.args, stacks: "garbage" } }), /lacks its stacks or offsets arrays/],
      ["lengths", (e) => ({ ...e, args: { ...e.args, offsets: (e.args.offsets as Array<number>).slice(1) } }), /19 offsets for 20 samples/],
      ["unknownstack", (e) => ({ ...e, args: { ...e.args, stacks: (e.args.stacks as Array<number>).map((x, q) => (q === 3 ? 77 : x)) } }), /sample 3 the stack 77, a node no Profile Stacks record/],
      ["oddid", (e) => ({ ...e, args: { ...e.args, stacks: (e.args.stacks as Array<number>).map((x, q) => (q === 5 ? -2.5 : x)) } }), /sample 5 the stack -2\.5, not a node id/]
    ]
    const results = await Promise.all(cases.map(async ([name, corrupt, why]) => {
      const trace = writeTrace(join(dir, `corrupt-${name}.msgpack`), [good[0]!, corrupt(good[1]!)])
      return { why, trace, r: await tessera(["export", "-d", trace, "--format", "cpuprofile", "-o", join(dir, `corrupt-${name}`)]) }
    }))
    for (const { why, trace, r } of results) {
      assert.equal(r.code, 1, show(r))
      assert.match(r.stderr, why)
      assert.ok(r.stderr.includes(trace), show(r))
      assert.match(r.stderr, new RegExp(`byte offset ${offset}\\b`), show(r))
      assert.doesNotMatch(r.stderr, /no profile samples|internal error/)
    }
    // a frame id no Profile Stacks defines, in the call tree itself
    const stacks = good[0]!
    const badTree = writeTrace(join(dir, "corrupt-frame.msgpack"), [{ ...stacks, args: { ...stacks.args, frames: (stacks.args.frames as Array<number>).map((f, i) => (i === 1 ? 999 : f)) } }, good[1]!])
    const t = await tessera(["analyze", "-d", badTree, "-a", "profile"])
    assert.equal(t.code, 1, show(t))
    assert.match(t.stderr, /gives node 2 the frame 999, which no Profile Stacks record of this host defines.*byte offset 0\b/)
    // the samples record cut short at the file's end: named, with where the unreadable bytes begin
    const whole = encodeRecords(good)
    const cut = join(dir, "corrupt-cut.msgpack")
    writeFileSync(cut, whole.subarray(0, offset + 40))
    const c = await tessera(["export", "-d", cut, "--format", "cpuprofile", "-o", join(dir, "corrupt-cut")])
    assert.equal(c.code, 1, show(c))
    assert.match(c.stderr, new RegExp(`corrupt-cut\\.msgpack: no readable profile samples: the 40 byte\\(s\\) from byte offset ${offset} are not a whole record`))
    // samples before a cut record are exported, with a warning naming where the cut one begins
    const more = sampleEvents(enc, 20, 4, "worker-h-1")
    const partial = encodeRecords([...good, ...more])
    const second = encodeRecords(good).byteLength
    const half = join(dir, "corrupt-half.msgpack")
    writeFileSync(half, partial.subarray(0, second + 40))
    const h = await tessera(["export", "-d", half, "--format", "cpuprofile", "-o", join(dir, "corrupt-half")])
    assert.equal(h.code, 0, show(h))
    assert.match(h.stdout, /worker-h-0\.cpuprofile \(cpuprofile, 20 samples\)/)
    assert.match(h.stderr, new RegExp(`warning: .*corrupt-half\\.msgpack: the 40 byte\\(s\\) from byte offset ${second} are not a whole record`))
  })
})

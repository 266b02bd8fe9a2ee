/**
 * Issue 32, stack samples (items 11, 12): held in typed columns (a small heap takes a
 * million), stacks of any depth, corrupt sample records named by file and byte offset.
 * Real files and child processes.
 */
import assert from "node:assert/strict"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { SampleEncoder } from "../../src/trace/SampleEvents.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { sampleEvents, show, tessera, writeTrace } from "./fixtures/issue32.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-issue32-samples-"))
after(() => rmSync(dir, { recursive: true, force: true }))

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

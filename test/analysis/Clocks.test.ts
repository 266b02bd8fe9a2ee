/**
 * Clock domains: DASF's monotonic timestamps (~1,279 s) and Tessera's epoch seconds
 * (~1.8e9) loaded together are aligned through the `Resource Usage` samples' wall-clock
 * `time`, or reported as not comparable; files on one clock are left as they are.
 */
import assert from "node:assert/strict"
import * as NodeFs from "node:fs"
import { describe, it } from "node:test"
import { loadBytesUnsafe } from "../../src/analysis/Load.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import { complete } from "../../src/trace/TraceEvent.ts"

const fixture = (name: string) => ({
  file: name,
  bytes: new Uint8Array(NodeFs.readFileSync(new URL(`../fixtures/dasf-small/${name}`, import.meta.url)))
})
const monitor = fixture("small-ResourceMonitor.msgpack")
const plugin = fixture("small-TracePlugin.msgpack")
const epoch = {
  file: "tessera.msgpack",
  bytes: encodeRecords(Array.from({ length: 3 }, (_, i) =>
    complete({ name: "Compute", timestamp: 1.8e9 + i, duration: 0.5, process_id: "h", thread_id: "w", args: { key: `k-${i}` } })
  ))
}

describe("Clock domains", () => {
  it("leaves files on one clock as they are, naming each file's clock", () => {
    const t = loadBytesUnsafe([plugin, monitor])
    assert.deepEqual(t.clocks.map((c) => [c.domain, c.shift]), [["monotonic", 0], ["monotonic", 0]])
    assert.deepEqual(t.warnings.filter((w) => /clock/.test(w)), [])
    assert.ok(t.tasks.getChild("end")!.get(0)! < 1e9)
  })

  it("shifts a monotonic file onto the epoch by the median of its Resource Usage time - timestamp", () => {
    const alone = loadBytesUnsafe([monitor]).resources
    const ts = alone.getChild("timestamp")!.toArray() as Float64Array
    const wall = alone.getChild("time")!.toArray() as Float64Array
    const diffs = Array.from(ts, (x, i) => wall[i]! - x).sort((a, b) => a - b)
    const h = diffs.length >> 1
    const median = diffs.length % 2 === 1 ? diffs[h]! : (diffs[h - 1]! + diffs[h]!) / 2
    const t = loadBytesUnsafe([epoch, monitor])
    assert.deepEqual(t.clocks.map((c) => c.domain), ["epoch", "monotonic"])
    assert.equal(t.clocks[1]!.shift, median)
    const shifted = t.resources.getChild("timestamp")!.toArray() as Float64Array
    shifted.forEach((x, i) => assert.equal(x, ts[i]! + median))
    assert.ok(shifted[0]! > 1e9)
    assert.match(t.warnings.join("\n"), /small-ResourceMonitor\.msgpack: monotonic clock shifted by [\d.]+ s onto the epoch clock/)
  })

  it("warns once, naming the files, when a monotonic file has nothing to align it by", () => {
    const t = loadBytesUnsafe([epoch, plugin])
    assert.deepEqual(t.clocks.map((c) => [c.domain, c.shift]), [["epoch", 0], ["monotonic", 0]])
    const clockWarnings = t.warnings.filter((w) => /clock/.test(w))
    assert.equal(clockWarnings.length, 1)
    assert.match(clockWarnings[0]!, /small-TracePlugin\.msgpack on a monotonic clock .* not comparable/)
  })
})

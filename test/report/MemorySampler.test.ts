import assert from "node:assert/strict"
import { existsSync } from "node:fs"
import { mkdtemp } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { Effect } from "effect"
import * as MemorySampler from "../../src/profiler/MemorySampler.ts"
import { plot } from "../../src/report/MemorySamplerPlot.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("MemorySampler", () => {
  it("samples immediately, every interval while the scope is open, and once at close", async () => {
    const ms = MemorySampler.make()
    let calls = 0
    const measure = () => ++calls * 1000
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function*() {
          const s = yield* ms.sample("a", { interval: 10, measure })
          assert.equal(s.bytes.length, 1, "one sample right away")
          yield* Effect.promise(() => sleep(60))
        })
      )
    )
    const n = ms.series[0]!.bytes.length
    assert.ok(n >= 3, `expected several samples, got ${n}`)
    await sleep(40)
    assert.equal(ms.series[0]!.bytes.length, n, "no samples after the scope closed")
    const t = ms.series[0]!.time
    for (let i = 1; i < t.length; i++) assert.ok(t[i]! >= t[i - 1]!)
  })

  it("aligns each series to its own first sample in toTable and plots labelled series", async () => {
    const ms = MemorySampler.make()
    await ms.samplePromise("small", { interval: 5, measure: () => 1 << 20 }, () => sleep(20))
    await sleep(15)
    const result = await ms.samplePromise("large", { interval: 5, measure: () => 8 << 20 }, async () => {
      await sleep(20)
      return 42
    })
    assert.equal(result, 42)
    const aligned = ms.toTable({ align: true })
    const raw = ms.toTable()
    assert.equal(aligned.numRows, raw.numRows)
    const label = aligned.getChild("label")!
    const time = aligned.getChild("time")!
    const seen = new Set<string>()
    for (let i = 0; i < aligned.numRows; i++) {
      const l = label.get(i) as string
      if (!seen.has(l)) {
        assert.equal(time.get(i), 0, `${l} starts at 0 when aligned`)
        seen.add(l)
      }
    }
    assert.deepEqual([...seen], ["small", "large"])
    assert.ok((raw.getChild("time")!.get(0) as number) > 1e9, "unaligned times are epoch seconds")
    const dir = await mkdtemp(join(tmpdir(), "tessera-ms-"))
    const files = await plot(ms, join(dir, "memory"), { align: true })
    for (const f of files) assert.ok(existsSync(f), f)
  })
})

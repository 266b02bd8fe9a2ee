/**
 * `ThreadSampler`'s windows (issue 18): back-to-back console profiles on one V8
 * profiler that never stops, so a `take` does not restart it. Checks that consecutive
 * windows deliver each sample once, one window after the other, that `fromSeconds` drops earlier
 * samples, and that a closed sampler gives nothing.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as EngineClock from "../../src/engine/EngineClock.ts"
import { ThreadSampler } from "../../src/engine/ThreadSampler.ts"

const busy = (ms: number): number => {
  const t = performance.now()
  let x = 0
  while (performance.now() - t < ms) x += Math.sqrt(x + 1)
  return x
}

describe("ThreadSampler", () => {
  it("windows deliver each sample once, one after the other", () => {
    const s = new ThreadSampler(1)
    try {
      // V8 orders a profile's samples as it processed them (a delta can be a little
      // negative), so the check is: no time twice, and each window after the one before
      const seen = new Set<number>()
      let prevMax = -Infinity
      let total = 0
      for (let w = 0; w < 5; w++) {
        busy(40)
        const chunk = s.take(true)
        const t1 = EngineClock.nowSeconds()
        assert.equal(chunk.samples.length, chunk.times.length)
        let min = Infinity, max = -Infinity
        for (const t of chunk.times) {
          assert.ok(!seen.has(t), `window ${w}: a sample at ${t} delivered twice`)
          seen.add(t)
          min = Math.min(min, t)
          max = Math.max(max, t)
        }
        assert.ok(max <= t1 + 1e-3, `window ${w}: a sample after its take`)
        assert.ok(min >= prevMax - 2e-3, `window ${w} starts ${prevMax - min} s before the previous one ended`)
        prevMax = Math.max(prevMax, max)
        const ids = new Set(chunk.nodes.map((n) => n.id))
        for (const id of chunk.samples) assert.ok(ids.has(id))
        total += chunk.samples.length
      }
      assert.ok(total >= 20, `only ${total} samples in 200 ms at 1 ms`)
      assert.ok(s.running)
    } finally {
      s.close()
    }
    assert.ok(!s.running)
    assert.equal(s.take(true).samples.length, 0)
  })

  it("take(fromSeconds) leaves out earlier samples; discard drops a window", () => {
    const s = new ThreadSampler(1)
    try {
      busy(30)
      s.discard(true)
      busy(30)
      const from = EngineClock.nowSeconds()
      busy(150)
      const chunk = s.take(true, from)
      assert.ok(chunk.times.length > 0)
      assert.ok(chunk.times.every((t) => t >= from - 1e-4), "a sample before fromSeconds")
      const next = s.take(false)
      const seen = new Set(chunk.times)
      assert.ok(next.times.every((t) => !seen.has(t)))
      assert.ok(!s.running)
    } finally {
      s.close()
    }
  })
})

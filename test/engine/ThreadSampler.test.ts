/**
 * `ThreadSampler`'s windows (issue 18): back-to-back console profiles on one V8
 * profiler that never stops, so a `take` does not restart it. Checks that consecutive
 * windows deliver each sample once, one window after the other, that `fromSeconds` drops earlier
 * samples, that a closed sampler gives nothing, and that `acquire`/`release` keep one
 * running sampler for the next user without handing it what was sampled for nobody.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as EngineClock from "../../src/engine/EngineClock.ts"
import { acquire, lastTime, release, ThreadSampler } from "../../src/engine/ThreadSampler.ts"

const busy = (ms: number): number => {
  const t = performance.now()
  let x = 0
  while (performance.now() - t < ms) x += Math.sqrt(x + 1)
  return x
}

describe("ThreadSampler", () => {
  it("a window's latest sample is its greatest time, not its last in order", () => {
    // V8 orders samples as it processed them: this window ends on a negative delta
    const p = { nodes: [], startTime: 1000, samples: [1, 1, 1], timeDeltas: [10, 30, -5] }
    assert.equal(lastTime(p), 1040)
    assert.equal(lastTime({ nodes: [], startTime: 1000, samples: [], timeDeltas: [] }), -Infinity)
  })

  it("windows deliver each sample once, one after the other", () => {
    const s = new ThreadSampler(1)
    try {
      // V8 orders a profile's samples as it processed them (a delta can be a little
      // negative), so the check is: no time twice, and each window after the one before
      const seen = new Set<number>()
      let prevMax = -Infinity
      let total = 0
      // many short windows: V8 ends ~2% of windows on a negative delta, the case where
      // the window's last sample in order is not its latest (CI once saw it in 5)
      for (let w = 0; w < 100; w++) {
        busy(w % 3 === 0 ? 4 : 1.5)
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
      // ~230 samples on a thread of its own; a loaded machine (CI runs two test files at
      // once on two cores) takes some of its time
      assert.ok(total >= 50, `only ${total} samples in ~230 ms at 1 ms`)
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

  it("acquire reuses the sampler a user released, running, without the samples taken between users", async () => {
    const a = acquire(1)
    busy(30)
    a.take(true)
    release(a, 60_000)
    assert.ok(a.running, "released but still sampling (lingering)")
    busy(40) // sampled for nobody
    const between = EngineClock.nowSeconds()
    const b = acquire(1)
    assert.equal(b, a, "the same sampler: V8's profiler was not restarted")
    // a second user while the shared one is taken gets its own
    const c = acquire(1)
    assert.notEqual(c, b)
    release(c, 60_000)
    assert.ok(!c.running, "a sampler of its own is closed on release")
    busy(40)
    const got = b.take(true)
    assert.ok(got.times.length > 0, "no samples after reacquiring")
    for (const t of got.times) assert.ok(t >= between - 0.002, `a sample at ${t} from before the second user (${between})`)
    release(b, 0)
    await new Promise((r) => setTimeout(r, 20))
    assert.ok(!b.running, "stopped once the linger ran out")
    const d = acquire(1)
    assert.notEqual(d, b, "a fresh sampler after the linger")
    release(d, 0)
  })
})

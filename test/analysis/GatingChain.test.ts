/**
 * The gating critical path (`criticalPathSteps(…, { by: "end" })`) walks back through
 * the task a worker ran before each step. Tasks of no duration end at the instant the
 * next one starts; the walk once took such a later-started sibling as "the task before",
 * rejected it, and fell back to the driver's hand-over: seconds of a busy worker were
 * reported as dispatch latency (the sync-io fault diagnosed as scheduling-latency).
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { criticalPathSteps } from "../../src/analysis/CriticalPath.ts"
import { eventsOf, type ScheduledTask, tablesOf } from "../../src/testing/index.ts"

const task = (index: number, key: string, worker: string, start: number, end: number, deps: ReadonlyArray<number> = []): ScheduledTask => ({
  index, key, fn: key.split("-")[0]!, stage: key.split("-")[0]!, deps, duration: end - start, size: 8, host: "h", worker, start, end
})
const events = (tasks: ReadonlyArray<ScheduledTask>) => eventsOf(tasks, { format: "tessera", origin: 1.7e9, offsets: {}, memory: false, resources: false })

describe("the gating critical path", () => {
  it("goes through the long task a worker ran before a burst of zero-length tasks, not through a latency step", () => {
    // worker 0: a 5 s read, then two empty tasks and a short one at the instant it ended
    const tasks = [
      task(0, "read-0", "0", 0, 5),
      task(1, "make-1", "0", 5, 5),
      task(2, "make-2", "0", 5, 5),
      task(3, "read-3", "0", 5, 5.1, [2])
    ]
    const p = criticalPathSteps(tablesOf({ events: events(tasks) }), { by: "end" })
    assert.ok(p.tasks > 5, `tasks ${p.tasks}, latency ${p.latency}`)
    assert.ok(p.latency < 1e-3, `latency ${p.latency}`)
  })

  it("on one worker busy end to end, the path is all task time whatever the order of tied instants", () => {
    // a worker's back-to-back tasks, some of no duration: no gap, so no latency
    fc.assert(fc.property(fc.array(fc.oneof(fc.constant(0), fc.double({ min: 0.001, max: 2, noNaN: true })), { minLength: 1, maxLength: 30 }), (durations) => {
      let t = 0
      const tasks = durations.map((d, i) => {
        const s = t
        t += d
        return task(i, `f-${i}`, "0", s, t)
      })
      const p = criticalPathSteps(tablesOf({ events: events(tasks) }), { by: "end" })
      const total = durations.reduce((a, b) => a + b, 0)
      assert.ok(Math.abs(p.tasks - total) <= 1e-6 * Math.max(1, total) + 1e-6, `tasks ${p.tasks} of ${total}`)
      assert.ok(p.latency <= 1e-4 * durations.length, `latency ${p.latency}`)
    }), { numRuns: 100 })
  })
})

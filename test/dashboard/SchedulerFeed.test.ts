/**
 * The scheduler's dashboard (src/dashboard/SchedulerFeed.ts) fed drivers' batches
 * directly: groups, progress and running counts from the stand-in computes (fast-check
 * against the counts given), tasks and rows as forwarded, dropped records and runs
 * counted in the page's JSON, a new run after the last one ended starting a fresh page on
 * the same address, overlapping runs sharing one.
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect, Exit, Scope } from "effect"
import * as fc from "fast-check"
import type { FeedBatch } from "../../src/engine/Cluster.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import type { SchedulerState } from "../../src/engine/State.ts"
import { LiveState } from "../../src/dashboard/LiveState.ts"
import * as SchedulerFeed from "../../src/dashboard/SchedulerFeed.ts"

const t0 = performance.timeOrigin / 1000 + performance.now() / 1000

const task = (key: string, name: string, row: string, at: number, stage?: string): TaskRecord => ({
  key,
  name,
  ...(stage !== undefined ? { stage } : {}),
  host: "h",
  threadId: row,
  workerId: 0,
  phases: { gather: [at, at], compute: [at, at + 0.01], transfer: [at + 0.01, at + 0.01] },
  cpuTime: 0.01,
  nbytes: 8,
  shape: [],
  dtype: "",
  type: "",
  dependencies: [],
  dependents: [],
  state: "memory"
})

const batch = (run: string, b: Partial<FeedBatch>): FeedBatch => ({
  run,
  driver: `pid 1 on h`,
  dropped: 0,
  over: false,
  computes: [],
  running: [],
  finished: [],
  tasks: [],
  memory: [],
  transfers: [],
  ...b
})

/** The snapshot once `ready` holds of it (the server restarts for a new run: a moment without one). */
const settled = async (url: string, ready: (s: Awaited<ReturnType<typeof snapshot>>) => boolean) => {
  for (let i = 0;; i++) {
    const s = await snapshot(url).catch(() => undefined)
    if (s !== undefined && ready(s)) return s
    if (i > 600) assert.fail(`no snapshot as expected within 60 s: ${JSON.stringify(s?.counts)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const snapshot = async (url: string) => {
  const u = new URL(url)
  u.pathname = "/api/snapshot"
  const r = await fetch(u)
  assert.equal(r.status, 200)
  return (await r.json()) as { counts: SchedulerFeed.SchedulerCounts; rows: Array<string>; groups: Array<{ stage: string; name: string; total: number; done: number; running: number }>; over: boolean }
}

describe("the scheduler's dashboard: stand-in computes", () => {
  it("give each group its total and the driver's running count", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ stage: fc.option(fc.constantFrom("a", "b"), { nil: undefined }), name: fc.constantFrom("f", "g", "h"), total: fc.nat({ max: 40 }) }), { maxLength: 6 })
          .map((gs) => gs.filter((g, i) => gs.findIndex((x) => x.stage === g.stage && x.name === g.name) === i)),
        fc.array(fc.nat({ max: 50 }), { maxLength: 6 }),
        (groups, counts) => {
          const state = new LiveState({ detailCapacity: 16, bins: 16 })
          const sh = SchedulerFeed.shadowOf({ id: 0, groups })
          state.startState(sh.graph, sh.state as unknown as SchedulerState)
          SchedulerFeed.setRunning(sh, counts)
          const shown = state.snapshot().groups
          groups.forEach((g, k) => {
            const row = shown.find((x) => x.stage === (g.stage ?? "") && x.name === g.name)
            if (g.total === 0) return assert.ok(row === undefined || row.total === 0)
            assert.ok(row !== undefined)
            assert.equal(row.total, g.total)
            assert.equal(row.running, Math.min(g.total, counts[k] ?? 0))
          })
          assert.equal(state.counts().running, groups.reduce((a, g, k) => a + Math.min(g.total, counts[k] ?? 0), 0))
        }
      ),
      { numRuns: 200 }
    )
  })
})

describe("the scheduler's dashboard: runs", () => {
  it("shows a run's tasks, groups, rows and dropped records; a new run after it starts a fresh page on the same address", { timeout: 120_000 }, async () => {
    const scope = Effect.runSync(Scope.make())
    try {
      const lines: Array<string> = []
      const d = await Effect.runPromise(SchedulerFeed.make({ host: "127.0.0.1", port: 0, log: (l) => void lines.push(l), sampleHost: false }).pipe(Scope.provide(scope)))
      assert.match(lines[0]!, /^dashboard: http:\/\/127\.0\.0\.1:\d+\/$/)
      const unused = d.state()
      const groups = [{ stage: "s", name: "f", total: 3 }, { stage: undefined, name: "g", total: 1 }]
      d.feed(batch("r1", { computes: [{ id: 0, groups }], running: [{ id: 0, counts: [2, 0] }], tasks: [task("f-0", "f", "w-a", t0, "s")] }))
      // the first run too gets a fresh state, its time axis from its first record
      const first = d.state()
      assert.notEqual(first, unused)
      assert.equal(first.t0, t0)
      let s = await settled(d.url, (x) => x.counts.runs === 1)
      assert.equal(s.counts.tasks, 1)
      assert.equal(s.counts.running, 2)
      assert.deepEqual(s.groups.map((g) => [g.stage, g.name, g.total, g.done, g.running]), [["s", "f", 3, 1, 2], ["", "g", 1, 0, 0]])
      d.feed(batch("r1", {
        dropped: 5,
        tasks: [task("f-1", "f", "w-b", t0 + 0.1, "s"), task("f-2", "f", "w-a", t0 + 0.2, "s"), task("g-0", "g", "w-b", t0 + 0.3)],
        finished: [{ id: 0, failed: false }],
        over: true
      }))
      s = await snapshot(d.url)
      assert.equal(s.counts.tasks, 4)
      assert.equal(s.counts.computesDone, 1)
      assert.equal(s.counts.running, 0)
      assert.equal(s.counts.dropped, 5)
      assert.equal(s.counts.runs, 1)
      assert.equal(s.over, true)
      assert.deepEqual([...s.rows].sort(), ["w-a", "w-b"])
      // the next run: a fresh state, served on the same address once the server restarted
      d.feed(batch("r2", { computes: [{ id: 0, groups: [{ stage: undefined, name: "k", total: 2 }] }], tasks: [task("k-0", "k", "w-c", t0 + 1)] }))
      assert.notEqual(d.state(), first)
      assert.equal(first.tasksSeen, 4, "the old state is left as it was")
      s = await settled(d.url, (x) => x.counts.runs === 2)
      assert.equal(s.counts.tasks, 1)
      assert.equal(s.counts.dropped, 0)
      assert.deepEqual(s.rows, ["w-c"])
      // a run that starts while r2 goes on shares its page
      const second = d.state()
      d.feed(batch("r3", { dropped: 2, tasks: [task("x-0", "x", "w-d", t0 + 1.5)] }))
      assert.equal(d.state(), second)
      s = await snapshot(d.url)
      assert.equal(s.counts.tasks, 2)
      assert.equal(s.counts.drivers, 2)
      assert.equal(s.counts.dropped, 2)
      assert.equal(s.counts.runs, 3)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})

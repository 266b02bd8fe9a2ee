/**
 * A driver's forwarding to its scheduler's dashboard (internal/cluster/feed.ts): records
 * through the wire unchanged but for the clock offset (fast-check), batches bounded,
 * drops counted (slow scheduler, failed batches, forwarding stopped), malformed bytes
 * refused with a message, forwarding off unless the scheduler says it has a dashboard;
 * and end to end, a scheduler served in this process with two local worker processes
 * (plain, and TLS keyed by a token):
 * the batches carry every task of the driver's computes, each worker's rows, the
 * computes' groups and ends.
 */
import assert from "node:assert/strict"
import { randomBytes } from "node:crypto"
import { describe, it } from "node:test"
import { Effect, Exit, Fiber, Redacted, Scope } from "effect"
import * as fc from "fast-check"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type { MemoryRecord, TaskRecord, TransferRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import { decodeBatch, Forwarder, startForwarding } from "../../src/engine/internal/cluster/feed.ts"
import { encodeValue } from "../../src/engine/internal/cluster/protocol.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { k } from "./graphs.ts"

const str = fc.string({ maxLength: 12 })
const time = fc.double({ min: 1e9, max: 2e9, noNaN: true })
const amount = fc.nat({ max: 2 ** 40 })
const taskArb: fc.Arbitrary<TaskRecord> = fc.record({
  key: str,
  name: str,
  stage: fc.option(str, { nil: undefined }),
  host: str,
  threadId: str,
  workerId: fc.nat({ max: 1000 }),
  t: fc.array(time, { minLength: 6, maxLength: 6 }),
  cpuTime: fc.double({ min: 0, max: 100, noNaN: true }),
  nbytes: amount,
  peakMemory: fc.option(amount, { nil: undefined }),
  ioBytes: fc.option(amount, { nil: undefined }),
  erred: fc.boolean()
}).map((r) => ({
  key: r.key,
  name: r.name,
  ...(r.stage !== undefined ? { stage: r.stage } : {}),
  host: r.host,
  threadId: r.threadId,
  workerId: r.workerId,
  phases: { gather: [r.t[0]!, r.t[1]!], compute: [r.t[2]!, r.t[3]!], transfer: [r.t[4]!, r.t[5]!] },
  cpuTime: r.cpuTime,
  nbytes: r.nbytes,
  ...(r.peakMemory !== undefined ? { peakMemory: r.peakMemory } : {}),
  ...(r.ioBytes !== undefined ? { ioBytes: r.ioBytes } : {}),
  shape: [],
  dtype: "",
  type: "",
  dependencies: [],
  dependents: [],
  state: r.erred ? "erred" as const : "memory" as const
}))
const memoryArb: fc.Arbitrary<MemoryRecord> = fc.record({
  timestamp: time,
  host: str,
  workerId: fc.nat({ max: 1000 }),
  threadId: str,
  key: str,
  state: fc.constantFrom("memory" as const, "released" as const, "erred" as const),
  bytes: amount,
  chunks: fc.nat({ max: 1000 })
})
const transferArb: fc.Arbitrary<TransferRecord> = fc.record({
  keys: fc.array(str, { minLength: 1, maxLength: 4 }),
  bytes: amount,
  host: str,
  threadId: str,
  peer: str,
  start: time,
  stop: time,
  serialize: fc.double({ min: 0, max: 10, noNaN: true }),
  deserialize: fc.double({ min: 0, max: 10, noNaN: true })
})

const shifted = (t: TaskRecord, o: number): TaskRecord => ({
  ...t,
  phases: {
    gather: [t.phases.gather[0] + o, t.phases.gather[1] + o],
    compute: [t.phases.compute[0] + o, t.phases.compute[1] + o],
    transfer: [t.phases.transfer[0] + o, t.phases.transfer[1] + o]
  }
})

const decoded = (b: { blob: Uint8Array } | undefined) => {
  assert.ok(b !== undefined)
  const d = decodeBatch(b.blob)
  if (typeof d === "string") assert.fail(d)
  return d
}

describe("cluster feed: the wire", () => {
  it("carries task, memory and transfer records unchanged but for the clock offset, in order, in bounded batches", () => {
    fc.assert(
      fc.property(
        fc.array(taskArb, { maxLength: 40 }),
        fc.array(memoryArb, { maxLength: 20 }),
        fc.array(transferArb, { maxLength: 10 }),
        fc.double({ min: -100, max: 100, noNaN: true }),
        fc.integer({ min: 1, max: 16 }),
        (tasks, memory, transfers, offset, maxPerBatch) => {
          const f = new Forwarder({ run: "r", driver: "d", offset, maxPerBatch })
          for (const t of tasks) f.callbacks.task!(t)
          for (const m of memory) f.callbacks.memory!(m)
          for (const x of transfers) f.callbacks.transfer!(x)
          const got = { tasks: [] as Array<TaskRecord>, memory: [] as Array<MemoryRecord>, transfers: [] as Array<TransferRecord> }
          for (let n = 0; f.pending > 0; n++) {
            const b = f.take()
            const d = decoded(b)
            assert.ok(d.tasks.length <= maxPerBatch && d.memory.length <= maxPerBatch && d.transfers.length <= maxPerBatch)
            f.sent(b!.records, true)
            got.tasks.push(...d.tasks)
            got.memory.push(...d.memory)
            got.transfers.push(...d.transfers)
            assert.ok(n < 100)
          }
          assert.deepEqual(got.tasks, tasks.map((t) => shifted(t, offset)))
          assert.deepEqual(got.memory, memory.map((m) => ({ ...m, timestamp: m.timestamp + offset })))
          assert.deepEqual(got.transfers, transfers.map((x) => ({ ...x, start: x.start + offset, stop: x.stop + offset })))
          assert.equal(f.forwarded, tasks.length + memory.length + transfers.length)
          assert.equal(f.dropped, 0)
        }
      ),
      { numRuns: 150 }
    )
  })

  it("refuses bytes that are not a batch with a message, never a throw", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const d = decodeBatch(bytes)
        assert.ok(typeof d === "string" || typeof d === "object")
      }),
      { numRuns: 300 }
    )
    // well-formed v8 values of the wrong shape
    const good = new Forwarder({ run: "r", driver: "d", offset: 0 })
    good.callbacks.task!(fc.sample(taskArb, { numRuns: 1, seed: 1 })[0]!)
    const wire = { v: 1, run: "r", driver: "d", dropped: 0, over: false, strs: ["a"], computes: [], running: [], finished: [] }
    const rows = { s: new Int32Array(0), n: new Float64Array(0) }
    for (
      const [bad, why] of [
        [{ ...wire, tasks: { s: new Int32Array([0, 0, 0, 0, 7]), n: new Float64Array(12) }, memory: rows, transfers: { ...rows, keys: [], k: new Int32Array(0) } }, /string 7 of 1/],
        [{ ...wire, tasks: { s: new Int32Array(5), n: new Float64Array(3) }, memory: rows, transfers: { ...rows, keys: [], k: new Int32Array(0) } }, /bad tasks/],
        [{ ...wire, dropped: -1 }, /bad header/],
        [{ v: 2 }, /version/],
        ["text", /version/]
      ] as const
    ) {
      const d = decodeBatch(encodeValue(bad))
      assert.equal(typeof d, "string")
      assert.match(d as string, why)
    }
  })
})

describe("cluster feed: a slow or failing scheduler", () => {
  const task = fc.sample(taskArb, { numRuns: 1, seed: 7 })[0]!

  it("keeps at most maxPending records of a kind waiting and counts the rest dropped", () => {
    const f = new Forwarder({ run: "r", driver: "d", offset: 0, maxPerBatch: 4, maxPending: 10 })
    for (let i = 0; i < 25; i++) f.callbacks.task!(task)
    assert.equal(f.pending, 10)
    assert.equal(f.dropped, 15)
    const d = decoded(f.take())
    assert.equal(d.tasks.length, 4)
    assert.equal(d.dropped, 15, "every batch says how many were dropped so far")
  })

  it("counts a failed batch's records dropped, and stops after three failures in a row (counting on)", () => {
    const f = new Forwarder({ run: "r", driver: "d", offset: 0, maxPerBatch: 2 })
    for (let i = 0; i < 9; i++) f.callbacks.task!(task)
    f.sent(f.take()!.records, false)
    assert.equal(f.dropped, 2)
    f.sent(f.take()!.records, true)
    assert.equal(f.forwarded, 2)
    f.sent(f.take()!.records, false)
    f.sent(f.take()!.records, false)
    assert.equal(f.stopped, false)
    f.sent(f.take()!.records, false)
    assert.equal(f.stopped, true)
    assert.equal(f.pending, 0)
    assert.equal(f.dropped, 9 - 2)
    f.callbacks.task!(task)
    assert.equal(f.dropped, 8)
    assert.equal(f.pending, 0)
  })

  it("is off unless the scheduler says it serves a dashboard (no answer, no: nothing forwarded)", async () => {
    for (const ask of [undefined, Effect.succeed(undefined), Effect.succeed({ on: false, clock: 0 })]) {
      let sends = 0
      const link = { ...(ask !== undefined ? { ask } : {}), send: () => Effect.sync(() => (sends++, true)) }
      const f = await Effect.runPromise(Effect.scoped(startForwarding(link, { run: "r", driver: "d" })))
      assert.equal(f, undefined)
      assert.equal(sends, 0)
    }
  })

  it("sends the records left and the run's end when its scope closes, one batch at a time", async () => {
    let inFlight = 0
    let most = 0
    const got: Array<ReturnType<typeof decodeBatch>> = []
    const link = {
      ask: Effect.succeed({ on: true, clock: 0 }),
      send: (blob: Uint8Array) =>
        Effect.gen(function*() {
          most = Math.max(most, ++inFlight)
          yield* Effect.sleep(15)
          got.push(decodeBatch(blob))
          inFlight--
          return true
        })
    }
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const f = (yield* startForwarding(link, { run: "r", driver: "d", tickMs: 5, maxPerBatch: 3 }))!
      for (let i = 0; i < 20; i++) f.callbacks.task!(task)
      yield* Effect.sleep(20)
    })))
    assert.equal(most, 1)
    const batches = got.map((b) => (typeof b === "string" ? assert.fail(b) : b))
    assert.equal(batches.reduce((a, b) => a + b.tasks.length, 0), 20)
    assert.equal(batches.at(-1)!.over, true)
    assert.ok(batches.slice(0, -1).every((b) => !b.over))
  })
})

describe("cluster feed: a scheduler with a dashboard, 2 worker processes", () => {
  for (const tls of [false, true]) {
    it(`gets every task of the driver's computes, from both workers, with the computes' groups and ends${tls ? " (TLS keyed by the cluster token)" : ""}`, { timeout: 180_000 }, async () => {
      const batches: Array<Cluster.FeedBatch> = []
      const port = await Cluster.freePort("127.0.0.1")
      const token = tls ? { token: Redacted.make("tessera-token-v1:" + randomBytes(32).toString("base64url")) } : {}
      const scheduler = Effect.runFork(Cluster.serveScheduler({ host: "127.0.0.1", port, dashboard: (b) => void batches.push(b), ...token }))
      // closed in `finally` too: a failed compute must not leave the worker processes running
      const scope = Effect.runSync(Scope.make())
      try {
        const n = 24
        const specs: Array<TaskGraph.TaskSpec> = []
        for (let i = 0; i < n; i++) specs.push({ key: `arange-${i}`, kernel: k("arange"), args: [i, 1000], stage: "make" })
        for (let i = 0; i < n; i++) specs.push({ key: `sum-${i}`, kernel: k("chunkSum"), args: [TaskGraph.ref(`arange-${(i + 1) % n}`)] })
        const graph = TaskGraph.makeUnsafe(specs)
        const c = await Effect.runPromise(Cluster.LocalCluster({ scheduler: `127.0.0.1:${port}`, local: 2, ...token }).pipe(Scope.provide(scope)))
        for (let round = 0; round < 2; round++) {
          await Effect.runPromise(Engine.compute(graph).pipe(Effect.provideService(Executor.Executor, c.executor)))
        }
        const pids = c.localPids()
        await Effect.runPromise(Scope.close(scope, Exit.void))
        const tasks = batches.flatMap((b) => b.tasks)
        assert.equal(tasks.length, 2 * 2 * n, "every task of both computes, once")
        assert.equal(new Set(tasks.map((t) => t.key)).size, 2 * n)
        for (const pid of pids) assert.ok(tasks.some((t) => t.threadId.includes(`-pid${pid}-`)), `a row of worker pid ${pid}`)
        assert.ok(tasks.every((t) => t.phases.compute[1] >= t.phases.compute[0] && t.peakMemory !== undefined))
        const computes = batches.flatMap((b) => b.computes)
        assert.equal(computes.length, 2)
        assert.deepEqual(
          computes[0]!.groups.map((g) => [g.stage, g.name, g.total]).sort(),
          [["make", "arange", n], [undefined, "sum", n]].sort()
        )
        assert.deepEqual(batches.flatMap((b) => b.finished).map((f) => f.failed), [false, false])
        assert.equal(new Set(batches.map((b) => b.run)).size, 1)
        assert.equal(batches.at(-1)!.over, true)
        assert.ok(batches.every((b) => b.dropped === 0))
      } finally {
        await Effect.runPromise(Scope.close(scope, Exit.void))
        await Effect.runPromise(Fiber.interrupt(scheduler))
      }
    })
  }
})

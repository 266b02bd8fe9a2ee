/**
 * The cluster executor with real worker processes on loopback: random DAGs against the
 * sequential reference, peer transfers accounted on both ends, a cluster without
 * workers, kernel errors, SIGKILL of a worker mid-compute, interruption, and a worker
 * whose clock is off.
 */
import assert from "node:assert/strict"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { Effect, Exit, Fiber, ManagedRuntime } from "effect"
import * as fc from "fast-check"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import { dagArb, k, mixGraph, neededOf, reference } from "./graphs.ts"

const gateKernel = Kernel.ref(new URL("../fixtures/kernels/gate.ts", import.meta.url).href, "waitForFile")

type Rt = ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never>

/** n chunks of `size` float64s, each summed, the sums summed (every sum on some worker). */
const chunkGraph = (n: number, size: number, spinMs = 0): TaskGraph.TaskGraph => {
  const specs: Array<TaskGraph.TaskSpec> = []
  for (let i = 0; i < n; i++) specs.push({ key: `arange-${i}`, kernel: k("arange"), args: [i, size] })
  for (let i = 0; i < n; i++) {
    specs.push({
      key: `spin-${i}`,
      kernel: k("spin"),
      args: [spinMs, TaskGraph.ref(`arange-${(i + 1) % n}`)]
    })
    specs.push({ key: `sum-${i}`, kernel: k("chunkSum"), args: [TaskGraph.ref(`spin-${i}`)] })
  }
  specs.push({ key: "total", kernel: k("sum"), args: [TaskGraph.refs(Array.from({ length: n }, (_, i) => `sum-${i}`))] })
  return TaskGraph.makeUnsafe(specs)
}

const chunkTotal = (n: number, size: number): number => {
  let t = 0
  for (let i = 0; i < n; i++) for (let j = 0; j < size; j++) t += i + j
  return t
}

const clusterOf = (rt: Rt): Promise<Cluster.ClusterShape> => rt.runPromise(Effect.gen(function*() {
  return yield* Cluster.Cluster
}))

/**
 * Each live worker's count of held results once it stops changing (releases travel
 * asynchronously): polled until two reads 300 ms apart agree, at most 15 s.
 */
const heldSettles = async (c: Cluster.ClusterShape): Promise<ReadonlyArray<number>> => {
  let last = ""
  for (let t = 0; t < 50; t++) {
    const held = (await Effect.runPromise(c.stats)).map((x) => x.held)
    if (held.every((h) => h === 0) || held.join() === last) return held
    last = held.join()
    await new Promise((r) => setTimeout(r, 300))
  }
  return (await Effect.runPromise(c.stats)).map((x) => x.held)
}

const reason = (exit: Exit.Exit<unknown, unknown>): string | undefined => {
  if (!Exit.isFailure(exit)) return undefined
  const f = exit.cause.reasons.find((r) => r._tag === "Fail")
  return f?._tag === "Fail" ? (f.error as EngineError.ComputeError).reason._tag : "defect"
}

describe("Cluster (3 worker processes on loopback)", () => {
  let rt: Rt
  before(async () => {
    rt = ManagedRuntime.make(Cluster.layerLocal({ local: 3 }))
    await rt.runPromise(Effect.void)
  })
  after(async () => {
    await rt.dispose()
  })

  it("computes random DAGs with the sequential reference's results", async () => {
    await fc.assert(
      fc.asyncProperty(dagArb(30), async (dag) => {
        const out = await rt.runPromise(Engine.compute(mixGraph(dag), { keys: dag.requested.map((r) => `t-${r}`) }))
        const ref = reference(dag)
        for (const r of dag.requested) assert.equal(out.get(`t-${r}`), ref[r])
        assert.ok(neededOf(dag).size >= dag.requested.length)
      }),
      { numRuns: 8 }
    )
  })

  it("moves inputs worker to worker; bytes sent = bytes received = bytes in Transfer records", async () => {
    const c = await clusterOf(rt)
    const seen: Array<Cluster.TransferInfo> = []
    const before = await rt.runPromise(c.stats)
    const off = c.onTransfer((t) => seen.push(t))
    const db = MemoryDatabase.make()
    const out = await rt.runPromise(Engine.compute(chunkGraph(12, 50_000), { keys: ["total", "arange-3"], callbacks: [Trace.callbacks(db)] }))
    off()
    const after = await rt.runPromise(c.stats)
    assert.equal(out.get("total"), chunkTotal(12, 50_000))
    assert.equal((out.get("arange-3") as { data: Float64Array }).data[1], 4)
    const sum = (xs: ReadonlyArray<Cluster.WorkerStats>, f: "sent" | "received") => xs.reduce((n, x) => n + x[f], 0)
    const sent = sum(after, "sent") - sum(before, "sent")
    const received = sum(after, "received") - sum(before, "received")
    assert.ok(seen.length > 0, "some input crossed between workers")
    assert.equal(sent, received)
    assert.equal(seen.reduce((n, t) => n + t.bytes, 0), received)
    // the profiler's Transfer events: one per fetch, on the receiving worker's row
    const events = db.list.filter((e) => e.name === "Transfer")
    assert.equal(events.length, seen.length)
    assert.equal(events.reduce((n, e) => n + (e.args.bytes as number), 0), received)
    const rows = new Set(db.list.filter((e) => e.name === "Compute").map((e) => e.thread_id))
    for (const e of events) {
      assert.equal(e.phase, "X")
      assert.ok(rows.has(e.thread_id), `transfer on a worker's row: ${e.thread_id}`)
      assert.ok(Array.isArray(e.args.keys) && typeof e.args.peer === "string" && typeof e.args.serialize === "number")
      // the sender is named by its row too, so a transfer joins the tasks of both ends
      assert.ok(rows.has(e.args.peer as string) && e.args.peer !== e.thread_id, `peer is another worker's row: ${String(e.args.peer)}`)
      assert.ok(Math.abs(e.timestamp - (e.duration ?? 0) - (e.args.start as number)) < 1e-6)
    }
    for (const t of seen) {
      assert.notEqual(t.peer, t.worker)
      assert.ok(t.stop >= t.start && t.serialize >= 0 && t.deserialize >= 0)
      assert.ok(t.keys.length > 0)
    }
  })

  it("sees large literal arguments changed in place between computes, and the same keys in a row", async () => {
    // chunks of 4,000 float64s (32 KB): literals sent to each worker once (literals.ts)
    const chunks = Array.from({ length: 6 }, (_, c) => ({ dtype: "float64" as const, shape: [4000], data: Float64Array.from({ length: 4000 }, (_, i) => i + c) }))
    const g = TaskGraph.makeUnsafe([
      ...chunks.map((c, i) => ({ key: `s-${i}`, kernel: k("chunkSum"), args: [c] })),
      { key: "total", kernel: k("sum"), args: [TaskGraph.refs(chunks.map((_, i) => `s-${i}`))] }
    ])
    const expected = () => chunks.reduce((n, c) => n + c.data.reduce((a, b) => a + b, 0), 0)
    for (let round = 0; round < 4; round++) {
      if (round === 2) chunks[3]!.data[10] = 1e6
      const out = await rt.runPromise(Engine.compute(g, { keys: ["total", "s-3"] }))
      assert.equal(out.get("total"), expected(), `round ${round}`)
      assert.equal(out.get("s-3"), chunks[3]!.data.reduce((a, b) => a + b, 0))
    }
  })

  it("fails with the kernel's error, naming the task", async () => {
    const g = TaskGraph.makeUnsafe([
      { key: "a", kernel: k("constant"), args: [1] },
      { key: "bad", kernel: k("boom"), args: ["on a worker"] },
      { key: "missing", kernel: k("nope"), args: [] }
    ])
    const e1 = await rt.runPromiseExit(Engine.compute(g, { keys: ["bad"] }))
    assert.equal(reason(e1), "KernelFailed")
    assert.match(String((e1 as { cause?: unknown }).cause), /bad.*boom: on a worker|boom: on a worker/s)
    const e2 = await rt.runPromiseExit(Engine.compute(g, { keys: ["missing"] }))
    assert.equal(reason(e2), "KernelNotFound")
    const ok = await rt.runPromise(Engine.compute(g, { keys: ["a"] }))
    assert.equal(ok.get("a"), 1)
  })

  it("spreads a fan-out over idle workers rather than fusing it into one batch", async () => {
    // one root whose 24 dependents each take 40 ms: fused into the root's batch they would
    // run one after another on one worker while the other two wait
    const specs: Array<TaskGraph.TaskSpec> = [{ key: "root", kernel: k("constant"), args: [1] }]
    for (let i = 0; i < 24; i++) specs.push({ key: `leaf-${i}`, kernel: k("spin"), args: [40, TaskGraph.ref("root")] })
    const g = TaskGraph.makeUnsafe(specs)
    const leavesPerWorker = async () => {
      const rows = new Map<string, number>()
      const out = await rt.runPromise(Engine.compute(g, {
        keys: specs.slice(1).map((t) => t.key),
        callbacks: [{ task: (r) => void rows.set(r.key, Math.floor(r.workerId / 16)) }]
      }))
      assert.equal(out.get("leaf-23"), 1)
      const per = new Map<number, number>()
      for (const [key, w] of rows) if (key.startsWith("leaf-")) per.set(w, (per.get(w) ?? 0) + 1)
      assert.equal([...per.values()].reduce((a, b) => a + b, 0), 24)
      return per
    }
    // the scheduler judges a task's cost by its kernel's measured so far: earlier tests
    // ran `spin` for 0 ms, so the first run may take it for cheap; the second knows better
    await leavesPerWorker()
    const per = await leavesPerWorker()
    assert.ok(per.size >= 2, `leaves per worker: ${JSON.stringify([...per])}`)
    assert.ok(Math.max(...per.values()) <= 20, `leaves per worker: ${JSON.stringify([...per])}`)
  })

  it("releases a failed compute's results on every worker", async () => {
    const c = await clusterOf(rt)
    // results spread over the workers, all still needed when the last task fails
    const specs: Array<TaskGraph.TaskSpec> = []
    for (let i = 0; i < 24; i++) specs.push({ key: `a-${i}`, kernel: k("arange"), args: [i, 100] })
    specs.push({ key: "bad", kernel: k("boom"), args: ["at the end", TaskGraph.refs(specs.map((t) => t.key))] })
    const exit = await rt.runPromiseExit(Engine.compute(TaskGraph.makeUnsafe(specs), { keys: ["bad"] }))
    assert.equal(reason(exit), "KernelFailed")
    const held = await heldSettles(c)
    assert.deepEqual(held, held.map(() => 0), `results left on the workers: ${held.join(", ")}`)
  })

  it("stops every worker's share when the compute is interrupted", async () => {
    const c = await clusterOf(rt)
    const specs: Array<TaskGraph.TaskSpec> = []
    for (let i = 0; i < 60; i++) specs.push({ key: `s-${i}`, kernel: k("spin"), args: [300, i] })
    const fiber = rt.runFork(Engine.compute(TaskGraph.makeUnsafe(specs)))
    // wait until every worker runs something
    for (let t = 0; t < 200; t++) {
      const st = await rt.runPromise(c.stats)
      if (st.every((x) => x.running > 0)) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const exit = await Effect.runPromise(Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber))))
    assert.ok(Exit.isFailure(exit))
    let st = await rt.runPromise(c.stats)
    for (let t = 0; t < 100 && st.some((x) => x.running > 0); t++) {
      await new Promise((r) => setTimeout(r, 50))
      st = await rt.runPromise(c.stats)
    }
    assert.deepEqual(st.map((x) => x.running), [0, 0, 0])
    const done = st.reduce((n, x) => n + x.tasks, 0)
    await new Promise((r) => setTimeout(r, 700))
    const later = await rt.runPromise(c.stats)
    assert.equal(later.reduce((n, x) => n + x.tasks, 0), done, "no task ran after the interruption")
    assert.ok(done > 0, "some tasks finished before the interruption")
    const held = await heldSettles(c)
    assert.deepEqual(held, held.map(() => 0), `results of the interrupted compute left on the workers: ${held.join(", ")}`)
  })
})

describe("Cluster faults", () => {
  it("fails with NoWorkers on a cluster without workers", async () => {
    const rt = ManagedRuntime.make(Executor.layerCluster({ noWorkerWait: 0.3 }))
    try {
      const g = TaskGraph.makeUnsafe([{ key: "a", kernel: k("constant"), args: [1] }])
      const exit = await rt.runPromiseExit(Engine.compute(g))
      assert.equal(reason(exit), "NoWorkers")
      assert.match(String((exit as { cause?: unknown }).cause), /no live worker/)
    } finally {
      await rt.dispose()
    }
  })

  it("recomputes a SIGKILLed worker's tasks and results elsewhere, with the right answer", async () => {
    const rt: Rt = ManagedRuntime.make(Cluster.layerLocal({ local: 3, heartbeat: 0.2, heartbeatTimeout: 2 }))
    try {
      const c = await clusterOf(rt)
      const n = 24
      const fiber = rt.runFork(Engine.compute(chunkGraph(n, 20_000, 150), { keys: ["total"] }))
      // kill a worker once it has finished some tasks and holds results
      const victim = c.workers()[1]!
      for (let t = 0; t < 400; t++) {
        const st = await rt.runPromise(c.stats)
        if ((st.find((x) => x.name === victim.name)?.tasks ?? 0) >= 4) break
        await new Promise((r) => setTimeout(r, 25))
      }
      process.kill(victim.pid, "SIGKILL")
      const out = await Effect.runPromise(Fiber.join(fiber))
      assert.equal(out.get("total"), chunkTotal(n, 20_000))
      // its exit is seen asynchronously: when the kill came after its last result was
      // fetched (each worker's tasks can travel in one fused batch), the compute may end first
      for (let t = 0; t < 100 && c.workers().find((w) => w.name === victim.name)?.alive !== false; t++) {
        await new Promise((r) => setTimeout(r, 100))
      }
      assert.equal(c.workers().find((w) => w.name === victim.name)?.alive, false)
      // the cluster goes on with the others
      const again = await rt.runPromise(Engine.compute(chunkGraph(4, 100), { keys: ["total"] }))
      assert.equal(again.get("total"), chunkTotal(4, 100))
    } finally {
      await rt.dispose()
    }
  })

  it("drops the literals of a driver that dies without closing its cluster", async () => {
    const rt: Rt = ManagedRuntime.make(Cluster.layerLocal({ local: 1, heartbeat: 0.2 }))
    const driver = new URL("../fixtures/literalDriver.ts", import.meta.url).pathname
    let child: ChildProcess | undefined
    try {
      const c = await clusterOf(rt)
      const literals = async () => (await rt.runPromise(c.stats)).reduce((n, x) => n + x.literals, 0)
      child = spawn(process.execPath, [driver, c.address], { stdio: ["ignore", "pipe", "pipe"] })
      let err = ""
      child.stderr!.on("data", (d) => void (err += d))
      await new Promise<void>((resolve, reject) => {
        child!.stdout!.on("data", (d) => String(d).includes("computed") && resolve())
        child!.on("exit", (code) => reject(new Error(`the driver exited (${code}) before computing: ${err}`)))
      })
      assert.equal(await literals(), 1, "the worker holds the driver's literal")
      child.kill("SIGKILL")
      // gone after 10 of its 0.2 s pings missed, at least 5 s; the worker looks every second
      let left = 1
      for (let t = 0; t < 300 && left > 0; t++) {
        await new Promise((r) => setTimeout(r, 100))
        left = await literals()
      }
      assert.equal(left, 0, "the dead driver's literal is dropped")
      // the cluster serves on
      const out = await rt.runPromise(Engine.compute(TaskGraph.makeUnsafe([{ key: "a", kernel: k("constant"), args: [7] }])))
      assert.equal(out.get("a"), 7)
    } finally {
      child?.kill("SIGKILL")
      await rt.dispose()
    }
  })

  it("gives work to a worker that joins mid-compute", async () => {
    const rt: Rt = ManagedRuntime.make(Cluster.layerLocal({ local: 1, heartbeat: 0.2 }))
    const dir = mkdtempSync(join(tmpdir(), "tessera-cluster-gate-"))
    try {
      const c = await clusterOf(rt)
      const gate = join(dir, "open")
      // every task waits for the gate: the first worker takes what it may (two batches),
      // the rest waits in the scheduler until the second worker has joined
      const specs: Array<TaskGraph.TaskSpec> = []
      for (let i = 0; i < 200; i++) specs.push({ key: `g-${i}`, kernel: gateKernel, args: [gate, i] })
      const fiber = rt.runFork(Engine.compute(TaskGraph.makeUnsafe(specs), { keys: ["g-0", "g-199"] }))
      await rt.runPromise(c.addLocalWorker)
      for (let t = 0; t < 1200 && c.workers().filter((w) => w.alive).length < 2; t++) await new Promise((r) => setTimeout(r, 50))
      assert.equal(c.workers().filter((w) => w.alive).length, 2, "the new worker joined")
      writeFileSync(gate, "")
      const out = await Effect.runPromise(Fiber.join(fiber))
      assert.equal(out.get("g-199"), 199)
      const st = await rt.runPromise(c.stats)
      assert.ok(st.every((x) => x.tasks > 0), `both workers ran tasks: ${st.map((x) => x.tasks).join(", ")}`)
    } finally {
      await rt.dispose()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("puts a worker with a shifted clock back on the scheduler's: no task starts before its inputs end", async () => {
    const rt: Rt = ManagedRuntime.make(Cluster.layerLocal({ local: 2, clockShift: [30, -45] }))
    try {
      const c = await clusterOf(rt)
      const ws = c.workers()
      const shifts = [30, -45]
      for (const w of ws) {
        const shift = shifts[c.localPids().indexOf(w.pid)]!
        assert.ok(Math.abs(w.offset - shift) < 0.5, `offset ${w.offset}, shift ${shift}`)
        assert.ok(w.uncertainty >= 0 && w.uncertainty < 0.5)
      }
      const recs = new Map<string, TaskRecord>()
      const t0 = Date.now() / 1000
      const db = MemoryDatabase.make()
      await rt.runPromise(Engine.compute(chunkGraph(8, 1000, 5), {
        keys: ["total"],
        callbacks: [{ task: (r) => void recs.set(r.key, r) }, Trace.callbacks(db)]
      }))
      // the offsets and their uncertainty are in the trace, one event per worker
      const clocks = db.list.filter((e) => e.name === "Clock Offset")
      assert.deepEqual(clocks.map((e) => Math.round(e.args.offset as number)).sort((a, b) => a - b), [-45, 30])
      for (const e of clocks) assert.ok((e.args.uncertainty as number) >= 0 && e.phase === "I")
      const t1 = Date.now() / 1000
      const slack = ws.reduce((m, w) => Math.max(m, w.uncertainty), 0) * 2
      assert.equal(recs.size, 8 * 3 + 1)
      const hosts = new Set<number>()
      for (const r of recs.values()) {
        hosts.add(r.workerId)
        assert.ok(r.phases.gather[0] >= t0 - 1 && r.phases.transfer[1] <= t1 + 1, `${r.key} on the scheduler's clock`)
        // the worker's floats, in order (the reply's recs): gather ≤ compute ≤ transfer, CPU seconds
        const ph = [...r.phases.gather, ...r.phases.compute, ...r.phases.transfer]
        for (let q = 1; q < ph.length; q++) assert.ok(ph[q]! >= ph[q - 1]!, `${r.key}'s phases in order`)
        assert.ok(Number.isFinite(r.cpuTime) && r.cpuTime >= 0 && r.cpuTime < 60, `${r.key}'s CPU seconds`)
        for (const d of r.dependencies) {
          const dep = recs.get(d)!
          assert.ok(r.phases.gather[0] >= dep.phases.transfer[1] - slack, `${r.key} starts before ${d} ends`)
        }
      }
      assert.equal(hosts.size, 2)
    } finally {
      await rt.dispose()
    }
  })
})

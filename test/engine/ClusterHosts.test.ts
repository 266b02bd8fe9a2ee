/**
 * Per-host profiles on a cluster of 2 real worker processes on loopback: the profiler
 * layers, unchanged, write DASF's files from the worker processes (worker plugins).
 * Worker 0 runs on the driver's host (its files have two writers: the driver and the
 * worker); worker 1 reports another host name, "hB" (test-only `hostNames`), so it is a
 * host without a driver: it writes hB's files alone and measures that host; its clock
 * runs 30 s ahead, and its files are on the scheduler's clock all the same.
 */
import assert from "node:assert/strict"
import { readFileSync, mkdtempSync, rmSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { Effect, Exit, Layer, ManagedRuntime } from "effect"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import type * as Executor from "../../src/engine/Executor.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as StatisticalProfiler from "../../src/profiler/StatisticalProfiler.ts"
import { assertDasfReadable, rawRecords } from "../profiler/dasf.ts"
import { k } from "./graphs.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-cluster-hosts-"))
after(() => rmSync(dir, { recursive: true, force: true }))

/** n chunks, each spun on and summed on some worker after a shift (so inputs cross workers). */
const graph = (n: number): TaskGraph.TaskGraph => {
  const specs: Array<TaskGraph.TaskSpec> = []
  for (let i = 0; i < n; i++) specs.push({ key: `arange-${i}`, kernel: k("arange"), args: [i, 20_000] })
  for (let i = 0; i < n; i++) {
    specs.push({ key: `spin-${i}`, kernel: k("spin"), args: [20, TaskGraph.ref(`arange-${(i + 1) % n}`)] })
    specs.push({ key: `sum-${i}`, kernel: k("chunkSum"), args: [TaskGraph.ref(`spin-${i}`)] })
  }
  specs.push({ key: "total", kernel: k("sum"), args: [TaskGraph.refs(Array.from({ length: n }, (_, i) => `sum-${i}`))] })
  return TaskGraph.makeUnsafe(specs)
}

const rssOf = (pid: number): number => {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return m === null ? 0 : Number(m[1]) * 1024
}

type Rt = ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never>

/**
 * Runs `g` under a fresh profile `name` (DefaultProfiler + StatisticalProfiler for the
 * workers), with a driver-side task hook filling `driverSide` when given (without one,
 * only the worker plugins read task records: the replies leave them out).
 */
const profiled = (rt: Rt, g: TaskGraph.TaskGraph, name: string, driverSide?: Array<TaskRecord>) =>
  rt.runPromise(Effect.gen(function*() {
    const c = yield* Cluster.Cluster
    const profile = StatisticalProfiler.layer({
      file: StatisticalProfiler.fileFor(name, hostname(), dir),
      overwrite: true,
      workers: { name, directory: dir, overwrite: true }
    }).pipe(Layer.provideMerge(DefaultProfiler.layer({ name, directory: dir, interval: 50, overwrite: true, log: () => {}, warn: () => {} })))
    const out = yield* Effect.provide(
      Engine.compute(g, { keys: ["total"], callbacks: driverSide === undefined ? [] : [{ task: (r) => void driverSide.push(r) }] }),
      profile
    )
    assert.ok(typeof out.get("total") === "number")
    return c.localPids()
  }))

const files = (name: string, host: string) => ({
  trace: join(dir, `${name}-TracePlugin-${host}.msgpack`),
  resources: join(dir, `${name}-ResourceMonitor-${host}.msgpack`),
  samples: StatisticalProfiler.fileFor(name, host, dir)
})

describe("per-host profiles on a cluster (2 worker processes, hosts: the driver's and hB)", () => {
  const here = hostname()
  let rt: Rt
  before(async () => {
    rt = ManagedRuntime.make(Cluster.layerLocal({
      local: 2,
      hostNames: [here, "hB"],
      // hB's clock is 30 s ahead: every event of its files must still be on the driver's
      clockShift: [0, 30],
      // imported before they join, as the CLI's workers do (a loaded machine takes seconds)
      preload: [new URL("../../src/profiler/WorkerPlugins.ts", import.meta.url).href]
    }))
    await rt.runPromise(Effect.void)
  })
  after(async () => {
    await rt.dispose()
  })

  it("each host's workers write its TracePlugin, ResourceMonitor and StatisticalProfiler files; DASF reads them", async () => {
    const g = graph(8)
    const a = files("hosts", here)
    const b = files("hosts", "hB")
    const run = async () => {
      const driverSide: Array<TaskRecord> = []
      const t0 = Date.now() / 1000
      const pids = await profiled(rt, g, "hosts", driverSide)
      const t1 = Date.now() / 1000
      const events = [...(await FileDatabase.readPromise(a.trace)).events, ...(await FileDatabase.readPromise(b.trace)).events]
      return { driverSide, t0, t1, pids, events }
    }
    // each host's files need tasks on both workers: on a loaded machine one worker may run
    // all 8 while the other's plugins still start, so the run goes again (at most twice
    // more; the profile is overwritten)
    let r = await run()
    for (let again = 0; again < 2 && new Set(r.events.filter((e) => e.name === "Compute").map((e) => e.process_id)).size < 2; again++) r = await run()
    const { driverSide, t0, t1, pids, events } = r
    for (const file of [a.trace, a.resources, b.trace, b.resources]) {
      for (const x of rawRecords(file)) assertDasfReadable(x, file)
    }
    // each task once, written by the worker that ran it (peak_memory: the worker's record), on its host's file
    const computes = events.filter((e) => e.name === "Compute")
    assert.deepEqual(computes.map((e) => e.args.key).sort(), [...g.keys].sort())
    // a worker's row index is its order of joining, which need not be its order of start:
    // each host's row is worker-{host}-{address}-pid{pid}-0 or …-16, one per host
    const rowOf = new Map<string, string>()
    for (const e of computes) {
      assert.equal(typeof e.args.peak_memory, "number")
      const host = String(e.process_id)
      assert.ok(host === here || host === "hB", host)
      // (issue 31 item 14: with the worker process's address and pid between)
      assert.match(String(e.thread_id), new RegExp(`^worker-${host}-127\\.0\\.0\\.1:\\d+-pid\\d+-(0|16)$`))
      assert.equal(rowOf.get(host) ?? e.thread_id, e.thread_id, `one row per host (${host})`)
      rowOf.set(host, String(e.thread_id))
    }
    assert.equal(rowOf.size, 2, "both workers ran tasks")
    const rowHere = rowOf.get(here)!
    const rowB = rowOf.get("hB")!
    assert.notEqual(rowHere.slice(-2), rowB.slice(-2), "the two workers have different indexes")
    // hooks without a worker plugin still get every record in the driver, with the
    // worker's measured phases (the replies carry the records when such a hook asks)
    assert.equal(driverSide.length, g.size)
    for (const r of driverSide) {
      const ph = [...r.phases.gather, ...r.phases.compute, ...r.phases.transfer]
      assert.ok(ph.every((x, q) => Number.isFinite(x) && (q === 0 || x >= ph[q - 1]!)), `${r.key}'s phases measured, in order`)
      assert.ok(r.phases.gather[0] > t0 - 1 && r.phases.transfer[1] < Date.now() / 1000 + 1, `${r.key} on the scheduler's clock`)
    }
    assert.ok((await FileDatabase.readPromise(a.trace)).events.some((e) => e.name === "Driver"), "the driver's own events")
    // Managed Memory follows fetched copies: held on the receiving worker's row until released
    const transfers = events.filter((e) => e.name === "Transfer")
    assert.ok(transfers.length > 0, "inputs crossed between workers")
    const memory = events.filter((e) => e.name === "Managed Memory")
    for (const t of transfers) {
      assert.ok([rowHere, rowB].includes(t.args.peer as string) && t.args.peer !== t.thread_id)
      for (const key of t.args.keys as Array<string>) {
        const held = memory.filter((m) => m.args.key === key && m.thread_id === t.thread_id)
        assert.deepEqual(held.map((m) => m.args.state), ["memory", "released"], `${key} held then released on ${t.thread_id}`)
        assert.ok(held[0]!.args.size as number >= 8, "the copy's bytes count")
      }
    }
    for (const row of new Set(memory.map((m) => m.thread_id))) {
      const last = memory.filter((m) => m.thread_id === row).at(-1)!
      assert.equal(last.args.size, 0, `${row} holds nothing at the end`)
    }
    // one resource series per host: the driver with the worker on its host; hB's from its worker
    const mine = (await FileDatabase.readPromise(a.resources)).events
    const peak = Math.max(...mine.map((e) => e.args.memory as number))
    const w0 = rssOf(pids[0]!)
    assert.ok(peak > process.memoryUsage.rss() + w0 / 2, `memory ${peak} counts the worker process on this host (${w0})`)
    const theirs = (await FileDatabase.readPromise(b.resources)).events
    assert.ok(theirs.length >= 1 && theirs.every((e) => e.process_id === "hB" && e.thread_id === null && (e.args.memory as number) > 0))
    // on the scheduler's clock although hB's runs 30 s ahead (1 s of slack for the measure)
    const hB = [...(await FileDatabase.readPromise(b.trace)).events, ...theirs]
    for (const e of hB) assert.ok(e.timestamp > t0 - 1 && e.timestamp < t1 + 1, `${e.name} at ${e.timestamp - t0} s`)
    // the workers' threads were sampled, on their rows, into their host's file
    for (const [f, row] of [[a.samples, rowHere], [b.samples, rowB]] as const) {
      const rows = new Set((await FileDatabase.readPromise(f)).events.filter((e) => e.name === "Profile Samples").map((e) => e.thread_id))
      assert.ok(rows.has(row), `${f}: ${[...rows].join(", ")}`)
    }
    // the analyses read every host's files together
    const tables = await loadPromise([a.trace, b.trace, a.resources, b.resources])
    assert.equal(tables.tasks.numRows, g.size)
  })

  it("overwrite starts each host's files afresh before any worker of that host appends", async () => {
    const g = graph(6)
    await profiled(rt, g, "again")
    await profiled(rt, g, "again")
    const computes = [
      ...(await FileDatabase.readPromise(files("again", here).trace)).events,
      ...(await FileDatabase.readPromise(files("again", "hB").trace)).events
    ].filter((e) => e.name === "Compute")
    assert.deepEqual(computes.map((e) => e.args.key).sort(), [...g.keys].sort())
    // recorded by the worker plugins alone (no driver-side hook): measured where they ran
    for (const e of computes) {
      assert.equal(typeof e.args.peak_memory, "number")
      assert.ok(Number.isFinite(e.duration) && e.duration! >= 0, `${e.args.key}'s duration`)
    }
  })

  it("a worker plugin that cannot start fails the compute with WorkerPluginFailed, naming it and the worker", async () => {
    const hook = { task: () => {}, workerPlugin: { id: "missing", module: new URL("./no-such-plugin.ts", import.meta.url).href, name: "start", options: {} } }
    const exit = await rt.runPromiseExit(Engine.compute(graph(2), { keys: ["total"], callbacks: [hook] }))
    assert.ok(Exit.isFailure(exit))
    const f = exit.cause.reasons.find((r) => r._tag === "Fail")
    const e = f?._tag === "Fail" ? (f.error as EngineError.ComputeError) : undefined
    assert.equal(e?.reason._tag, "WorkerPluginFailed")
    assert.match(e!.message, /no-such-plugin\.ts#start did not start on tessera-worker@/)
  })
})

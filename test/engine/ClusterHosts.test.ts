/**
 * Per-host profiles on a cluster of 2 real worker processes on loopback: the profiler
 * layers, unchanged, write DASF's files from the worker processes (worker plugins).
 * One host here, so the driver and both workers share each file, as several writers.
 */
import assert from "node:assert/strict"
import { readFileSync, mkdtempSync, rmSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Layer } from "effect"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
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

describe("per-host profiles on a cluster (2 worker processes)", () => {
  it("workers write their host's TracePlugin, ResourceMonitor and StatisticalProfiler files; DASF reads them", async () => {
    const host = hostname()
    const g = graph(8)
    const driverSide: Array<TaskRecord> = []
    let workerRss = 0
    const profile = StatisticalProfiler.layer({
      file: StatisticalProfiler.fileFor("hosts", host, dir),
      workers: { name: "hosts", directory: dir }
    }).pipe(Layer.provideMerge(DefaultProfiler.layer({ name: "hosts", directory: dir, interval: 50, log: () => {}, warn: () => {} })))
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const c = yield* Cluster.Cluster
      const out = yield* Effect.provide(Engine.compute(g, { keys: ["total"], callbacks: [{ task: (r) => void driverSide.push(r) }] }), profile)
      assert.ok(typeof out.get("total") === "number")
      workerRss = c.localPids().reduce((n, p) => n + rssOf(p), 0)
    }).pipe(Effect.provide(Cluster.layerLocal({ local: 2 })))))

    const traceFile = join(dir, `hosts-TracePlugin-${host}.msgpack`)
    const events = (await FileDatabase.readPromise(traceFile)).events
    for (const file of [traceFile, join(dir, `hosts-ResourceMonitor-${host}.msgpack`)]) {
      for (const r of rawRecords(file)) assertDasfReadable(r, file)
    }
    // each task once, written by the worker that ran it (peak_memory: the worker's record)
    const computes = events.filter((e) => e.name === "Compute")
    assert.deepEqual(computes.map((e) => e.args.key).sort(), [...g.keys].sort())
    const rows = new Set(computes.map((e) => e.thread_id))
    for (const e of computes) {
      assert.match(String(e.thread_id), new RegExp(`^worker-${host}-(0|16)$`))
      assert.equal(typeof e.args.peak_memory, "number")
    }
    assert.equal(rows.size, 2, "both workers ran tasks")
    // hooks without a worker plugin still get every record in the driver
    assert.equal(driverSide.length, g.size)
    assert.ok(events.some((e) => e.name === "Driver"), "the driver's own events")
    // Managed Memory follows fetched copies: held on the receiving worker's row until released
    const transfers = events.filter((e) => e.name === "Transfer")
    assert.ok(transfers.length > 0, "inputs crossed between workers")
    const memory = events.filter((e) => e.name === "Managed Memory")
    for (const t of transfers) {
      for (const key of t.args.keys as Array<string>) {
        const held = memory.filter((m) => m.args.key === key && m.thread_id === t.thread_id)
        assert.deepEqual(held.map((m) => m.args.state), ["memory", "released"], `${key} held then released on ${t.thread_id}`)
      }
    }
    for (const row of new Set(memory.map((m) => m.thread_id))) {
      const last = memory.filter((m) => m.thread_id === row).at(-1)!
      assert.equal(last.args.size, 0, `${row} holds nothing at the end`)
    }
    // one resource series for the host: the driver with its worker processes
    const resources = (await FileDatabase.readPromise(join(dir, `hosts-ResourceMonitor-${host}.msgpack`))).events
    const peak = Math.max(...resources.map((e) => e.args.memory as number))
    assert.ok(peak > process.memoryUsage.rss() + workerRss / 2, `memory ${peak} counts the worker processes (${workerRss})`)
    // the workers' threads were sampled, on their rows
    const samples = (await FileDatabase.readPromise(StatisticalProfiler.fileFor("hosts", host, dir))).events
    const sampled = new Set(samples.filter((e) => e.name === "Profile Samples").map((e) => e.thread_id))
    assert.ok([...rows].some((r) => sampled.has(r)), `worker rows sampled: ${[...sampled].join(", ")}`)
    // the analyses read the host's files together
    const tables = await loadPromise([traceFile, join(dir, `hosts-ResourceMonitor-${host}.msgpack`)])
    assert.equal(tables.tasks.numRows, g.size)
  })
})

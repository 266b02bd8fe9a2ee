import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Layer } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import * as Trace from "../../src/profiler/Trace.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-plugins-"))
after(() => rmSync(dir, { recursive: true, force: true }))
const mod = new URL("../fixtures/kernels/basic.ts", import.meta.url).href

/** 8 chunk loads, a sum per pair, one finalize over all sums; keys of several shapes. */
const graph = () => {
  const specs: Array<TaskGraph.TaskSpec> = []
  for (let i = 0; i < 8; i++) {
    specs.push({ key: `('original-array-0117baf52de50432ed73e4bf713a01f5', ${i})`, kernel: { module: mod, name: "arange" }, args: [i, 100] })
  }
  for (let i = 0; i < 4; i++) {
    specs.push({
      key: `chunk_sum-${i}`,
      kernel: { module: mod, name: "chunkSum" },
      args: [TaskGraph.ref(`('original-array-0117baf52de50432ed73e4bf713a01f5', ${2 * i})`)]
    })
  }
  specs.push({ key: "finalize-9f8e7d6c5b4a39281706f5e4d3c2b1a0", kernel: { module: mod, name: "sum" }, args: [TaskGraph.refs(["chunk_sum-0", "chunk_sum-1", "chunk_sum-2", "chunk_sum-3"])] })
  return TaskGraph.makeUnsafe(specs)
}

describe("Plugins", () => {
  it("Trace writes one Compute per task (ending at timestamp, right names and dependents) and Managed Memory events", async () => {
    const db = MemoryDatabase.make()
    const g = graph()
    await Effect.runPromise(
      Engine.compute(g, { keys: ["finalize-9f8e7d6c5b4a39281706f5e4d3c2b1a0"] }).pipe(
        Effect.provide(Layer.mergeAll(Executor.layerSync, Trace.layer({ database: db })))
      )
    )
    const computes = db.list.filter((e) => e.name === "Compute")
    // only what the finalize needs: 4 loads, 4 sums, 1 finalize
    assert.equal(computes.length, 9)
    const byKey = new Map(computes.map((e) => [e.args.key as string, e]))
    const load = byKey.get("('original-array-0117baf52de50432ed73e4bf713a01f5', 0)")!
    assert.equal(load.args.name, "original-array")
    assert.deepEqual(load.args.dependents, ["chunk_sum-0"])
    assert.equal(load.args.size, 800)
    assert.deepEqual(load.args.shape, [100])
    assert.equal(load.args.dtype, "float64")
    assert.equal(byKey.get("chunk_sum-0")!.args.name, "chunk_sum")
    const fin = byKey.get("finalize-9f8e7d6c5b4a39281706f5e4d3c2b1a0")!
    assert.equal(fin.args.name, "finalize")
    assert.deepEqual(fin.args.dependencies, ["chunk_sum-0", "chunk_sum-1", "chunk_sum-2", "chunk_sum-3"])
    for (const e of computes) {
      assert.equal(e.phase, "X")
      assert.equal(typeof e.process_id, "string")
      assert.match(String(e.thread_id), /^worker-.+-\d+$/)
      const ss = e.args.startstops as Array<{ action: string; start: number; stop: number }>
      assert.deepEqual(ss.map((s) => s.action), ["gather", "compute", "transfer"])
      // the task ran in [timestamp - duration, timestamp]
      assert.ok(Math.abs(e.timestamp - ss[2]!.stop) < 1e-9)
      assert.ok(Math.abs(e.timestamp - e.duration! - ss[0]!.start) < 1e-6)
      assert.equal(typeof e.args.cpu_time, "number")
    }
    const mm = db.list.filter((e) => e.name === "Managed Memory")
    assert.ok(mm.length >= 9)
    for (const e of mm) assert.deepEqual(Object.keys(e.args), ["key", "state", "size", "tasks"])
    // a load's memory is released once its sum has run
    assert.ok(mm.some((e) => e.args.state === "released"))
  })

  it("Trace commits a file database at the end of a compute at most once per commit interval", async () => {
    const count = async (f: string) => (await FileDatabase.readPromise(f)).events.length
    const slowDb = new FileDatabase.FileDatabase(join(dir, "interval-60s.msgpack"))
    const eachDb = new FileDatabase.FileDatabase(join(dir, "interval-0.msgpack"))
    const slow = Trace.callbacks(slowDb, 60_000)
    const each = Trace.callbacks(eachDb, 0)
    await Engine.computePromise(graph(), { workers: 0, callbacks: [slow, each] })
    const first = await count(slowDb.path)
    assert.ok(first > 0, "the first compute is committed")
    assert.equal(await count(eachDb.path), first)
    await Engine.computePromise(graph(), { workers: 0, callbacks: [slow, each] })
    assert.equal(await count(slowDb.path), first, "within the interval: still buffered")
    assert.equal(await count(eachDb.path), 2 * first)
    slowDb.close()
    eachDb.close()
    assert.equal(await count(slowDb.path), 2 * first, "close writes the rest")
  })

  it("ResourceMonitor samples immediately, then every interval, with every DASF arg present", async () => {
    const db = MemoryDatabase.make()
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      yield* ResourceMonitor.run(db, { interval: 20, host: "h" })
      assert.equal(db.list.length, 1)
      yield* Effect.sleep(130)
    })))
    const n = db.list.length
    assert.ok(n >= 4 && n <= 10, `got ${n} samples`)
    for (const e of db.list) {
      assert.equal(e.name, "Resource Usage")
      assert.equal(e.process_id, "h")
      assert.equal(e.thread_id, null)
      // DASF's args in DASF's order, then the two a DASF reader ignores (the host's memory)
      assert.deepEqual(Object.keys(e.args), [
        "cpu", "memory", "time", "host_net_io.read_bps", "host_net_io.write_bps", "host_disk_io.read_bps",
        "host_disk_io.write_bps", "num_fds", "gpu_utilization", "gpu_memory_used", "host_memory.total", "host_memory.available"
      ])
      const total = e.args["host_memory.total"] as number
      const available = e.args["host_memory.available"] as number
      assert.ok(total > 0 && available >= 0 && available <= total, `host memory ${available} of ${total}`)
      for (const v of Object.values(e.args)) assert.equal(typeof v, "number")
      assert.ok((e.args.memory as number) > 0)
    }
    // stops with the scope
    await new Promise((r) => setTimeout(r, 60))
    assert.equal(db.list.length, n)
  })

  it("registerDefaultProfiler prints DASF's lines and writes both files named as DASF does (and the sampler's)", async () => {
    const lines: Array<string> = []
    const h = DefaultProfiler.registerDefaultProfiler({}, { name: "unit", directory: dir, host: "hostA", interval: 10, log: (l) => lines.push(l) })
    assert.deepEqual(lines, [
      "Registered worker plugin: unit-TracePlugin",
      "Registered resource plugin: unit-ResourceMonitor",
      "Registered sampling profiler: unit-StatisticalProfiler"
    ])
    assert.equal(h.traceFile, join(dir, "unit-TracePlugin-hostA.msgpack"))
    assert.equal(h.resourceFile, join(dir, "unit-ResourceMonitor-hostA.msgpack"))
    assert.equal(h.sampleFile, join(dir, "unit-StatisticalProfiler-hostA.msgpack"))
    await Engine.computePromise(graph(), { workers: 2 })
    await h.close()
    const t = await FileDatabase.readPromise(h.traceFile)
    assert.equal(t.events.filter((e) => e.name === "Compute").length, 13)
    const r = await FileDatabase.readPromise(h.resourceFile)
    assert.ok(r.events.length >= 2)
    // after close, computes are no longer traced
    await Engine.computePromise(graph(), { workers: 0 })
    assert.equal((await FileDatabase.readPromise(h.traceFile)).events.length, t.events.length)
  })

  it("the default profiler layer adds the time suffix, warns once for enableNvtx, and closes the files with its scope", async () => {
    const lines: Array<string> = []
    const warnings: Array<string> = []
    const onWarning = (w: Error) => warnings.push(w.message)
    process.on("warning", onWarning)
    const layer = DefaultProfiler.layer({ name: "lay", directory: dir, host: "hB", addTimeSuffix: true, enableNvtx: true, log: (l) => lines.push(l) })
    await Effect.runPromise(
      Engine.compute(graph()).pipe(Effect.provide(Layer.mergeAll(Executor.layerSync, layer)))
    )
    await new Promise((r) => setImmediate(r))
    process.off("warning", onWarning)
    assert.equal(warnings.filter((w) => w.includes("NVTX")).length, 1)
    const m = /^Registered worker plugin: lay-(\d+)-TracePlugin$/.exec(lines[0] ?? "")
    assert.ok(m, lines.join("|"))
    const suffix = m![1]!
    assert.ok(Math.abs(Number(suffix) - Date.now() / 1000) < 60)
    const traceFile = join(dir, `lay-${suffix}-TracePlugin-hB.msgpack`)
    const resourceFile = join(dir, `lay-${suffix}-ResourceMonitor-hB.msgpack`)
    assert.ok(existsSync(traceFile) && existsSync(resourceFile))
    assert.equal((await FileDatabase.readPromise(traceFile)).events.filter((e) => e.name === "Compute").length, 13)
    assert.ok((await FileDatabase.readPromise(resourceFile)).events.length >= 2)
  })

  it("enableNvtx without an NVTX library warns once per process and never fails a run", () => {
    const profiler = new URL("../../src/profiler/DefaultProfiler.ts", import.meta.url).href
    const engine = new URL("../../src/engine/Engine.ts", import.meta.url).href
    const graphModule = new URL("../../src/engine/TaskGraph.ts", import.meta.url).href
    const script = `
      import { registerDefaultProfiler } from ${JSON.stringify(profiler)}
      import * as Engine from ${JSON.stringify(engine)}
      import * as TaskGraph from ${JSON.stringify(graphModule)}
      for (const name of ["a", "b"]) {
        const h = registerDefaultProfiler({ name, directory: ${JSON.stringify(dir)}, host: "nv", enableNvtx: true, log: () => {} })
        const g = TaskGraph.makeUnsafe([{ key: "x", kernel: { module: ${JSON.stringify(mod)}, name: "constant" }, args: [7] }])
        const out = await Engine.computePromise(g, { workers: 0 })
        h.close()
        console.log(name, out.get("x"))
      }`
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(r.stdout.trim().split("\n"), ["a 7", "b 7"])
    assert.equal(r.stderr.match(/enableNvtx: no NVTX library/g)?.length, 1, r.stderr)
  })
})

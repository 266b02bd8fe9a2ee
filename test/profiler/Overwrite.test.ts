/**
 * Database creation: the default profiler creates both files when it is registered; a
 * re-used profile name appends (as DASF) but warns, naming the file and its size;
 * `overwrite: true` truncates instead.
 */
import assert from "node:assert/strict"
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Layer } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-overwrite-"))
after(() => rmSync(dir, { recursive: true, force: true }))
const mod = new URL("../fixtures/kernels/basic.ts", import.meta.url).href
const tiny = () => TaskGraph.makeUnsafe([{ key: "a", kernel: { module: mod, name: "constant" }, args: [1] }])
const computes = async (file: string) =>
  (await FileDatabase.readPromise(file)).events.filter((e) => e.name === "Compute").length

/** One profiled compute under `registerDefaultProfiler` (DASF's two files: no sampling); returns the handle and the warnings. */
const profiledRun = async (options: DefaultProfiler.DefaultProfilerOptions) => {
  const warnings: Array<string> = []
  const h = DefaultProfiler.registerDefaultProfiler({ directory: dir, host: "hW", log: () => {}, warn: (l) => warnings.push(l), sample: false, ...options })
  await Engine.computePromise(tiny(), { workers: 0 })
  await h.close()
  return { h, warnings }
}

describe("database creation", () => {
  it("registerDefaultProfiler creates both files before it returns", () => {
    const warnings: Array<string> = []
    const h = DefaultProfiler.registerDefaultProfiler({ name: "eager", directory: dir, host: "hE", log: () => {}, warn: (l) => warnings.push(l) })
    try {
      assert.ok(existsSync(h.traceFile), h.traceFile)
      assert.ok(existsSync(h.resourceFile), h.resourceFile)
      assert.equal(statSync(h.traceFile).size, 0)
      assert.deepEqual(warnings, [])
    } finally {
      h.close()
    }
  })

  it("the layer creates both files when it is built", async () => {
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      yield* Layer.build(DefaultProfiler.layer({ name: "eagerL", directory: dir, host: "hL", log: () => {}, warn: () => {} }))
      assert.ok(existsSync(join(dir, "eagerL-TracePlugin-hL.msgpack")))
      assert.ok(existsSync(join(dir, "eagerL-ResourceMonitor-hL.msgpack")))
    })))
  })

  it("a re-used name appends and warns once per file, naming it and its size; overwrite truncates silently", async () => {
    const first = await profiledRun({ name: "again" })
    assert.deepEqual(first.warnings, [])
    const traceBytes = statSync(first.h.traceFile).size
    const resourceBytes = statSync(first.h.resourceFile).size
    assert.ok(traceBytes > 0 && resourceBytes > 0)

    const second = await profiledRun({ name: "again" })
    assert.equal(second.warnings.length, 2, second.warnings.join("\n"))
    const [w1, w2] = second.warnings as [string, string]
    assert.ok(w1.includes(first.h.traceFile) && w1.includes(`${traceBytes} bytes`), w1)
    assert.ok(w2.includes(first.h.resourceFile) && w2.includes(`${resourceBytes} bytes`), w2)
    for (const w of second.warnings) {
      assert.ok(!w.includes("\n"), "one line")
      assert.match(w, /appending/)
      assert.match(w, /overwrite/)
    }
    assert.equal(await computes(first.h.traceFile), 2)

    const third = await profiledRun({ name: "again", overwrite: true })
    assert.deepEqual(third.warnings, [])
    assert.equal(await computes(third.h.traceFile), 1)
    assert.ok(statSync(third.h.resourceFile).size < resourceBytes * 2)
  })

  it("the default profiler layer warns on append and truncates with overwrite", async () => {
    const run = async (overwrite: boolean) => {
      const warnings: Array<string> = []
      await Effect.runPromise(Engine.compute(tiny()).pipe(Effect.provide(Layer.mergeAll(
        Executor.layerSync,
        DefaultProfiler.layer({ name: "lay", directory: dir, host: "hY", overwrite, log: () => {}, warn: (l) => warnings.push(l) })
      ))))
      return warnings
    }
    assert.deepEqual(await run(false), [])
    const w = await run(false)
    assert.equal(w.length, 2)
    assert.ok(w[0]!.includes(join(dir, "lay-TracePlugin-hY.msgpack")))
    assert.equal(await computes(join(dir, "lay-TracePlugin-hY.msgpack")), 2)
    assert.deepEqual(await run(true), [])
    assert.equal(await computes(join(dir, "lay-TracePlugin-hY.msgpack")), 1)
  })

  it("Trace and ResourceMonitor layers open their files at once, warn on append, truncate with overwrite", async () => {
    const file = join(dir, "direct.msgpack")
    const resFile = join(dir, "direct-res.msgpack")
    writeFileSync(file, FileDatabase.openWarning("x", 1)) // any bytes: a non-empty file
    writeFileSync(resFile, "12345")
    const warnings: Array<string> = []
    const warn = (l: string) => warnings.push(l)
    await Effect.runPromise(Effect.scoped(Layer.build(Layer.mergeAll(
      Trace.layer({ file, warn }),
      ResourceMonitor.layer({ file: resFile, warn, gpu: null })
    ))))
    assert.equal(warnings.length, 2)
    assert.ok(warnings.some((w) => w.includes(file)))
    assert.ok(warnings.some((w) => w.includes(resFile) && w.includes("5 bytes")))
    warnings.length = 0
    await Effect.runPromise(Effect.scoped(Layer.build(Layer.mergeAll(
      Trace.layer({ file, warn, overwrite: true }),
      ResourceMonitor.layer({ file: resFile, warn, gpu: null, overwrite: true })
    ))))
    assert.deepEqual(warnings, [])
    assert.equal(statSync(file).size, 0)
    const back = (await FileDatabase.readPromise(resFile)).events
    assert.ok(back.length >= 1 && back.every((e) => e.name === "Resource Usage"))
  })

  it("FileDatabase.open creates the file, returns the bytes it held, and overwrite truncates it", () => {
    const file = join(dir, "open.msgpack")
    const e: TraceEvent = { name: "n", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: null, args: {} }
    const a = new FileDatabase.FileDatabase(file)
    assert.equal(existsSync(file), false, "constructing touches nothing")
    assert.equal(a.open(), 0)
    assert.ok(existsSync(file))
    a.record(e)
    a.close()
    const size = statSync(file).size
    const b = new FileDatabase.FileDatabase(file)
    assert.equal(b.open(), size)
    assert.equal(b.open(), size)
    b.close()
    assert.equal(statSync(file).size, size)
    const c = new FileDatabase.FileDatabase(file, { overwrite: true })
    assert.equal(c.open(), 0)
    assert.equal(statSync(file).size, 0)
    c.close()
    assert.throws(() => c.open(), (x: unknown) => x instanceof Error && /Closed/.test(String((x as { reason?: string }).reason)))
  })
})

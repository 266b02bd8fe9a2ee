/**
 * Type tests of the public API: `tsc -p .` (the first step of `npm test`) checks every
 * `@ts-expect-error` below is really an error (an unused one fails the typecheck).
 * The functions holding them are never called; the `it` at the end runs the positive
 * cases for real.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import type { TraceTables } from "../../src/analysis/Analysis.ts"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as CacheProfiler from "../../src/profiler/CacheProfiler.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as EventProfiler from "../../src/profiler/EventProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as ProgressBar from "../../src/profiler/ProgressBar.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import * as ResourceProfiler from "../../src/profiler/ResourceProfiler.ts"
import * as Trace from "../../src/profiler/Trace.ts"

/** Misspelt profiler options: compile errors (never called). */
export const misspeltOptions = (pipeline: { readonly name: string; visualize(): string }) => {
  // @ts-expect-error `nmae`, `dirctory`: not options (no longer `unknown`)
  DefaultProfiler.registerDefaultProfiler({ nmae: "x", dirctory: "out" })
  // @ts-expect-error `dirctory` after a pipeline
  DefaultProfiler.registerDefaultProfiler(pipeline, { dirctory: "out" })
  // @ts-expect-error `overwrit`
  DefaultProfiler.layer({ name: "x", overwrit: true })
  // @ts-expect-error `overwite`
  Trace.layer({ file: "t.msgpack", overwite: true })
  // @ts-expect-error `intervall`
  ResourceMonitor.layer({ file: "r.msgpack", intervall: 10 })
  // @ts-expect-error `commitTreshold`
  new FileDatabase.FileDatabase("f.msgpack", { commitTreshold: 10 })
  // @ts-expect-error `overwite`
  EventProfiler.make("e.msgpack", { overwite: true })
  // @ts-expect-error `widht`
  ProgressBar.make({ widht: 10 })
  // @ts-expect-error `interval` is ResourceProfiler's `dt`
  ResourceProfiler.make({ interval: 1 })
  // @ts-expect-error `metricname`
  CacheProfiler.make({ metricname: "bytes" })
  // a weak type: an options object with no known option at all is an error too
  const notOptions = { nmae: "x" }
  // @ts-expect-error no property in common with DefaultProfilerOptions
  DefaultProfiler.registerDefaultProfiler(notOptions)
}

/** Misspelt table columns: compile errors (never called). */
export const misspeltColumns = (tables: TraceTables) => {
  // @ts-expect-error `durration`
  tables.tasks.getChild("durration")
  for (const r of tables.tasks) {
    // @ts-expect-error `durration`
    void r.durration
  }
  // @ts-expect-error `durration` on a row from get()
  void tables.tasks.get(0)?.durration
  // @ts-expect-error `gpu_util`
  tables.resources.getChild("gpu_util")
  // @ts-expect-error `task` (the memory table's column is `tasks`)
  tables.memory.getChild("task")
  // @ts-expect-error a string column's rows are strings, not numbers
  const n: number = tables.tasks.get(0)!.function!
  void n
}

/** Well-typed uses: compile, and are run below. */
const typedUses = (tables: TraceTables) => {
  const duration: Float64Array = tables.tasks.getChild("duration")!.toArray()
  const keys: Array<string | null> = tables.tasks.getChild("key")!.toArray()
  const gpu: Float64Array = tables.resources.getChild("gpu_utilization")!.toArray()
  const held: Float64Array = tables.memory.getChild("tasks")!.toArray()
  const rows: Array<{ fn: string | null; duration: number | null; deps: number }> = []
  for (const r of tables.tasks) rows.push({ fn: r.function, duration: r.duration, deps: r.dependencies?.length ?? 0 })
  return { duration, keys, gpu, held, rows }
}

const dir = mkdtempSync(join(tmpdir(), "tessera-types-"))
after(() => rmSync(dir, { recursive: true, force: true }))
const mod = new URL("../fixtures/kernels/basic.ts", import.meta.url).href

describe("typed API", () => {
  it("typed options and typed tables work at run time as their types say", async () => {
    assert.equal(typeof misspeltOptions, "function")
    assert.equal(typeof misspeltColumns, "function")
    const options: DefaultProfiler.DefaultProfilerOptions = {
      name: "typed",
      directory: dir,
      host: "hT",
      overwrite: true,
      log: () => {},
      warn: () => {}
    }
    const h = DefaultProfiler.registerDefaultProfiler(options)
    await Engine.computePromise(TaskGraph.makeUnsafe([{ key: "a", kernel: { module: mod, name: "constant" }, args: [1] }]), { workers: 0 })
    h.close()
    const tables = await loadPromise([h.traceFile, h.resourceFile])
    const got = typedUses(tables)
    assert.equal(got.duration.length, 1)
    assert.deepEqual(got.keys, ["a"])
    assert.ok(got.gpu.length >= 1)
    assert.equal(got.rows.length, 1)
    assert.equal(got.rows[0]!.fn, "a")
    assert.equal(typeof got.rows[0]!.duration, "number")
    assert.equal(got.rows[0]!.deps, 0)
  })
})

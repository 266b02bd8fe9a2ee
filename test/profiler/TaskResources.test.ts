import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import * as Engine from "../../src/engine/Engine.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as TaskIo from "../../src/engine/TaskIo.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import { bytesOf, npy } from "../dsl/fixtures/files.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-resources-"))
after(() => rmSync(dir, { recursive: true, force: true }))
const mem = new URL("./fixtures/memory.ts", import.meta.url).href
const npyKernels = new URL("../../src/kernels/io/npy.ts", import.meta.url).href
const MiB = 1024 * 1024

/** Compute events of a traced compute, by key. */
const computeArgs = async (workers: number, specs: Parameters<typeof TaskGraph.makeUnsafe>[0]) => {
  const db = MemoryDatabase.make()
  await Engine.computePromise(TaskGraph.makeUnsafe(specs), { workers, callbacks: [Trace.callbacks(db)] })
  db.close()
  return new Map(db.list.filter((e) => e.name === "Compute").map((e) => [e.args.key as string, e.args as Record<string, unknown>]))
}

describe("TaskResources", () => {
  for (const [label, workers] of [["worker threads", 1], ["the sync executor", 0]] as const) {
    it(`peak_memory counts a buffer the kernel holds when it returns (${label})`, async () => {
      const got = await computeArgs(workers, [
        { key: "same-0", kernel: { module: mem, name: "same" }, args: [1] },
        // after the no-op (an argument it ignores), so both run on the one worker in order
        { key: "allocate-0", kernel: { module: mem, name: "allocate" }, args: [64 * MiB, TaskGraph.ref("same-0")] }
      ])
      const small = got.get("same-0")!.peak_memory as number
      const big = got.get("allocate-0")!.peak_memory as number
      assert.ok(Number.isFinite(small) && small > 0, `peak_memory of a no-op task: ${small}`)
      assert.ok(big >= 64 * MiB, `peak_memory ${big} below the 64 MiB the kernel returned`)
      assert.equal(got.get("same-0")!.io_bytes, 0)
    })

    it(`io_bytes is what a reader kernel read (${label})`, async () => {
      const data = new Float64Array(1000).map((_, i) => i)
      const file = join(dir, `x-${workers}.npy`)
      const bytes = npy("<f8", [1000], bytesOf(data))
      writeFileSync(file, bytes)
      const got = await computeArgs(workers, [{ key: "read-0", kernel: { module: npyKernels, name: "readNpy" }, args: [file] }])
      assert.equal(got.get("read-0")!.io_bytes, bytes.length)
    })
  }

  it("reportBytesRead ignores what is not a positive finite count", () => {
    const before = TaskIo.bytesRead()
    for (const n of [-5, 0, NaN, Infinity]) TaskIo.reportBytesRead(n)
    TaskIo.reportBytesRead(7)
    assert.equal(TaskIo.bytesRead() - before, 7)
  })
})

import assert from "node:assert/strict"
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { fileURLToPath } from "node:url"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import { loadPipeline } from "../../src/cli/commands/run.ts"
import { Pipeline } from "../../src/dsl/Pipeline.ts"
import type * as CA from "../../src/dsl/ChunkedArray.ts"
import * as Executor from "../../src/engine/Executor.ts"
import { bytesOf, npy } from "./fixtures/files.ts"

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))

describe("Run", () => {
  it("loads a module whose default export is a function returning a Pipeline", async () => {
    const p = await Effect.runPromise(loadPipeline(fixture("pipeline.ts")))
    assert.ok(p instanceof Pipeline)
    assert.equal(p.name, "user")
  })
  it("loads and runs a user module that reads a .npy dataset", async () => {
    const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "run-npy-"))
    const file = NodePath.join(dir, "X.npy")
    NodeFs.writeFileSync(file, npy("<f8", [300, 2], bytesOf(Float64Array.from({ length: 600 }, (_, i) => (i % 2) * 100 + i))))
    process.env.TESSERA_TEST_NPY = file
    try {
      const p = await Effect.runPromise(loadPipeline(fixture("dataset-pipeline.ts")))
      const out = await Effect.runPromise(Effect.provide(p.run(), Executor.layerSync))
      const scaled = out.get("Normalize.transform") as CA.ChunkedArray<"float64">
      assert.deepEqual([scaled.shape, scaled.chunkRows], [[300, 2], [100, 100, 100]])
    } finally {
      delete process.env.TESSERA_TEST_NPY
      NodeFs.rmSync(dir, { recursive: true, force: true })
    }
  })
  it("rejects a module whose default export is not a Pipeline, naming the file", async () => {
    const exit = await Effect.runPromiseExit(loadPipeline(fixture("not-a-pipeline.ts")))
    assert.ok(Exit.isFailure(exit))
    assert.match(String(exit.cause), /not-a-pipeline\.ts: default export must be a Pipeline/)
  })
  it("rejects a missing module, naming the file", async () => {
    const exit = await Effect.runPromiseExit(loadPipeline(fixture("missing.ts")))
    assert.ok(Exit.isFailure(exit))
    assert.match(String(exit.cause), /missing\.ts: cannot load module/)
  })
})

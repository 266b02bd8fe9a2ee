import assert from "node:assert/strict"
import { fileURLToPath } from "node:url"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import { loadPipeline } from "../../src/cli/commands/run.ts"
import { Pipeline } from "../../src/dsl/Pipeline.ts"

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))

describe("Run", () => {
  it("loads a module whose default export is a function returning a Pipeline", async () => {
    const p = await Effect.runPromise(loadPipeline(fixture("pipeline.ts")))
    assert.ok(p instanceof Pipeline)
    assert.equal(p.name, "user")
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

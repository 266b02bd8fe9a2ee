/**
 * Issue 32 item 4 on a local cluster: a `data:` URL kernel sent to a worker process is
 * refused there with `ModuleRefused` naming the URL (the worker forwards the typed error,
 * the scheduler rebuilds it), and the file its code would write is not written.
 */
import assert from "node:assert/strict"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Exit } from "effect"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-refused-cluster-"))
after(() => rmSync(dir, { recursive: true, force: true }))

/** A data: URL module that writes `file` when imported, and exports `f`. */
const dataKernel = (file: string) =>
  `data:text/javascript,import{writeFileSync}from"node:fs";writeFileSync(${JSON.stringify(file)},"ran");export const f=()=>1`

/** The compute's failure reason, or undefined when it succeeded. */
const failure = async (kernel: Kernel.KernelRef) => {
  const g = TaskGraph.makeUnsafe([{ key: "t-0", kernel, args: [] }])
  const exit = await Effect.runPromise(Effect.exit(Engine.compute(g).pipe(Effect.provide(Cluster.layerLocal({ local: 1 })))))
  if (Exit.isSuccess(exit)) return undefined
  const f = exit.cause.reasons.find((r) => r._tag === "Fail")
  return f?._tag === "Fail" ? (f.error as EngineError.ComputeError).reason : undefined
}

describe("module URLs a cluster's workers import", () => {
  it("issue 32 item 4: a data: URL kernel on a local cluster's worker process fails with ModuleRefused; no file is written", { timeout: 120_000 }, async () => {
    const file = join(dir, "cluster-ran")
    const reason = await failure(Kernel.ref(dataKernel(file), "f"))
    assert.equal(reason?._tag, "ModuleRefused", `got ${reason?._tag}: ${reason?.message}`)
    assert.match(reason!.message, /data:text\/javascript.* refused .*a data: URL/)
    assert.equal(existsSync(file), false, "the worker process ran the data: module")
  })

})

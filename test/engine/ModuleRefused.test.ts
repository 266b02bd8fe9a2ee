/**
 * Issue 32 item 4: workers import kernel modules only from `file:` URLs inside the
 * folders they allow (src/engine/internal/kernels.ts, `checkModuleUrl`). A `data:` URL
 * kernel, whose code exists on no disk, is refused with `ModuleRefused` naming the URL,
 * on worker threads and in-process (a local cluster's worker processes:
 * ModuleRefusedCluster.test.ts), and its code never runs (the file it would write is not written); `http:` and `node:` URLs too.
 */
import assert from "node:assert/strict"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { pathToFileURL } from "node:url"
import { Effect, Exit, type Layer } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { ALLOW_MODULES_ENV, checkModuleUrl, ModuleRefused, moduleRoots } from "../../src/engine/internal/kernels.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-refused-"))
after(() => rmSync(dir, { recursive: true, force: true }))

/** A data: URL module that writes `file` when imported, and exports `f`. */
const dataKernel = (file: string) =>
  `data:text/javascript,import{writeFileSync}from"node:fs";writeFileSync(${JSON.stringify(file)},"ran");export const f=()=>1`

/** The compute's failure reason, or undefined when it succeeded. */
const failure = async (layer: Layer.Layer<Executor.Executor, unknown>, kernel: Kernel.KernelRef) => {
  const g = TaskGraph.makeUnsafe([{ key: "t-0", kernel, args: [] }])
  const exit = await Effect.runPromise(Effect.exit(Engine.compute(g).pipe(Effect.provide(layer))))
  if (Exit.isSuccess(exit)) return undefined
  const f = exit.cause.reasons.find((r) => r._tag === "Fail")
  return f?._tag === "Fail" ? (f.error as EngineError.ComputeError).reason : undefined
}

describe("module URLs workers import", () => {
  it("issue 32 item 4: checkModuleUrl takes file: URLs inside the allowed folders and refuses the rest, naming the URL", () => {
    const ok = new URL("../fixtures/kernels/basic.ts", import.meta.url).href
    assert.equal(checkModuleUrl(ok, "kernel"), ok)
    const refused = (url: string, why: RegExp) =>
      assert.throws(() => checkModuleUrl(url, "kernel"), (e: unknown) => e instanceof ModuleRefused && e.message.includes(url.slice(0, 40)) && why.test(e.why))
    refused("data:text/javascript,export const f=()=>1", /a data: URL/)
    refused("http://127.0.0.1:1/k.js", /a http: URL/)
    refused("https://example.com/k.js", /a https: URL/)
    refused("node:fs", /a node: URL/)
    refused("fs", /not a URL/)
    refused("file://other-host/k.ts", /another host/)
    refused(pathToFileURL(join(dir, "k.ts")).href, /outside the folders this worker may import from/)
    refused(new URL("../../../../../etc/passwd", import.meta.url).href, /outside the folders/)
    // the working directory, Tessera's install and the main script's folder are allowed
    assert.ok(moduleRoots().includes(process.cwd()))
  })

  it("issue 32 item 4: a data: URL kernel on worker threads fails with ModuleRefused naming the URL; its code never runs", async () => {
    const file = join(dir, "threads-ran")
    const reason = await failure(Executor.layerWorkers({ workers: 1 }), Kernel.ref(dataKernel(file), "f"))
    assert.equal(reason?._tag, "ModuleRefused", `got ${reason?._tag}: ${reason?.message}`)
    assert.match(reason!.message, /task "t-0": kernel module data:text\/javascript,import\{writeFileSync\}.* refused \(kernel "f"\): a data: URL/)
    assert.equal(existsSync(file), false, "the data: module's code ran")
  })

  it("issue 32 item 4: the in-process executor refuses a data: URL kernel the same way", async () => {
    const file = join(dir, "sync-ran")
    const reason = await failure(Executor.layerSync, Kernel.ref(dataKernel(file), "f"))
    assert.equal(reason?._tag, "ModuleRefused")
    assert.equal(existsSync(file), false)
  })

  it("issue 32 item 4: a folder allowed by Executor.allowModules reaches worker threads started after", async () => {
    const { writeFileSync } = await import("node:fs")
    const kdir = mkdtempSync(join(dir, "k-"))
    writeFileSync(join(kdir, "k.mjs"), "export const seven = () => 7\n")
    const kernel = Kernel.ref(pathToFileURL(join(kdir, "k.mjs")).href, "seven")
    const before = process.env[ALLOW_MODULES_ENV]
    try {
      assert.equal((await failure(Executor.layerWorkers({ workers: 1 }), kernel))?._tag, "ModuleRefused")
      Executor.allowModules([kdir])
      assert.equal(await failure(Executor.layerWorkers({ workers: 1 }), kernel), undefined)
    } finally {
      if (before === undefined) delete process.env[ALLOW_MODULES_ENV]
      else process.env[ALLOW_MODULES_ENV] = before
    }
  })
})

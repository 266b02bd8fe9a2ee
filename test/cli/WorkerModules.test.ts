/**
 * Issue 32 item 4 through the command line: a `tessera worker` imports kernel modules
 * only from its working directory, Tessera's install and the folders of
 * `--allow-modules`: a kernel file elsewhere fails the task with `ModuleRefused` naming
 * the file (and is not imported), and runs once its folder is allowed.
 */
import assert from "node:assert/strict"
import type { ChildProcess } from "node:child_process"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { pathToFileURL } from "node:url"
import { Effect, Exit, ManagedRuntime } from "effect"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { startTessera } from "./tesseraProcess.ts"

const dirs: Array<string> = []
const procs: Array<ChildProcess> = []
after(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL")
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const tempDir = () => dirs[dirs.push(mkdtempSync(join(tmpdir(), "tessera-worker-modules-"))) - 1]!

/** A `tessera` process in `cwd`, and a way to stop it (SIGTERM) and wait for its exit. */
const start = (args: ReadonlyArray<string>, cwd: string) => {
  const t = startTessera(procs, args, { cwd })
  const stop = async () => {
    if (t.p.exitCode === null && t.p.signalCode === null) t.p.kill("SIGTERM")
    await t.exited
  }
  return { ...t, stop }
}

describe("a tessera worker's modules", { timeout: 240_000 }, () => {
  it("issue 32 item 4: a tessera worker refuses a kernel file outside its folders (ModuleRefused naming it), and runs it once --allow-modules names its folder", async () => {
    const kernels = tempDir()
    writeFileSync(join(kernels, "k.mjs"), `import { writeFileSync } from "node:fs"\nwriteFileSync(${JSON.stringify(join(kernels, "imported"))}, "")\nexport const seven = () => 7\n`)
    const kernel = Kernel.ref(pathToFileURL(join(kernels, "k.mjs")).href, "seven")
    const graph = TaskGraph.makeUnsafe([{ key: "seven-0", kernel, args: [] }])
    const sched = start(["scheduler", "--port", "0"], tempDir())
    const scheduler = (await sched.wait(/tessera worker --scheduler (127\.0\.0\.1:\d+)/, 60))[1]!
    const compute = async () => {
      const rt = ManagedRuntime.make(Executor.layerCluster({ scheduler, minWorkers: 1 }))
      try {
        return await rt.runPromise(Effect.exit(Engine.compute(graph)))
      } finally {
        await rt.dispose()
      }
    }

    const plain = start(["worker", "--scheduler", scheduler, "--listen", "127.0.0.1:0"], tempDir())
    await plain.wait(/tessera worker at /, 60)
    const refused = await compute()
    await plain.stop()
    assert.ok(Exit.isFailure(refused), "the kernel outside the worker's folders ran")
    const f = refused.cause.reasons.find((r) => r._tag === "Fail")
    const reason = f?._tag === "Fail" ? (f.error as EngineError.ComputeError).reason : undefined
    assert.equal(reason?._tag, "ModuleRefused", reason?.message)
    assert.ok(reason!.message.includes(join(kernels, "k.mjs")) && /outside the folders this worker may import from/.test(reason!.message), reason!.message)
    assert.equal(existsSync(join(kernels, "imported")), false, "the refused module was imported")

    const allowed = start(["worker", "--scheduler", scheduler, "--listen", "127.0.0.1:0", "--allow-modules", kernels], tempDir())
    await allowed.wait(/tessera worker at /, 60)
    const ran = await compute()
    await allowed.stop()
    assert.ok(Exit.isSuccess(ran), String(Exit.isFailure(ran) ? ran.cause : ""))
    assert.equal(ran.value.get("seven-0"), 7)
  })
})

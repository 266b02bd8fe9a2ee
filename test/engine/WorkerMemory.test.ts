/**
 * Issue 32 item 7: worker memory is bounded including ArrayBuffers, which the workers' V8
 * heap limit does not cover (a kernel allocating typed arrays once grew to 6 GB). In a
 * child process with small limits, a kernel that keeps allocating 64 MiB typed arrays
 * under `maxWorkerMemory` of 256 MiB fails with `WorkerMemoryExceeded` naming the limit
 * (not an OOM crash of the process), the worker is replaced (the next compute on the
 * same executor runs), and a kernel that only makes 64 MiB of garbage at a time passes.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"

const src = (f: string) => JSON.stringify(new URL(`../../src/engine/${f}`, import.meta.url).href)
const kernels = (f: string) => JSON.stringify(new URL(`../fixtures/kernels/${f}`, import.meta.url).href)

describe("WorkerMemory", () => {
  it("issue 32 item 7: a kernel holding 64 MiB typed arrays in a loop fails with WorkerMemoryExceeded at a 256 MiB maxWorkerMemory, in a child with a small heap; the worker is replaced", { timeout: 120_000 }, () => {
    const script = `
      import { ManagedRuntime } from ${JSON.stringify(import.meta.resolve("effect"))}
      import * as Engine from ${src("Engine.ts")}
      import * as Executor from ${src("Executor.ts")}
      import * as Kernel from ${src("Kernel.ts")}
      import * as TaskGraph from ${src("TaskGraph.ts")}
      const hoard = Kernel.ref(${kernels("hoard.ts")}, "hoard")
      const churn = Kernel.ref(${kernels("hoard.ts")}, "churn")
      const constant = Kernel.ref(${kernels("basic.ts")}, "constant")
      const rt = ManagedRuntime.make(Executor.layerWorkers({ workers: 1, maxWorkerMemory: 256 * 2 ** 20 }))
      const run = async (specs) => {
        const exit = await rt.runPromiseExit(Engine.compute(TaskGraph.makeUnsafe(specs)))
        const e = exit._tag === "Failure" ? exit.cause.reasons?.[0]?.error : undefined
        return { tag: exit._tag, reason: e?.reason?._tag, message: e?.message, limit: e?.reason?.limit, held: e?.reason?.held }
      }
      // at most 1.5 GiB if the limit did nothing: the kernel then returns and the test fails, the machine is spared
      console.log(JSON.stringify(await run([{ key: "hoard-0", kernel: hoard, args: [1536] }])))
      console.log(JSON.stringify(await run([{ key: "after-0", kernel: constant, args: [7] }])))
      console.log(JSON.stringify(await run([{ key: "churn-0", kernel: churn, args: [6] }])))
      await rt.dispose()
    `
    const dir = mkdtempSync(join(tmpdir(), "tessera-worker-memory-"))
    const file = join(dir, "hoard.mjs")
    writeFileSync(file, script)
    const r = spawnSync(process.execPath, ["--max-old-space-size=128", file], {
      encoding: "utf8",
      timeout: 100_000,
      cwd: new URL("../..", import.meta.url).pathname
    })
    rmSync(dir, { recursive: true, force: true })
    assert.equal(r.signal, null, `the child was killed (${r.signal})\n${r.stderr}`)
    assert.equal(r.status, 0, r.stderr)
    const [hoard, afterwards, churn] = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as { tag: string; reason?: string; message?: string; limit?: number; held?: number })
    assert.equal(hoard?.tag, "Failure", r.stdout)
    assert.equal(hoard?.reason, "WorkerMemoryExceeded", r.stdout)
    assert.equal(hoard?.limit, 256 * 2 ** 20)
    assert.ok((hoard?.held ?? 0) > 256 * 2 ** 20 && (hoard?.held ?? 0) < 1536 * 2 ** 20, `held ${hoard?.held}`)
    assert.match(hoard?.message ?? "", /^task "hoard-0": kernel hoard \(.*hoard\.ts\) held \d+ MiB of ArrayBuffers on its worker thread, over maxWorkerMemory \(256 MiB\); the worker was replaced$/)
    assert.equal(afterwards?.tag, "Success", `the replaced worker runs the next compute: ${r.stdout}`)
    assert.equal(churn?.tag, "Success", `64 MiB of garbage at a time is not held: ${r.stdout}`)
  })
})

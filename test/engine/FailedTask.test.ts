import assert from "node:assert/strict"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Exit } from "effect"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import { kernelFrame } from "../../src/engine/EngineError.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import type { StageFailed } from "../../src/dsl/DslError.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import { FileDatabase, readPromise } from "../../src/profiler/FileDatabase.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { outcome } from "../../src/cli/errors.ts"
import { disposeAll, k, runtime } from "./graphs.ts"

const outputs = new URL("../fixtures/kernels/outputs.ts", import.meta.url).href
const outputsPath = new URL(outputs).pathname
const dir = mkdtempSync(join(tmpdir(), "tessera-failed-"))
after(async () => {
  await disposeAll()
  rmSync(dir, { recursive: true, force: true })
})

const block = Chunk.make("float64", [2], Float64Array.of(1, 2))
/** Two tasks that succeed, one whose kernel throws (outputs.ts line 34), one after it. */
const failing = () =>
  TaskGraph.makeUnsafe([
    { key: "ok-0", kernel: k("constant"), args: [1] },
    { key: "ok-1", kernel: k("constant"), args: [2] },
    { key: "boom", kernel: Kernel.ref(outputs, "explode"), args: [block], stage: "signedLog" },
    { key: "after", kernel: k("sum"), args: [TaskGraph.ref("boom"), 1] }
  ])

const failure = async <A>(workers: number, e: Effect.Effect<A, unknown, never> | ((w: number) => Promise<Exit.Exit<A, unknown>>)) => {
  const exit = typeof e === "function" ? await e(workers) : await Effect.runPromiseExit(e)
  assert.ok(Exit.isFailure(exit))
  const f = exit.cause.reasons.find((r) => r._tag === "Fail") as { error: unknown } | undefined
  assert.ok(f !== undefined, String(exit.cause))
  return f.error
}

const erred = (events: ReadonlyArray<TraceEvent>) => events.filter((e) => e.name === "Compute" && e.args.state === "erred")

describe("A failed task", () => {
  for (const [label, workers] of [["sync runner", 0], ["worker threads", 2]] as const) {
    for (const kind of ["memory", "file"] as const) {
      it(`issue 31 item 9: is recorded in the trace as erred, with its error and the worker-side stack naming the kernel's file (${label}, ${kind} database)`, async () => {
        const db = kind === "file" ? new FileDatabase(join(dir, `${workers}.msgpack`)) : MemoryDatabase.make()
        const err = await failure(workers, (w) =>
          runtime(w).runPromiseExit(Engine.compute(failing(), { callbacks: [Trace.callbacks(db)] }))
        ) as EngineError.ComputeError
        db.close()
        const events = db instanceof FileDatabase ? (await readPromise(db.path)).events : db.list
        assert.equal(err.reason._tag, "KernelFailed")
        const reason = err.reason as EngineError.KernelFailed
        // one line naming the task, the kernel and the kernel's file:line:column
        assert.equal(reason.at, `${outputsPath}:34:9`)
        assert.equal(
          err.message,
          `task "boom": kernel explode (${outputs}) threw at ${outputsPath}:34:9: kernel exploded on purpose`
        )
        assert.match(reason.stack, /RangeError: kernel exploded on purpose\n\s+at explode \(file:.*outputs\.ts:34:9\)/)
        const bad = erred(events)
        assert.equal(bad.length, 1, `one erred Compute event: ${JSON.stringify(events.map((e) => [e.name, e.args.key, e.args.state]))}`)
        const e = bad[0]!
        assert.equal(e.args.key, "boom")
        assert.equal(e.args.stage, "signedLog")
        assert.equal(e.args.error, err.message)
        assert.equal(e.args.traceback, reason.stack)
        assert.ok(e.timestamp > 1e9 && e.duration! >= 0 && e.duration! < 60, `${e.timestamp} ${e.duration}`)
        assert.ok(!events.some((x) => x.name === "Compute" && x.args.key === "after"), "a task after the failure never ran")
      })
    }

    it(`issue 31 item 9: a kernel output that is not what was declared is an erred task in the trace too (${label})`, async () => {
      const db = MemoryDatabase.make()
      const g = TaskGraph.makeUnsafe([
        { key: "half", kernel: Kernel.ref(outputs, "halfRows"), args: [block], output: { dtype: "float64", shape: [2] } }
      ])
      const err = await failure(workers, (w) => runtime(w).runPromiseExit(Engine.compute(g, { callbacks: [Trace.callbacks(db)] }))) as EngineError.ComputeError
      assert.equal(err.reason._tag, "BadOutput")
      const [e] = erred(db.list)
      assert.equal(e?.args.key, "half")
      assert.equal(e?.args.error, err.message)
      assert.match(String(e?.args.error), /returned a Chunk of float64 \[1\], but the task declared a Chunk of float64 \[2\]/)
    })
  }

  it("issue 31 item 9: an argument that cannot be sent names the argument, its type and the stage, not a kernel that threw", async () => {
    const X = CA.fromChunks("float64", [block, block])
    const p = Pipeline.make("p", { log: () => {} })
    // the stage's tasks take their stage from the pipeline (issue 31 item 10): no `stage:` here
    p.add(Pipeline.stage("signedLog", ({ X }: { X: CA.ChunkedArray }) =>
      CA.compute(CA.mapBlocks(X, { name: "signed_log", kernel: Kernel.ref(outputs, "withExtra"), extra: [(x: number) => x], dtype: "float64" }))), { X })
    const err = await failure(2, () => runtime(2).runPromiseExit(p.run())) as StageFailed
    assert.equal(err._tag, "StageFailed")
    const ce = err.error as EngineError.ComputeError
    assert.equal(ce.reason._tag, "ArgumentNotSendable")
    const reason = ce.reason as EngineError.ArgumentNotSendable
    assert.equal(reason.stage, "signedLog")
    assert.equal(reason.argument, 1)
    assert.equal(reason.what, "a function")
    assert.match(ce.message, /^stage "signedLog": task "\('signed_log-[0-9a-f]{8}', 0\)": argument 2 of kernel withExtra \(.*\) \(a function\) cannot be sent to a worker, so the task was not run/)
    assert.doesNotMatch(ce.message, /threw/)
  })

  it("issue 31 item 9: --verbose shows the worker-side stack of a kernel that threw inside a pipeline stage", async () => {
    const X = CA.fromChunks("float64", [block])
    const p = Pipeline.make("p", { log: () => {} })
    p.add(Pipeline.stage("signedLog", ({ X }: { X: CA.ChunkedArray }) =>
      CA.compute(CA.mapBlocks(X, { name: "signed_log", kernel: Kernel.ref(outputs, "explode"), dtype: "float64" }))), { X })
    const exit = await runtime(2).runPromiseExit(p.run())
    const quiet = outcome(exit, ["run"], false)
    assert.equal(quiet.code, 1)
    assert.equal(quiet.stderr.split("\n").length, 2, quiet.stderr)
    assert.ok(quiet.stderr.includes(`threw at ${outputsPath}:34:9`), quiet.stderr)
    const verbose = outcome(exit, ["run"], true)
    assert.match(verbose.stderr, /RangeError: kernel exploded on purpose\n\s+at explode \(file:.*outputs\.ts:34:9\)/)
  })

  it("kernelFrame finds the kernel's frame, else the first frame outside the engine", () => {
    const stack = [
      "TypeError: x",
      "    at Float64Array.set (<anonymous>)",
      "    at helper (file:///home/u/lib/help.ts:3:5)",
      "    at signedLog (file:///home/u/p/kernels.ts:12:9)",
      "    at runBatch (file:///work/main/src/engine/internal/worker.ts:140:20)"
    ].join("\n")
    assert.equal(kernelFrame(stack, "file:///home/u/p/kernels.ts"), "/home/u/p/kernels.ts:12:9")
    assert.equal(kernelFrame(stack, "file:///elsewhere.ts"), "/home/u/lib/help.ts:3:5")
    assert.equal(kernelFrame("Error: x\n    at runBatch (file:///a/src/engine/internal/worker.ts:1:2)", "file:///k.ts"), undefined)
    assert.equal(kernelFrame("no stack", undefined), undefined)
  })
})

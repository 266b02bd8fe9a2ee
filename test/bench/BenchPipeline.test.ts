import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import type { Layer } from "effect"
import * as Bench from "../../src/profiler/Bench.ts"
import * as Executor from "../../src/engine/Executor.ts"
import slowable from "./fixtures/slowable.ts"

const main = new URL("../../src/cli/main.ts", import.meta.url).pathname
const fixture = new URL("./fixtures/slowable.ts", import.meta.url).pathname
const dir = mkdtempSync(join(tmpdir(), "tessera-bench-test-"))
after(() => rmSync(dir, { recursive: true, force: true }))

const tessera = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [main, ...args], { encoding: "utf8", env: { ...process.env, TESSERA_TEST_ROUNDS: "300", ...env }, timeout: 240_000 })

describe("Bench.pipeline (tinybench)", () => {
  it("issue 36: runs a pipeline through tinybench and records every stage's and function's task time per iteration", async () => {
    process.env.TESSERA_TEST_ROUNDS = "300"
    const r = await Bench.pipeline(slowable(), { executor: Executor.layerWorkers({ workers: 2 }) as Layer.Layer<Executor.Executor>, iterations: 3, time: 0, warmupIterations: 1 })
    delete process.env.TESSERA_TEST_ROUNDS
    assert.equal(r.task.result.state, "completed")
    const latency = (r.task.result as { latency: { samplesCount?: number; p50: number; mean: number } }).latency
    assert.ok(latency.mean > 0 && latency.p50 > 0)
    const n = r.stages.get("refine")!.length
    assert.ok(n >= 3, `${n} iterations recorded`)
    assert.deepEqual([...r.stages.keys()].sort(), ["prepare", "refine"])
    assert.deepEqual([...r.functions.keys()].sort(), ["prepare/prepare", "refine/sharpen", "refine/smooth"])
    assert.equal(r.functions.get("refine/sharpen")!.length, n)
    assert.equal(r.tasks.get("refine/sharpen"), 8)
    // a stage's task time is its functions' together
    r.stages.get("refine")!.forEach((s, i) => assert.ok(Math.abs(s - r.functions.get("refine/sharpen")![i]! - r.functions.get("refine/smooth")![i]!) < 1e-9))
  })
})

describe("tessera bench FILE and tessera diff (command line)", () => {
  it("issue 36: bench saves comparable results; diff flags nothing of a result against itself, exits 1 under --fail-on regression naming what got slower, and refuses traces with nothing in common", () => {
    // two interleaved series of the test pipeline: sharpen doing 3x the work in the second (an option of the test pipeline)
    const b = tessera(["bench", fixture, "--rounds", "5", "--warmup", "1", "--workers", "2", "--env", "TESSERA_TEST_SLOWDOWN=", "--env", "TESSERA_TEST_SLOWDOWN=sharpen:3", "--save", join(dir, "ab"), "--log-level", "warn"], { TESSERA_TEST_ROUNDS: "600" })
    assert.equal(b.status, 0, b.stderr)
    assert.match(b.stdout, /slowable\[TESSERA_TEST_SLOWDOWN=\] \(.*slowable\.ts, TESSERA_TEST_SLOWDOWN=\): 5 rounds, warm, after 1 warm-up/)
    assert.match(b.stdout, /wall time: median [\d.]+ s, 95% interval [\d.]+\.\.[\d.]+ s/)
    assert.match(b.stdout, /sharpen \(stage refine\)\s+8\s/)
    assert.match(b.stdout, /== slowable\[TESSERA_TEST_SLOWDOWN=sharpen:3\] against slowable\[TESSERA_TEST_SLOWDOWN=\] ==/)
    const base = join(dir, "ab-slowable_TESSERA_TEST_SLOWDOWN_.json")
    const slow = join(dir, "ab-slowable_TESSERA_TEST_SLOWDOWN_sharpen_3_.json")
    const saved = JSON.parse(readFileSync(base, "utf8"))
    assert.equal(saved.format, "tessera-bench")
    assert.equal(saved.series[0].runs.length, 5)
    for (const k of ["cpu", "cores", "memoryBytes", "node", "loadAverageBefore", "loadAverageAfter"]) assert.ok(k in saved.machine, k)
    assert.ok("commit" in saved.settings && "tessera" in saved.settings && saved.settings.mode === "warm")
    // a result against itself: nothing
    const same = tessera(["diff", "-d", base, "--baseline", base, "--fail-on", "regression", "--json"])
    assert.equal(same.status, 0, same.stderr)
    const j = JSON.parse(same.stdout)
    assert.equal(j.regression, false)
    assert.equal(j.mode, "runs")
    assert.ok(j.groups.every((g: { verdict: string }) => g.verdict === "same"))
    // the slowed function: exit 1, named
    const d = tessera(["diff", "-d", slow, "--baseline", base, "--fail-on", "regression", "--measure", "cpu"])
    assert.equal(d.status, 1, d.stdout + d.stderr)
    assert.match(d.stdout, /sharpen \(stage refine\)\s+CPU time .* slower/)
    assert.match(d.stderr, /^tessera diff: --fail-on regression: \d+ significantly slower: .*sharpen \(stage refine\)/m)
    // a DASF trace (no stage, other functions) against the test pipeline: refused with a sentence
    const dasf = new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url).pathname
    const r = tessera(["diff", "-d", dasf, "--baseline", base])
    assert.equal(r.status, 1, r.stdout + r.stderr)
    assert.match(r.stderr, /^tessera diff: NEW and the baseline have no stage or function in common: they are not runs of one pipeline$/m)
  })
})

/**
 * The seeded-fault gallery (examples/faults): each pipeline runs here, in this process,
 * profiled on a pool of two worker threads booted once; its diagnosis must name the
 * fault as its top finding (or among its findings, where two faults interact), and the
 * clean pipelines must get no finding of high severity. A run whose expectation fails is
 * run once more (a loaded machine can stall a run, and the diagnosis then names the
 * stall first); both runs' findings are in the failure's message. The precision and
 * recall over the gallery (docs/diagnosis.md) are printed at the end, over the last runs.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import * as ChunkedArray from "../../src/dsl/ChunkedArray.ts"
import type { ThresholdSettings } from "../../src/analysis/Diagnose.ts"
import { readHostMemory } from "../../src/analysis/diagnosis/HostMemory.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as GpuKernels from "../../src/kernels/gpu/GpuKernels.ts"
import { type Layer, ManagedRuntime } from "effect"
import * as Elementwise from "../../src/dsl/Elementwise.ts"
import { skip as gpuSkip } from "../gpu/gpu.ts"
import { closePool, quiet, runAndDiagnose, rulesOf, sharedPool, show } from "./gallery.ts"
import { dataset, even, K } from "../../examples/faults/common.ts"

interface Case {
  readonly fault: string
  /** the rule expected first ("present": anywhere among the findings) */
  readonly rule: string
  readonly where: "top" | "present"
  /** on a pool of its own, booted in the run (the leak keeps its chunks in its workers for ever) */
  readonly fresh?: boolean
  /** thresholds, decided just before the run */
  readonly thresholds?: (files: ReadonlyArray<string>) => Promise<ThresholdSettings>
  /** on a GPU executor of its own (one CPU worker, one GPU worker, booted before the run); skipped without a WebGPU adapter */
  readonly gpu?: boolean
}

// the memory hog's bar: a quarter GiB above the least the host had in use during the run
// (the run holds ~1 GiB at its peak; the default bar, 80% of the host, is not reached on
// purpose). The least, not the first: other processes that let memory go during the run
// (another test's compiler ending) lower the peak as much as the least
const aboveLeast = async (files: ReadonlyArray<string>): Promise<ThresholdSettings> => {
  const hosts = await readHostMemory(files)
  assert.ok(hosts.length > 0, "the run's resource samples carry the host's memory")
  const h = hosts[0]!
  return { memoryPressure: Math.min(1, (Math.min(...h.used) + 2 ** 28) / h.total) }
}

const cases: ReadonlyArray<Case> = [
  { fault: "sync-io", rule: "io-bound", where: "top" },
  { fault: "tiny-chunks", rule: "tasks-too-small", where: "top" },
  { fault: "skewed-chunk", rule: "data-skew", where: "top" },
  { fault: "sleepy-chunk", rule: "straggler", where: "top" },
  { fault: "single-chunk", rule: "too-few-tasks", where: "top" },
  { fault: "many-computes", rule: "driver-bound", where: "top" },
  { fault: "serial-fold", rule: "serial-stage", where: "top" },
  { fault: "alloc-heavy", rule: "gc-pressure", where: "top" }, // late: it leaves garbage behind
  { fault: "leak", rule: "memory-growth", where: "present", fresh: true },
  // on the shared pool: the worker that dies ran tasks of the first stage, so its
  // replacement's start-up is seen as one (a fresh pool's boot would compete with it)
  { fault: "worker-killed", rule: "worker-lost", where: "top" },
  { fault: "memory-hog", rule: "memory-pressure", where: "present", fresh: true, thresholds: aboveLeast },
  { fault: "gpu-readback", rule: "host-device-copies", where: "top", gpu: true }
]

// the GPU chain's executor (one CPU worker, one GPU worker), booted and warmed before its
// profiled run as the shared pool is: opening a device (a second or more on llvmpipe) is
// start-up, and would outrank the copies on a loaded machine
let gpu: ManagedRuntime.ManagedRuntime<Executor.Executor, unknown> | undefined
const gpuPool = async (): Promise<ManagedRuntime.ManagedRuntime<Executor.Executor, unknown>> => {
  if (gpu !== undefined) return gpu
  gpu = ManagedRuntime.make(Executor.layerGpu({ workers: 1, kernels: GpuKernels.kernels }) as Layer.Layer<Executor.Executor, unknown>)
  await gpu.runPromise(ChunkedArray.compute(Elementwise.mul(dataset("gpu_warm", even(2, 64), 2), 2) as ChunkedArray.ChunkedArray<"float64">))
  return gpu
}

const scratch = mkdtempSync(join(tmpdir(), "tessera-gallery-"))
const ioFile = join(scratch, "sync-io.bin") // the file sync-io's kernel reads

// per fault: the rules it fired (for precision and recall over the gallery)
const fired = new Map<string, ReadonlyArray<string>>()

describe("issue 35: the seeded-fault gallery", { timeout: 240_000 }, () => {
  before(async () => {
    // boot the pool before any profiled run (each run's trace shows its pipeline only),
    // and let every worker import the gallery's kernel module (a first import on a loaded
    // machine takes a while, and would show as a stalled worker in the first run)
    await sharedPool().runPromise(ChunkedArray.compute(dataset("warm", even(32, 10), 2, K.fillAndWork, [0.01])))
  })
  after(async () => {
    await closePool()
    await gpu?.dispose()
    rmSync(scratch, { recursive: true, force: true })
    const expected = new Map(cases.map((c) => [c.fault, c.rule]))
    let tp = 0
    let fp = 0
    let fn = 0
    for (const [fault, rules] of fired) {
      const want = expected.get(fault)
      const high = new Set(rules)
      if (want !== undefined) (high.has(want) ? tp++ : fn++)
      for (const r of high) if (r !== want) fp++
    }
    const precision = tp / Math.max(1, tp + fp)
    const recall = tp / Math.max(1, tp + fn)
    for (const [fault, rules] of fired) {
      const extra = rules.filter((r) => r !== expected.get(fault))
      if (extra.length > 0) console.log(`gallery: ${fault}: also ${extra.join(", ")}`)
    }
    console.log(`gallery: ${fired.size} runs, precision ${(100 * precision).toFixed(0)}% (${tp} of ${tp + fp} medium/high findings expected), recall ${(100 * recall).toFixed(0)}% (${tp} of ${tp + fn} faults found)`)
  })

  it("issue 35: a clean pipeline (real work per row, 48 chunks) gets no high-severity finding", async () => {
    const m = (await import("../../examples/faults/clean.ts")) as { default: (o: object) => never }
    let d = await runAndDiagnose("clean", () => m.default(quiet))
    const firstTry = show(d)
    if (!d.clean) {
      console.log(`gallery: clean: run again; the first run's findings:\n${firstTry}`)
      d = await runAndDiagnose("clean", () => m.default(quiet)) // once more, as below
    }
    assert.ok(d.clean, `${show(d)}\n(first run:\n${firstTry})`)
    fired.set("clean", d.findings.filter((f) => f.severity !== "low").map((f) => f.rule))
    assert.ok(d.clean, show(d))
    assert.deepEqual(d.findings.filter((f) => f.severity === "high"), [], show(d))
  })

  for (const c of cases) {
    it(`issue 35: ${c.fault} is diagnosed as ${c.rule}${c.where === "top" ? " first" : ""}`, { skip: c.gpu === true ? gpuSkip : false }, async () => {
      const m = (await import(`../../examples/faults/${c.fault}.ts`)) as { default: (o: object) => never }
      const runtime = c.gpu === true ? await gpuPool() : undefined
      const run = () =>
        runAndDiagnose(c.fault, () => m.default({ ...quiet, file: ioFile }), {
          ...(c.fresh === true ? { executor: Executor.layerWorkers({ workers: 2 }) } : {}),
          ...(runtime !== undefined ? { runtime } : {}),
          ...(c.thresholds !== undefined ? { thresholds: c.thresholds } : {})
        })
      const ok = (x: Awaited<ReturnType<typeof run>>) => (c.where === "top" ? rulesOf(x)[0] === c.rule : rulesOf(x).includes(c.rule))
      let d = await run()
      // once more where a loaded machine stalled the run (another job took the cores):
      // the diagnosis then rightly names the stall first; the first run's findings are shown
      const firstTry = show(d)
      if (!ok(d)) {
        console.log(`gallery: ${c.fault}: run again; the first run's findings:\n${firstTry}`)
        d = await run()
      }
      fired.set(c.fault, d.findings.filter((f) => f.severity !== "low").map((f) => f.rule))
      const rules = rulesOf(d)
      const why = `${show(d)}\n(first run:\n${firstTry})`
      if (c.where === "top") assert.equal(rules[0], c.rule, why)
      else assert.ok(rules.includes(c.rule), why)
      const f = d.findings.find((x) => x.rule === c.rule)!
      assert.ok(f.message.length > 0 && f.fix.length > 0 && f.assumptions.length > 0)
      assert.ok(f.evidence.end >= f.evidence.start, "an evidence range")
    })
  }

})

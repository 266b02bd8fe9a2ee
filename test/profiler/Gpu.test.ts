import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect } from "effect"
import fc from "fast-check"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import { nvidiaSmi, parseNvidiaSmi } from "../../src/profiler/internal/gpu.ts"
import { HostSampler } from "../../src/profiler/internal/hostSampler.ts"

const MiB = 1024 * 1024
// nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used --format=csv,noheader,nounits
// prints one such line per GPU (utilization %, memory MiB)
const one = "0, GPU-8f6c2a1e-3b7d-4c55-9e21-0a1b2c3d4e5f, 37, 1024\n"
const four = [
  "0, GPU-aaaaaaaa-0000-0000-0000-000000000000, 10, 100",
  "1, GPU-bbbbbbbb-0000-0000-0000-000000000000, 20, 200",
  "2, GPU-cccccccc-0000-0000-0000-000000000000, [N/A], 300",
  "3, GPU-dddddddd-0000-0000-0000-000000000000, 90, [Not Supported]",
  ""
].join("\n")

describe("Gpu", () => {
  it("parses one GPU's line into utilization % and memory bytes", () => {
    assert.deepEqual(parseNvidiaSmi(one, undefined), { utilization: 37, memoryUsed: 1024 * MiB, devices: 1 })
  })

  it("averages utilization and sums memory over every GPU; fields nvidia-smi cannot report count as 0", () => {
    assert.deepEqual(parseNvidiaSmi(four, undefined), { utilization: 30, memoryUsed: 600 * MiB, devices: 4 })
    assert.deepEqual(parseNvidiaSmi(four.replaceAll("\n", "\r\n"), undefined), { utilization: 30, memoryUsed: 600 * MiB, devices: 4 })
  })

  it("counts only the GPUs CUDA_VISIBLE_DEVICES names, by index or UUID prefix, up to the first invalid entry", () => {
    assert.deepEqual(parseNvidiaSmi(four, "1"), { utilization: 20, memoryUsed: 200 * MiB, devices: 1 })
    assert.deepEqual(parseNvidiaSmi(four, "3,0"), { utilization: 50, memoryUsed: 100 * MiB, devices: 2 })
    assert.deepEqual(parseNvidiaSmi(four, "GPU-bbbb,GPU-cccccccc"), { utilization: 10, memoryUsed: 500 * MiB, devices: 2 })
    assert.deepEqual(parseNvidiaSmi(four, "1,foo,0"), { utilization: 20, memoryUsed: 200 * MiB, devices: 1 })
    assert.deepEqual(parseNvidiaSmi(four, ""), { utilization: 0, memoryUsed: 0, devices: 0 })
    assert.deepEqual(parseNvidiaSmi(four, "7"), { utilization: 0, memoryUsed: 0, devices: 0 })
  })

  it("skips lines that are not GPU rows (errors, headers, blank)", () => {
    const text = "index, uuid, utilization.gpu [%], memory.used [MiB]\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n\n" + one
    assert.deepEqual(parseNvidiaSmi(text, undefined), { utilization: 37, memoryUsed: 1024 * MiB, devices: 1 })
    assert.deepEqual(parseNvidiaSmi("", undefined), { utilization: 0, memoryUsed: 0, devices: 0 })
  })

  it("never throws and always gives finite non-negative values, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.option(fc.string({ maxLength: 20 }), { nil: undefined }), (text, visible) => {
        const r = parseNvidiaSmi(text, visible)
        for (const v of [r.utilization, r.memoryUsed, r.devices]) assert.ok(Number.isFinite(v) && v >= 0)
      }),
      { numRuns: 100 }
    )
  })

  it("a sampler without a GPU reports 0 for both fields", () => {
    const s = new HostSampler({ gpu: null })
    assert.equal(s.hasGpu, false)
    const a = s.sampleUnsafe(1)
    assert.equal(a.gpu_utilization, 0)
    assert.equal(a.gpu_memory_used, 0)
  })

  it("a sampler with a GPU source reports its latest reading and keeps it when a query fails", async () => {
    let reply: string | Error = one
    const s = new HostSampler({ gpu: () => (typeof reply === "string" ? Promise.resolve(reply) : Promise.reject(reply)) })
    assert.equal(s.hasGpu, true)
    assert.equal(s.sampleUnsafe(1).gpu_utilization, 0) // nothing read yet
    await s.pollGpu()
    assert.deepEqual([s.sampleUnsafe(2).gpu_utilization, s.sampleUnsafe(2).gpu_memory_used], [37, 1024 * MiB])
    reply = new Error("nvidia-smi: driver gone")
    await s.pollGpu()
    assert.deepEqual([s.sampleUnsafe(3).gpu_utilization, s.sampleUnsafe(3).gpu_memory_used], [37, 1024 * MiB])
  })

  it("ResourceMonitor writes the GPU source's values into Resource Usage events, and 0 without a GPU", async () => {
    const withGpu = MemoryDatabase.make()
    const without = MemoryDatabase.make()
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      yield* ResourceMonitor.run(withGpu, { interval: 20, host: "g", gpu: () => Promise.resolve(one) })
      yield* ResourceMonitor.run(without, { interval: 20, host: "n", gpu: null })
      yield* Effect.sleep(100)
    })))
    const last = withGpu.list.at(-1)!
    assert.equal(last.args.gpu_utilization, 37)
    assert.equal(last.args.gpu_memory_used, 1024 * MiB)
    assert.ok(without.list.length >= 3)
    for (const e of without.list) assert.deepEqual([e.args.gpu_utilization, e.args.gpu_memory_used], [0, 0])
  })

  it("reads a real GPU through nvidia-smi where one exists", async (t) => {
    const source = nvidiaSmi()
    if (source === null) {
      t.skip("no nvidia-smi on PATH: no GPU on this machine")
      return
    }
    const text = await source()
    const r = parseNvidiaSmi(text, process.env.CUDA_VISIBLE_DEVICES)
    assert.ok(r.devices >= 1, `nvidia-smi printed: ${text}`)
    assert.ok(r.utilization >= 0 && r.utilization <= 100)
    assert.ok(r.memoryUsed >= 0)
  })
})

import assert from "node:assert/strict"
import { after, describe, it } from "node:test"
import { Effect } from "effect"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as EngineError from "../../src/engine/EngineError.ts"
import type { MemoryRecord, TaskRecord, TransferRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as Gpu from "../../src/engine/Gpu.ts"
import * as Elementwise from "../../src/kernels/elementwise.ts"
import * as GpuKernels from "../../src/kernels/gpu/GpuKernels.ts"
import * as Moments from "../../src/kernels/moments.ts"
import { chunkOf, close, cpuKernel, gpuRuntime, skip } from "./gpu.ts"

const rt = skip === false ? gpuRuntime() : null
/** Whether the GPU worker's adapter has timestamp queries. */
const timestamps = rt === null ? false : (await rt.runPromise(Effect.service(Executor.Executor))).gpus![0]!.info.timestampQuery
after(() => rt?.dispose())

const rows = 3000
const d = 2
const x = chunkOf(Float64Array.from({ length: rows * d }, (_, i) => Math.sin(i) * 5 + (i % d)), [rows, d])
const double: { readonly _tag: "Binary"; readonly op: "mul"; readonly operand: { readonly _tag: "Scalar"; readonly value: number }; readonly out: "float64" } =
  { _tag: "Binary", op: "mul", operand: { _tag: "Scalar", value: 2 }, out: "float64" }

/** x → moments (GPU) → combine (CPU) → standardize (GPU) → ×2 (GPU) → moments (GPU) → combine (CPU). */
const chain = (): TaskGraph.TaskGraph =>
  TaskGraph.makeUnsafe([
    { key: "part-0", kernel: cpuKernel("moments", "momentsPartial"), args: [x, 0] },
    { key: "combine-0", kernel: cpuKernel("moments", "momentsCombine"), args: [TaskGraph.refs(["part-0"])] },
    { key: "z-0", kernel: cpuKernel("moments", "standardize"), args: [x, TaskGraph.ref("combine-0")] },
    { key: "twice-0", kernel: cpuKernel("elementwise", "elementwise"), args: [TaskGraph.ref("z-0"), double] },
    { key: "part2-0", kernel: cpuKernel("moments", "momentsPartial"), args: [TaskGraph.ref("twice-0"), 0] },
    { key: "combine2-0", kernel: cpuKernel("moments", "momentsCombine"), args: [TaskGraph.refs(["part2-0"])] }
  ])

describe("GPU executor", { skip }, () => {
  it("says which adapter each GPU worker uses, after the CPU workers", async () => {
    const ex = await rt!.runPromise(Effect.service(Executor.Executor))
    assert.equal(ex.size, 2)
    assert.equal(ex.gpus?.length, 1)
    assert.equal(ex.gpus![0]!.worker, 1)
    assert.ok(ex.gpus![0]!.info.adapter.length > 0)
    assert.ok(["core", "compatibility"].includes(ex.gpus![0]!.info.featureLevel))
  })

  it("runs tasks with a GPU kernel on the GPU worker and the others on CPU workers, in one graph", async () => {
    const ran = new Map<string, number>()
    const out = await rt!.runPromise(Engine.compute(chain(), { keys: ["z-0", "combine2-0"], callbacks: [{ posttask: (k, _r, _g, _s, w) => ran.set(k, w) }] }))
    assert.deepEqual(Object.fromEntries(ran), { "part-0": 1, "combine-0": 0, "z-0": 1, "twice-0": 1, "part2-0": 1, "combine2-0": 0 })
    // standardized then doubled: mean 0, variance 4 per column
    const m = out.get("combine2-0") as Moments.Moments
    for (let j = 0; j < d; j++) {
      assert.ok(close(m.mean[j]!, 0, 1, 1e-5), `mean ${m.mean[j]}`)
      assert.ok(close(m.m2[j]! / m.count, 4, 4, 1e-4), `var ${m.m2[j]! / m.count}`)
    }
    const z = out.get("z-0") as Chunk.Chunk
    const want = Moments.standardize(x, Moments.momentsPartial(x, 0))
    for (let q = 0; q < want.data.length; q++) assert.ok(close(z.data[q] as number, want.data[q] as number, 5))
  })

  it("keeps GPU results on the device: a GPU task's input made by a GPU task is never uploaded, and every copy is a transfer", async () => {
    const transfers: Array<TransferRecord> = []
    const memory: Array<MemoryRecord> = []
    await rt!.runPromise(Engine.compute(chain(), { callbacks: [{ transfer: (t) => transfers.push(t), memory: (m) => memory.push(m) }] }))
    const up = transfers.filter((t) => t.direction === "host-to-device").map((t) => t.keys[0])
    const down = transfers.filter((t) => t.direction === "device-to-host").map((t) => t.keys[0])
    // x for each of the two tasks that take it as a literal argument, standardize's scale
    // vector (made on the host from the CPU-combined moments); not z-0's result for twice-0,
    // nor twice-0's for part2-0: those were on the device
    assert.deepEqual(up.sort(), ["part-0", "z-0", "z-0"])
    // the partials come back (CPU tasks combine them); z-0 and twice-0 only feed GPU tasks: they stay on the device
    assert.deepEqual(down.sort(), ["part-0", "part2-0"])
    for (const t of transfers) {
      assert.equal(t.workerId, 1)
      assert.ok(t.stop >= t.start && t.bytes > 0)
    }
    // Managed Memory of the GPU worker carries its device bytes; CPU workers' none
    assert.ok(memory.some((m) => m.workerId === 1 && (m.device ?? 0) > 0))
    assert.ok(memory.filter((m) => m.workerId === 0).every((m) => m.device === undefined))
  })

  it("reads back only what the driver takes: a chain of GPU tasks makes one device-to-host transfer, and agrees with the CPU kernels", async () => {
    const transfers: Array<TransferRecord> = []
    const spec = (op: "mul" | "add", value: number) => ({ _tag: "Binary", op, operand: { _tag: "Scalar", value }, out: "float64" }) as const
    const ops = [spec("mul", 2), spec("add", 1), spec("mul", -0.5), spec("add", 3)]
    const g = TaskGraph.makeUnsafe(ops.map((op, q) => ({
      key: `step${q}-0`,
      kernel: cpuKernel("elementwise", "elementwise"),
      args: [q === 0 ? x : TaskGraph.ref(`step${q - 1}-0`), op]
    })))
    const out = await rt!.runPromise(Engine.compute(g, { keys: ["step3-0"], callbacks: [{ transfer: (t) => transfers.push(t) }] }))
    assert.deepEqual(transfers.map((t) => [t.direction, t.keys[0], t.bytes]), [["host-to-device", "step0-0", rows * d * 4], ["device-to-host", "step3-0", rows * d * 4]])
    let want = x
    for (const op of ops) want = Elementwise.elementwise(want, op)
    const got = out.get("step3-0") as Chunk.Chunk
    assert.ok(Chunk.isChunk(got))
    for (let q = 0; q < want.data.length; q++) assert.ok(close(got.data[q] as number, want.data[q] as number, 10), `${q}: ${got.data[q]} vs ${want.data[q]}`)
  })

  it("frees a device copy when the scheduler releases its result: Managed Memory's device bytes go down, and the worker holds only what the driver took", async () => {
    const memory: Array<MemoryRecord> = []
    const g = TaskGraph.makeUnsafe([
      { key: "a-0", kernel: cpuKernel("elementwise", "elementwise"), args: [x, double] },
      { key: "b-0", kernel: cpuKernel("elementwise", "elementwise"), args: [TaskGraph.ref("a-0"), double] },
      { key: "c-0", kernel: cpuKernel("elementwise", "elementwise"), args: [TaskGraph.ref("b-0"), double] }
    ])
    // a fresh executor: nothing on its device from other tests
    const own = gpuRuntime()
    try {
      await own.runPromise(Engine.compute(g, { keys: ["c-0"], callbacks: [{ memory: (m) => memory.push(m) }] }))
      const bytes = rows * d * 4
      const released = memory.filter((m) => m.workerId === 1 && m.state === "released").map((m) => [m.key, m.device] as const)
      // a-0 is released when b-0 finishes, b-0 when c-0 does: each takes its device bytes
      // with it, and only c-0's copy (the driver's) is left
      assert.deepEqual(released.map((r) => r[0]), ["a-0", "b-0"])
      assert.equal(released[0]![1]! - released[1]![1]!, bytes, JSON.stringify(released))
      assert.equal(released[1]![1], bytes)
      // a-0 and b-0 were device copies only: no host bytes held for them
      const held = memory.filter((m) => m.workerId === 1 && m.state === "memory").map((m) => [m.key, m.bytes])
      assert.deepEqual(held, [["a-0", 0], ["b-0", 0], ["c-0", bytes * 2]])
      // the worker dropped them: a later compute's batch reports only c-0's copy and its own result's
      const later: Array<MemoryRecord> = []
      await own.runPromise(Engine.compute(TaskGraph.makeUnsafe([{ key: "e-0", kernel: cpuKernel("elementwise", "elementwise"), args: [x, double] }]), { callbacks: [{ memory: (m) => later.push(m) }] }))
      assert.equal(later.find((m) => m.workerId === 1 && m.state === "memory")!.device, 2 * bytes)
      assert.equal(Gpu.usage()!.heldBytes >= 2 * bytes, true)
    } finally {
      await own.dispose()
    }
  })

  it("reads a device copy back when the GPU kernel falls back to the CPU (moments of 70 columns)", async () => {
    const wide = chunkOf(Float64Array.from({ length: 40 * 70 }, (_, i) => Math.cos(i)), [40, 70])
    const transfers: Array<TransferRecord> = []
    const g = TaskGraph.makeUnsafe([
      { key: "w-0", kernel: cpuKernel("elementwise", "elementwise"), args: [wide, double] },
      { key: "m-0", kernel: cpuKernel("moments", "momentsPartial"), args: [TaskGraph.ref("w-0"), 0] }
    ])
    const out = await rt!.runPromise(Engine.compute(g, { keys: ["m-0"], callbacks: [{ transfer: (t) => transfers.push(t) }] }))
    const m = out.get("m-0") as Moments.Moments
    const want = Moments.momentsPartial(Elementwise.elementwise(wide, double), 0)
    assert.equal(m.count, 40)
    for (let j = 0; j < 70; j++) assert.ok(close(m.mean[j]!, want.mean[j]!, 2, 1e-5), `mean ${j}`)
    // w-0 stayed on the device until m-0's CPU fallback read it back (named as w-0's data)
    assert.deepEqual(transfers.filter((t) => t.direction === "device-to-host").map((t) => [t.keys[0], t.bytes]), [["w-0", 40 * 70 * 4]])
  })

  it("records each GPU task's kernel time (gpu_time) within its span, none for CPU tasks, and adds it to the workers' busy time", async () => {
    const ex = await rt!.runPromise(Effect.service(Executor.Executor))
    const tasks: Array<TaskRecord> = []
    const busy0 = Gpu.usage()!.busySeconds
    await rt!.runPromise(Engine.compute(chain(), { callbacks: [{ task: (t) => tasks.push(t) }] }))
    const byKey = new Map(tasks.map((t) => [t.key, t]))
    for (const k of ["part-0", "z-0", "twice-0", "part2-0"]) {
      const t = byKey.get(k)!
      assert.ok(t.gpuTime !== undefined && t.gpuTime > 0, `${k}: ${t.gpuTime}`)
      assert.ok(t.gpuTime <= t.phases.transfer[1] - t.phases.gather[0] + 1e-6, `${k}: ${t.gpuTime} within its span`)
    }
    for (const k of ["combine-0", "combine2-0"]) assert.equal(byKey.get(k)!.gpuTime, undefined, k)
    assert.ok(Gpu.usage()!.busySeconds > busy0)
    // which clock it was: the device's stamps where the adapter has them, else submit to completion
    assert.equal(typeof ex.gpus![0]!.info.timestampQuery, "boolean")
  })

  it("times kernels with timestamp queries where the adapter has them", {
    skip: skip === false && !timestamps ? "this adapter has no timestamp-query feature (llvmpipe has none): kernel times come from submit to completion, tested above" : false
  }, async () => {
    const tasks: Array<TaskRecord> = []
    await rt!.runPromise(Engine.compute(chain(), { callbacks: [{ task: (t) => tasks.push(t) }] }))
    for (const t of tasks.filter((t) => t.gpuTime !== undefined)) assert.ok(t.gpuTime! > 0 && t.gpuTime! <= t.phases.transfer[1] - t.phases.gather[0] + 1e-6, t.key)
  })

  it("finds a GPU result on the device in a later compute too (no upload)", async () => {
    const first = await rt!.runPromise(Engine.compute(chain(), { keys: ["twice-0"] }))
    const twice = first.get("twice-0") as Chunk.Chunk
    const transfers: Array<TransferRecord> = []
    const g = TaskGraph.makeUnsafe([{ key: "again-0", kernel: cpuKernel("elementwise", "elementwise"), args: [twice, double] }])
    const out = await rt!.runPromise(Engine.compute(g, { callbacks: [{ transfer: (t) => transfers.push(t) }] }))
    assert.deepEqual(transfers.map((t) => t.direction), ["device-to-host"])
    const again = out.get("again-0") as Chunk.Chunk
    for (let q = 0; q < again.data.length; q++) assert.ok(close(again.data[q] as number, 2 * (twice.data[q] as number), 10))
    // a copy of the chunk made on the host is not on the device: it is uploaded
    const copy = chunkOf(twice.data as Float64Array, twice.shape)
    const more: Array<TransferRecord> = []
    await rt!.runPromise(Engine.compute(TaskGraph.makeUnsafe([{ key: "copy-0", kernel: cpuKernel("elementwise", "elementwise"), args: [copy, double] }]), { callbacks: [{ transfer: (t) => more.push(t) }] }))
    assert.deepEqual(more.map((t) => t.direction), ["host-to-device", "device-to-host"])
  })

  it("fails a task that needs more device memory than the limit with GpuOutOfMemory naming the task and the bytes", async () => {
    const small = gpuRuntime({ gpu: { memoryLimit: 4096 } })
    try {
      const g = TaskGraph.makeUnsafe([{ key: "big-0", kernel: cpuKernel("elementwise", "elementwise"), args: [x, double] }])
      const { reason } = await small.runPromise(Effect.flip(Engine.compute(g))) as EngineError.ComputeError
      assert.equal(reason._tag, "GpuOutOfMemory")
      const oom = reason as EngineError.GpuOutOfMemory
      assert.equal(oom.key, "big-0")
      assert.equal(oom.bytes, rows * d * 4)
      assert.match(oom.message, /task "big-0".*asked for 24000 bytes.*4096-byte limit/)
    } finally {
      await small.dispose()
    }
  })

  it("fails to build with GpuUnavailable naming the worker and what it tried when no adapter matches", async () => {
    const layer = Executor.layerGpu({ workers: 1, kernels: GpuKernels.kernels, gpu: { adapter: "no such adapter 0xdead" } })
    {
      const err = await Effect.runPromise(Effect.flip(Effect.provide(Effect.void, layer)))
      assert.equal(err._tag, "GpuUnavailable")
      assert.equal(err.worker, 1)
      assert.match(err.message, /GPU worker 1 found no GPU adapter: .*no adapter .*no such adapter 0xdead/)
    }
  })
})

/**
 * The GPU worker thread: one per GPU, beside the CPU workers. It opens a device
 * (`Gpu.open`), then runs batches like `worker.ts` does, except that each kernel is a
 * GPU kernel called as `kernel(ctx, ...args)` (see `Gpu.TaskContext`).
 *
 * Device memory is a tier: every float buffer a task returns as its result stays on the
 * device, and a later GPU task whose argument is that result (in the same compute or a
 * later one: the result chunk carries a tag, see `taggedChunk`) gets the buffer instead
 * of an upload. Results are still read back to shared memory (the scheduler's cache
 * holds every result), so a CPU task or the driver never waits on the device. Every
 * copy is reported as a transfer (bytes, direction, start, stop); device copies are
 * dropped least recently used first past the memory limit (`Gpu.GpuOptions.memoryLimit`).
 *
 * Leaves out: reading a result back only when a CPU task or the driver needs it (the
 * pool would have to hold CPU tasks back while their inputs come off the device), and
 * dropping a device copy when the host releases its chunk (the worker cannot see that;
 * the limit bounds what it keeps).
 *
 * @since 0.1.0
 * @internal
 */
import { parentPort, workerData } from "node:worker_threads"
import * as Chunk from "../Chunk.ts"
import * as EngineClock from "../EngineClock.ts"
import * as Gpu from "../Gpu.ts"
import type { KernelFn } from "../Kernel.ts"
import { errorParts, KernelLoadError, loadKernel } from "./kernels.ts"
import { resolveLocal, serve } from "./batchLoop.ts"
import { BATCH, CANCEL, INDEX, REC_STRIDE } from "./protocol.ts"
import { heapBytes } from "./taskMemory.ts"
import type { BatchDone, BatchError, Ready, RunBatch } from "./protocol.ts"

const port = parentPort!
const data = workerData as { control: SharedArrayBuffer; id: number; gpu: Gpu.GpuOptions }
const control = new Int32Array(data.control)
const defs: Array<readonly [string, string]> = []
const fns: Array<KernelFn | undefined> = []
const now = EngineClock.nowSeconds
const cpu = EngineClock.threadCpuSeconds

interface Resident {
  readonly buffer: GPUBuffer
  readonly bytes: number
}

/**
 * Device copies of results, by tag, least recently used first. A result chunk this
 * worker makes carries its tag in `TAG_BYTES` past its data in its SharedArrayBuffer
 * (a SharedArrayBuffer posted to a thread arrives as a new object each time, so its
 * identity cannot be the key); an input whose buffer ends in a tag of this worker is on
 * the device already, in this compute or a later one.
 */
const resident = new Map<number, Resident>()
let held = 0
let nextTag = 1
const TAG_BYTES = 16
/** marks a tag as this worker's: a random word, and the worker id */
const salt = (Math.random() * 2 ** 32) >>> 0

const opened = await Gpu.open(data.gpu).catch((e: unknown) => ({ device: null, why: `opening the device failed: ${errorParts(e).message}` }) as const)
const device = opened.device
const info = opened.device === null ? null : opened.info
// a software adapter's device memory is the host's: a smaller default
const limit = data.gpu.memoryLimit ?? (info === null ? 0 : info.software ? 2 ** 29 : info.maxBufferSize * 4)
const pipelines = new Map<string, GPUComputePipeline>()

/** Transfers of the batch running: XFER_STRIDE floats each. */
let xfer: Array<number> = []
/** Seconds from each submit to its completion, over the batch. */
let busySeconds = 0

const dropResident = (t: number): void => {
  const r = resident.get(t)
  if (r === undefined) return
  resident.delete(t)
  r.buffer.destroy()
  held -= r.bytes
}

/** Makes room for `bytes` more, dropping the least recently used device copies; GpuOutOfMemory when it cannot. */
const reserve = (bytes: number, pinned: ReadonlySet<GPUBuffer>): void => {
  if (held + bytes <= limit) return
  for (const [t, r] of resident) {
    if (held + bytes <= limit) break
    if (!pinned.has(r.buffer)) dropResident(t)
  }
  if (held + bytes > limit) throw new Gpu.GpuOutOfMemory(bytes, held, limit)
}

/** A shared chunk of `dtype` whose buffer ends in tag `tag` of this worker. */
const taggedChunk = (dtype: "float64" | "float32" | "int32", shape: ReadonlyArray<number>, tag: number): Chunk.Chunk => {
  const n = shape.reduce((a, b) => a * b, 1)
  const bytes = n * Chunk.itemSize(dtype)
  const sab = new SharedArrayBuffer(bytes + TAG_BYTES)
  const tail = new DataView(sab, bytes)
  tail.setUint32(0, salt)
  tail.setUint32(4, data.id)
  tail.setFloat64(8, tag)
  const view = dtype === "int32" ? new Int32Array(sab, 0, n) : dtype === "float32" ? new Float32Array(sab, 0, n) : new Float64Array(sab, 0, n)
  return Chunk.make(dtype, shape, view)
}

/** The tag of a chunk (or its data) this worker made, if it is one. */
const tagOf = (value: unknown): number | undefined => {
  const d = Chunk.isChunk(value) ? value.data : ArrayBuffer.isView(value) ? value : null
  if (d === null || d.byteOffset !== 0 || !(d.buffer instanceof SharedArrayBuffer) || d.buffer.byteLength !== d.byteLength + TAG_BYTES) return undefined
  const tail = new DataView(d.buffer, d.byteLength)
  return tail.getUint32(0) === salt && tail.getUint32(4) === data.id ? tail.getFloat64(8) : undefined
}

/** Which task of the compute made each argument a task takes from another (a Chunk and its data alike). */
const madeByOf = (args: ReadonlyArray<unknown>, plan: ReadonlyArray<number | ArrayLike<number>> | null): Map<unknown, number> => {
  const out = new Map<unknown, number>()
  if (plan === null) return out
  const add = (value: unknown, t: number): void => {
    if (t < 0 || value === null || typeof value !== "object") return
    out.set(value, t)
    if (Chunk.isChunk(value)) out.set(value.data, t)
  }
  for (let a = 0; a < plan.length && a < args.length; a++) {
    const p = plan[a]!
    if (typeof p === "number") add(args[a], p)
    else if (Array.isArray(args[a])) for (let q = 0; q < p.length; q++) add((args[a] as Array<unknown>)[q], p[q]!)
  }
  return out
}

/** A task's context; `made` collects its buffers (destroyed after the task unless kept). */
const makeContext = (dev: GPUDevice, q: number, madeBy: Map<unknown, number>) => {
  const made: Array<{ buffer: GPUBuffer; bytes: number }> = []
  const kept: Array<{ buffer: GPUBuffer; bytes: number; tag: number }> = []
  let uploadEnd = 0
  let firstRead = 0
  const pinned = new Set<GPUBuffer>()
  const alloc = (bytes: number, usage: number, mapped = false): GPUBuffer => {
    const size = Math.max(4, Math.ceil(bytes / 4) * 4)
    if (usage & GPUBufferUsage.STORAGE) {
      reserve(size, pinned)
      held += size
    }
    const buffer = dev.createBuffer({ size, usage, mappedAtCreation: mapped })
    made.push({ buffer, bytes: usage & GPUBufferUsage.STORAGE ? size : 0 })
    pinned.add(buffer)
    return buffer
  }
  const transfer = (dir: 0 | 1, bytes: number, start: number, stop: number, from: number): void => {
    xfer.push(q, dir, bytes, start, stop, from)
  }
  const ctx: Gpu.TaskContext = {
    device: dev,
    input(value, as = "f32") {
      const tag = as === "f32" ? tagOf(value) : undefined
      const known = tag === undefined ? undefined : resident.get(tag)
      if (known !== undefined) {
        // most recently used now, and kept for this task
        resident.delete(tag!)
        resident.set(tag!, known)
        pinned.add(known.buffer)
        return known.buffer
      }
      const t0 = now()
      const src = Chunk.isChunk(value) ? value.data : value
      const n = src.length
      const buffer = alloc(n * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, true)
      const range = buffer.getMappedRange()
      const dst = as === "u32" ? new Uint32Array(range) : new Float32Array(range)
      if (src instanceof BigInt64Array) for (let k = 0; k < n; k++) dst[k] = Number((src as BigInt64Array)[k])
      else dst.set(src as ArrayLike<number>)
      buffer.unmap()
      uploadEnd = now()
      transfer(0, n * 4, t0, uploadEnd, madeBy.get(value) ?? -1)
      return buffer
    },
    buffer(words) {
      return alloc(words * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST)
    },
    uniform(fill, bytes) {
      const buffer = alloc(Math.ceil(bytes / 16) * 16, GPUBufferUsage.UNIFORM, true)
      fill(new DataView(buffer.getMappedRange()))
      buffer.unmap()
      return buffer
    },
    async pipeline(wgsl) {
      let p = pipelines.get(wgsl)
      if (p === undefined) {
        const module = dev.createShaderModule({ code: wgsl })
        const errors = (await module.getCompilationInfo()).messages.filter((m) => m.type === "error")
        if (errors.length > 0) throw new Error(`WGSL does not compile: ${errors.map((m) => `line ${m.lineNum}:${m.linePos}: ${m.message}`).join("; ")}`)
        p = await dev.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" } })
        pipelines.set(wgsl, p)
      }
      return p
    },
    dispatch(pipeline, bindings, threads) {
      const groups = Math.max(1, Math.ceil(threads / Gpu.WORKGROUP))
      const maxX = dev.limits.maxComputeWorkgroupsPerDimension
      const x = Math.min(groups, maxX)
      const y = Math.ceil(groups / x)
      const enc = dev.createCommandEncoder()
      const pass = enc.beginComputePass()
      pass.setPipeline(pipeline)
      pass.setBindGroup(0, dev.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: bindings.map((buffer, binding) => ({ binding, resource: { buffer } })) }))
      pass.dispatchWorkgroups(x, y)
      pass.end()
      const t0 = now()
      dev.queue.submit([enc.finish()])
      void dev.queue.onSubmittedWorkDone().then(() => {
        busySeconds += now() - t0
      })
    },
    async read(buffer, words) {
      await dev.queue.onSubmittedWorkDone()
      const t0 = now()
      if (firstRead === 0) firstRead = t0
      const staging = dev.createBuffer({ size: words * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST })
      const enc = dev.createCommandEncoder()
      enc.copyBufferToBuffer(buffer, 0, staging, 0, words * 4)
      dev.queue.submit([enc.finish()])
      await staging.mapAsync(GPUMapMode.READ)
      const out = staging.getMappedRange().slice(0)
      staging.unmap()
      staging.destroy()
      transfer(1, words * 4, t0, now(), -1)
      return out
    },
    async chunk(buffer, shape, dtype = "float64") {
      const n = shape.reduce((a, b) => a * b, 1)
      const raw = await ctx.read(buffer, n)
      const m = made.find((b) => b.buffer === buffer)
      const tag = dtype !== "int32" && m !== undefined ? nextTag++ : 0
      if (tag > 0) kept.push({ ...m!, tag })
      const out = tag > 0 ? taggedChunk(dtype, shape, tag) : Chunk.allocShared(dtype, shape)
      ;(out.data as Float64Array | Float32Array | Int32Array).set(dtype === "int32" ? new Int32Array(raw) : new Float32Array(raw))
      return out
    }
  }
  /** After the task: keeps the buffers of its result chunks on the device (by tag), destroys the rest. */
  const settle = (ok: boolean): { uploadEnd: number; firstRead: number } => {
    for (const b of made) {
      const k = ok ? kept.find((x) => x.buffer === b.buffer) : undefined
      if (k !== undefined) resident.set(k.tag, { buffer: b.buffer, bytes: b.bytes })
      else {
        b.buffer.destroy()
        held -= b.bytes
      }
    }
    return { uploadEnd, firstRead }
  }
  return { ctx, settle }
}

const runBatch = async (m: RunBatch): Promise<void> => {
  const t0 = performance.now()
  if (m.defs !== null) for (let q = 0; q < m.defs.length; q++) defs[m.d0 + q] = m.defs[q]!
  xfer = []
  busySeconds = 0
  const n = m.ks.length
  const results = new Array<unknown>(n)
  const rec = m.p === 1 ? new Float64Array(n * REC_STRIDE) : null
  let error: BatchError | null = null
  let done = 0
  Atomics.store(control, BATCH, m.b)
  for (let q = 0; q < n; q++) {
    if (Atomics.load(control, CANCEL) === m.c) break
    Atomics.store(control, INDEX, q)
    const k = m.ks[q]!
    const [module, name] = defs[k]!
    if (device === null) {
      error = { i: q, notFound: false, message: `no GPU device: ${(opened as { why: string }).why}`, stack: "", module, name }
      break
    }
    let fn = fns[k]
    if (fn === undefined) {
      try {
        fn = fns[k] = await loadKernel(module, name)
      } catch (e) {
        error = { i: q, notFound: true, message: e instanceof KernelLoadError ? e.detail : errorParts(e).message, stack: "", module, name }
        break
      }
    }
    const args = m.loc !== null && m.loc.includes(q) ? resolveLocal(m.args[q]!, results) : m.args[q]!
    const { ctx, settle } = makeContext(device, q, madeByOf(args, m.plans?.[q] ?? null))
    const x0 = now()
    const heap0 = rec !== null ? heapBytes() : 0
    const c0 = cpu()
    let ok = false
    try {
      device.pushErrorScope("validation")
      device.pushErrorScope("out-of-memory")
      let r: unknown
      try {
        r = await fn(ctx, ...args)
      } finally {
        const oom = await device.popErrorScope()
        const invalid = await device.popErrorScope()
        if (oom !== null) throw new Gpu.GpuOutOfMemory(0, held, limit, oom.message)
        if (invalid !== null) throw new Error(`WebGPU validation error: ${invalid.message}`)
      }
      results[q] = r
      ok = true
    } catch (e) {
      const { message, stack } = errorParts(e)
      error = { i: q, notFound: false, message, stack, module, name, ...(e instanceof Gpu.GpuOutOfMemory ? { oom: e.bytes } : {}) }
    } finally {
      const { uploadEnd, firstRead } = settle(ok)
      if (rec !== null && ok) {
        // gather: the uploads; compute: to the first read-back; transfer: the read-backs
        const t1 = now()
        const o = q * REC_STRIDE
        const gatherEnd = uploadEnd === 0 ? x0 : uploadEnd
        const readAt = firstRead === 0 ? t1 : firstRead
        rec[o] = x0
        rec[o + 1] = gatherEnd
        rec[o + 2] = gatherEnd
        rec[o + 3] = readAt
        rec[o + 4] = readAt
        rec[o + 5] = t1
        rec[o + 6] = cpu() - c0
        // the thread's host heap, as on a CPU worker (device memory is Managed Memory's `device`);
        // GPU kernels read no files
        rec[o + 7] = Math.max(heap0, heapBytes())
        rec[o + 8] = 0
      }
    }
    if (!ok) break
    done = q + 1
  }
  Atomics.store(control, INDEX, -1)
  results.length = done
  port.postMessage({
    t: "done",
    c: m.c,
    b: m.b,
    n: done,
    results,
    error,
    busy: performance.now() - t0,
    rec,
    xfer: xfer.length > 0 ? Float64Array.from(xfer) : null,
    device: { held, busy: busySeconds }
  } satisfies BatchDone)
}

serve(port, runBatch, () => device?.destroy())

port.postMessage({ t: "ready", at: now(), gpu: info ?? { why: (opened as { why: string }).why } } satisfies Ready)

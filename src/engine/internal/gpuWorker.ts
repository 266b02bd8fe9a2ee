/**
 * The GPU worker thread: one per GPU, beside the CPU workers. It opens a device
 * (`Gpu.open`), then runs batches like `worker.ts` does, except that each kernel is a
 * GPU kernel called as `kernel(ctx, ...args)` (see `Gpu.TaskContext`).
 *
 * Device memory is a tier: every float buffer a task returns as its result stays on the
 * device. It is read back only when the pool says a CPU task or the driver takes the
 * result (`RunBatch.host`); otherwise the result is a `Gpu.DeviceChunk` naming the device
 * copy, and the GPU tasks that take it use the copy. A result that was read back also
 * carries a tag (`taggedChunk`), so a GPU task of a later compute given that chunk finds
 * its copy too. Every copy is reported as a transfer (bytes, direction, start, stop).
 * Copies with a host copy are dropped least recently used first past the memory limit
 * (`Gpu.GpuOptions.memoryLimit`); copies without one stay until the pool frees them
 * (`FreeDevice`, when the scheduler releases the result), and a task that finds no room
 * fails with GpuOutOfMemory (the worker throws `Gpu.DeviceMemoryExceeded`).
 *
 * Busy time: each dispatch's kernel time from timestamp queries where the adapter has
 * the `timestamp-query` feature, else from submit to completion (`onSubmittedWorkDone`,
 * an upper bound: queueing included); the union of these intervals is the worker's busy
 * time (`BatchDone.device.busy`) and, per task, its `gpuTime` (a field of its timing row).
 *
 * Leaves out: moving a device copy straight to another GPU worker (with several GPU
 * workers the pool asks for every result a GPU task takes to come to the host), and
 * recomputing device copies lost with a worker that died (the task that needed one fails
 * naming it).
 *
 * @since 0.1.0
 * @internal
 */
import { parentPort, workerData } from "node:worker_threads"
import * as Chunk from "../Chunk.ts"
import * as EngineClock from "../EngineClock.ts"
import * as Gpu from "../Gpu.ts"
import type { KernelFn } from "../Kernel.ts"
import { errorParts, loadFailure, loadKernel } from "./kernels.ts"
import { resolveLocal, serve } from "./batchLoop.ts"
import { BATCH, CANCEL, INDEX } from "./protocol.ts"
import { newRows, Timing, TIMING_FLOATS, writeAmounts, writePhases } from "./taskTiming.ts"
import { heapBytes } from "./taskMemory.ts"
import type { BatchDone, BatchError, FreeDevice, Ready, RunBatch } from "./protocol.ts"

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
  /** no host copy (a DeviceChunk): never evicted, freed by the pool */
  readonly hostless: boolean
}

/**
 * Device copies of results, by tag, least recently used first. A result chunk read back
 * carries its tag in `TAG_BYTES` past its data in its SharedArrayBuffer (a
 * SharedArrayBuffer posted to a thread arrives as a new object each time, so its
 * identity cannot be the key); a result not read back is a DeviceChunk with the tag.
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
/** Results of the batch left on the device (KEPT_STRIDE floats each), and tags evicted. */
let keptOut: Array<number> = []
let evicted: Array<number> = []
/** Busy seconds over the batch (the union of kernel intervals), and where the last interval ended. */
let busySeconds = 0
let busyUntil = 0

/** Adds a kernel interval to the worker's busy time (intervals may overlap: their union counts). */
const busy = (t0: number, t1: number): void => {
  busySeconds += Math.max(0, t1 - Math.max(t0, busyUntil))
  busyUntil = Math.max(busyUntil, t1)
}

const dropResident = (t: number): void => {
  const r = resident.get(t)
  if (r === undefined) return
  resident.delete(t)
  r.buffer.destroy()
  held -= r.bytes
}

/** Makes room for `bytes` more, dropping the least recently used device copies that have a host copy; DeviceMemoryExceeded when it cannot. */
const reserve = (bytes: number, pinned: ReadonlySet<GPUBuffer>): void => {
  if (held + bytes <= limit) return
  for (const [t, r] of resident) {
    if (held + bytes <= limit) break
    if (!r.hostless && !pinned.has(r.buffer)) {
      dropResident(t)
      evicted.push(t)
    }
  }
  if (held + bytes > limit) throw Gpu.deviceMemoryExceeded(bytes, held, limit)
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

/** Maps each DeviceChunk among `args` (directly or in an array) with `f`. */
const mapDevice = (args: ReadonlyArray<unknown>, f: (d: Gpu.DeviceChunk) => unknown): Array<unknown> =>
  args.map((a) => Gpu.isDeviceChunk(a) ? f(a) : Array.isArray(a) && a.some(Gpu.isDeviceChunk) ? a.map((x) => Gpu.isDeviceChunk(x) ? f(x) : x) : a)

/**
 * What a kernel gets in place of a DeviceChunk: a chunk of its dtype and shape whose data
 * has the right `length` and no elements (nothing is copied), and whose `ctx.input` is
 * the device copy. A kernel that reads the data itself (a CPU fallback) is run again
 * with the data read back (see `runTask`).
 */
const shellOf = (d: Gpu.DeviceChunk): Chunk.Chunk => {
  const view = d.dtype === "float32" ? new Float32Array(0) : new Float64Array(0)
  Object.defineProperty(view, "length", { value: d.shape.reduce((a, b) => a * b, 1) })
  return { dtype: d.dtype, shape: d.shape, data: view }
}

/** The resident copy a DeviceChunk names, or an error saying why it is gone. */
const residentOf = (d: Gpu.DeviceChunk): Resident => {
  const r = d.salt === salt && d.worker === data.id ? resident.get(d.tag) : undefined
  if (r === undefined) {
    throw new Error(`an argument's device copy is gone (GPU worker ${d.worker}, copy ${d.tag}${d.salt === salt ? ", freed" : ": that worker was restarted"}); it had no host copy`)
  }
  return r
}

/** A task's context; `made` collects its buffers (destroyed after the task unless kept). */
const makeContext = (dev: GPUDevice, q: number, madeBy: Map<unknown, number>, toHost: boolean, shells: Map<unknown, Gpu.DeviceChunk>) => {
  const made: Array<{ buffer: GPUBuffer; bytes: number }> = []
  const kept: Array<{ buffer: GPUBuffer; bytes: number; tag: number; hostless: boolean }> = []
  const used = new Set<unknown>()
  const pending: Array<Promise<void>> = []
  let uploadEnd = 0
  let firstRead = 0
  let gpuTime = 0
  let taskUntil = 0
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
  /** A kernel interval of this task: the worker's busy time, and the task's GPU time (their unions). */
  const interval = (t0: number, t1: number): void => {
    busy(t0, t1)
    gpuTime += Math.max(0, t1 - Math.max(t0, taskUntil))
    taskUntil = Math.max(taskUntil, t1)
  }
  /** Copies `words` words of `buffer` to the host: a transfer of the result of task `from` (-1: this task's). */
  const readBack = async (buffer: GPUBuffer, words: number, from: number): Promise<ArrayBuffer> => {
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
    transfer(1, words * 4, t0, now(), from)
    return out
  }
  const ctx: Gpu.TaskContext = {
    device: dev,
    input(value, as = "f32") {
      const shell = shells.get(value) ?? (Chunk.isChunk(value) ? shells.get(value.data) : undefined)
      if (shell !== undefined && as === "f32") {
        used.add(shell)
        const r = residentOf(shell)
        resident.delete(shell.tag)
        resident.set(shell.tag, r)
        pinned.add(r.buffer)
        return r.buffer
      }
      const tag = as === "f32" ? tagOf(value) : undefined
      const known = tag === undefined ? undefined : resident.get(tag)
      if (known !== undefined) {
        // most recently used now, and kept for this task
        resident.delete(tag!)
        resident.set(tag!, known)
        pinned.add(known.buffer)
        return known.buffer
      }
      if (shell !== undefined) throw new Error("a result left on the device was asked for as u32")
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
      const stamps = info?.timestampQuery === true ? timestamps(dev) : null
      const pass = enc.beginComputePass(stamps === null ? {} : { timestampWrites: { querySet: stamps.set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } })
      pass.setPipeline(pipeline)
      pass.setBindGroup(0, dev.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: bindings.map((buffer, binding) => ({ binding, resource: { buffer } })) }))
      pass.dispatchWorkgroups(x, y)
      pass.end()
      if (stamps !== null) stamps.resolve(enc)
      const t0 = now()
      dev.queue.submit([enc.finish()])
      // the kernel's own time where the device stamps it, else submit to completion
      const timing = stamps !== null ? stamps.read().then((s) => interval(t0, t0 + s)) : dev.queue.onSubmittedWorkDone().then(() => interval(t0, now()))
      // awaited only when profiling (`timed`): a device lost later must not be an unhandled rejection
      timing.catch(() => {})
      pending.push(timing)
    },
    read: (buffer, words) => readBack(buffer, words, -1),
    async chunk(buffer, shape, dtype = "float64") {
      const n = shape.reduce((a, b) => a * b, 1)
      const m = made.find((b) => b.buffer === buffer)
      const tag = dtype !== "int32" && m !== undefined ? nextTag++ : 0
      if (tag > 0 && !toHost) {
        // nobody on the host takes it: it stays on the device only
        kept.push({ ...m!, tag, hostless: true })
        return { _tag: "DeviceChunk", worker: data.id, salt, tag, dtype: dtype as "float64" | "float32", shape: [...shape], bytes: n * Chunk.itemSize(dtype) } satisfies Gpu.DeviceChunk
      }
      const raw = await ctx.read(buffer, n)
      if (tag > 0) kept.push({ ...m!, tag, hostless: false })
      const out = tag > 0 ? taggedChunk(dtype, shape, tag) : Chunk.allocShared(dtype, shape)
      ;(out.data as Float64Array | Float32Array | Int32Array).set(dtype === "int32" ? new Int32Array(raw) : new Float32Array(raw))
      return out
    }
  }
  /** Waits for the task's kernel times (profiling: its record carries them). */
  const timed = async (): Promise<number> => {
    await Promise.all(pending)
    return gpuTime
  }
  /**
   * After the task: keeps the buffers of its results on the device (by tag), destroys the
   * rest; with `result`, reports the kept ones (KEPT_STRIDE floats each).
   */
  const settle = (ok: boolean): { uploadEnd: number; firstRead: number } => {
    for (const b of made) {
      const k = ok ? kept.find((x) => x.buffer === b.buffer) : undefined
      if (k !== undefined) {
        resident.set(k.tag, { buffer: b.buffer, bytes: b.bytes, hostless: k.hostless })
        keptOut.push(q, k.tag, b.bytes, k.hostless ? 1 : 0)
      } else {
        b.buffer.destroy()
        held -= b.bytes
      }
    }
    return { uploadEnd, firstRead }
  }
  return { ctx, settle, timed, used, readBack }
}

/** A query set for a pass's start and end stamps, and how to read them (seconds between). */
const timestamps = (dev: GPUDevice) => {
  const set = dev.createQuerySet({ type: "timestamp", count: 2 })
  const resolved = dev.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC })
  const staging = dev.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST })
  return {
    set,
    resolve(enc: GPUCommandEncoder) {
      enc.resolveQuerySet(set, 0, 2, resolved, 0)
      enc.copyBufferToBuffer(resolved, 0, staging, 0, 16)
    },
    async read(): Promise<number> {
      await staging.mapAsync(GPUMapMode.READ)
      const [a, b] = new BigUint64Array(staging.getMappedRange())
      const s = b! > a! ? Number(b! - a!) / 1e9 : 0
      staging.unmap()
      staging.destroy()
      resolved.destroy()
      set.destroy()
      return s
    }
  }
}

type Task = ReturnType<typeof makeContext>

/**
 * Runs one task's kernel (`cur.task` is its context, to settle). A kernel given a
 * DeviceChunk's stand-in that it did not take through `ctx.input` read its data on the
 * host (a CPU fallback, say): it is run again with every such argument read back.
 */
const runTask = async (dev: GPUDevice, fn: KernelFn, q: number, args: ReadonlyArray<unknown>, m: RunBatch, cur: { task: Task | null }): Promise<unknown> => {
  const plan = m.plans?.[q] ?? null
  const toHost = m.host === undefined || m.host[q] === 1
  const shells = new Map<unknown, Gpu.DeviceChunk>()
  const shellArgs = mapDevice(args, (d) => {
    const s = shellOf(d)
    shells.set(s, d)
    shells.set(s.data, d)
    return s
  })
  const madeBy = madeByOf(shellArgs, plan)
  const first = cur.task = makeContext(dev, q, madeBy, toHost, shells)
  const r = await guarded(dev, () => fn(first.ctx, ...shellArgs))
  if ([...shells.values()].every((d) => first.used.has(d))) return r
  first.settle(false)
  const again = cur.task = makeContext(dev, q, new Map(), toHost, new Map())
  const read = new Map<number, Chunk.Chunk>()
  for (const d of args.flatMap((a) => Gpu.isDeviceChunk(a) ? [a] : Array.isArray(a) ? a.filter(Gpu.isDeviceChunk) : [])) {
    if (read.has(d.tag)) continue
    const c = Chunk.allocShared(d.dtype, d.shape)
    const shell = [...shells].find(([k, v]) => v === d && Chunk.isChunk(k))?.[0]
    ;(c.data as Float64Array | Float32Array).set(new Float32Array(await again.readBack(residentOf(d).buffer, c.data.length, madeBy.get(shell) ?? -1)))
    read.set(d.tag, c)
  }
  const hostArgs = mapDevice(args, (d) => read.get(d.tag)!)
  return guarded(dev, () => fn(again.ctx, ...hostArgs))
}

/** Calls a kernel inside WebGPU error scopes: a device error fails the task. */
const guarded = async (dev: GPUDevice, call: () => Promise<unknown> | unknown): Promise<unknown> => {
  dev.pushErrorScope("validation")
  dev.pushErrorScope("out-of-memory")
  try {
    return await call()
  } finally {
    const oom = await dev.popErrorScope()
    const invalid = await dev.popErrorScope()
    if (oom !== null) throw Gpu.deviceMemoryExceeded(0, held, limit, oom.message)
    if (invalid !== null) throw new Error(`WebGPU validation error: ${invalid.message}`)
  }
}

const runBatch = async (m: RunBatch): Promise<void> => {
  const t0 = performance.now()
  if (m.defs !== null) for (let q = 0; q < m.defs.length; q++) defs[m.d0 + q] = m.defs[q]!
  xfer = []
  keptOut = []
  evicted = []
  busySeconds = 0
  const n = m.ks.length
  const results = new Array<unknown>(n)
  const rec = m.p === 1 ? newRows(n) : null
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
        error = { i: q, notFound: true, ...loadFailure(e), stack: "", module, name }
        break
      }
    }
    const args = m.loc !== null && m.loc.includes(q) ? resolveLocal(m.args[q]!, results) : m.args[q]!
    const cur: { task: Task | null } = { task: null }
    const x0 = now()
    const heap0 = rec !== null ? heapBytes() : 0
    const c0 = cpu()
    let ok = false
    try {
      results[q] = await runTask(device, fn, q, args, m, cur)
      // profiling: the task's record carries its kernel time, so wait for it
      if (rec !== null) rec[q * TIMING_FLOATS + Timing.gpuTime] = await cur.task!.timed()
      ok = true
    } catch (e) {
      const { message, stack } = errorParts(e)
      error = { i: q, notFound: false, message, stack, module, name, ...(e instanceof Gpu.DeviceMemoryExceeded ? { oom: e.bytes } : {}) }
    } finally {
      const { uploadEnd, firstRead } = cur.task?.settle(ok) ?? { uploadEnd: 0, firstRead: 0 }
      if (rec !== null && ok) {
        // gather: the uploads; compute: to the first read-back; transfer: the read-backs
        const t1 = now()
        const o = q * TIMING_FLOATS
        const gatherEnd = uploadEnd === 0 ? x0 : uploadEnd
        writePhases(rec, o, x0, gatherEnd, firstRead === 0 ? t1 : firstRead, t1)
        // the thread's host heap, as on a CPU worker (device memory is Managed Memory's `device`);
        // GPU kernels read no files
        writeAmounts(rec, o, cpu() - c0, Math.max(heap0, heapBytes()), 0)
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
    device: { held, busy: busySeconds, salt, kept: Float64Array.from(keptOut), evicted: Float64Array.from(evicted) }
  } satisfies BatchDone)
}

/** Drops the device copies the pool released (a worker's own, by its salt). */
const free = (m: FreeDevice): void => {
  if (m.salt !== salt) return
  for (const t of m.tags) dropResident(t)
}

serve(port, runBatch, () => device?.destroy(), undefined, free)

port.postMessage({ t: "ready", at: now(), gpu: info ?? { why: (opened as { why: string }).why } } satisfies Ready)

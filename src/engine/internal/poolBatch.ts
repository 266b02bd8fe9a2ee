/**
 * The worker pool's messages about batches: the kernels by interned id (`KernelTable`:
 * a worker learns each definition once), the `RunBatch` a dispatcher's `Run` becomes
 * (kernel ids, resolved arguments, fused tasks' local inputs, declared outputs, a GPU
 * worker's plans), and what a worker's reply says beyond results: a task's failure as the
 * driver's typed error, and a GPU batch's host↔device copies as TransferRecords.
 *
 * @since 0.1.0
 * @internal
 */
import * as EngineError from "../EngineError.ts"
import { threadId, type TransferRecord } from "../EngineEvents.ts"
import * as Kernel from "../Kernel.ts"
import type { KernelRef } from "../Kernel.ts"
import * as State from "../State.ts"
import type { Job } from "./job.ts"
import { describeOutput, encodeOutput, OUT_STRIDE, unsendable } from "./kernels.ts"
import type { Run } from "./pool.ts"
import type { Slot } from "./poolWorkers.ts"
import { LOCAL, XFER_STRIDE } from "./protocol.ts"
import type { BatchError, RunBatch } from "./protocol.ts"

/**
 * Kernels by interned id: `defs[id]` is a kernel's module and export; a worker that knows
 * the first `known` of them is sent the rest with its next batch.
 *
 * @since 0.1.0
 * @internal
 */
export class KernelTable {
  readonly defs: Array<readonly [string, string]> = []
  private readonly ids = new Map<string, number>()

  /** The id of kernel `k` (a new one the first time). */
  intern(k: KernelRef): number {
    const key = `${k.module}#${k.name}`
    let id = this.ids.get(key)
    if (id === undefined) {
      id = this.defs.length
      this.defs.push([k.module, k.name])
      this.ids.set(key, id)
    }
    return id
  }

  /** The definitions a worker that knows the first `known` lacks (null: none). */
  after(known: number): ReadonlyArray<readonly [string, string]> | null {
    return this.defs.length > known ? this.defs.slice(known) : null
  }

  /**
   * For the needed tasks of `job`: each one's kernel id, its GPU kernel's id when
   * `gpuKernels` has a GPU version of its kernel (-1: none; null without GPU workers),
   * and the outputs they declared (`OUT_STRIDE` ints each; null when none does).
   */
  tables(job: Job, gpuKernels: ReadonlyMap<string, KernelRef> | null): { kernelOf: Int32Array; gpuKernelOf: Int32Array | null; outOf: Int32Array | null } {
    const { graph, state } = job
    const kernelOf = new Int32Array(graph.size)
    const gpuKernelOf = gpuKernels === null ? null : new Int32Array(graph.size).fill(-1)
    let last: KernelRef | undefined
    let lastId = -1
    let lastGpu = -1
    let outOf: Int32Array | null = null
    for (let i = 0; i < graph.size; i++) {
      if (!state.needed[i]) continue
      const spec = graph.specs[i]!
      if (spec.output !== undefined) {
        if (outOf === null) {
          outOf = new Int32Array(graph.size * OUT_STRIDE)
          for (let j = 0; j < graph.size; j++) outOf[j * OUT_STRIDE] = -1
        }
        encodeOutput(spec.output, outOf, i * OUT_STRIDE)
      }
      const k = spec.kernel
      if (k !== last) {
        last = k
        lastId = this.intern(k)
        const g = gpuKernels?.get(Kernel.id(k))
        lastGpu = g === undefined ? -1 : this.intern(g)
      }
      kernelOf[i] = lastId
      if (gpuKernelOf !== null) gpuKernelOf[i] = lastGpu
    }
    return { kernelOf, gpuKernelOf, outOf }
  }
}

/**
 * The message running `ids` on `slot` (its first `n` tasks ready, the rest fused: their
 * inputs are earlier in the batch, and the worker passes them over locally). `defs`: the
 * kernel definitions the worker does not know yet (from `d0`); `sample`: the sampling
 * interval it is asked for (0: none).
 *
 * @since 0.1.0
 * @internal
 */
export const runBatch = (
  run: Run,
  slot: Slot,
  ids: Int32Array,
  n: number,
  b: number,
  defs: ReadonlyArray<readonly [string, string]> | null,
  sample: number
): RunBatch => {
  const s = run.job.state
  const { pos } = run
  const gpuOf = run.gpuKernelOf
  const total = ids.length
  for (let q = 0; q < total; q++) pos[ids[q]!] = q
  const ks = new Int32Array(total)
  // declared outputs, for CPU workers (a GPU worker's kernels are another function of the task)
  const outOf = slot.gpu ? null : run.outOf
  const out = outOf === null ? null : new Int32Array(total * OUT_STRIDE)
  const args = new Array<ReadonlyArray<unknown>>(total)
  const locs: Array<number> = []
  for (let q = 0; q < total; q++) {
    const i = ids[q]!
    ks[q] = slot.gpu ? gpuOf![i]! : run.kernelOf[i]!
    if (out !== null) out.set(outOf!.subarray(i * OUT_STRIDE, i * OUT_STRIDE + OUT_STRIDE), q * OUT_STRIDE)
    if (q < n) args[q] = State.argsFor(s, i)
    else {
      args[q] = localArgs(s, i, pos)
      locs.push(q)
    }
  }
  for (let q = 0; q < total; q++) pos[ids[q]!] = -1
  return {
    t: "run",
    c: run.id,
    b,
    d0: slot.known,
    defs,
    p: run.job.profile ? 1 : 0,
    s: sample,
    ks,
    args,
    loc: locs.length > 0 ? Int32Array.from(locs) : null,
    out,
    ...(slot.gpu ? { plans: Array.from(ids, (i) => s.graph.argPlan[i] ?? null), host: Uint8Array.from(ids, (i) => run.devices!.toHost[i]!) } : {})
  }
}

/** Args of a fused task: inputs in the batch become `{ [LOCAL]: position }`. */
const localArgs = (s: State.SchedulerState, i: number, pos: Int32Array): ReadonlyArray<unknown> => {
  const spec = s.graph.specs[i]!
  const plan = s.graph.argPlan[i]
  if (plan === null || plan === undefined) return spec.args
  const at = (t: number): unknown => (pos[t]! >= 0 ? { [LOCAL]: pos[t]! } : s.cache[t])
  const out = new Array<unknown>(plan.length)
  for (let a = 0; a < plan.length; a++) {
    const slot = plan[a]!
    if (typeof slot === "number") out[a] = slot < 0 ? spec.args[a] : at(slot)
    else {
      const arr = new Array<unknown>(slot.length)
      for (let q = 0; q < slot.length; q++) arr[q] = at(slot[q]!)
      out[a] = arr
    }
  }
  return out
}

/**
 * A batch `postMessage` could not send (`e`): the task whose arguments structured clone
 * cannot carry, as `ArgumentNotSendable` naming the task, the argument and the stage (the
 * batch was never sent: no kernel ran).
 *
 * @since 0.1.0
 * @internal
 */
export const notSendable = (job: Job, msg: RunBatch, ids: Int32Array, e: unknown): { readonly task: number; readonly error: EngineError.ComputeError } => {
  const args = msg.args
  let q = 0
  for (let k = 0; k < args.length; k++) {
    try {
      structuredClone(args[k])
    } catch {
      q = k
      break
    }
  }
  const i = ids[q]!
  const spec = job.graph.specs[i]!
  const a = Math.max(0, args[q]!.findIndex((v) => unsendable(v) !== undefined))
  const what = unsendable(args[q]![a]) ?? "a value that cannot be cloned"
  return { task: i, error: EngineError.argumentNotSendable(job.graph.keys[i]!, Kernel.describe(spec.kernel), spec.stage, a, what, e instanceof Error ? e.message : String(e)) }
}

/**
 * The typed error of task `i`, whose worker reported `e`: a module refused or not
 * found, a GPU out of memory, an output other than declared, or the kernel's own error.
 *
 * @since 0.1.0
 * @internal
 */
export const taskError = (job: Job, i: number, e: BatchError): EngineError.ComputeError => {
  const key = job.graph.keys[i]!
  const spec = job.graph.specs[i]!
  return e.refused === true
    ? EngineError.moduleRefused(key, e.module, e.name, e.message)
    : e.notFound
    ? EngineError.kernelNotFound(key, e.module, e.name, e.message)
    : e.oom !== undefined
    ? EngineError.gpuOutOfMemory(key, `${e.name} (${e.module})`, e.oom, e.message)
    : e.output !== undefined
    ? EngineError.badOutput(key, `${e.name} (${e.module})`, spec.stage, spec.output !== undefined ? describeOutput(spec.output) : "?", e.output)
    : EngineError.kernelFailed(key, `${e.name} (${e.module})`, e.message, e.stack, e.module)
}

/**
 * Delivers a GPU batch's transfers (`x`, `XFER_STRIDE` floats each) of tasks `ids` on
 * worker `workerId` as TransferRecords.
 *
 * @since 0.1.0
 * @internal
 */
export const deliverTransfers = (job: Job, host: string, workerId: number, x: Float64Array, ids: Int32Array): void => {
  const keys = job.graph.keys
  const thread = threadId(host, workerId)
  for (let o = 0; o < x.length; o += XFER_STRIDE) {
    const from = x[o + 5]!
    const r: TransferRecord = {
      keys: [keys[from >= 0 ? from : ids[x[o]!]!]!],
      bytes: x[o + 2]!,
      direction: x[o + 1] === 0 ? "host-to-device" : "device-to-host",
      host,
      workerId,
      threadId: thread,
      start: x[o + 3]!,
      stop: x[o + 4]!
    }
    for (const cb of job.transferCbs) cb.transfer!(r)
  }
}

/**
 * The in-process executor's loop (like `dask.get`): runs ready tasks one at a time on
 * the calling thread. Kernels are imported up front; the loop only awaits when a
 * kernel returns a Promise. Used for debugging and to measure the scheduler's own cost
 * per task (no threads, no messages).
 *
 * @since 0.1.0
 * @internal
 */
import { hostname } from "node:os"
import * as EngineClock from "../EngineClock.ts"
import * as EngineError from "../EngineError.ts"
import * as Kernel from "../Kernel.ts"
import type { KernelFn } from "../Kernel.ts"
import * as Sampling from "../Sampling.ts"
import * as State from "../State.ts"
import { checkOutput, describeOutput, errorParts, KernelLoadError, loadKernel, ModuleRefused, OutputMismatch, shareResult } from "./kernels.ts"
import { erredInfo, MemoryBook, post, pre, record } from "./job.ts"
import { heapBytes } from "./taskMemory.ts"
import { newRows, writeAmounts, writePhases } from "./taskTiming.ts"
import { Dispatcher, type DispatcherOptions, type Run } from "./dispatch/dispatcher.ts"
import { bytesRead } from "../TaskIo.ts"
import type { Job } from "./job.ts"
import type { TaskSpec } from "../TaskGraph.ts"

const host = hostname()

/**
 * The in-process runner's dispatch: one slot, batches of about 10 ms of work (nothing
 * crosses a thread, so a batch only bounds how long the loop runs between the
 * dispatcher's turns), fused; nothing to retry (a failure here is the kernel's own).
 */
const SYNC_DISPATCH: DispatcherOptions = {
  batchSeconds: 0.01,
  maxBatch: 4096,
  maxInflight: 1,
  initialTaskSeconds: 1e-6,
  maxRetries: 0,
  shared: true
}

const isThenable = (u: unknown): u is PromiseLike<unknown> =>
  typeof u === "object" && u !== null && typeof (u as { then?: unknown }).then === "function"

/** Throws OutputMismatch when `r` is not what task `spec` declared. */
const check = (r: unknown, spec: TaskSpec): void => {
  const bad = checkOutput(r, spec.output)
  if (bad !== null) throw new OutputMismatch(bad)
}

/**
 * A flag the runner checks between tasks.
 *
 * @since 0.1.0
 * @internal
 */
export interface CancelFlag {
  cancelled: boolean
}

/**
 * Imports every kernel the needed tasks use; fails with KernelNotFound naming the first
 * task that uses a kernel that cannot be loaded.
 *
 * @since 0.1.0
 * @internal
 */
export const loadAll = async (job: Job): Promise<Array<KernelFn | undefined>> => {
  const { graph, state } = job
  const byId = new Map<string, Promise<KernelFn>>()
  const fns: Array<KernelFn | undefined> = new Array(graph.size)
  let last: Kernel.KernelRef | undefined
  let lastP: Promise<KernelFn> | undefined
  const pending: Array<Promise<void>> = []
  for (let i = 0; i < graph.size; i++) {
    if (!state.needed[i]) continue
    const k = graph.specs[i]!.kernel
    let p: Promise<KernelFn>
    if (k === last) p = lastP!
    else {
      const id = Kernel.id(k)
      let q = byId.get(id)
      if (q === undefined) {
        q = loadKernel(k.module, k.name)
        byId.set(id, q)
        q.catch(() => undefined)
      }
      p = q
      last = k
      lastP = q
    }
    pending.push(p.then((fn) => {
      fns[i] = fn
    }, (e) => {
      throw e instanceof ModuleRefused
        ? EngineError.moduleRefused(graph.keys[i]!, k.module, k.name, e.why)
        : e instanceof KernelLoadError
        ? EngineError.kernelNotFound(graph.keys[i]!, k.module, k.name, e.detail)
        : EngineError.kernelNotFound(graph.keys[i]!, k.module, k.name, errorParts(e).message)
    }))
  }
  // Report the first task (in graph order) whose kernel failed.
  const settled = await Promise.allSettled(pending)
  for (const s of settled) if (s.status === "rejected") throw s.reason
  return fns
}

/**
 * Runs the job to completion on this thread; rejects with a ComputeError.
 *
 * @since 0.1.0
 * @internal
 */
export const runSync = async (job: Job, cancel: CancelFlag): Promise<void> => {
  const fns = await loadAll(job)
  if (job.sampler !== undefined) {
    // the tasks run on this thread: the sampling hook samples it and attributes them
    job.mainThread = true
    Sampling.mainThreadTasks(job.sampler)
  }
  const s = job.state
  const book = job.profile ? new MemoryBook(job, 1, host) : null
  const rec = newRows(1)
  const now = EngineClock.nowSeconds
  const cpu = EngineClock.threadCpuSeconds
  // one slot (this thread) that takes whole frontiers from the dispatcher, fused. Hot
  // loop: plain imperative code on typed arrays, no per-task allocation besides resolved
  // argument arrays; it only awaits when a kernel returns a Promise.
  const d = new Dispatcher(s, SYNC_DISPATCH)
  d.join(0)
  d.start()
  let lastYield = performance.now()
  let sinceCheck = 0
  for (let run = nextRun(d); run !== undefined; run = nextRun(d)) {
    const began = performance.now()
    const tasks = run.tasks
    for (let q = 0; q < tasks.length; q++) {
      // Yield to the event loop every ~10 ms so an interruption can be delivered
      // (the clock is read every 16 tasks to keep no-op tasks cheap).
      if (++sinceCheck === 16) {
        sinceCheck = 0
        const t = performance.now()
        if (t - lastYield > 10) {
          await new Promise<void>((resolve) => setImmediate(resolve))
          lastYield = performance.now()
        }
      }
      if (cancel.cancelled) throw EngineError.interrupted()
      const i = tasks[q]!
      if (job.pre.length > 0) pre(job, i)
      const args = State.argsFor(s, i)
      const fn = fns[i]!
      const spec = job.graph.specs[i]!
      let result: unknown
      let c0 = 0
      let t0 = 0
      try {
        if (book !== null) {
          c0 = cpu()
          const h0 = heapBytes()
          const io0 = bytesRead()
          t0 = now()
          let r = fn.apply(undefined, args as Array<unknown>)
          if (isThenable(r)) r = await r
          if (spec.output !== undefined) check(r, spec)
          const x1 = now()
          const h1 = heapBytes()
          result = shareResult(r)
          writePhases(rec, 0, t0, t0, x1, now())
          writeAmounts(rec, 0, cpu() - c0, Math.max(h0, h1, heapBytes()), bytesRead() - io0)
        } else {
          let r = fn.apply(undefined, args as Array<unknown>)
          if (isThenable(r)) r = await r
          if (spec.output !== undefined) check(r, spec)
          result = shareResult(r)
        }
      } catch (e) {
        const key = job.graph.keys[i]!
        const k = spec.kernel
        const { message, stack } = errorParts(e)
        const error = e instanceof OutputMismatch
          ? EngineError.badOutput(key, Kernel.describe(k), spec.stage, describeOutput(spec.output!), e.actual)
          : EngineError.kernelFailed(key, Kernel.describe(k), message, stack, k.module)
        if (book !== null) {
          // the failed task's record, up to the failure
          const t1 = now()
          writePhases(rec, 0, t0, t0, t1, t1)
          writeAmounts(rec, 0, cpu() - c0, heapBytes(), 0)
          record(job, book, i, undefined, 0, host, rec, 0, "erred", erredInfo, { error: error.message, traceback: e instanceof OutputMismatch ? "" : stack })
        }
        throw error
      }
      if (cancel.cancelled) throw EngineError.interrupted()
      if (book !== null) record(job, book, i, result, 0, host, rec, 0, "memory")
      d.taskDone(0, run.batch, q, result)
      if (job.post.length > 0) post(job, i, result, 0)
    }
    d.batchDone(0, run.batch, (performance.now() - began) / 1000)
  }
}

/** The batch the dispatcher gives this thread next; undefined once it finished. */
const nextRun = (d: Dispatcher): Run | undefined => {
  for (const x of d.take()) if (x._tag === "Run") return x
  return undefined
}

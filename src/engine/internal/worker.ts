/**
 * The worker-thread side of the pool: receives batches of task descriptors, runs each
 * kernel, moves results into shared memory and posts the batch's results back in one
 * message. Kernel functions are cached by interned id; a module is imported once.
 *
 * The loop is plain imperative code and stays synchronous unless a kernel must be
 * imported or returns a Promise: this is the hot path of every task.
 *
 * @since 0.1.0
 * @internal
 */
import { parentPort, workerData } from "node:worker_threads"
import * as EngineClock from "../EngineClock.ts"
import type { KernelFn } from "../Kernel.ts"
import { flushSeconds, lingerSeconds } from "../Sampling.ts"
import { bytesRead } from "../TaskIo.ts"
import { ThreadSampler } from "../ThreadSampler.ts"
import { errorParts, loadFailure, loadKernel, OUT_STRIDE, OutputMismatch, outputMismatch, shareResult } from "./kernels.ts"
import { noSamples, resolveLocal, serve } from "./batchLoop.ts"
import { heapBytes } from "./taskMemory.ts"
import { BATCH, CANCEL, INDEX } from "./protocol.ts"
import { newRows, TIMING_FLOATS, writeAmounts, writePhases } from "./taskTiming.ts"
import type { BatchDone, BatchError, Ready, RunBatch, Samples } from "./protocol.ts"

const port = parentPort!
const control = new Int32Array((workerData as { control: SharedArrayBuffer }).control)
const defs: Array<readonly [string, string]> = []
const fns: Array<KernelFn | undefined> = []
const now = EngineClock.nowSeconds
const cpu = EngineClock.threadCpuSeconds

const isThenable = (u: unknown): u is PromiseLike<unknown> =>
  typeof u === "object" && u !== null && typeof (u as { then?: unknown }).then === "function"

/** Throws OutputMismatch when the result at batch position `q` is not what its task declared. */
const check = (r: unknown, out: Int32Array, q: number): void => {
  const bad = outputMismatch(r, out, q * OUT_STRIDE)
  if (bad !== null) throw new OutputMismatch(bad)
}

/**
 * V8's sampler on this thread (see Sampling): started by the first batch that asks for
 * sampling (or at boot, when the pool says so), kept across computes and across the
 * hooks that ask for it, stopped `lingerSeconds` after the last one let go.
 */
let sampler: ThreadSampler | null = null
/** whether a hook takes this thread's samples now; since when (epoch s: earlier ones are nobody's) */
let owned = false
let ownedSince = 0
let linger: ReturnType<typeof setTimeout> | null = null

const sendSamples = (s: ThreadSampler, last: boolean): void => {
  port.postMessage({ t: "samples", chunk: s.take(true, ownedSince), interval: s.interval, last } satisfies Samples)
}

/** Samples for a hook from now on, at `interval` ms. */
const own = (interval: number): void => {
  if (owned && sampler !== null && sampler.interval === interval) return
  if (linger !== null) clearTimeout(linger)
  linger = null
  if (sampler !== null && sampler.interval !== interval) {
    sampler.close()
    sampler = null
  }
  sampler ??= new ThreadSampler(interval)
  owned = true
  ownedSince = now()
}

/** The hook let go: its last samples, then the sampler idles until taken again or it lingered long enough. */
const release = (): void => {
  const s = sampler
  if (s === null || !owned) return port.postMessage(noSamples(true))
  sendSamples(s, true)
  owned = false
  linger = setTimeout(() => {
    linger = null
    if (!owned) {
      sampler?.close()
      sampler = null
    }
  }, lingerSeconds * 1000)
  linger.unref()
}

const boot = (workerData as { sample?: number }).sample
if (boot !== undefined && boot > 0) sampler = new ThreadSampler(boot)

const runBatch = async (m: RunBatch): Promise<void> => {
  if (m.s > 0) own(m.s)
  const t0 = performance.now()
  if (m.defs !== null) for (let q = 0; q < m.defs.length; q++) defs[m.d0 + q] = m.defs[q]!
  const n = m.ks.length
  const results = new Array<unknown>(n)
  const profile = m.p === 1
  const rec = profile ? newRows(n) : null
  let error: BatchError | null = null
  let done = 0
  const loc = m.loc
  const out = m.out
  let nextLoc = 0
  // Thread CPU time is read once per task, not twice: a task's reading at its end is the
  // next task's start (the loop's bookkeeping between them, well under a µs, is charged
  // to the next task). process.threadCpuUsage() is the most expensive part of the
  // profiling records on no-op tasks (docs/engine.md, "Measured costs behind the code");
  // its value is tick-granular anyway (docs/profiler.md).
  let cpuMark = profile ? cpu() : 0
  // the same for the heap reading (a task's start is the previous one's end) and the
  // thread's bytes-read counter (TaskIo)
  let heapMark = profile ? heapBytes() : 0
  let ioMark = bytesRead()
  Atomics.store(control, BATCH, m.b)
  for (let q = 0; q < n; q++) {
    if (Atomics.load(control, CANCEL) === m.c) break
    Atomics.store(control, INDEX, q)
    const k = m.ks[q]!
    let fn = fns[k]
    if (fn === undefined) {
      const [module, name] = defs[k]!
      try {
        fn = await loadKernel(module, name)
        fns[k] = fn
      } catch (e) {
        error = { i: q, notFound: true, ...loadFailure(e), stack: "", module, name }
        break
      }
    }
    let args = m.args[q]!
    if (loc !== null && nextLoc < loc.length && loc[nextLoc] === q) {
      nextLoc++
      args = resolveLocal(args, results)
    }
    let g0 = 0
    let g1 = 0
    try {
      if (rec !== null) {
        // gather: inputs arrive resolved (shared-memory views); unpacking is the cost.
        g0 = now()
        const argv = args.length === 0 ? args : Array.from(args)
        g1 = now()
        let r = fn.apply(undefined, argv as Array<unknown>)
        if (isThenable(r)) r = await r
        if (out !== null && out[q * OUT_STRIDE]! >= 0) check(r, out, q)
        const x1 = now()
        const h1 = heapBytes()
        results[q] = shareResult(r)
        const t1 = now()
        const o = q * TIMING_FLOATS
        writePhases(rec, o, g0, g1, x1, t1)
        const c1 = cpu()
        const h2 = heapBytes()
        const io = bytesRead()
        writeAmounts(rec, o, c1 - cpuMark, Math.max(heapMark, h1, h2), io - ioMark)
        cpuMark = c1
        heapMark = h2
        ioMark = io
      } else {
        let r = fn.apply(undefined, args as Array<unknown>)
        if (isThenable(r)) r = await r
        if (out !== null && out[q * OUT_STRIDE]! >= 0) check(r, out, q)
        results[q] = shareResult(r)
      }
    } catch (e) {
      const [module, name] = defs[k]!
      if (e instanceof OutputMismatch) error = { i: q, notFound: false, message: e.message, stack: "", module, name, output: e.actual }
      else {
        const { message, stack } = errorParts(e)
        error = { i: q, notFound: false, message, stack, module, name }
      }
      if (rec !== null) {
        // the failed task's row, up to the failure: the pool records it as erred
        const t1 = now()
        const o = q * TIMING_FLOATS
        writePhases(rec, o, g0 || t1, g1 || t1, t1, t1)
        writeAmounts(rec, o, cpu() - cpuMark, Math.max(heapMark, heapBytes()), bytesRead() - ioMark)
      }
      break
    }
    done = q + 1
  }
  Atomics.store(control, INDEX, -1)
  results.length = done
  const msg: BatchDone = {
    t: "done",
    c: m.c,
    b: m.b,
    n: done,
    results,
    error,
    busy: performance.now() - t0,
    rec
  }
  try {
    port.postMessage(msg)
  } catch (e) {
    // A result that structured clone cannot carry fails that task, not the worker.
    let bad = 0
    while (bad < done) {
      try {
        structuredClone(results[bad])
      } catch {
        break
      }
      bad++
    }
    const [module, name] = defs[m.ks[bad]!] ?? ["", ""]
    results.length = bad
    port.postMessage({
      ...msg,
      n: bad,
      results,
      error: { i: bad, notFound: false, message: `result cannot be sent between threads: ${errorParts(e).message}`, stack: errorParts(e).stack, module, name }
    } satisfies BatchDone)
  }
  // after the batch's results, so the pool has this thread's task records first
  // (samples taken for nobody are dropped the same way, so that a window stays small)
  if (sampler !== null && performance.now() - sampler.startedAt >= flushSeconds * 1000) {
    if (owned) sendSamples(sampler, false)
    else sampler.discard(true)
  }
}

serve(port, runBatch, () => sampler?.close(), (m) => {
  if (m.stop) return release()
  if (sampler === null || !owned) return port.postMessage(noSamples(false))
  sendSamples(sampler, false)
})

// the pool records how long this worker took to boot (the trace's "worker start")
port.postMessage({ t: "ready", at: now() } satisfies Ready)

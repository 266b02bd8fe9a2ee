/**
 * Worker-thread script of `overhead.ts --only sample-cost`: loads what an engine worker
 * loads for the demo (its kernel loader and the cluster kernels), then times starting
 * V8's sampler on this thread (`ThreadSampler`: session, V8's start), taking a window of
 * ~100 ms of samples while it keeps running (`take(true)`, what a flush or a layer's end
 * costs) and stopping it (`take(false)`, V8's profiler disposed), and posts the three
 * in ms.
 *
 * @since 0.1.0
 */
import { parentPort } from "node:worker_threads"

await import("../../src/engine/internal/kernels.ts")
await import("../../src/kernels/cluster.ts")
const { ThreadSampler } = await import("../../src/engine/ThreadSampler.ts")
const t0 = performance.now()
const s = new ThreadSampler(10)
const start = performance.now() - t0
let x = 0
while (performance.now() - t0 < start + 100) x += Math.sqrt(x + 1)
const t1 = performance.now()
s.take(true)
const take = performance.now() - t1
const t2 = performance.now()
s.take(false)
const stop = performance.now() - t2
s.close()
parentPort!.postMessage({ start, take, stop, x })

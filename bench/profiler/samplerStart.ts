/**
 * Worker-thread script of `overhead.ts --only sample-cost`: loads what an engine worker
 * loads for the demo (its kernel loader and the cluster kernels), then times starting
 * V8's sampler on this thread (`ThreadSampler`: session, `Profiler.start`) and taking its
 * samples (`Profiler.stop` + conversion), and posts both in ms.
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
const t1 = performance.now()
s.take(false)
const take = performance.now() - t1
s.close()
parentPort!.postMessage({ start, take })

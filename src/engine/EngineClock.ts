/**
 * The one clock every Tessera timestamp uses, on every thread and in every layer (the
 * engine's main thread and workers, the profiler's samplers, the report's memory
 * sampler): seconds since the epoch as a float with microsecond resolution
 * (`performance.timeOrigin + performance.now()`). In a worker thread
 * `performance.timeOrigin` is the worker's start, and this module is evaluated once per
 * thread, so the sum is still on the epoch clock and stamps from different threads line
 * up. Also the thread CPU time the engine records per task.
 *
 * Wall time for humans (DASF's `time` arg, log lines) comes from Effect's `Clock`
 * instead; this module is for stamps that must line up across threads.
 *
 * @since 0.1.0
 */

// read once per thread: `performance.timeOrigin` is a getter, and `nowSeconds` runs
// several times per task
const origin = performance.timeOrigin

/**
 * Current time in epoch seconds (µs resolution).
 *
 * @since 0.1.0
 * @category getters
 */
export const nowSeconds = (): number => (origin + performance.now()) / 1000

/**
 * CPU seconds (user + system) the calling thread has used so far.
 *
 * @since 0.1.0
 * @category getters
 */
export const threadCpuSeconds = (): number => {
  const u = process.threadCpuUsage()
  return (u.user + u.system) / 1e6
}

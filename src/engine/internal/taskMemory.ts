/**
 * The per-task memory reading of the executors: the calling thread's V8 heap in use
 * plus its external memory (ArrayBuffer backing stores and other memory V8 is told
 * about), in bytes, from `v8.getHeapStatistics()` (far cheaper than `process.memoryUsage()`,
 * which also reads the process RSS: docs/engine.md). Each worker thread is its own
 * isolate, so this is that worker's memory, not the process's. What the executors make
 * of it (a high-water mark over three readings per task) is described in docs/engine.md,
 * "Per-task resources".
 *
 * @since 0.1.0
 * @internal
 */
import { getHeapStatistics } from "node:v8"

/**
 * Heap used + external bytes of this thread's isolate now.
 *
 * @since 0.1.0
 * @internal
 */
export const heapBytes = (): number => {
  const h = getHeapStatistics()
  return h.used_heap_size + h.external_memory
}

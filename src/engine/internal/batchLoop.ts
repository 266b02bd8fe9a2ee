/**
 * What the CPU worker (`worker.ts`) and the GPU worker (`gpuWorker.ts`) share: resolving
 * batch-local references, and the loop that runs their batches one after another in
 * arrival order until the pool says close.
 *
 * @since 0.1.0
 * @internal
 */
import type { MessagePort } from "node:worker_threads"
import { LOCAL } from "./protocol.ts"
import type { FreeDevice, RunBatch, Samples, TakeSamples, ToWorker } from "./protocol.ts"

const isLocal = (u: unknown): u is { readonly [LOCAL]: number } =>
  typeof u === "object" && u !== null && typeof (u as Record<string, unknown>)[LOCAL] === "number"

/**
 * Replaces batch-local refs by the results computed earlier in this batch.
 *
 * @since 0.1.0
 * @internal
 */
export const resolveLocal = (args: ReadonlyArray<unknown>, results: ReadonlyArray<unknown>): Array<unknown> => {
  const out = new Array<unknown>(args.length)
  for (let a = 0; a < args.length; a++) {
    const x = args[a]
    if (isLocal(x)) out[a] = results[x[LOCAL]]
    else if (Array.isArray(x) && x.some(isLocal)) out[a] = x.map((y) => (isLocal(y) ? results[y[LOCAL]] : y))
    else out[a] = x
  }
  return out
}

/**
 * Runs each batch the pool posts on `port` with `run`, one at a time in arrival order;
 * on close, calls `onClose` and closes the port. A request for samples goes to `onTake`;
 * a worker that never samples (the GPU worker) answers it with none, so the pool never
 * waits on it. A `FreeDevice` (GPU workers) goes to `onFree` at once.
 *
 * @since 0.1.0
 * @internal
 */
export const serve = (
  port: MessagePort,
  run: (m: RunBatch) => Promise<void>,
  onClose?: () => void,
  onTake: (m: TakeSamples) => void = (m) => port.postMessage(noSamples(m.stop) satisfies Samples),
  onFree?: (m: FreeDevice) => void
): void => {
  const queue: Array<RunBatch> = []
  let busy = false
  const drain = async (): Promise<void> => {
    busy = true
    while (queue.length > 0) await run(queue.shift()!)
    busy = false
  }
  port.on("message", (m: ToWorker) => {
    if (m.t === "close") {
      onClose?.()
      port.close()
      return
    }
    if (m.t === "take") return onTake(m)
    if (m.t === "free") return onFree?.(m)
    queue.push(m)
    if (!busy) void drain()
  })
}

/**
 * The reply of a thread with no samples to give.
 *
 * @since 0.1.0
 * @internal
 */
export const noSamples = (last: boolean): Samples => ({
  t: "samples",
  chunk: { nodes: [], samples: new Int32Array(0), times: new Float64Array(0), deltas: new Float64Array(0) },
  interval: 0,
  last
})

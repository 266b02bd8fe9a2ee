/**
 * Zooming into the past beyond the ring: when the run writes a trace (`--profile`), the
 * server's `/api/detail` answers a window the in-memory ring no longer holds from the
 * trace database (`TraceDetailWorker.ts`, a worker thread: the load never runs on the
 * engine's thread), bounded: at most `limit` rectangles an answer, and how many were cut.
 *
 * @since 0.1.0
 */
import { Worker } from "node:worker_threads"
import type { TraceWindow } from "./TraceDetailWorker.ts"

export type { TraceRect, TraceWindow } from "./TraceDetailWorker.ts"

/**
 * A window's rectangles from the trace databases, off the engine's thread.
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceDetail {
  /** `[from, to]` in epoch seconds, at most `limit` rectangles */
  readonly window: (from: number, to: number, limit: number) => Promise<TraceWindow>
  /** ends the worker thread (it finishes what it runs) */
  readonly close: () => void
}

/**
 * The trace's detail for `files` (or how to get them: the run's trace databases, which
 * may appear only once the run writes them). The worker thread starts on the first window
 * asked for.
 *
 * @since 0.1.0
 * @category constructors
 */
export const traceDetail = (files: ReadonlyArray<string> | (() => ReadonlyArray<string>)): TraceDetail => {
  let worker: Worker | undefined
  let next = 0
  const waiting = new Map<number, { resolve: (w: TraceWindow) => void; reject: (e: Error) => void }>()
  const start = () => {
    const self = import.meta.url
    const w = new Worker(new URL(`./TraceDetailWorker${self.slice(self.lastIndexOf("."))}`, self))
    w.unref()
    w.on("message", (m: { id: number; ok: boolean; window?: TraceWindow; error?: string }) => {
      const p = waiting.get(m.id)
      waiting.delete(m.id)
      if (p !== undefined) m.ok ? p.resolve(m.window!) : p.reject(new Error(m.error))
    })
    // an error, or an exit without one (closed, or killed): every request waiting is
    // answered, and the next window starts a new thread
    const gone = (e: Error) => {
      for (const p of waiting.values()) p.reject(e)
      waiting.clear()
      if (worker === w) worker = undefined
    }
    w.on("error", gone)
    w.on("exit", (code) => gone(new Error(`the trace reader's thread exited (code ${code}) before it answered`)))
    return w
  }
  return {
    window: (from, to, limit) =>
      new Promise<TraceWindow>((resolve, reject) => {
        const list = typeof files === "function" ? files() : files
        worker ??= start()
        const id = next++
        waiting.set(id, { resolve, reject })
        worker.postMessage({ id, files: [...list], from, to, limit })
      }),
    close: () => {
      worker?.postMessage({ quit: true })
      worker = undefined
    }
  }
}

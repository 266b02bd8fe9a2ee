/**
 * Flush-on-exit registry for database writers. Every open `FileDatabase` writer registers
 * a synchronous flush here; the first registration installs, once per process:
 *
 * - `exit`: flush everything still pending (normal exit, `process.exit`);
 * - `uncaughtExceptionMonitor`: flush before Node reports a fatal error (it does not
 *   change how the error is handled);
 * - `SIGINT` / `SIGTERM` (main thread only): flush synchronously, then, when no other
 *   listener handles the signal, remove our handler and re-raise it so the process dies
 *   with the conventional status (128 + signal number). When another listener exists
 *   (e.g. `NodeRuntime.runMain`, which interrupts the program and runs finalizers) we
 *   flush and leave the rest to it.
 *
 * Writes are `fs.writeSync` of whole encoded batches, so after a flush the OS holds every
 * recorded event; a SIGKILL loses only what was still pending in memory.
 *
 * @since 0.1.0
 * @internal
 */
import { isMainThread } from "node:worker_threads"

type Flush = () => void

const flushes = new Set<Flush>()
let installed = false

/**
 * Runs every registered flush, swallowing errors (a failing flush must not stop others).
 *
 * @since 0.1.0
 * @internal
 */
export const flushAllUnsafe = (): void => {
  for (const f of flushes) {
    try {
      f()
    } catch {
      // best effort at exit: the writer reports write errors on its normal path
    }
  }
}

const onSignal = (signal: "SIGINT" | "SIGTERM"): void => {
  flushAllUnsafe()
  if (process.listenerCount(signal) > 1) return
  process.removeListener(signal, handlers[signal])
  process.kill(process.pid, signal)
}

const handlers: Record<"SIGINT" | "SIGTERM", () => void> = {
  SIGINT: () => onSignal("SIGINT"),
  SIGTERM: () => onSignal("SIGTERM")
}

const install = (): void => {
  if (installed) return
  installed = true
  process.on("exit", flushAllUnsafe)
  process.on("uncaughtExceptionMonitor", flushAllUnsafe)
  if (isMainThread) {
    process.on("SIGINT", handlers.SIGINT)
    process.on("SIGTERM", handlers.SIGTERM)
  }
}

const uninstall = (): void => {
  if (!installed) return
  installed = false
  process.removeListener("exit", flushAllUnsafe)
  process.removeListener("uncaughtExceptionMonitor", flushAllUnsafe)
  if (isMainThread) {
    process.removeListener("SIGINT", handlers.SIGINT)
    process.removeListener("SIGTERM", handlers.SIGTERM)
  }
}

/**
 * Registers `flush` to run at exit, on SIGINT/SIGTERM and on a fatal error; returns the
 * unregister function. The process-level handlers exist only while something is registered.
 *
 * @since 0.1.0
 * @internal
 */
export const registerFlush = (flush: Flush): () => void => {
  flushes.add(flush)
  install()
  return () => {
    flushes.delete(flush)
    if (flushes.size === 0) uninstall()
  }
}

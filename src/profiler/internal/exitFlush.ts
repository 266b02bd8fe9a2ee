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
 * Besides flushes, `registerFinal` takes what must happen when the process ends (a
 * database's lock file removed, issue 32 item 2): run at `exit`, and on SIGINT/SIGTERM
 * just before the signal is re-raised (a process killed by a signal emits no `exit`).
 * When another listener handles the signal, the program's own finalizers release them.
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
const finals = new Set<Flush>()
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

const runFinals = (): void => {
  for (const f of finals) {
    try {
      f()
    } catch {
      // best effort at exit
    }
  }
}

const onExit = (): void => {
  flushAllUnsafe()
  runFinals()
}

const onSignal = (signal: "SIGINT" | "SIGTERM"): void => {
  flushAllUnsafe()
  if (process.listenerCount(signal) > 1) return
  runFinals()
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
  process.on("exit", onExit)
  process.on("uncaughtExceptionMonitor", flushAllUnsafe)
  if (isMainThread) {
    process.on("SIGINT", handlers.SIGINT)
    process.on("SIGTERM", handlers.SIGTERM)
  }
}

const uninstall = (): void => {
  if (!installed) return
  installed = false
  process.removeListener("exit", onExit)
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
export const registerFlush = (flush: Flush): () => void => registerIn(flushes, flush)

const registerIn = (set: Set<Flush>, f: Flush): () => void => {
  set.add(f)
  install()
  return () => {
    set.delete(f)
    if (flushes.size === 0 && finals.size === 0) uninstall()
  }
}

/**
 * Registers `final` to run when the process ends (at `exit`, and on SIGINT/SIGTERM
 * before the signal is re-raised), after every flush; returns the unregister function.
 *
 * @since 0.1.0
 * @internal
 */
export const registerFinal = (final: Flush): () => void => registerIn(finals, final)

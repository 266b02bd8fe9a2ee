/**
 * How many workers an executor may start: the one rule that bounds every count of worker
 * threads or processes that comes from outside (`Executor.layerWorkers({ workers })`,
 * `layerGpu`'s `gpus`, `layerCluster`'s `local` and `threads`, and `tessera`'s
 * `--workers`, `--threads` and `--cluster local:N`), so that the library and the command
 * line cannot drift. `tessera demo --workers 1e9` once ran 101 s to a V8 fatal error at
 * 13.4 GB.
 *
 * Loads anywhere, like `Executor.ts`: no `node:` builtin imported; `node:os` is reached
 * with `process.getBuiltinModule` when a function runs.
 *
 * @since 0.1.0
 */
import { WorkerCountRefused } from "./EngineError.ts"

/** The least memory a worker thread is counted at (64 MiB). */
const THREAD_MEMORY = 64 * 2 ** 20

/**
 * The most workers (threads, or worker processes) this machine can host now: four per
 * core, or as many as its free memory holds at 64 MiB each, whichever is more; with why,
 * for messages. Free memory is `process.availableMemory()` (within a cgroup's limit) or
 * `os.freemem()`, the smaller; `available` and `cores` may be given (tests).
 *
 * @since 0.1.0
 * @category getters
 */
export const maxWorkers = (
  available?: number,
  cores?: number
): { readonly bound: number; readonly why: string } => {
  const os = process.getBuiltinModule("node:os")
  const n = cores ?? os.availableParallelism()
  let free = available
  if (free === undefined) {
    const fromProcess = typeof process.availableMemory === "function" ? process.availableMemory() : 0
    free = fromProcess > 0 ? Math.min(fromProcess, os.freemem()) : os.freemem()
  }
  const byMemory = Math.floor(free / THREAD_MEMORY)
  const bound = Math.max(4 * n, byMemory)
  const gib = (free / 2 ** 30).toFixed(1)
  return {
    bound,
    why: bound === byMemory
      ? `what this machine can host: ${gib} GiB free at 64 MiB a thread (and 4 per core, ${n} cores)`
      : `what this machine can host: 4 threads per core, ${n} cores (and ${gib} GiB free at 64 MiB a thread)`
  }
}

/**
 * Checks a count of workers given as `option`: `undefined` when it is a whole number from
 * 1 to {@link maxWorkers}, else the `WorkerCountRefused` to fail with (naming the option,
 * the count, the bound and why). `NaN`, `Infinity`, `1.5`, `0`, `-1` and non-numbers are
 * refused too.
 *
 * @since 0.1.0
 * @category guards
 */
export const checkWorkerCount = (option: string, asked: unknown, least = 1): WorkerCountRefused | undefined => {
  if (typeof asked !== "number" || !Number.isInteger(asked) || asked < least) {
    const why = `not a whole number of at least ${least}`
    return new WorkerCountRefused({
      option,
      asked: typeof asked === "number" ? asked : Number.NaN,
      bound: maxWorkers().bound,
      why,
      message: `${option}: ${shown(asked)} workers refused: ${why}`
    })
  }
  const { bound, why } = maxWorkers()
  if (asked <= bound) return undefined
  return new WorkerCountRefused({
    option,
    asked,
    bound,
    why,
    message: `${option}: ${shown(asked)} workers refused: more than ${bound}, ${why}`
  })
}

/**
 * Checks the counts of a cluster's local worker processes: `local` processes of `threads`
 * kernel threads each (a process counted as a thread), and the two multiplied. `local: 0`
 * is allowed: a scheduler that starts no worker of its own and waits for workers started
 * elsewhere (`tessera worker`, other hosts).
 *
 * @since 0.1.0
 * @category guards
 */
export const checkLocalCounts = (local: number | undefined, threads: number | undefined): WorkerCountRefused | undefined =>
  (local !== undefined ? checkWorkerCount("local", local, 0) : undefined) ??
    (threads !== undefined ? checkWorkerCount("threads", threads) : undefined) ??
    (local !== undefined && local > 0 && threads !== undefined ? checkWorkerCount("local × threads", local * threads) : undefined)

const shown = (u: unknown): string => {
  const s = typeof u === "string" ? JSON.stringify(u) : String(u)
  return s.length > 40 ? `${s.slice(0, 40)}…` : s
}

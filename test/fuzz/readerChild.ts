/**
 * The child process of test/fuzz/Readers.test.ts: reads the dataset files it is sent, one
 * case at a time, as Tessera would (describe, then every row chunk through the kernels),
 * and reports how each case ended. Started with a small heap (`--max-old-space-size`), so
 * a reader that allocates from a corrupt length dies here, not in the test runner, and
 * the parent sees the exit code or signal.
 *
 * Protocol (IPC messages): in `{ id, path }`; out `{ id, outcome: "ok" | "typed" |
 * "untyped", detail }`. "typed" is a DatasetFileError or NpyError; "untyped" is anything
 * else thrown, which the parent counts as a failure.
 */
import * as NodeFs from "node:fs"
import { Effect, Exit } from "effect"
import { readArrowRows } from "../../src/kernels/io/arrow.ts"
import { DatasetFileError } from "../../src/kernels/io/DatasetSource.ts"
import * as NodeSource from "../../src/kernels/io/NodeDatasetSource.ts"
import { decodeUnsafe, NpyError, readNpyRows } from "../../src/kernels/io/npy.ts"

const CHUNK_ROWS = 7

const readAll = (path: string): string => {
  const exit = Effect.runSyncExit(NodeSource.describe(path))
  if (Exit.isFailure(exit)) {
    const e = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
    if (e instanceof DatasetFileError) throw e
    throw new Error(`describe did not fail with a DatasetFileError: ${String(exit.cause)}`)
  }
  const info = exit.value
  const rows = info.shape[0] ?? 1
  let values = 0
  for (let start = 0; start < rows; start += CHUNK_ROWS) {
    const n = Math.min(CHUNK_ROWS, rows - start)
    const chunk = info.format === "npy"
      ? readNpyRows(path, { dtype: info.dtype, shape: info.shape, dataOffset: info.dataOffset }, start, n)
      : readArrowRows(info, start, n)
    values += chunk.data.length
  }
  if (info.format === "npy") decodeUnsafe(path, NodeFs.readFileSync(path), CHUNK_ROWS)
  return `${info.format} ${info.dtype} [${info.shape.join(", ")}], ${values} values read`
}

process.on("message", (m: { readonly id: number; readonly path: string }) => {
  let reply: { id: number; outcome: "ok" | "typed" | "untyped"; detail: string }
  try {
    reply = { id: m.id, outcome: "ok", detail: readAll(m.path) }
  } catch (e) {
    const typed = e instanceof DatasetFileError || e instanceof NpyError
    reply = { id: m.id, outcome: typed ? "typed" : "untyped", detail: e instanceof Error ? `${e.name}: ${e.message}\n${e.stack}` : String(e) }
  }
  process.send!(reply)
})
process.send!({ id: -1, outcome: "ok", detail: "ready" })

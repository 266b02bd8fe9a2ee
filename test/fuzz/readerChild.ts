/**
 * The child process of test/fuzz (harness.ts): reads the files it is sent, one case at a
 * time, and reports how each case ended. A dataset (.npy / Arrow) is read as Tessera
 * would (describe, then every row chunk through the kernels); a trace database by every
 * reader of one (see `readTrace`), each giving its verdict. Started with a small heap (`--max-old-space-size`), so
 * a reader that allocates from a corrupt length dies here, not in the test runner, and
 * the parent sees the exit code or signal.
 *
 * Protocol (IPC messages): in `{ id, path, kind }`; out `{ id, outcome: "ok" | "typed" |
 * "untyped", detail }`. For a dataset, "typed" is a DatasetFileError or NpyError; for a
 * trace, "ok" means every reader ended in a result or a TraceFormatError (`detail`: the
 * verdicts by reader, JSON); "untyped" is anything else thrown, which the parent counts
 * as a failure.
 */
import * as NodeFs from "node:fs"
import { Effect, Exit } from "effect"
import { readArrowRows } from "../../src/kernels/io/arrow.ts"
import { DatasetFileError } from "../../src/kernels/io/DatasetSource.ts"
import * as NodeSource from "../../src/kernels/io/NodeDatasetSource.ts"
import { decodeUnsafe, NpyError, readNpyRows } from "../../src/kernels/io/npy.ts"
import { loadPromise, type TraceTables } from "../../src/analysis/Load.ts"
import { readPromise as readDatabase } from "../../src/profiler/FileDatabase.ts"
import { loadReportInputPromise } from "../../src/report/Report.ts"
import { isReportInputError, loadEvents } from "../../src/report/LoadEvents.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { isTraceFormatError } from "../../src/trace/TraceFormatError.ts"

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

// --- trace databases ---------------------------------------------------------

/** Keys and hosts as the loader's tables hold them: numbers become their decimal string. */
const idOf = (u: unknown): string | undefined =>
  typeof u === "string" ? u : typeof u === "number" || typeof u === "bigint" || typeof u === "boolean" ? String(u) : undefined

/** What a reader found, comparable across readers: counts, recomputations, the task keys and hosts. */
const summary = (
  events: number,
  dropped: number,
  rows: { tasks: number; memory: number; resources: number },
  keys: ReadonlyArray<string | undefined>,
  hosts: ReadonlyArray<string | undefined>
): string => {
  const seen = new Set<string>()
  let recomputed = 0
  for (const k of keys) if (k !== undefined) seen.has(k) ? recomputed++ : seen.add(k)
  const list = (xs: ReadonlyArray<string | undefined>) => JSON.stringify([...new Set(xs.map((x) => x ?? null))].sort())
  return `ok events=${events} dropped=${dropped} tasks=${rows.tasks} memory=${rows.memory} resources=${rows.resources} recomputed=${recomputed} keys=${list(keys)} hosts=${list(hosts)}`
}

const ofTables = (t: TraceTables): string => {
  const r = summary(
    t.events,
    t.droppedBytes,
    { tasks: t.tasks.numRows, memory: t.memory.numRows, resources: t.resources.numRows },
    t.tasks.getChild("key")!.toArray().map((x) => x ?? undefined),
    t.tasks.getChild("host")!.toArray().map((x) => x ?? undefined)
  )
  if (t.recomputed !== Number(/recomputed=(\d+)/.exec(r)![1])) throw new Error(`TraceTables.recomputed ${t.recomputed} disagrees: ${r}`)
  return r
}

/** The same summary from events, routed as the loader routes them (`ColumnDecoder.addEvent`). */
const ofEvents = (events: ReadonlyArray<TraceEvent>, dropped: number): string => {
  const tasks = events.filter((e) => e.name === "Compute" && e.phase === "X")
  const meta = (e: TraceEvent) => e.name === "Pipeline Graph" || (e.phase === "M" && e.name !== "Managed Memory" && e.name !== "Resource Usage")
  return summary(
    events.length,
    dropped,
    {
      tasks: tasks.length,
      memory: events.filter((e) => e.name === "Managed Memory" && !meta(e)).length,
      resources: events.filter((e) => e.name === "Resource Usage" && !meta(e)).length
    },
    tasks.map((e) => idOf((e.args as Record<string, unknown>).key)),
    tasks.map((e) => idOf(e.process_id))
  )
}

/** A reader's error as its verdict: the reason's tag and the byte offset; else untyped. */
const verdictOfError = (e: unknown): string => {
  const f = isTraceFormatError(e) ? e : isReportInputError(e) && e.reason._tag === "TraceUnreadable" ? (e.reason as unknown as { error: unknown }).error : undefined
  if (isTraceFormatError(f)) return `${f.reason._tag} at ${f.offset}`
  throw e
}

/**
 * Every reader of trace databases on one file: the analysis loader on one thread and on
 * two worker threads (`analyze`), the report's loader (`report`), the event loader of
 * `export`, the profiler's `FileDatabase.read`. Returns each one's verdict; throws what
 * is neither a result nor a TraceFormatError.
 */
const readTrace = async (path: string): Promise<Record<string, string>> => {
  const readers: Record<string, () => Promise<string>> = {
    "load (1 thread)": async () => ofTables(await loadPromise([path], { threads: 1 })),
    "load (2 threads)": async () => ofTables(await loadPromise([path], { threads: 2, chunkBytes: 1024 })),
    "report": async () => ofTables((await loadReportInputPromise([path])).tables),
    "export": async () => {
      const r = await loadEvents([path])
      return ofEvents(r.events, r.droppedBytes)
    },
    "FileDatabase.read": async () => {
      const r = await readDatabase(path)
      return ofEvents(r.events, r.droppedBytes)
    }
  }
  const out: Record<string, string> = {}
  for (const [name, read] of Object.entries(readers)) {
    try {
      out[name] = await read()
    } catch (e) {
      out[name] = verdictOfError(e)
    }
  }
  return out
}

process.on("message", async (m: { readonly id: number; readonly path: string; readonly kind?: "dataset" | "trace" }) => {
  let reply: { id: number; outcome: "ok" | "typed" | "untyped"; detail: string }
  try {
    reply = m.kind === "trace"
      ? { id: m.id, outcome: "ok", detail: JSON.stringify(await readTrace(m.path)) }
      : { id: m.id, outcome: "ok", detail: readAll(m.path) }
  } catch (e) {
    const typed = e instanceof DatasetFileError || e instanceof NpyError
    reply = { id: m.id, outcome: typed ? "typed" : "untyped", detail: e instanceof Error ? `${e.name}: ${e.message}\n${e.stack}` : String(e) }
  }
  process.send!(reply)
})
process.send!({ id: -1, outcome: "ok", detail: "ready" })

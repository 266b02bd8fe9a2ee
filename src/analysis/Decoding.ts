/**
 * Decoding trace databases into columns, the first half of `Load` (the second builds the
 * Arrow tables): a module that loads no Arrow, so a caller can start decoding (on worker
 * threads, for large files) before it loads the table builder and the analyses
 * (`startDecoding`; `tessera analyze` does), and the two overlap.
 *
 * Leaves out: the tables (`Load.ts`), reading errors' wording (`src/trace`).
 *
 * @since 0.1.0
 */
import { stat } from "node:fs/promises"
import { availableParallelism } from "node:os"
import { isTraceFormatError, unexpected } from "../trace/TraceFormatError.ts"
import { type ArgSkip, ColumnDecoder, streamFrames } from "../trace/TraceReader.ts"
import { decodeParallelPromise } from "./internal/parallelDecode.ts"
import type { LoadColumns, LoadProgress, TasksSchema } from "./Load.ts"

/**
 * Options for decoding (and loading: `LoadOptions` adds to them).
 *
 * @since 0.1.0
 * @category models
 */
export interface DecodeOptions {
  readonly onProgress?: (p: LoadProgress) => void
  readonly chunkBytes?: number
  /**
   * Decoding threads: 1 decodes on the calling thread; more decode contiguous byte
   * ranges of the files on that many worker threads. Default: `decodeThreads(availableParallelism())` when
   * the files hold at least `parallelMinBytes` (16 MiB), else 1.
   */
  readonly threads?: number
  /**
   * Pieces to cut the files into for a decode on several threads, which the threads
   * claim one at a time (default: 16 per thread).
   */
  readonly pieces?: number
  /** load only these columns (the others: all null); default: every column */
  readonly columns?: LoadColumns
  /** stops decoding between batches (worker threads terminated); the decoding rejects with the signal's reason */
  readonly signal?: AbortSignal
  /** called once decoding has begun (worker threads started, the first bytes being read) */
  readonly onStarted?: () => void
  /**
   * The calling thread decodes only once this resolves (worker threads start at once):
   * `startDecoding` holds it back until the decoding is taken over, so that the caller's
   * module loading meanwhile is not starved (each module waits a turn of the event loop,
   * and each turn the decoder would take a batch).
   */
  readonly joined?: Promise<void>
}

/**
 * What decoding found: the decoder holding every column, the events, the dropped tail
 * bytes, and per file where its rows (tasks, memory, resources: 3 numbers a file) and
 * its `extra` events end.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decoded {
  readonly dec: ColumnDecoder
  readonly events: number
  readonly droppedBytes: number
  readonly fileRowEnds: Int32Array
  readonly fileExtraEnds: Int32Array
}

/** The task columns every load has (a projection cannot leave them out). */
export const alwaysLoaded: ReadonlyArray<keyof TasksSchema> = ["host", "worker", "key", "function", "start", "end", "duration"]

/** Each skippable arg and the columns that need it. */
const computeArgColumns: ReadonlyArray<readonly [NonNullable<ArgSkip["compute"]>[number], ReadonlyArray<keyof TasksSchema>]> = [
  ["state", ["state"]],
  ["size", ["size"]],
  ["cpu_time", ["cpu_time", "cores"]],
  ["dependencies", ["dependencies"]],
  ["stage", ["stage"]],
  ["type", ["type"]],
  ["dtype", ["dtype"]],
  ["shape", ["shape"]],
  ["dependents", ["dependents"]],
  ["startstops", ["gather_start", "gather_end", "compute_start", "compute_end", "transfer_start", "transfer_end"]],
  ["peak_memory", ["peak_memory"]],
  ["io_bytes", ["io_bytes"]]
]
const memoryArgs = ["key", "state", "size", "tasks"] as const

/**
 * The args the decoder may skip for a projection.
 *
 * @since 0.1.0
 * @category encoding
 */
export const argSkipOf = (columns: LoadColumns | undefined): ArgSkip => ({
  compute: columns?.tasks === undefined ? [] : computeArgColumns.filter(([, cs]) => !cs.some((c) => columns.tasks!.includes(c))).map(([a]) => a),
  memory: columns?.memory === undefined ? [] : memoryArgs.filter((a) => !columns.memory!.includes(a))
})

/**
 * Below this many bytes (all files together) a load decodes on the calling thread by
 * default: starting workers costs more than it saves.
 *
 * @since 0.1.0
 * @category constants
 */
export const parallelMinBytes = 16 * 1024 * 1024

/**
 * Default decoding threads on a machine with `cores` cores (large loads): 1 (the calling
 * thread) on one core, else `cores`, at most 4. On two cores, the calling thread and one
 * worker made `tessera analyze` 7-12% faster end to end than one thread (BENCHMARKS.md,
 * 2026-11-27), though each decodes ~1.4x slower beside the other.
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodeThreads = (cores: number): number => (cores <= 1 ? 1 : Math.min(4, cores))

/**
 * Decode databases into columns. Rejects with `TraceFormatError` naming the file.
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodePromise = async (files: ReadonlyArray<string>, options?: DecodeOptions): Promise<Decoded> => {
  let started = false
  const onStarted = () => (started ? undefined : (started = true, options?.onStarted?.()))
  const sizes = await fileSizes(files)
  const bytesTotal = sizes.reduce((a, b) => a + b, 0)
  const threads = options?.threads ??
    (bytesTotal >= parallelMinBytes ? decodeThreads(availableParallelism()) : 1)
  if (threads > 1) {
    const onProgress = options?.onProgress
    const got = await decodeParallelPromise(files, threads, {
      sizes,
      skip: argSkipOf(options?.columns),
      ...(options?.chunkBytes !== undefined ? { chunkBytes: options.chunkBytes } : {}),
      ...(options?.pieces !== undefined ? { pieces: options.pieces } : {}),
      ...(options?.signal !== undefined ? { signal: options.signal } : {}),
      onStarted,
      ...(options?.joined !== undefined ? { joined: options.joined } : {}),
      ...(onProgress !== undefined
        ? { onDecoded: (file: string, bytesRead: number, events: number) => onProgress({ file, bytesRead, bytesTotal, events }) }
        : {})
    })
    // undefined: a cut between two workers' ranges was not where a record begins (a
    // record holding bytes that look like records): decode on this thread instead
    if (got !== undefined) return got
  }
  onStarted()
  await options?.joined
  const dec = new ColumnDecoder(undefined, argSkipOf(options?.columns))
  let dropped = 0
  let done = 0
  let events = 0
  const rowEnds = new Int32Array(3 * files.length)
  const extraEnds = new Int32Array(files.length)
  for (let f = 0; f < files.length; f++) {
    const file = files[f]
    const it = streamFrames(file, options?.chunkBytes !== undefined ? { chunkBytes: options.chunkBytes } : undefined)
    let at = 0
    try {
      for (;;) {
        options?.signal?.throwIfAborted()
        const next = await it.next()
        if (next.done === true) {
          dropped += next.value.droppedBytes
          done += next.value.bytes
          break
        }
        const { bytes, end, fileOffset } = next.value
        at = fileOffset
        events += dec.decodeFrames(bytes, end, file, fileOffset)
        options?.onProgress?.({ file, bytesRead: done + fileOffset + end, bytesTotal, events })
      }
    } catch (e) {
      if (options?.signal?.aborted === true) throw options.signal.reason
      throw isTraceFormatError(e) ? e : unexpected(file, at, e) // keeps the cause, names the file
    } finally {
      await it.return(undefined as never) // closes the file when decoding threw
    }
    markFile(rowEnds, f, dec)
    extraEnds[f] = dec.extra.length
  }
  return { dec, events, droppedBytes: dropped, fileRowEnds: rowEnds, fileExtraEnds: extraEnds }
}

/**
 * Each file's size in bytes; 0 for one that cannot be read (reading it reports that with
 * a typed error).
 *
 * @since 0.1.0
 * @category encoding
 */
export const fileSizes = (files: ReadonlyArray<string>): Promise<Array<number>> =>
  Promise.all(files.map((f) => stat(f).then((s) => s.size, () => 0)))

/**
 * Where file `f`'s rows end (tasks, memory, resources: 3 numbers a file): the decoder's
 * row counts once that file is decoded.
 *
 * @since 0.1.0
 * @internal
 */
export const markFile = (rowEnds: Int32Array, f: number, dec: ColumnDecoder): void => {
  rowEnds[3 * f] = dec.tasks.length
  rowEnds[3 * f + 1] = dec.memory.length
  rowEnds[3 * f + 2] = dec.resources.length
}

/**
 * Decoding under way: its files and columns (a load asking for the same takes it over)
 * and its result.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decoding {
  readonly files: ReadonlyArray<string>
  readonly columns: LoadColumns | undefined
  readonly decoded: Promise<Decoded>
  /** stop decoding (when nobody will take it over: the command failed early); no effect once done */
  readonly abort: () => void
  /** let the calling thread decode too (a load that takes the decoding over does) */
  readonly join: () => void
}

/**
 * Start decoding now, on worker threads (large files); the calling thread joins in once
 * the decoding is taken over (`join`): `load(files, { decoding })` with the same files
 * and columns takes the result over instead of decoding again. Its rejection is handled here: whoever
 * awaits `decoded` sees it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const startDecoding = (files: ReadonlyArray<string>, options?: Omit<DecodeOptions, "signal" | "joined">): Decoding => {
  const stop = new AbortController()
  let join!: () => void
  const joined = new Promise<void>((resolve) => (join = resolve))
  const decoded = decodePromise(files, { ...options, signal: stop.signal, joined })
  decoded.catch(() => undefined)
  // stopped: the calling thread joins only to see the signal and reject
  return { files: [...files], columns: options?.columns, decoded, abort: () => (stop.abort(), join()), join }
}

/**
 * Is `d` decoding exactly these files into exactly these columns?
 *
 * @since 0.1.0
 * @category encoding
 */
export const sameDecoding = (d: Decoding, files: ReadonlyArray<string>, columns: LoadColumns | undefined): boolean => {
  const sameSet = <A>(a: ReadonlyArray<A> | undefined, b: ReadonlyArray<A> | undefined) =>
    a === undefined || b === undefined ? a === b : new Set(a).size === new Set(b).size && a.every((x) => b.includes(x))
  return d.files.length === files.length && d.files.every((f, i) => f === files[i]) &&
    (d.columns === undefined) === (columns === undefined) &&
    sameSet(d.columns?.tasks, columns?.tasks) && sameSet(d.columns?.memory, columns?.memory)
}


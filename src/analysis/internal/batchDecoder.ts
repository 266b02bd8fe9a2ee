/**
 * One decoder's share of a parallel load (`parallelDecode.ts`), on a worker thread
 * (`decodeWorker.ts`) or on the main thread: decodes batches of whole records with its own
 * `ColumnDecoder` (own string pool, own columns), remembers where each batch's rows end
 * and which batch each kept event came from, and stops decoding at its first error
 * (kept with the batch's order key, the file and the absolute byte offset). `result`
 * gives its columns and pool as typed arrays (no objects, no strings) and the buffers
 * to transfer.
 *
 * @since 0.1.0
 * @internal
 */
import { fromUnknown, toReasonFields } from "../../trace/TraceFormatError.ts"
import { type ArgSkip, ColumnDecoder, streamFrames, type StringPool } from "../../trace/TraceReader.ts"
import type { ColumnParts, DecodeResult, Segment, WorkerError } from "./parallelDecode.ts"

/**
 * Batch `k` of piece `p`: its place in file order (pieces are contiguous stretches of the
 * files, numbered in file order).
 *
 * @since 0.1.0
 * @internal
 */
export const seqOf = (p: number, k: number): number => p * 2 ** 32 + k

/**
 * About how much a decoder meets in `bytes` of trace, for sizing its string pool and
 * columns up front: no rehash and no copy as they fill, and each page touched once (a
 * first touch of a page is a page fault, paid in system time, and columns and the pool's
 * arena grown by doubling from small touch fresh pages at each copy; sizing them up front
 * was one of the changes that cut `tessera analyze`'s faults, BENCHMARKS.md's ninth
 * session). DASF's and Tessera's task events are 250-450 bytes, each with a new key of
 * ~50 bytes, beside one or two `Managed Memory` events of ~190 bytes (the 1M-event
 * bench trace: a task per ~760 bytes, a new string per ~700, a memory event per ~460);
 * the estimates are above those (a share of memory reserved and never touched costs
 * address space only), at most 4M strings and 4M rows a table. An estimate too low only
 * costs growing as before.
 *
 * @since 0.1.0
 * @internal
 */
export const expectedSizes = (bytes: number): { readonly strings: number; readonly stringBytes: number; readonly tasks: number; readonly memory: number } => {
  // a task per 512 bytes, and a new string (its key) each
  const tasks = Math.min(maxReserved, Math.ceil(bytes / 512))
  return { strings: tasks, stringBytes: tasks * 64, tasks, memory: Math.min(maxReserved, Math.ceil(bytes / 320)) }
}

/**
 * The most strings or rows reserved up front (4M: a few hundred MB of address space at
 * most; past it columns grow as rows come, as without an estimate).
 */
const maxReserved = 1 << 22

/**
 * See the module header.
 *
 * @since 0.1.0
 * @internal
 */
export class BatchDecoder {
  private readonly dec: ColumnDecoder
  private readonly marks: Array<number> = []
  private readonly metadataSeqs: Array<number> = []
  private readonly driverSeqs: Array<number> = []
  private readonly extraSeqs: Array<number> = []
  private events = 0
  private error: WorkerError | undefined
  /**
   * `bytes`: how many bytes of trace it will likely decode, to size its columns up front
   * (`expectedSizes`); `poolBytes`: the same for its string pool (the calling thread's
   * also takes every worker's strings: all the files' bytes); `sharedPool`: its pool's
   * strings in shared memory (`StringPool.sharedUtf8` then copies none).
   */
  constructor(skip: ArgSkip, bytes = 0, poolBytes = bytes, sharedPool = false) {
    this.dec = new ColumnDecoder(undefined, skip)
    const e = expectedSizes(bytes)
    const p = expectedSizes(poolBytes)
    try {
      this.dec.pool.reserve(p.strings, p.stringBytes, sharedPool)
      this.dec.tasks.reserve(e.tasks, 2 * e.tasks)
      this.dec.memory.reserve(e.memory)
    } catch (e) {
      // a reservation this process may not make (address-space limits: `ulimit -v`,
      // strict overcommit): decode anyway, growing as rows come
      if (!(e instanceof RangeError)) throw e
    }
  }

  /**
   * Decode one batch (`bytes[0..end)`, at `fileOffset` of `file`); its events, and whether
   * its buffer may be reused (no event kept whole holds a view of it, no error).
   */
  batch(seq: number, bytes: Uint8Array, end: number, file: string, fileOffset: number): { readonly events: number; readonly reusable: boolean } {
    const dec = this.dec
    let n = 0
    // events kept whole may hold views of the batch's bytes (msgpack bin values): its
    // buffer may be reused only when this batch kept none
    const kept = dec.metadata.length + dec.driver.length + dec.extra.length
    if (this.error === undefined) {
      try {
        n = dec.decodeFrames(bytes, end, file, fileOffset)
        this.events += n
      } catch (e) {
        this.error = { seq, error: toReasonFields(fromUnknown(e, file, fileOffset)) }
      }
      while (this.metadataSeqs.length < dec.metadata.length) this.metadataSeqs.push(seq)
      while (this.driverSeqs.length < dec.driver.length) this.driverSeqs.push(seq)
      while (this.extraSeqs.length < dec.extra.length) this.extraSeqs.push(seq)
      const t = dec.tasks
      this.marks.push(t.length, t.deps.length, dec.memory.length, dec.resources.length, t.dependents.length)
    }
    return { events: n, reusable: this.error === undefined && dec.metadata.length + dec.driver.length + dec.extra.length === kept }
  }

  /** The decoder's string pool (the strings met so far). */
  get pool(): StringPool {
    return this.dec.pool
  }

  /** Has a batch failed to decode (later batches are not decoded)? */
  get failed(): boolean {
    return this.error !== undefined
  }

  /** The columns and pool decoded, and the buffers holding them (to transfer). */
  result(): { readonly result: Omit<DecodeResult, "run">; readonly buffers: Array<ArrayBuffer> } {
    const { dec, error, events, marks, metadataSeqs, driverSeqs, extraSeqs } = this
    const { buffers, parts } = columnParts(dec)
    const result: Omit<DecodeResult, "run"> = {
      type: "result",
      events,
      marks: Int32Array.from(marks),
      ...parts,
      metadataSeqs: Float64Array.from(metadataSeqs),
      driverSeqs: Float64Array.from(driverSeqs),
      extraSeqs: Float64Array.from(extraSeqs),
      ...(error !== undefined ? { error } : {})
    }
    return { result, buffers }
  }
}

/**
 * A decoder's columns, pool, counts and kept events as plain data (typed arrays over
 * the decoder's own buffers, no copies), and those buffers (to transfer them, or not).
 *
 * @since 0.1.0
 * @internal
 */
export const columnParts = (dec: ColumnDecoder): { readonly parts: ColumnParts; readonly buffers: Array<ArrayBuffer> } => {
  const pool = dec.pool.parts()
  const t = dec.tasks
  t.complete()
  const mem = dec.memory
  const r = dec.resources
  const counts = dec.counts
  const parts: ColumnParts = {
    fallbacks: dec.fallbacks,
    countIds: Int32Array.from(counts.keys()),
    countValues: Float64Array.from(counts.values()),
    pool,
    tasks: {
      host: t.host.view(),
      worker: t.worker.view(),
      key: t.key.view(),
      name: t.name.view(),
      state: t.state.view(),
      end: t.end.view(),
      duration: t.duration.view(),
      size: t.size.view(),
      cpuTime: t.cpuTime.view(),
      depOffsets: t.depOffsets.view(),
      deps: t.deps.view(),
      stage: t.stage.view(),
      type: t.type.view(),
      dtype: t.dtype.view(),
      shape: t.shape.view(),
      peakMemory: t.peakMemory.view(),
      ioBytes: t.ioBytes.view(),
      phases: t.phases.map((c) => c.view()),
      dependentOffsets: t.dependentOffsets.view(),
      dependents: t.dependents.view()
    },
    memory: {
      timestamp: mem.timestamp.view(),
      host: mem.host.view(),
      worker: mem.worker.view(),
      key: mem.key.view(),
      state: mem.state.view(),
      size: mem.size.view(),
      tasks: mem.tasks.view(),
      device: mem.device.view()
    },
    resources: { timestamp: r.timestamp.view(), host: r.host.view(), values: r.values.map((c) => c.view()) },
    metadata: dec.metadata,
    driver: dec.driver,
    extra: dec.extra
  }
  const buffers = new Set<ArrayBuffer>()
  // shared memory (the calling thread's pool arena, `reserve(..., true)`) is shared when
  // posted: a transfer list refuses it
  const add = (a: ArrayBufferView) => void (a.buffer instanceof ArrayBuffer && buffers.add(a.buffer))
  for (const a of [pool.arena, pool.starts, pool.hashes]) add(a)
  for (const a of Object.values(parts.tasks)) {
    if (Array.isArray(a)) a.forEach(add)
    else add(a as ArrayBufferView)
  }
  for (const a of Object.values(parts.memory)) add(a)
  add(parts.resources.timestamp)
  add(parts.resources.host)
  for (const a of parts.resources.values) add(a)
  return { parts, buffers: [...buffers] }
}

/**
 * What reading a decoder's pieces found: each batch's order key (`seqOf`) and file (in
 * the order decoded, which is file order), the bytes dropped from truncated file tails,
 * whether a piece that should have ended where the next began ended inside a record
 * (`misaligned`: the cut was not a record start), and the first framing error (with the
 * order key of the batch it would have been).
 *
 * @since 0.1.0
 * @internal
 */
export interface RunSummary {
  readonly batchSeqs: Float64Array
  readonly batchFiles: Int32Array
  readonly dropped: number
  readonly misaligned: boolean
  readonly framing?: WorkerError
}

/**
 * Claim pieces from `claims` (the next piece's index, shared by every decoder) and
 * decode each into `decoder`, batch by batch (each batch in a buffer of its own, reused
 * once nothing decoded from it keeps a view of it), until none is left. At a framing
 * error, a misplaced cut or a decoding error it stops, and ends every decoder's claiming
 * (each piece before it has been claimed already, and is finished by its decoder);
 * when `signal` aborts it rejects with its reason.
 *
 * @since 0.1.0
 * @internal
 */
export const decodePieces = async (
  decoder: BatchDecoder,
  pieces: ReadonlyArray<Segment>,
  claims: SharedArrayBuffer,
  options: {
    readonly chunkBytes?: number
    readonly signal?: AbortSignal
    readonly onBatch?: (file: string, bytes: number, events: number) => void
    /** after each piece decoded */
    readonly onPiece?: () => void
  }
): Promise<RunSummary> => {
  const next = new Int32Array(claims)
  const batchSeqs: Array<number> = []
  const batchFiles: Array<number> = []
  const spares: Array<Uint8Array<ArrayBuffer>> = []
  let dropped = 0
  const summary = (misaligned: boolean, framing?: WorkerError): RunSummary => {
    if (misaligned || framing !== undefined || decoder.failed) Atomics.store(next, 0, pieces.length)
    return {
      batchSeqs: Float64Array.from(batchSeqs),
      batchFiles: Int32Array.from(batchFiles),
      dropped,
      misaligned,
      ...(framing !== undefined ? { framing } : {})
    }
  }
  for (let p = Atomics.add(next, 0, 1); p < pieces.length; p = Atomics.add(next, 0, 1)) {
    const piece = pieces[p]!
    const it = streamFrames(piece.file, {
      owned: true,
      reuse: () => spares.pop(),
      giveBack: (b) => spares.push(b),
      start: piece.start,
      ...(piece.end !== undefined ? { end: piece.end } : {}),
      ...(options.chunkBytes !== undefined ? { chunkBytes: options.chunkBytes } : {})
    })
    try {
      for (let k = 0;; k++) {
        options.signal?.throwIfAborted()
        // nothing after a decoding error counts: stop reading
        if (decoder.failed) return summary(false)
        const seq = seqOf(p, k)
        let got
        try {
          got = await it.next()
        } catch (e) {
          return summary(false, { seq, error: toReasonFields(fromUnknown(e, piece.file, piece.start)) })
        }
        if (got.done === true) {
          if (piece.end === undefined) dropped += got.value.droppedBytes
          // the piece ended inside a record: the next did not start at one
          else if (got.value.droppedBytes !== 0) return summary(true)
          break
        }
        const { bytes, end, fileOffset } = got.value
        batchSeqs.push(seq)
        batchFiles.push(piece.fileIndex)
        const done = decoder.batch(seq, bytes, end, piece.file, fileOffset)
        if (done.reusable) spares.push(new Uint8Array(bytes.buffer as ArrayBuffer))
        options.onBatch?.(piece.file, end, done.events)
      }
    } finally {
      // a stream left early (abort, an error, a failed decoder) closes its file now, not
      // when it is garbage collected; a finished one ignores this (closing a file only
      // read from cannot lose anything: its error is not worth the decode's)
      await it.return(undefined as never).catch(() => undefined)
    }
    options.onPiece?.()
  }
  return summary(false)
}

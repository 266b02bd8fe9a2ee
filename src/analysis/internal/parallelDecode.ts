/**
 * Parallel decoding for `Load`: the files are cut into pieces, contiguous byte ranges
 * each cut where a record begins (`recordStartNear`), and the decoders (the calling
 * thread and worker threads, `decodeWorker.ts`) claim pieces one at a time, in file
 * order, from a shared counter (`Atomics.add` on a `SharedArrayBuffer`) until none is
 * left. Every decoder streams the pieces it claimed itself (`decodePieces` in
 * `batchDecoder.ts`: `streamFrames` with `start`/`end`, framing, tail judgement, read
 * errors) into its own columns and string pool. At the end the pools are merged into
 * one (each worker string interned once, by its precomputed hash) and the batches'
 * columns concatenated in file order with their string ids remapped, so the result is
 * exactly what one `ColumnDecoder` over the same files gives (same rows, same order).
 *
 * Claiming pieces, not fixed shares: the calling thread also loads the command line's
 * modules and the analyses while it decodes, by an amount that depends on the machine's
 * load, and a decoder that is slowed down simply claims fewer pieces (fixed shares left
 * one thread idle for a quarter of the decode). Pieces, not batches: a task's
 * dependencies name keys written shortly before it, so each decoder interns mostly its
 * own piece's keys; only keys named across a cut are interned by two decoders (dealing
 * out small batches made every worker intern nearly every key).
 *
 * A cut is a guess until checked: the piece before it must end exactly where it is (no
 * partial record left). When it does not (a string inside a record that looks like a
 * chain of records), the decode answers `undefined` and the caller decodes on one
 * thread instead.
 *
 * Errors: the first error in file order wins, as in a sequential load: a decoding error
 * in an earlier batch (with its file and absolute byte offset) beats a framing error met
 * later, and vice versa. A decoder stops claiming at its first error; every piece before
 * it has been claimed, so an earlier error cannot be missed.
 *
 * Leaves out: the table build (`Load.ts`).
 *
 * @since 0.1.0
 * @internal
 */
import { Worker } from "node:worker_threads"
import type { TraceEvent } from "../../trace/TraceEvent.ts"
import { fromReasonFields, type TraceFormatErrorFields, unexpected } from "../../trace/TraceFormatError.ts"
import { BatchDecoder, decodePieces, type RunSummary } from "./batchDecoder.ts"
import {
  type ArgSkip,
  ColumnDecoder,
  type F64,
  type I32,
  phaseNames,
  recordStartNear,
  resourceArgs,
  type StringPool,
  type StringPoolParts
} from "../../trace/TraceReader.ts"

/** Numbers per batch in a worker's `marks` (row ends: tasks, dependencies, memory, resources, dependents). */
export const MARKS = 5

/**
 * A worker's task: decode the pieces it claims from `claims` (an `Int32Array` of one
 * element over it: the next piece to claim); it reads the files itself.
 */
export interface DecodeRequest {
  readonly type: "pieces"
  readonly pieces: ReadonlyArray<Segment>
  readonly claims: SharedArrayBuffer
  readonly chunkBytes?: number
  /** bytes the decoder is likely to decode (`batchDecoder.ts` `expectedSizes`) */
  readonly bytes: number
}

/** A worker's first decoding error. */
export interface WorkerError {
  readonly seq: number
  readonly error: TraceFormatErrorFields
}

/**
 * A decoder's columns, pool, event counts and kept events as plain data (typed arrays,
 * `TraceEvent`s): what a worker sends back (`BatchDecoder.result`).
 */
export interface ColumnParts {
  readonly fallbacks: number
  readonly countIds: Int32Array
  readonly countValues: Float64Array
  readonly pool: StringPoolParts
  readonly tasks: {
    readonly host: Int32Array
    readonly worker: Int32Array
    readonly key: Int32Array
    readonly name: Int32Array
    readonly state: Int32Array
    readonly end: Float64Array
    readonly duration: Float64Array
    readonly size: Float64Array
    readonly cpuTime: Float64Array
    readonly depOffsets: Int32Array
    readonly deps: Int32Array
    readonly stage: Int32Array
    readonly type: Int32Array
    readonly dtype: Int32Array
    readonly shape: Int32Array
    readonly peakMemory: Float64Array
    readonly ioBytes: Float64Array
    readonly phases: ReadonlyArray<Float64Array>
    readonly dependentOffsets: Int32Array
    readonly dependents: Int32Array
  }
  readonly memory: {
    readonly timestamp: Float64Array
    readonly host: Int32Array
    readonly worker: Int32Array
    readonly key: Int32Array
    readonly state: Int32Array
    readonly size: Float64Array
    readonly tasks: Float64Array
    readonly device: Float64Array
  }
  readonly resources: {
    readonly timestamp: Float64Array
    readonly host: Int32Array
    readonly values: ReadonlyArray<Float64Array>
  }
  /** metadata events decoded, in order */
  readonly metadata: ReadonlyArray<TraceEvent>
  /** `Driver` events decoded, in order */
  readonly driver: ReadonlyArray<TraceEvent>
  /** `Transfer` and `Clock Offset` events decoded, in order */
  readonly extra: ReadonlyArray<TraceEvent>
}

/**
 * A decoder's result: its columns and pool, `marks` holding, per batch, the end of its
 * rows (`MARKS` numbers: tasks, dependencies, memory, resources, dependents), the batch
 * each kept event came from, its first error and what reading found.
 */
export interface DecodeResult extends ColumnParts {
  readonly type: "result"
  readonly events: number
  readonly marks: Int32Array
  readonly metadataSeqs: Float64Array
  readonly driverSeqs: Float64Array
  readonly extraSeqs: Float64Array
  readonly error?: WorkerError
  /** what reading the pieces found (batches' order keys and files, dropped tail bytes, a misplaced cut, a framing error) */
  readonly run: RunSummary
}

/**
 * A worker's strings `from` to `from + pool.size - 1` (its pool's ids), met in the pieces
 * it decoded since its last such message: the main thread interns them into its own pool
 * while decoding goes on, so that the merge has little left to intern.
 */
export interface Strings {
  readonly type: "strings"
  readonly from: number
  readonly pool: StringPoolParts
}

/** A worker decoded a batch (`bytes` of records, `events` of them), for progress. */
export interface Ack {
  readonly type: "ack"
  readonly file: string
  readonly bytes: number
  readonly events: number
}

// `.ts` when run from the sources, `.js` from the compiled package (dist/).
const workerUrl = new URL(`./decodeWorker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url)

/** What the parallel decode found (the decoder holds the merged columns). */
export interface ParallelDecoded {
  readonly dec: ColumnDecoder
  readonly events: number
  readonly droppedBytes: number
  /** per file, where its rows end: tasks, memory and resources rows, 3 numbers a file */
  readonly fileRowEnds: Int32Array
  /** per file, where its `extra` events (`Transfer`, `Clock Offset`) end */
  readonly fileExtraEnds: Int32Array
}

/** A byte range of a file, read by one decoder: from `start` to `end` (undefined: to the end of the file). */
export interface Segment {
  readonly file: string
  readonly fileIndex: number
  readonly start: number
  readonly end: number | undefined
}

/**
 * Cut `files` (of `sizes` bytes) into about `count` pieces of equal size, in file order,
 * covering every file from its start to its end. A cut inside a file is moved to where a
 * record begins; a file with no record start found near a cut is not cut there.
 *
 * @since 0.1.0
 * @internal
 */
export const planPieces = async (
  files: ReadonlyArray<string>,
  sizes: ReadonlyArray<number>,
  count: number
): Promise<Array<Segment>> => {
  const total = sizes.reduce((a, b) => a + b, 0)
  const bounds = Array.from({ length: Math.max(0, count - 1) }, (_, k) => Math.round(((k + 1) / count) * total))
  // a short window first (16 records are a few KiB), the default one where that finds none
  const startNear = async (file: string, at: number) => (await recordStartNear(file, at, 1 << 16)) ?? recordStartNear(file, at)
  const pieces: Array<Segment> = []
  let at = 0
  for (let f = 0; f < files.length; f++) {
    const size = sizes[f] ?? 0
    const found = await Promise.all(bounds.filter((b) => b - at > 0 && b - at < size).map((b) => startNear(files[f]!, b - at)))
    const cuts: Array<number> = []
    for (const c of found) if (c !== undefined && c < size && c > (cuts.at(-1) ?? 0)) cuts.push(c)
    const starts = [0, ...cuts]
    starts.forEach((start, i) => pieces.push({ file: files[f]!, fileIndex: f, start, end: starts[i + 1] }))
    at += size
  }
  return pieces
}

/**
 * Pieces per decoder by default: enough that the last piece claimed is short next to a
 * decoder's whole share (the decoders finish close together: with 8, on the 1M-event
 * trace, one finished its last 17 MB piece ~0.14 s after the other), few enough that keys
 * named across cuts stay rare. 16 against 8: 2.66 s against 2.74 s end to end (medians of
 * 7, alternating).
 *
 * @since 0.1.0
 * @internal
 */
export const piecesPerDecoder = 16

/**
 * Decode `files` (of `sizes` bytes) on the calling thread and `threads - 1` worker
 * threads, each claiming pieces (see the module header). Rejects with `TraceFormatError`
 * (the first in file order); answers `undefined` when a cut between two pieces turned out
 * not to be where a record begins (decode on one thread then).
 *
 * @since 0.1.0
 * @internal
 */
export const decodeParallelPromise = async (
  files: ReadonlyArray<string>,
  threads: number,
  options: {
    /** the files' sizes in bytes (to cut them into pieces) */
    readonly sizes: ReadonlyArray<number>
    /** args the decoders leave undecoded (a column projection) */
    readonly skip?: ArgSkip
    readonly chunkBytes?: number
    /** pieces to cut the files into (default: `piecesPerDecoder` per decoder) */
    readonly pieces?: number
    /** after each decoded batch: its file, bytes and events decoded so far */
    readonly onDecoded?: (file: string, bytesDecoded: number, eventsDecoded: number) => void
    /** stops reading and the workers; the decode rejects with the signal's reason */
    readonly signal?: AbortSignal
    /** called once the worker threads are started, before this thread claims a piece */
    readonly onStarted?: () => void
    /** this thread claims pieces only once this resolves */
    readonly joined?: Promise<void>
  }
): Promise<ParallelDecoded | undefined> => {
  const W = Math.max(1, Math.floor(threads))
  // each decoder's likely share, to size its pool and columns (`expectedSizes`); this
  // thread's decoder first: nothing to stop if making it fails. Its pool becomes the
  // load's, in shared memory: `tessera analyze`'s CSV worker reads the task keys there
  // (Load.ts `onTaskColumns`)
  const total = options.sizes.reduce((a, b) => a + b, 0)
  const share = total / W
  const here = new BatchDecoder(options.skip ?? {}, share, total, true)
  // the workers start while the files are cut (a worker takes ~70 ms to boot); each
  // one's failure is kept from its creation on: a worker that fails to start before its
  // result is awaited below (an error event with no listener) would otherwise throw out
  // of this process's event loop; in the order they failed
  const failures = new Map<Worker, unknown>()
  const fail = (worker: Worker, e: unknown) => void (failures.has(worker) || failures.set(worker, e))
  const workers = Array.from({ length: W - 1 }, () => {
    const worker = new Worker(workerUrl, { workerData: options.skip ?? {} })
    worker.on("error", (e) => fail(worker, e))
    worker.on("exit", (code) => (code !== 0 ? fail(worker, new Error(`decode worker exited with code ${code}`)) : undefined))
    return worker
  })
  const pieces = await planPieces(files, options.sizes, Math.max(1, options.pieces ?? piecesPerDecoder * W)).catch((e) => {
    for (const w of workers) void w.terminate()
    throw e
  })
  const claims = new SharedArrayBuffer(4)
  let decoded = 0
  let decodedEvents = 0
  const progress = (file: string, bytes: number, events: number) => {
    decoded += bytes
    decodedEvents += events
    options.onDecoded?.(file, decoded, decodedEvents)
  }
  // the workers' strings interned here so far: early[w][id] is worker w's string id's id
  // in this thread's pool; each thread interns between its own batches, then as they come
  const early: Array<Array<number>> = Array.from({ length: W }, () => [])
  const pending: Array<{ readonly w: number } & Strings> = []
  let mine: RunSummary | undefined
  const absorb = () => {
    const pool = here.pool
    for (let m = pending.shift(); m !== undefined; m = pending.shift()) {
      const into = early[m.w]!
      if (into.length !== m.from) continue // never: each worker's strings come in order
      const { arena, hashes, size, starts } = m.pool
      for (let id = 0; id < size; id++) into.push(pool.internHashed(arena, starts[id]!, starts[id + 1]!, hashes[id]!))
    }
  }
  const results: Array<Promise<DecodeResult>> = workers.map((worker, i) =>
    new Promise((resolve, reject) => {
      worker.on("message", (m: DecodeResult | Ack | Strings) => {
        if (m.type === "result") resolve(m)
        else if (m.type === "strings") {
          pending.push({ ...m, w: i + 1 })
          if (mine !== undefined) absorb() // this thread is done decoding: at once
        } else progress(m.file, m.bytes, m.events)
      })
      if (failures.has(worker)) return reject(failures.get(worker)) // failed while the files were cut
      worker.on("error", reject)
      worker.on("exit", (code) => (code !== 0 ? reject(failures.get(worker)) : undefined))
      worker.postMessage({
        type: "pieces",
        pieces,
        claims,
        bytes: share,
        ...(options.chunkBytes !== undefined ? { chunkBytes: options.chunkBytes } : {})
      } satisfies DecodeRequest)
    })
  )
  for (const r of results) r.catch(() => undefined) // surfaced below, once
  const onAbort = () => {
    for (const w of workers) void w.terminate()
  }
  options.signal?.addEventListener("abort", onAbort, { once: true })
  try {
    options.onStarted?.()
    await options.joined
    mine = await decodePieces(here, pieces, claims, {
      ...(options.chunkBytes !== undefined ? { chunkBytes: options.chunkBytes } : {}),
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      onBatch: (file, bytes, events) => (progress(file, bytes, events), absorb())
    })
    absorb()
    const others = await Promise.all(results).catch((e) => {
      options.signal?.throwIfAborted()
      // a worker died: keep why (the first to fail)
      throw unexpected(files[0] ?? "", 0, failures.size > 0 ? failures.values().next().value : e)
    })
    // this thread's pool holds the workers' strings interned meanwhile: taken only now
    const got = [{ ...here.result().result, run: mine } satisfies DecodeResult, ...others]
    options.signal?.throwIfAborted()
    // a piece that did not end where the next began: what was read after it means
    // nothing (its errors included); the one-thread decode finds any real error
    if (got.some((g) => g.run.misaligned)) return undefined
    // the first error in file order, whether met decoding (a worker's) or framing
    let first: WorkerError | undefined
    for (const g of got) {
      for (const e of [g.error, g.run.framing]) if (e !== undefined && (first === undefined || e.seq < first.seq)) first = e
    }
    if (first !== undefined) throw fromReasonFields(first.error)
    const fileRowEnds = new Int32Array(3 * files.length)
    const fileExtraEnds = new Int32Array(files.length)
    return {
      dec: merge(got, files.length, fileRowEnds, fileExtraEnds, options.skip ?? {}, early, here.pool),
      events: got.reduce((s, g) => s + g.events, 0),
      droppedBytes: got.reduce((s, g) => s + g.run.dropped, 0),
      fileRowEnds,
      fileExtraEnds
    }
  } finally {
    options.signal?.removeEventListener("abort", onAbort)
    for (const w of workers) void w.terminate()
  }
}


/**
 * Task tables of at least this many rows have their end, duration and size columns in
 * shared memory (and `Load.ts` their host, worker and key codes): `tessera analyze`'s
 * CSV worker computes the per-task bottleneck from them where they are (Analyze.ts), where
 * posting copies of the 36 MB of a 1M-event load cost ~15 ms here and ~30 ms there.
 *
 * @since 0.1.0
 * @internal
 */
export const sharedColumnRows = 1 << 16

/**
 * Merge the decoders' results: pools into one (ids remapped; `early[w]` holds decoder
 * w's strings already interned into decoder 0's pool, by id), the batches' columns
 * concatenated in file order (each decoder's batches are in file order among
 * themselves; `run.batchSeqs` orders them all, `run.batchFiles` names their files).
 * The columns of skipped args (a projection: `skip`) are not copied (left zero / empty:
 * their loader does not read them). `pool`: decoder 0's pool itself (this thread's;
 * `got[0].pool` its parts), the result's pool as it is, hash table and all, where a pool
 * made from the parts hashed every string again and copied the arena (~45 ms on the
 * 1M-event trace, with the other decoders idle).
 * Hot path: typed-array loops.
 */
const merge = (
  got: ReadonlyArray<DecodeResult>,
  nFiles: number,
  fileRowEnds: Int32Array,
  fileExtraEnds: Int32Array,
  skip: ArgSkip,
  early: ReadonlyArray<ArrayLike<number>>,
  pool: StringPool
): ColumnDecoder => {
  const task = (a: NonNullable<ArgSkip["compute"]>[number]) => !(skip.compute ?? []).includes(a)
  const mem = (a: NonNullable<ArgSkip["memory"]>[number]) => !(skip.memory ?? []).includes(a)
  const [hasState, hasSize, hasCpu, hasDeps, hasDependents, hasPhases, hasPeak, hasIo] =
    (["state", "size", "cpu_time", "dependencies", "dependents", "startstops", "peak_memory", "io_bytes"] as const).map(task)
  const details = (["stage", "type", "dtype", "shape"] as const).filter(task)
  const [hasMemKey, hasMemState, hasMemSize, hasMemTasks] = (["key", "state", "size", "tasks"] as const).map(mem)
  // the first decoder's pool becomes the result's (its ids stay); the others' strings
  // not interned into it yet (`early`) are, by their precomputed hashes, with room made
  // for all of them at once (no rehash as they are added)
  const known = (w: number) => (w === 0 ? got[0].pool.size : Math.min(got[w].pool.size, early[w]?.length ?? 0))
  const bytesOf = (parts: StringPoolParts, from: number) => (parts.size === 0 ? 0 : parts.starts[parts.size]! - parts.starts[from]!)
  const rest = got.reduce((n, g, w) => n + g.pool.size - known(w), 0)
  const restBytes = got.reduce((n, g, w) => n + bytesOf(g.pool, known(w)), 0)
  pool.reserve(pool.size + rest, pool.byteSize + restBytes)
  const out = new ColumnDecoder(pool)
  const remaps = got.map((g, w) => {
    const { arena, hashes, size, starts } = g.pool
    const remap = new Int32Array(size + 1) // remap[id + 1]; remap[0] = -1 for null ids
    remap[0] = -1
    const k = known(w)
    if (w === 0) for (let id = 0; id < size; id++) remap[id + 1] = id
    else for (let id = 0; id < k; id++) remap[id + 1] = early[w]![id]!
    for (let id = k; id < size; id++) remap[id + 1] = pool.internHashed(arena, starts[id], starts[id + 1], hashes[id])
    return remap
  })
  got.forEach((g, w) => {
    for (let i = 0; i < g.countIds.length; i++) out.count(remaps[w][g.countIds[i] + 1], g.countValues[i])
    out.fallbacks += g.fallbacks
  })
  // metadata events in batch order (each worker's are in order already; the sort is stable)
  const inOrder = (events: (g: DecodeResult) => ReadonlyArray<TraceEvent>, seqs: (g: DecodeResult) => Float64Array, into: Array<TraceEvent>) => {
    const all = got.flatMap((g) => events(g).map((event, i) => ({ seq: seqs(g)[i], event })))
    all.sort((a, b) => a.seq - b.seq)
    for (const m of all) into.push(m.event)
    return all.map((m) => m.seq)
  }
  inOrder((g) => g.metadata, (g) => g.metadataSeqs, out.metadata)
  inOrder((g) => g.driver, (g) => g.driverSeqs, out.driver)
  const extraSeqs = inOrder((g) => g.extra, (g) => g.extraSeqs, out.extra)
  // every batch, in file order: decoder w's batch k
  const order: Array<{ readonly seq: number; readonly w: number; readonly k: number; readonly file: number }> = []
  got.forEach((g, w) => g.run.batchSeqs.forEach((seq, k) => order.push({ seq, w, k, file: g.run.batchFiles[k]! })))
  order.sort((a, b) => a.seq - b.seq)
  const fileOf = new Map(order.map((b) => [b.seq, b.file]))
  // where each file's extra events end: those of its batches and the files' before it
  for (let f = 0, x = 0; f < nFiles; f++) {
    while (x < extraSeqs.length && fileOf.get(extraSeqs[x]!)! <= f) x++
    fileExtraEnds[f] = x
  }
  let T = 0
  let D = 0
  let M = 0
  let R = 0
  let E = 0
  for (const g of got) {
    T += g.tasks.end.length
    if (hasDeps) D += g.tasks.deps.length
    M += g.memory.timestamp.length
    R += g.resources.timestamp.length
    if (hasDependents) E += g.tasks.dependents.length
  }
  const ids = () => new Int32Array(T)
  const fs = () => new Float64Array(T)
  // read by `tessera analyze`'s CSV worker too (Analyze.ts): shared, not copied to it
  const shared = () => (T >= sharedColumnRows ? new Float64Array(new SharedArrayBuffer(T * 8)) : fs())
  const sharedIds = () => (T >= sharedColumnRows ? new Int32Array(new SharedArrayBuffer(T * 4)) : ids())
  const t = {
    host: ids(), worker: ids(), key: sharedIds(), name: ids(), state: ids(),
    end: shared(), duration: shared(), size: shared(), cpuTime: fs(),
    depOffsets: new Int32Array(T + 1), deps: new Int32Array(D),
    stage: ids(), type: ids(), dtype: ids(), shape: ids(), peakMemory: fs(), ioBytes: fs(),
    phases: phaseNames.flatMap(() => [fs(), fs()]),
    dependentOffsets: new Int32Array(T + 1), dependents: new Int32Array(E)
  }
  const mi = () => new Int32Array(M)
  const mf = () => new Float64Array(M)
  const m = { timestamp: mf(), host: mi(), worker: mi(), key: mi(), state: mi(), size: mf(), tasks: mf(), device: mf() }
  const r = {
    timestamp: new Float64Array(R),
    host: new Int32Array(R),
    values: resourceArgs.map(() => new Float64Array(R))
  }
  const copyIds = (dst: Int32Array, at: number, src: Int32Array, from: number, to: number, remap: Int32Array) => {
    for (let i = from; i < to; i++) dst[at++] = remap[src[i] + 1]
  }
  let tOut = 0
  let dOut = 0
  let mOut = 0
  let rOut = 0
  let eOut = 0
  let f = 0
  // every file before `next` is done: its rows end here
  const filesDone = (next: number) => {
    for (; f < next; f++) {
      fileRowEnds[3 * f] = tOut
      fileRowEnds[3 * f + 1] = mOut
      fileRowEnds[3 * f + 2] = rOut
    }
  }
  for (const { file, k, w } of order) {
    filesDone(file)
    const g = got[w]!
    const mk = g.marks
    const at = MARKS * k
    if (at + MARKS - 1 >= mk.length) continue // after this worker's error (never reached: errors throw)
    const remap = remaps[w]
    const from = (j: number) => (k === 0 ? 0 : mk[at - MARKS + j])
    const t0 = from(0)
    const t1 = mk[at]
    const d0 = from(1)
    const d1 = mk[at + 1]
    const m0 = from(2)
    const m1 = mk[at + 2]
    const r0 = from(3)
    const r1 = mk[at + 3]
    const e0 = from(4)
    const e1 = mk[at + 4]
    const gt = g.tasks
    copyIds(t.host, tOut, gt.host, t0, t1, remap)
    copyIds(t.worker, tOut, gt.worker, t0, t1, remap)
    copyIds(t.key, tOut, gt.key, t0, t1, remap)
    copyIds(t.name, tOut, gt.name, t0, t1, remap)
    if (hasState) copyIds(t.state, tOut, gt.state, t0, t1, remap)
    t.end.set(gt.end.subarray(t0, t1), tOut)
    t.duration.set(gt.duration.subarray(t0, t1), tOut)
    if (hasSize) t.size.set(gt.size.subarray(t0, t1), tOut)
    if (hasCpu) t.cpuTime.set(gt.cpuTime.subarray(t0, t1), tOut)
    if (hasDeps) {
      for (let i = t0; i < t1; i++) t.depOffsets[tOut + i - t0 + 1] = gt.depOffsets[i + 1] - d0 + dOut
      copyIds(t.deps, dOut, gt.deps, d0, d1, remap)
      dOut += d1 - d0
    }
    for (const f of details) copyIds(t[f], tOut, gt[f], t0, t1, remap)
    if (hasPeak) t.peakMemory.set(gt.peakMemory.subarray(t0, t1), tOut)
    if (hasIo) t.ioBytes.set(gt.ioBytes.subarray(t0, t1), tOut)
    if (hasPhases) t.phases.forEach((col, j) => col.set(gt.phases[j].subarray(t0, t1), tOut))
    if (hasDependents) {
      for (let i = t0; i < t1; i++) t.dependentOffsets[tOut + i - t0 + 1] = gt.dependentOffsets[i + 1] - e0 + eOut
      copyIds(t.dependents, eOut, gt.dependents, e0, e1, remap)
      eOut += e1 - e0
    }
    tOut += t1 - t0
    const gm = g.memory
    m.timestamp.set(gm.timestamp.subarray(m0, m1), mOut)
    copyIds(m.host, mOut, gm.host, m0, m1, remap)
    copyIds(m.worker, mOut, gm.worker, m0, m1, remap)
    if (hasMemKey) copyIds(m.key, mOut, gm.key, m0, m1, remap)
    if (hasMemState) copyIds(m.state, mOut, gm.state, m0, m1, remap)
    if (hasMemSize) m.size.set(gm.size.subarray(m0, m1), mOut)
    if (hasMemTasks) m.tasks.set(gm.tasks.subarray(m0, m1), mOut)
    m.device.set(gm.device.subarray(m0, m1), mOut)
    mOut += m1 - m0
    const gr = g.resources
    r.timestamp.set(gr.timestamp.subarray(r0, r1), rOut)
    copyIds(r.host, rOut, gr.host, r0, r1, remap)
    r.values.forEach((col, j) => col.set(gr.values[j].subarray(r0, r1), rOut))
    rOut += r1 - r0
  }
  filesDone(nFiles)
  adopt(out, t, m, r)
  return out
}

/** The columns (`ColumnParts` shapes) become `out`'s, adopted, not copied. */
const adopt = (out: ColumnDecoder, t: ColumnParts["tasks"], m: ColumnParts["memory"], r: ColumnParts["resources"]): void => {
  const T = t.end.length
  const M = m.timestamp.length
  const setI32 = (c: I32, data: Int32Array, length: number) => ((c.data = data as Int32Array<ArrayBuffer>), (c.length = length))
  const setF64 = (c: F64, data: Float64Array, length: number) => ((c.data = data as Float64Array<ArrayBuffer>), (c.length = length))
  const ot = out.tasks
  for (const f of ["host", "worker", "key", "name", "state"] as const) setI32(ot[f], t[f], T)
  for (const f of ["end", "duration", "size", "cpuTime"] as const) setF64(ot[f], t[f], T)
  setI32(ot.depOffsets, t.depOffsets, T + 1)
  setI32(ot.deps, t.deps, t.deps.length)
  for (const f of ["stage", "type", "dtype", "shape"] as const) setI32(ot[f], t[f], T)
  setF64(ot.peakMemory, t.peakMemory, T)
  setF64(ot.ioBytes, t.ioBytes, T)
  ot.phases.forEach((c, j) => setF64(c, t.phases[j], T))
  setI32(ot.dependentOffsets, t.dependentOffsets, T + 1)
  setI32(ot.dependents, t.dependents, t.dependents.length)
  const om = out.memory
  for (const f of ["host", "worker", "key", "state"] as const) setI32(om[f], m[f], M)
  for (const f of ["timestamp", "size", "tasks", "device"] as const) setF64(om[f], m[f], M)
  const R = r.timestamp.length
  setF64(out.resources.timestamp, r.timestamp, R)
  setI32(out.resources.host, r.host, R)
  out.resources.values.forEach((c, j) => setF64(c, r.values[j], R))
}

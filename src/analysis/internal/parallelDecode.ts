/**
 * Parallel decoding for `Load`: the main thread streams each file as batches of whole
 * records (`streamFrames`: framing, tail judgement, read errors) and hands batch `s`
 * to worker `s mod W` (`decodeWorker.ts`, bytes transferred, not copied twice). Each
 * worker decodes into its own columns and string pool; at the end the pools are merged
 * into one (each worker string interned once, by its precomputed hash) and the
 * columns concatenated in batch order with their string ids remapped, so the result is
 * exactly what one `ColumnDecoder` over the same files gives (same rows, same order).
 *
 * Errors: the first error in file order wins, as in a sequential load: a decoding error
 * in batch `s` (from a worker, with its file and absolute byte offset) beats a framing
 * error the main thread meets later, and vice versa.
 *
 * Leaves out: the table build (`Load.ts`).
 *
 * @since 0.1.0
 * @internal
 */
import { Worker } from "node:worker_threads"
import type { TraceEvent } from "../../trace/TraceEvent.ts"
import { streamFrames } from "../../trace/TraceFormat.ts"
import { fromReasonFields, type TraceFormatErrorFields, unexpected } from "../../trace/TraceFormatError.ts"
import { type ArgSkip, ColumnDecoder, type F64, type I32, phaseNames, resourceArgs, StringPool, type StringPoolParts } from "../../trace/TraceReader.ts"

/** Numbers per batch in a worker's `marks` (row ends: tasks, dependencies, memory, resources, dependents). */
export const MARKS = 5

/** A batch of whole records for a worker, or the request for its result. */
export type DecodeRequest =
  | {
    readonly type: "batch"
    readonly seq: number
    readonly bytes: Uint8Array
    readonly end: number
    readonly file: string
    readonly fileOffset: number
  }
  | { readonly type: "finish" }

/** A worker's first decoding error. */
export interface WorkerError {
  readonly seq: number
  readonly error: TraceFormatErrorFields
}

/**
 * A worker's columns and pool; `marks` holds, per batch, the end of its rows
 * (`MARKS` numbers: tasks, dependencies, memory, resources, dependents).
 */
export interface DecodeResult {
  readonly type: "result"
  readonly events: number
  readonly fallbacks: number
  readonly marks: Int32Array
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
  /** metadata events decoded, in order, and the batch each came from */
  readonly metadata: ReadonlyArray<TraceEvent>
  readonly metadataSeqs: Int32Array
  /** `Driver` events decoded, in order, and the batch each came from */
  readonly driver: ReadonlyArray<TraceEvent>
  readonly driverSeqs: Int32Array
  /** `Transfer` and `Clock Offset` events decoded, in order, and the batch each came from */
  readonly extra: ReadonlyArray<TraceEvent>
  readonly extraSeqs: Int32Array
  readonly error?: WorkerError
}

/**
 * A worker decoded a batch (`bytes` of records, `events` of them); `spare`: the batch's
 * buffer, given back for the next batch when nothing decoded from it keeps a view of it.
 */
export interface Ack {
  readonly type: "ack"
  readonly seq: number
  readonly bytes: number
  readonly events: number
  readonly spare?: Uint8Array
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

/**
 * Decode `files` on `threads` worker threads. Rejects with `TraceFormatError` (the
 * first in file order).
 *
 * @since 0.1.0
 * @internal
 */
export const decodeParallelPromise = async (
  files: ReadonlyArray<string>,
  threads: number,
  options: {
    /** args the workers leave undecoded (a column projection) */
    readonly skip?: ArgSkip
    readonly chunkBytes?: number
    /** after each decoded batch: the file being read, bytes and events decoded so far */
    readonly onDecoded?: (file: string, bytesDecoded: number, eventsDecoded: number) => void
  }
): Promise<ParallelDecoded> => {
  const W = Math.max(1, Math.floor(threads))
  const workers = Array.from({ length: W }, () => new Worker(workerUrl, { workerData: options.skip ?? {} }))
  let crashed: unknown
  const results: Array<Promise<DecodeResult>> = workers.map((w) =>
    new Promise((resolve, reject) => {
      w.on("message", (m: DecodeResult | Ack) => {
        if (m.type === "result") resolve(m)
        else onAck(m)
      })
      w.on("error", (e) => (crashed = e, reject(e), wake()))
      w.on("exit", (code) => {
        if (code !== 0) (crashed ??= new Error(`decode worker exited with code ${code}`), reject(crashed), wake())
      })
    })
  )
  for (const r of results) r.catch(() => undefined) // surfaced below, once
  let inflight = 0
  let decoded = 0
  let waiting: (() => void) | undefined
  const wake = () => {
    const w = waiting
    waiting = undefined
    w?.()
  }
  let decodedEvents = 0
  let reading = files[0] ?? ""
  const spares: Array<Uint8Array<ArrayBuffer>> = []
  const onAck = (m: Ack) => {
    if (m.spare !== undefined) spares.push(new Uint8Array(m.spare.buffer as ArrayBuffer)) // the whole buffer, not the batch's view of it
    inflight--
    decoded += m.bytes
    decodedEvents += m.events
    options.onDecoded?.(reading, decoded, decodedEvents)
    wake()
  }
  const maxInflight = 3 * W // bounded memory: a few batches per worker in flight
  let seq = 0
  let dropped = 0
  let framingError: unknown
  let errorSeq = Infinity
  const fileEnds: Array<number> = [] // batches sent when each file was done
  try {
    try {
      for (const file of files) {
        reading = file
        const it = streamFrames(file, { owned: true, reuse: () => spares.pop(), ...(options.chunkBytes !== undefined ? { chunkBytes: options.chunkBytes } : {}) })
        for (;;) {
          let next
          try {
            next = await it.next()
          } catch (e) {
            framingError = e
            errorSeq = seq
            break
          }
          if (next.done === true) {
            dropped += next.value.droppedBytes
            fileEnds.push(seq)
            break
          }
          const { bytes, end, fileOffset } = next.value
          // an owned buffer: moved to the worker, not copied
          const req: DecodeRequest = { type: "batch", seq, bytes, end, file, fileOffset }
          workers[seq % W].postMessage(req, [bytes.buffer as ArrayBuffer])
          seq++
          inflight++
          while (inflight >= maxInflight && crashed === undefined) await new Promise<void>((r) => (waiting = r))
          if (crashed !== undefined) {
            await it.return(undefined as never)
            throw unexpected(file, fileOffset, crashed) // keeps the cause, names the file
          }
        }
        if (framingError !== undefined) break
      }
    } finally {
      for (const w of workers) w.postMessage({ type: "finish" } satisfies DecodeRequest)
    }
    const got = await Promise.all(results).catch((e) => {
      throw unexpected(reading, 0, e) // a worker died: keep why, name the file being read
    })
    // the first error in file order: a worker's decoding error in an earlier batch
    // than the framing error, else the framing error
    let first: WorkerError | undefined
    for (const g of got) if (g.error !== undefined && (first === undefined || g.error.seq < first.seq)) first = g.error
    if (first !== undefined && first.seq < errorSeq) {
      throw fromReasonFields(first.error)
    }
    if (framingError !== undefined) throw framingError
    const fileRowEnds = new Int32Array(3 * files.length)
    const fileExtraEnds = new Int32Array(files.length)
    return {
      dec: merge(got, seq, fileEnds, fileRowEnds, fileExtraEnds, options.skip ?? {}),
      events: got.reduce((s, g) => s + g.events, 0),
      droppedBytes: dropped,
      fileRowEnds,
      fileExtraEnds
    }
  } finally {
    for (const w of workers) void w.terminate()
  }
}

const setI32 = (c: I32, data: Int32Array<ArrayBuffer>, length: number) => ((c.data = data), (c.length = length))
const setF64 = (c: F64, data: Float64Array<ArrayBuffer>, length: number) => ((c.data = data), (c.length = length))

/**
 * Merge worker results: pools into one (ids remapped), columns concatenated in batch
 * order (batch `s` was decoded by worker `s mod W`, as its `floor(s / W)`-th batch).
 * The columns of skipped args (a projection: `skip`) are not copied (left zero / empty:
 * their loader does not read them).
 * Hot path: typed-array loops.
 */
const merge = (
  got: ReadonlyArray<DecodeResult>,
  batches: number,
  fileEnds: ReadonlyArray<number>,
  fileRowEnds: Int32Array,
  fileExtraEnds: Int32Array,
  skip: ArgSkip
): ColumnDecoder => {
  const task = (a: NonNullable<ArgSkip["compute"]>[number]) => !(skip.compute ?? []).includes(a)
  const mem = (a: NonNullable<ArgSkip["memory"]>[number]) => !(skip.memory ?? []).includes(a)
  const [hasState, hasSize, hasCpu, hasDeps, hasDependents, hasPhases, hasPeak, hasIo] =
    (["state", "size", "cpu_time", "dependencies", "dependents", "startstops", "peak_memory", "io_bytes"] as const).map(task)
  const details = (["stage", "type", "dtype", "shape"] as const).filter(task)
  const [hasMemKey, hasMemState, hasMemSize, hasMemTasks] = (["key", "state", "size", "tasks"] as const).map(mem)
  // the first worker's pool becomes the result's (its ids stay); the others' strings
  // are interned into it by their precomputed hashes
  const pool = StringPool.fromParts(got[0].pool)
  const out = new ColumnDecoder(pool)
  const remaps = got.map((g, w) => {
    const { arena, hashes, size, starts } = g.pool
    const remap = new Int32Array(size + 1) // remap[id + 1]; remap[0] = -1 for null ids
    remap[0] = -1
    if (w === 0) for (let id = 0; id < size; id++) remap[id + 1] = id
    else for (let id = 0; id < size; id++) remap[id + 1] = pool.internHashed(arena, starts[id], starts[id + 1], hashes[id])
    return remap
  })
  got.forEach((g, w) => {
    for (let i = 0; i < g.countIds.length; i++) out.count(remaps[w][g.countIds[i] + 1], g.countValues[i])
    out.fallbacks += g.fallbacks
  })
  // metadata events in batch order (each worker's are in order already; the sort is stable)
  const inOrder = (events: (g: DecodeResult) => ReadonlyArray<TraceEvent>, seqs: (g: DecodeResult) => Int32Array, into: Array<TraceEvent>) => {
    const all = got.flatMap((g) => events(g).map((event, i) => ({ seq: seqs(g)[i], event })))
    all.sort((a, b) => a.seq - b.seq)
    for (const m of all) into.push(m.event)
    return all.map((m) => m.seq)
  }
  inOrder((g) => g.metadata, (g) => g.metadataSeqs, out.metadata)
  inOrder((g) => g.driver, (g) => g.driverSeqs, out.driver)
  const extraSeqs = inOrder((g) => g.extra, (g) => g.extraSeqs, out.extra)
  // where each file's extra events end: those of the batches before its end
  for (let f = 0, x = 0; f < fileEnds.length; f++) {
    while (x < extraSeqs.length && extraSeqs[x]! < fileEnds[f]!) x++
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
  const t = {
    host: ids(), worker: ids(), key: ids(), name: ids(), state: ids(),
    end: fs(), duration: fs(), size: fs(), cpuTime: fs(),
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
  const W = got.length
  let f = 0
  const fileDone = (s: number) => {
    for (; f < fileEnds.length && fileEnds[f] <= s; f++) {
      fileRowEnds[3 * f] = tOut
      fileRowEnds[3 * f + 1] = mOut
      fileRowEnds[3 * f + 2] = rOut
    }
  }
  for (let s = 0; s < batches; s++) {
    fileDone(s)
    const w = s % W
    const g = got[w]
    const k = Math.floor(s / W)
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
  fileDone(batches)
  const ot = out.tasks
  for (const f of ["host", "worker", "key", "name", "state"] as const) setI32(ot[f], t[f], T)
  for (const f of ["end", "duration", "size", "cpuTime"] as const) setF64(ot[f], t[f], T)
  setI32(ot.depOffsets, t.depOffsets, T + 1)
  setI32(ot.deps, t.deps, D)
  for (const f of ["stage", "type", "dtype", "shape"] as const) setI32(ot[f], t[f], T)
  setF64(ot.peakMemory, t.peakMemory, T)
  setF64(ot.ioBytes, t.ioBytes, T)
  ot.phases.forEach((c, j) => setF64(c, t.phases[j], T))
  setI32(ot.dependentOffsets, t.dependentOffsets, T + 1)
  setI32(ot.dependents, t.dependents, E)
  const om = out.memory
  for (const f of ["host", "worker", "key", "state"] as const) setI32(om[f], m[f], M)
  for (const f of ["timestamp", "size", "tasks", "device"] as const) setF64(om[f], m[f], M)
  setF64(out.resources.timestamp, r.timestamp, R)
  setI32(out.resources.host, r.host, R)
  out.resources.values.forEach((c, j) => setF64(c, r.values[j], R))
  return out
}

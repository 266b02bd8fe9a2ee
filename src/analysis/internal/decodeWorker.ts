/**
 * Worker-thread side of the parallel loader (`ParallelDecode.ts`): decodes the batches
 * of whole records it is sent with its own `ColumnDecoder` (own string pool, own
 * columns), remembers where each batch's rows end, and on `finish` sends its columns
 * and pool back as transferred typed arrays (no objects, no strings).
 *
 * A decoding error stops the worker's decoding (later batches are only acknowledged);
 * it is sent back with the batch's sequence number, the file and the absolute byte
 * offset the `TraceFormatError` named, so the main thread can report the first error
 * in file order.
 *
 * `workerData` is the `ArgSkip` of a column projection (args left undecoded).
 *
 * Leaves out: reading files and framing (the main thread does both).
 *
 * @since 0.1.0
 * @internal
 */
import { parentPort, workerData } from "node:worker_threads"
import { fromUnknown, toReasonFields } from "../../trace/TraceFormatError.ts"
import type { Ack, DecodeRequest, DecodeResult, WorkerError } from "./parallelDecode.ts"
import { type ArgSkip, ColumnDecoder } from "../../trace/TraceReader.ts"

const dec = new ColumnDecoder(undefined, workerData as ArgSkip)
const marks: Array<number> = []
const metadataSeqs: Array<number> = []
const driverSeqs: Array<number> = []
const extraSeqs: Array<number> = []
let events = 0
let error: WorkerError | undefined

const port = parentPort!
port.on("message", (m: DecodeRequest) => {
  if (m.type === "batch") {
    let n = 0
    // events kept whole may hold views of the batch's bytes (msgpack bin values): its
    // buffer goes back to be reused only when this batch kept none
    const kept = dec.metadata.length + dec.driver.length + dec.extra.length
    if (error === undefined) {
      try {
        n = dec.decodeFrames(m.bytes, m.end, m.file, m.fileOffset)
        events += n
      } catch (e) {
        error = { seq: m.seq, error: toReasonFields(fromUnknown(e, m.file, m.fileOffset)) }
      }
      while (metadataSeqs.length < dec.metadata.length) metadataSeqs.push(m.seq)
      while (driverSeqs.length < dec.driver.length) driverSeqs.push(m.seq)
      while (extraSeqs.length < dec.extra.length) extraSeqs.push(m.seq)
      const t = dec.tasks
      marks.push(t.length, t.deps.length, dec.memory.length, dec.resources.length, t.dependents.length)
    }
    if (error === undefined && dec.metadata.length + dec.driver.length + dec.extra.length === kept) {
      port.postMessage({ type: "ack", seq: m.seq, bytes: m.end, events: n, spare: m.bytes } satisfies Ack, [m.bytes.buffer as ArrayBuffer])
    } else port.postMessage({ type: "ack", seq: m.seq, bytes: m.end, events: n } satisfies Ack)
    return
  }
  const pool = dec.pool.parts()
  const t = dec.tasks
  t.complete()
  const mem = dec.memory
  const r = dec.resources
  const counts = dec.counts
  const result: DecodeResult = {
    type: "result",
    events,
    fallbacks: dec.fallbacks,
    marks: Int32Array.from(marks),
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
    metadataSeqs: Float64Array.from(metadataSeqs),
    driver: dec.driver,
    driverSeqs: Float64Array.from(driverSeqs),
    extra: dec.extra,
    extraSeqs: Float64Array.from(extraSeqs),
    ...(error !== undefined ? { error } : {})
  }
  const buffers = new Set<ArrayBuffer>()
  const add = (a: ArrayBufferView) => buffers.add(a.buffer as ArrayBuffer)
  for (const a of [pool.arena, pool.starts, pool.hashes]) add(a)
  for (const a of Object.values(result.tasks)) if (Array.isArray(a)) a.forEach(add)
    else add(a as ArrayBufferView)
  for (const a of Object.values(result.memory)) add(a)
  add(result.resources.timestamp)
  add(result.resources.host)
  for (const a of result.resources.values) add(a)
  port.postMessage(result, [...buffers])
})

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
import { BatchDecoder } from "./batchDecoder.ts"
import type { Ack, DecodeRequest } from "./parallelDecode.ts"
import type { ArgSkip } from "../../trace/TraceReader.ts"

const decoder = new BatchDecoder(workerData as ArgSkip)
const port = parentPort!
port.on("message", (m: DecodeRequest) => {
  if (m.type === "batch") {
    const { events, reusable } = decoder.batch(m.seq, m.bytes, m.end, m.file, m.fileOffset)
    if (reusable) port.postMessage({ type: "ack", seq: m.seq, bytes: m.end, events, spare: m.bytes } satisfies Ack, [m.bytes.buffer as ArrayBuffer])
    else port.postMessage({ type: "ack", seq: m.seq, bytes: m.end, events } satisfies Ack)
    return
  }
  const { buffers, result } = decoder.result()
  port.postMessage(result, buffers)
})

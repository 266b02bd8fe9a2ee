/**
 * Worker-thread side of the parallel loader (`parallelDecode.ts`): claims pieces of the
 * files (byte ranges) and reads and decodes each (`batchDecoder.ts`: its own
 * `ColumnDecoder`, own string pool, own columns), tells the main thread how far it is
 * after each batch (progress) and which strings it met after each piece (the main
 * thread interns them meanwhile),
 * and sends its columns and pool back as transferred typed arrays (no objects, no
 * strings), with what reading found (each batch's file, dropped tail bytes, a misplaced
 * cut, its first framing or decoding error with the batch's order key, the file and the
 * absolute byte offset, so the main thread can report the first error in file order).
 *
 * `workerData` is the `ArgSkip` of a column projection (args left undecoded).
 *
 * @since 0.1.0
 * @internal
 */
import { parentPort, workerData } from "node:worker_threads"
import { BatchDecoder, decodePieces } from "./batchDecoder.ts"
import type { Ack, DecodeRequest, DecodeResult, Strings } from "./parallelDecode.ts"
import type { ArgSkip } from "../../trace/TraceReader.ts"

const port = parentPort!
port.once("message", async (m: DecodeRequest) => {
  const decoder = new BatchDecoder(workerData as ArgSkip, m.bytes)
  let sent = 0 // strings sent so far
  const run = await decodePieces(decoder, m.pieces, m.claims, {
    ...(m.chunkBytes !== undefined ? { chunkBytes: m.chunkBytes } : {}),
    onBatch: (file, bytes, events) => port.postMessage({ type: "ack", file, bytes, events } satisfies Ack),
    onPiece: () => {
      // the piece's new strings, for the main thread to intern while decoding goes on
      const pool = decoder.pool.partsFrom(sent)
      const from = sent
      sent += pool.size
      if (pool.size > 0) port.postMessage({ type: "strings", from, pool } satisfies Strings, [pool.arena.buffer, pool.starts.buffer, pool.hashes.buffer])
    }
  })
  const { buffers, result } = decoder.result()
  port.postMessage({ ...result, run } satisfies DecodeResult, [...buffers, run.batchSeqs.buffer as ArrayBuffer, run.batchFiles.buffer as ArrayBuffer])
})

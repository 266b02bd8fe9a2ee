/**
 * Worker-thread side of `Analyze.ts`'s CSV writer (`csvWriter.ts` `csvHelper`): formats
 * the rows it is sent (`csvWriter.ts` columns) and sends the bytes back, transferred.
 * Loads no Arrow.
 *
 * @since 0.1.0
 * @internal
 */
import { parentPort } from "node:worker_threads"
import { type CsvColumn, csvRowBlocks } from "./csvWriter.ts"

const port = parentPort!
port.on("message", (m: { readonly columns: ReadonlyArray<CsvColumn>; readonly rows: number }) => {
  try {
    const blocks = [...csvRowBlocks(m.columns, 0, m.rows)]
    port.postMessage({ blocks }, [...new Set(blocks.map((b) => b.buffer as ArrayBuffer))])
  } catch (e) {
    port.postMessage({ error: e instanceof Error ? e.message : String(e) })
  }
})

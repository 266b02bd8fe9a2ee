/**
 * Worker-thread side of `Analyze.ts`'s helper (`csvWriter.ts` `csvHelper`), one message
 * at a time:
 *
 * - `csv`: formats the rows it is sent (`csvWriter.ts` columns) and sends the bytes
 *   back, transferred. Loads no Arrow.
 * - `prepare`: loads the analyses (`analysisJob.ts`: Arrow and the analysis modules) so
 *   that a later `analysis` starts at once; no reply.
 * - `analysis`: runs one analysis on the decoded databases it is sent, writes its files,
 *   and sends back what to print (`analysisJob.ts`).
 *
 * A failure is sent back as `{ error }` (the main thread then does the work itself).
 *
 * @since 0.1.0
 * @internal
 */
import { parentPort } from "node:worker_threads"
import type { AnalysisJob } from "./analysisJob.ts"
import { type CsvColumn, csvRowBlocks } from "./csvWriter.ts"

const port = parentPort!
// `.ts` when run from the sources, `.js` from the compiled package (dist/).
const jobs = () => import(`./analysisJob${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`) as Promise<typeof import("./analysisJob.ts")>
const errorOf = (e: unknown) => ({ error: e instanceof Error ? e.message : String(e) })

// messages are handled in order, each after the one before (an analysis waits for its modules)
let queue: Promise<unknown> = Promise.resolve()
port.on("message", (m: { readonly type: "csv"; readonly columns: ReadonlyArray<CsvColumn>; readonly rows: number } | { readonly type: "prepare" } | AnalysisJob) => {
  queue = queue.then(async () => {
    if (m.type === "prepare") return void (await jobs().catch(() => undefined))
    if (m.type === "analysis") {
      try {
        port.postMessage(await (await jobs()).runAnalysisJob(m))
      } catch (e) {
        port.postMessage(errorOf(e))
      }
      return
    }
    try {
      const blocks = [...csvRowBlocks(m.columns, 0, m.rows)]
      port.postMessage({ blocks }, [...new Set(blocks.map((b) => b.buffer as ArrayBuffer))])
    } catch (e) {
      port.postMessage(errorOf(e))
    }
  })
})

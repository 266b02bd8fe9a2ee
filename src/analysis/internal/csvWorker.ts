/**
 * Worker-thread side of `Analyze.ts`'s CSV writer (`csvWriter.ts` `csvHelper`): formats
 * the rows it is sent (`csvWriter.ts` columns) and sends the bytes back, transferred; or
 * computes the per-task bottleneck's rows from the loaded task columns (`taskRows.ts`),
 * sends them (in shared memory: both threads format from them) and then the CSV bytes of
 * its share of them. Loads no Arrow.
 *
 * @since 0.1.0
 * @internal
 */
import { parentPort } from "node:worker_threads"
import { type CsvColumn, type CsvReply, type CsvRequest, csvRowBlocks, splitRow, type TaskBottleneckRequest, type Utf8Strings } from "./csvWriter.ts"
import { taskBottleneckRows } from "./taskRows.ts"

const port = parentPort!

const sendBlocks = (blocks: ReadonlyArray<Uint8Array>) =>
  port.postMessage({ blocks } satisfies CsvReply, [...new Set(blocks.map((b) => b.buffer as ArrayBuffer))])

// as Arrow reads a Utf8 vector (apache-arrow/util/utf8): the string the calling thread
// sees for the same code, so rows of equal duration come in the same order
const decoder = new TextDecoder("utf-8")
const stringOf = (d: Utf8Strings) => (c: number) => decoder.decode(d.bytes.subarray(d.offsets[c], d.offsets[c + 1]))

const utf8Of = (strings: ReadonlyArray<string>): Utf8Strings => {
  const encoded = strings.map((s) => Buffer.from(s, "utf8"))
  const offsets = new Int32Array(strings.length + 1)
  encoded.forEach((b, i) => (offsets[i + 1] = offsets[i]! + b.length))
  return { bytes: Buffer.concat(encoded), offsets }
}

const taskBottleneck = (m: TaskBottleneckRequest) => {
  const rows = taskBottleneckRows(m.columns, {
    hosts: m.hosts.offsets.length - 1,
    workers: m.workers.length,
    keys: m.keys.offsets.length - 1,
    host: stringOf(m.hosts),
    worker: (c) => m.workers[c]!,
    key: stringOf(m.keys)
  }, (bytes) => new SharedArrayBuffer(bytes))
  port.postMessage({ rows } satisfies CsvReply)
  // the table's columns, in its order (`Bottleneck.taskBottleneckTable`), from the split on
  const from = splitRow(rows.rows, m.share)
  const dictionary = (codes: Int32Array, d: Utf8Strings): CsvColumn => ({ kind: "dictionary", codes: codes.subarray(from), bytes: d.bytes, offsets: d.offsets })
  const columns: Array<CsvColumn> = [
    dictionary(rows.host, m.hosts),
    dictionary(rows.gpu, utf8Of(rows.gpuLabels)),
    dictionary(rows.key, m.keys),
    { kind: "numbers", values: rows.duration.subarray(from) },
    { kind: "numbers", values: rows.percentage.subarray(from) },
    { kind: "numbers", values: rows.megabytes.subarray(from) }
  ]
  sendBlocks([...csvRowBlocks(columns, 0, rows.rows - from)])
}

port.on("message", (m: CsvRequest) => {
  try {
    if (m.type === "taskBottleneck") taskBottleneck(m)
    else sendBlocks([...csvRowBlocks(m.columns, 0, m.rows)])
  } catch (e) {
    port.postMessage({ error: e instanceof Error ? e.message : String(e) } satisfies CsvReply)
  }
})

/**
 * The streaming exports (issue 32 items 9, 11) write what the in-memory ones write:
 * Chrome JSON and CSV byte for byte, Arrow the same rows and types, from a source read
 * twice a batch at a time, whatever the batch size.
 */
import assert from "node:assert/strict"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { tableFromIPC } from "apache-arrow"
import { fileBatches } from "../../src/analysis/exports/EventBatches.ts"
import { chromeTraceChunks, chromeTraceJson, toChromeTrace } from "../../src/analysis/exports/ChromeTrace.ts"
import { eventCsvChunks, eventTable, tableToCsv, writeEventArrow } from "../../src/analysis/exports/EventTable.ts"
import { loadEvents } from "../../src/report/LoadEvents.ts"

const data = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))
const files = [join(data, "small-TracePlugin.msgpack"), join(data, "small-ResourceMonitor.msgpack")]

const collect = async (chunks: AsyncIterable<string>): Promise<string> => {
  let s = ""
  for await (const c of chunks) s += c
  return s
}

describe("streamed exports", () => {
  it("issue 32 item 9: Chrome JSON, CSV and Arrow streamed in small batches equal the whole-trace exports", async () => {
    const { events } = await loadEvents(files)
    // 4 KiB of records at a time: many batches, dependencies met before their slices
    const source = fileBatches(files, 4096)
    assert.equal(await collect(chromeTraceChunks(source)), chromeTraceJson(toChromeTrace(events)))
    assert.equal(await collect(chromeTraceChunks(source, { flows: false })), chromeTraceJson(toChromeTrace(events, { flows: false })))
    const table = eventTable(events)
    assert.equal(await collect(eventCsvChunks(source)), tableToCsv(table))
    const pieces: Array<Uint8Array> = []
    await writeEventArrow(source, async (b) => {
      await new Promise((resolve) => setImmediate(resolve)) // an output that takes its time
      pieces.push(b.slice())
    })
    const read = tableFromIPC(Buffer.concat(pieces))
    assert.ok(read.batches.length > 1, `${read.batches.length} record batches`)
    assert.deepEqual(read.schema.fields.map((f) => `${f.name}:${f.type}`), table.schema.fields.map((f) => `${f.name}:${f.type}`))
    assert.equal(JSON.stringify(read.toArray()), JSON.stringify(table.toArray()))
  })

  it("issue 32 item 9: a corrupt database rejects in the first pass, naming the file and byte offset, before anything is written", async () => {
    const bad = join(mkdtempSync(join(tmpdir(), "tessera-stream-")), "bad.msgpack")
    writeFileSync(bad, "not a trace database at all\n".repeat(10))
    let wrote = 0
    await assert.rejects(
      (async () => {
        for await (const _ of chromeTraceChunks(fileBatches([bad]))) wrote++
      })(),
      (e: Error) => /bad\.msgpack/.test(e.message) && /byte offset \d+/.test(e.message)
    )
    assert.equal(wrote, 0)
  })
})

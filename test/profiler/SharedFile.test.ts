/**
 * Several processes appending to one trace file, as a host's cluster workers (and its
 * driver) do with `{name}-TracePlugin-{host}.msgpack`: each writer its own
 * `FileDatabase`, batches of whole records written with O_APPEND. Every record of every
 * writer decodes, none is lost, torn or repeated, and each writer's records keep their
 * order — including a writer that opened the file with `overwrite` first.
 */
import assert from "node:assert/strict"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-shared-file-"))
after(() => rmSync(dir, { recursive: true, force: true }))

const WRITERS = 4
const EVENTS = 3000

/** A writer process: EVENTS events of random sizes (up to ~40 KiB), in batches of 1 to 400. */
const writer = (file: string, w: number): Promise<string> => {
  const db = new URL("../../src/profiler/FileDatabase.ts", import.meta.url).href
  const script = `
    import { FileDatabase } from ${JSON.stringify(db)}
    let seed = ${w + 1}
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    const db = new FileDatabase(${JSON.stringify(file)}, { commitThreshold: 1 + Math.floor(rnd() * 400), commitInterval: 0 })
    db.open()
    for (let seq = 0; seq < ${EVENTS}; seq++) {
      const pad = "x".repeat(rnd() < 0.02 ? 40000 : Math.floor(rnd() * 300))
      db.record({ name: "Compute", timestamp: seq, phase: "X", duration: 0, process_id: "h", thread_id: "worker-h-${w}", args: { w: ${w}, seq, pad } })
      if (rnd() < 0.01) await new Promise((r) => setImmediate(r))
    }
    db.close()`
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "ignore", "pipe"] })
    let err = ""
    p.stderr.on("data", (d) => (err += String(d)))
    p.on("exit", (code) => (code === 0 ? resolve(err) : reject(new Error(`writer ${w} exited ${code}: ${err}`))))
  })
}

describe("one trace file, several writer processes", () => {
  it("keeps every record of every writer whole, once, in each writer's order", async () => {
    const file = join(dir, "shared-TracePlugin-h.msgpack")
    // the first writer truncates (a profile's overwrite), the others append
    const first = new FileDatabase.FileDatabase(file, { overwrite: true })
    first.open()
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(file, w)))
    first.record({ name: "Driver", timestamp: 0, phase: "X", duration: 0, process_id: "h", thread_id: "driver", args: {} })
    first.close()
    const t = await FileDatabase.readPromise(file)
    assert.equal(t.droppedBytes, 0)
    assert.equal(t.events.length, WRITERS * EVENTS + 1)
    const next = new Array<number>(WRITERS).fill(0)
    for (const e of t.events) {
      if (e.name === "Driver") continue
      const w = e.args.w as number
      assert.equal(e.args.seq, next[w], `writer ${w}: records in order, none lost or repeated`)
      next[w]!++
    }
    assert.deepEqual(next, new Array(WRITERS).fill(EVENTS))
  })
})

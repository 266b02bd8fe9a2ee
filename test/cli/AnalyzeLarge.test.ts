/**
 * `tessera analyze -o DIR` on a trace large enough for every fast path: decoding started
 * as the process starts and taken over, pieces decoded on worker threads (where the
 * machine's default says so), the large task table computed and its CSV formatted on
 * two threads. The files must be byte for byte what one thread computes in process, and
 * the tables printed in order, with -o or without.
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import * as A from "../../src/analysis/Analysis.ts"
import { tableFromIPC } from "apache-arrow"
import { splitCsvRows } from "../../src/analysis/Analyze.ts"

const run = promisify(execFile)
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const generate = fileURLToPath(new URL("../../bench/analysis/generate.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "tessera-analyze-large-"))
after(() => rmSync(dir, { recursive: true, force: true }))

describe("tessera analyze on a large trace", () => {
  const trace = join(dir, "t.msgpack")

  it("writes the CSVs one thread computes in process, byte for byte", async () => {
    await run(process.execPath, [generate, trace, "--events", "300000"])
    assert.ok(statSync(trace).size >= A.parallelMinBytes, "large enough to decode in parallel")
    const out = join(dir, "out")
    const { stderr, stdout } = await run(process.execPath, [main, "analyze", "-d", trace, "-o", out, "--format", "arrow"], { maxBuffer: 1 << 26 })
    assert.match(stderr, /loaded \d+ events/)
    // its rows computed by the CSV worker (a machine with more than one core)
    const offloaded = /task_bottleneck \(2\/3\): \d+ rows in [\d.]+ s \(on a worker thread\)/
    if (availableParallelism() > 1) assert.match(stderr, offloaded)
    else assert.doesNotMatch(stderr, offloaded)
    const tables = await A.loadPromise([trace], { threads: 1 })
    // the task keys' dictionary is large: in shared memory (the CSV worker reads it there)
    const keys = tables.tasks.getChild("key")!.data[0]!.dictionary!.data[0]!
    assert.ok(keys.values.byteLength >= 1 << 20 && keys.values.buffer instanceof SharedArrayBuffer, "a large dictionary in shared memory")
    assert.ok(!(tables.tasks.getChild("host")!.data[0]!.dictionary!.data[0]!.values.buffer instanceof SharedArrayBuffer), "a small one not")
    const shown: Array<string> = []
    for (const name of A.dasfAnalyses) {
      const analysis = A.analyses.find((a) => a.name === name)!
      const table = analysis.run(tables)
      if (name === "task_bottleneck") assert.ok(table.numRows >= splitCsvRows, `${table.numRows} rows: formatted on two threads`)
      assert.equal(readFileSync(join(out, `${name}.csv`), "utf8"), A.toCsv(table), name)
      assert.deepEqual(tableFromIPC(readFileSync(join(out, `${name}.arrow`))).toArray().map((r) => JSON.stringify(r)), table.toArray().map((r) => JSON.stringify(r)), `${name}.arrow`)
      shown.push("=".repeat(20) + analysis.title + "=".repeat(20), A.toText(table, 30), "=".repeat(80) + "\n")
    }
    // printed in the analyses' order
    assert.equal(stdout, [...shown, "Analyses finished!"].join("\n") + "\n")
    // without -o too (task_bottleneck computed on the worker thread, no CSV written)
    const printed = await run(process.execPath, [main, "analyze", "-d", trace], { maxBuffer: 1 << 26 })
    assert.equal(printed.stdout, stdout)
    if (availableParallelism() > 1) assert.match(printed.stderr, offloaded)
  })

  it("reports an output file it cannot write, naming it (exit 1)", async () => {
    const out = join(dir, "clash")
    mkdirSync(join(out, "task_bottleneck.arrow"), { recursive: true }) // a folder where a file goes
    const failed = await run(process.execPath, [main, "analyze", "-d", trace, "-o", out, "--format", "arrow"], { maxBuffer: 1 << 26 }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e
    )
    assert.ok(failed !== undefined, "fails")
    assert.equal(failed.code, 1)
    assert.match(failed.stderr, /could not write .*task_bottleneck\.arrow/)
  })
})

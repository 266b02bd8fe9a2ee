import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { mkdtemp, readdir } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

const run = promisify(execFile)
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const trace = fileURLToPath(new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url))
const tessera = (...args: Array<string>) => run(process.execPath, [main, ...args], { timeout: 120_000 })

describe("plot hist", () => {
  it("writes one figure per resource and function with --by function", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-hist-"))
    await tessera("plot", "hist", "-d", trace, "--resource", "duration,bytes_in", "--by", "function", "-o", dir)
    const files = await readdir(dir)
    for (const f of ["hist-duration-mean_chunk.svg", "hist-duration-mean_chunk.png", "hist-bytes_in-mean_chunk.svg"]) {
      assert.ok(files.includes(f), `${f} in ${files.join(" ")}`)
    }
    assert.ok(!files.includes("hist-duration.svg"), "no whole-run figure with --by function")
    assert.equal(files.filter((f) => f.startsWith("hist-duration-")).length, files.filter((f) => f.startsWith("hist-bytes_in-")).length)
  })

  it("rejects an unknown grouping", async () => {
    await assert.rejects(tessera("plot", "hist", "-d", trace, "--by", "host"), (e: any) => /--by/.test(e.stderr + e.stdout) && /function/.test(e.stderr + e.stdout))
  })
})

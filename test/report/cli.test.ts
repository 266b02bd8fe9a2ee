import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdtemp, readFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { tableFromIPC } from "apache-arrow"

const run = promisify(execFile)
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const data = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))
const trace = join(data, "small-TracePlugin.msgpack")
const tessera = (...args: Array<string>) => run(process.execPath, [main, ...args], { timeout: 60_000 })

describe("report commands", () => {
  it("export writes Chrome JSON, CSV and Arrow files of the same events", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-cli-"))
    await tessera("export", "-d", trace, "--format", "chrome", "-o", join(dir, "t.json"))
    await tessera("export", "-d", trace, "--format", "csv", "-o", join(dir, "t.csv"))
    await tessera("export", "-d", trace, "--format", "arrow", "-o", join(dir, "t.arrow"))
    const chrome = JSON.parse(await readFile(join(dir, "t.json"), "utf8"))
    assert.equal(chrome.traceEvents.filter((e: any) => e.ph === "X").length, 409)
    assert.equal((await readFile(join(dir, "t.csv"), "utf8")).trimEnd().split("\n").length, 968)
    assert.equal(tableFromIPC(await readFile(join(dir, "t.arrow"))).numRows, 967)
  })

  it("report and plot hist write their files", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-cli-"))
    await tessera("report", "-d", trace, "-o", join(dir, "r.html"))
    assert.ok((await readFile(join(dir, "r.html"), "utf8")).includes("Task stream"))
    await tessera("plot", "hist", "-d", trace, "--resource", "duration,size", "-o", dir)
    for (const f of ["hist-duration.svg", "hist-duration.png", "hist-size.svg", "hist-size.png"]) assert.ok(existsSync(join(dir, f)), f)
  })

  it("fails with a message naming the problem for an unknown resource or a missing database", async () => {
    await assert.rejects(tessera("plot", "hist", "-d", trace, "--resource", "bogus"), (e: any) => /unknown resource bogus/.test(e.stderr + e.stdout))
    await assert.rejects(tessera("report", "-d", "/nonexistent.msgpack", "-o", join(tmpdir(), "x.html")), (e: any) => /nonexistent\.msgpack/.test(e.stderr + e.stdout))
  })
})

import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { mkdtemp, readdir, readFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

const run = promisify(execFile)
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const trace = fileURLToPath(new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url))
const monitor = fileURLToPath(new URL("../fixtures/dasf-small/small-ResourceMonitor.msgpack", import.meta.url))
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

  it("issue 31 item 12: log axes with SI ticks where values span decades, a line instead of an empty figure", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tessera-hist-"))
    const { stdout } = await tessera("plot", "hist", "-d", trace, monitor, "-o", dir)
    const files = await readdir(dir)
    // DASF's traces record no cpu_time, peak memory or bytes read: no figure, a sentence
    for (const r of ["cores", "peak_memory", "io_bytes"]) {
      assert.match(stdout, new RegExp(`^hist-${r}: .*nothing to draw, no tasks with a value in these databases$`, "m"))
      assert.ok(!files.includes(`hist-${r}.svg`) && !files.includes(`hist-${r}.png`), `hist-${r} drawn: ${files.join(" ")}`)
    }
    const text = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!)
    // durations from 6 µs to 16 ms: a log axis, ticks in µs and ms
    const duration = text(await readFile(join(dir, "hist-duration.svg"), "utf8"))
    assert.ok(duration.includes("duration (log scale)"), duration.join(" | "))
    for (const tick of ["10 µs", "100 µs", "1 ms", "10 ms"]) assert.ok(duration.includes(tick), `${tick} in ${duration.join(" | ")}`)
    // sizes from 32 B to 78 KiB: byte ticks
    const size = text(await readFile(join(dir, "hist-size.svg"), "utf8"))
    assert.ok(size.includes("size (log scale)") && size.includes("1 KiB"), size.join(" | "))
    for (const t of [...duration, ...size]) assert.doesNotMatch(t, /0\.0000/)
  })

  it("rejects an unknown grouping", async () => {
    await assert.rejects(tessera("plot", "hist", "-d", trace, "--by", "host"), (e: any) => /--by/.test(e.stderr + e.stdout) && /function/.test(e.stderr + e.stdout))
  })
})

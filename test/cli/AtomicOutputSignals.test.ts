/**
 * Outputs never half-exist (issue 32 item 3): `export` and `analyze -o` killed with
 * SIGTERM while writing a large output leave the previous file (or, when the signal comes
 * as the file is renamed, a whole new one), never a truncated file, and no temporary
 * file. Write failures: AtomicOutput.test.ts.
 */
import assert from "node:assert/strict"
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const generate = fileURLToPath(new URL("../../bench/analysis/generate.ts", import.meta.url))

const temporaries = (d: string): ReadonlyArray<string> => readdirSync(d).filter((f) => f.includes(".tmp-"))

describe("AtomicOutputSignals", () => {
  let dir = ""
  after(() => rmSync(dir, { recursive: true, force: true }))
  let big = ""
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "tessera-atomic-signals-"))
    // ~100k events, ~28 MB: an export or analyze that takes seconds to write
    big = join(dir, "big.msgpack")
    const g = spawnSync(process.execPath, [generate, big, "--events", "100000"], { encoding: "utf8", timeout: 120_000 })
    assert.equal(g.status, 0, g.stderr)
  })

  /**
   * Runs `tessera ARGS`, and sends it SIGTERM as soon as a temporary file appears in
   * `watchDir` (the output being written); resolves with its exit and whether the
   * signal went while a temporary file was there.
   */
  const termWhileWriting = (args: ReadonlyArray<string>, watchDir: string) =>
    new Promise<{ code: number | null; stderr: string; sent: boolean }>((resolve) => {
      const child = spawn(process.execPath, [main, ...args], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] })
      let stderr = ""
      let sent = false
      child.stderr.on("data", (d) => (stderr += d))
      const w = watch(watchDir, (_event, name) => {
        if (!sent && typeof name === "string" && name.includes(".tmp-")) {
          sent = true
          child.kill("SIGTERM")
        }
      })
      const timer = setTimeout(() => child.kill("SIGKILL"), 120_000)
      child.on("exit", (code) => {
        clearTimeout(timer)
        w.close()
        resolve({ code, stderr, sent })
      })
    })

  it("issue 32 item 3: export --format chrome and csv killed mid-write leave the previous output (or a whole one), never a truncated file, and no temporary file", async () => {
    for (const [format, out] of [["chrome", "term.json"], ["csv", "term.csv"]] as const) {
      const d = mkdtempSync(join(dir, "term-"))
      writeFileSync(join(d, out), "the previous output\n")
      const r = await termWhileWriting(["export", "-d", big, "--format", format, "-o", join(d, out)], d)
      assert.ok(r.sent, `a temporary file appeared: ${r.stderr}`)
      const now = readFileSync(join(d, out), "utf8")
      if (r.code === 143) assert.equal(now, "the previous output\n", r.stderr)
      else {
        // the signal came as the file was renamed: then it is whole
        assert.equal(r.code, 0, r.stderr)
        if (format === "chrome") JSON.parse(now)
        else assert.match(now, /\n$/)
      }
      assert.deepEqual(temporaries(d), [])
    }
  })

  it("issue 32 item 3: analyze -o killed mid-write leaves no temporary file and no truncated table", async () => {
    const d = mkdtempSync(join(dir, "term-analyze-"))
    writeFileSync(join(d, "task_bottleneck.csv"), "the previous table\n")
    const r = await termWhileWriting(["analyze", "-d", big, "-o", d], d)
    assert.ok(r.sent, `a temporary file appeared: ${r.stderr}`)
    assert.ok(r.code === 143 || r.code === 0, r.stderr)
    assert.deepEqual(temporaries(d), [])
    if (r.code === 143) assert.equal(readFileSync(join(d, "task_bottleneck.csv"), "utf8"), "the previous table\n", r.stderr)
    for (const f of readdirSync(d)) assert.match(readFileSync(join(d, f), "utf8"), /\n$/, `${f} ends with its last row`)
  })
})

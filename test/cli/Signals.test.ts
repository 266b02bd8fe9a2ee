/**
 * A `tessera` command stopped by a signal exits as a shell expects of a process killed
 * by it (128 + the signal's number) after its finalizers ran: 143 for SIGTERM, 130 for
 * SIGINT, with one stderr line saying so.
 */
import assert from "node:assert/strict"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

/** Starts a long demo, sends `signal` once its pipeline has started, resolves its exit. */
const stop = (signal: "SIGTERM" | "SIGINT") =>
  new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-signal-"))
    const child = spawn(process.execPath, [main, "demo", "--samples", "4000000", "--workers", "2", "--profile", "sig"], { cwd: dir })
    let stderr = ""
    let sent = false
    // the run log (INFO lines) is on stderr since stdout carries only results
    child.stderr.on("data", (d: Buffer) => {
      stderr += d
      if (!sent && stderr.includes("Starting task run")) {
        sent = true
        child.kill(signal)
      }
    })
    child.on("error", reject)
    child.on("exit", (code) => {
      rmSync(dir, { recursive: true, force: true })
      resolve({ code, stderr })
    })
  })

describe("Signals", { timeout: 120_000 }, () => {
  it("exits 143 on SIGTERM", async () => {
    const r = await stop("SIGTERM")
    assert.equal(r.code, 143, r.stderr)
    assert.match(r.stderr, /interrupted \(SIGTERM\)/)
  })

  it("exits 130 on SIGINT", async () => {
    const r = await stop("SIGINT")
    assert.equal(r.code, 130, r.stderr)
    assert.match(r.stderr, /interrupted \(SIGINT\)/)
  })
})

/**
 * Nothing committed is lost: a database writes its batch at the latest `commitInterval`
 * (1 s by default) after the batch's first event, so a SIGKILL, which no handler sees,
 * loses at most that much. The ResourceMonitor (10 samples a second, 5000 per batch)
 * used to lose everything.
 */
import assert from "node:assert/strict"
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { setTimeout as sleep } from "node:timers/promises"
import { fileURLToPath } from "node:url"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const fixture = fileURLToPath(new URL("./fixtures/monitorRun.ts", import.meta.url))

const readAll = async (file: string): Promise<Array<TraceEvent>> => {
  const out: Array<TraceEvent> = []
  for await (const e of FileDatabase.streamEvents(file)) out.push(e)
  return out
}

describe("Commit", { timeout: 60_000 }, () => {
  it("keeps a SIGKILLed ResourceMonitor's samples up to the last second", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-sigkill-"))
    try {
      const child = spawn(process.execPath, [fixture, dir], { stdio: ["ignore", "pipe", "pipe"] })
      let stderr = ""
      child.stderr.on("data", (d) => (stderr += d))
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (d: Buffer) => d.toString().includes("started") && resolve())
        child.on("exit", (code) => reject(new Error(`fixture exited ${code}: ${stderr}`)))
      })
      const t0 = performance.now()
      await sleep(3500)
      const exited = new Promise((resolve) => child.on("exit", resolve))
      child.kill("SIGKILL")
      await exited
      const seconds = (performance.now() - t0) / 1000
      const file = join(dir, "monitor.msgpack")
      assert.ok(existsSync(file), "the database exists")
      const events = await readAll(file)
      const samples = events.filter((e) => e.name === "Resource Usage").length
      // 10 a second; everything but the last (at most 1 s) batch is on disk
      assert.ok(samples >= Math.floor((seconds - 1.5) * 10), `${samples} samples after ${seconds.toFixed(1)} s`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("writes a small batch after commitInterval without another event", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-interval-"))
    try {
      const file = join(dir, "db.msgpack")
      const db = new FileDatabase.FileDatabase(file, { commitInterval: 0.2 })
      db.record({ name: "x", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: null, args: {} })
      assert.equal(db.pendingCount, 1)
      await sleep(600)
      assert.equal(db.pendingCount, 0)
      assert.equal((await readAll(file)).length, 1)
      db.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("rejects a commitInterval that is not a finite number of seconds >= 0", () => {
    for (const commitInterval of [-1, Number.NaN, Infinity]) {
      assert.throws(() => new FileDatabase.FileDatabase("x.msgpack", { commitInterval }), /commitInterval/)
    }
  })
})

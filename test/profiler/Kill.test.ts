import assert from "node:assert/strict"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-kill-"))
after(() => rmSync(dir, { recursive: true, force: true }))

describe("Kill", () => {
  it("keeps every recorded event of a profiled run killed with SIGTERM: committed batches plus the flushed tail", async () => {
    const script = new URL("./fixtures/killedRun.ts", import.meta.url).pathname
    const child = spawn(process.execPath, [script, dir], { stdio: ["ignore", "ignore", "pipe"] })
    const recorded: Array<string> = []
    let stderr = ""
    const traceFile = join(dir, "killed-TracePlugin-h.msgpack")
    const resourceFile = join(dir, "killed-ResourceMonitor-h.msgpack")
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })))
    child.stderr.setEncoding("utf8")
    let killedAt = -1
    let buffered = ""
    child.stderr.on("data", (chunk: string) => {
      stderr += chunk
      buffered += chunk
      const lines = buffered.split("\n")
      buffered = lines.pop()!
      for (const line of lines) {
        if (line.startsWith("recorded ")) recorded.push(line.slice(9))
        // kill mid-way: after some batches were committed, with a partial batch pending
        // (the child froze its workers at such a point and waited for quiet)
        if (line.startsWith("frozen") && killedAt < 0) {
          killedAt = statSync(traceFile).size
          child.kill("SIGTERM")
        }
      }
    })
    const { code, signal } = await exited
    assert.ok(killedAt > 0, `never killed; stderr: ${stderr.slice(-500)}`)
    assert.ok(!stderr.includes("finished"), "the run finished before the kill")
    // the handler flushed, then re-raised SIGTERM: the conventional death by signal
    assert.equal(signal, "SIGTERM", `exit code ${code}; stderr: ${stderr.slice(-800)}`)
    const t = await FileDatabase.readPromise(traceFile)
    assert.equal(t.droppedBytes, 0)
    const keys = new Set(t.events.filter((e) => e.name === "Compute").map((e) => e.args.key as string))
    // every task announced before the kill (announced only after it was recorded) is in the file
    for (const k of recorded) assert.ok(keys.has(k), `lost ${k}`)
    assert.ok(statSync(traceFile).size > killedAt, "the pending tail was flushed at SIGTERM")
    assert.ok(keys.size < 2000)
    const r = await FileDatabase.readPromise(resourceFile)
    assert.ok(r.events.length >= 1)
  })
})

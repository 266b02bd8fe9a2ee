/**
 * Issue 32 item 6: the data plane checks every length a peer sends before it buffers
 * anything. A raw socket that claims a 4 GiB request (u32 0xffffffff) and then streams
 * data at a worker's data port is closed at once, logged once, and costs the serving
 * process neither memory nor CPU (it once buffered the claim, re-copying on every packet:
 * 27 CPU-seconds in 60 s, 730 MB RSS for a 400 MB send); a normal 64 MiB fetch from the
 * same process still works. The server runs in a child process with a small heap
 * (test/fixtures/engine/dataPlaneServer.ts), so its memory is its own.
 */
import assert from "node:assert/strict"
import { spawn } from "node:child_process"
import { connect } from "node:net"
import { createInterface } from "node:readline"
import { describe, it } from "node:test"
import { Effect } from "effect"
import { DataClient } from "../../src/engine/internal/cluster/dataPlane.ts"
import { MAX_REQUEST_BYTES } from "../../src/engine/internal/cluster/frames.ts"

interface Memory {
  readonly rss: number
  readonly arrayBuffers: number
  readonly heapUsed: number
  readonly cpuSeconds: number
}

const MiB = 2 ** 20

describe("data plane limits", () => {
  it("issue 32 item 6: a raw socket claiming a 0xffffffff-byte request is closed promptly and logged once; the server's memory and CPU do not grow; a 64 MiB fetch still works", { timeout: 120_000 }, async () => {
    const child = spawn(process.execPath, ["--expose-gc", "--max-old-space-size=96", new URL("../fixtures/engine/dataPlaneServer.ts", import.meta.url).pathname], {
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stderr = ""
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (d: string) => void (stderr += d))
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
    const next = async <T>(): Promise<T> => {
      const r = await lines.next()
      assert.ok(!r.done, `the server process ended; stderr:\n${stderr}`)
      return JSON.parse(r.value) as T
    }
    const memory = () => {
      child.stdin.write("m\n")
      return next<Memory>()
    }
    try {
      const { port } = await next<{ port: number }>()
      const before = await memory()

      // the hostile peer: a u32 length of 0xffffffff, then up to 400 MB as fast as the socket takes it
      const t0 = performance.now()
      let accepted = 0
      const closedAfter = await new Promise<number>((resolve) => {
        const s = connect(port, "127.0.0.1")
        const chunk = Buffer.alloc(MiB, 0x61)
        const prefix = Buffer.alloc(4)
        prefix.writeUInt32LE(0xffffffff, 0)
        s.on("error", () => {})
        s.on("close", () => resolve((performance.now() - t0) / 1000))
        s.on("connect", () => {
          s.write(prefix)
          const pump = () => {
            while (!s.destroyed && accepted < 400 * MiB) {
              accepted += chunk.length
              if (!s.write(chunk)) return void s.once("drain", pump)
            }
            s.end()
          }
          pump()
        })
      })
      assert.ok(closedAfter < 20, `the connection was closed after ${closedAfter.toFixed(1)} s`)
      assert.ok(accepted < 400 * MiB, "the server closed the connection before the peer had sent its 400 MB")
      // the warning is written as the connection closes: give the pipe a moment
      for (let i = 0; i < 50 && !stderr.includes("data plane: closed"); i++) await new Promise((r) => setTimeout(r, 100))
      const warnings = stderr.split("\n").filter((l) => l.includes("data plane: closed the connection from 127.0.0.1:"))
      assert.equal(warnings.length, 1, `one warning for the connection; stderr:\n${stderr}`)
      assert.match(warnings[0]!, new RegExp(`request of 4294967295 bytes claimed, over the limit of ${MAX_REQUEST_BYTES}`))

      const after = await memory()
      assert.ok(after.rss - before.rss < 64 * MiB, `RSS grew by ${((after.rss - before.rss) / MiB).toFixed(0)} MiB`)
      assert.ok(after.arrayBuffers - before.arrayBuffers < 8 * MiB, `ArrayBuffers grew by ${((after.arrayBuffers - before.arrayBuffers) / MiB).toFixed(0)} MiB`)
      assert.ok(after.cpuSeconds - before.cpuSeconds < 5, `the server spent ${(after.cpuSeconds - before.cpuSeconds).toFixed(1)} CPU-seconds`)

      // the same server still serves a normal fetch of its 64 MiB array
      const client = new DataClient()
      try {
        const got = await Effect.runPromise(client.fetch("server", "127.0.0.1", port, ["big"]))
        const big = (got.value as { big: Float64Array }).big
        assert.equal(big.length, 8 * MiB)
        for (const i of [0, 1, 12_345, big.length - 1]) assert.equal(big[i], i)
        assert.ok(got.bytes > 64 * MiB)
      } finally {
        client.close()
      }
    } finally {
      child.kill("SIGKILL")
    }
  })
})

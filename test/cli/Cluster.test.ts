/**
 * The cluster commands end to end: `tessera run --cluster local:2` with the profiler,
 * `tessera scheduler` + two `tessera worker` processes + `tessera run --cluster
 * HOST:PORT`, and the usage errors of bad addresses.
 */
import assert from "node:assert/strict"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { freePort } from "../../src/engine/Cluster.ts"
import { decodeRecordsUnsafe as decodeRecords } from "../../src/trace/TraceFormat.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/twoStages.ts", import.meta.url))
const host = hostname()

const dirs: Array<string> = []
const procs: Array<ChildProcess> = []
after(() => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL")
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "tessera-cluster-test-"))
  dirs.push(d)
  return d
}

const tessera = (args: ReadonlyArray<string>, cwd?: string) =>
  spawnSync(process.execPath, [main, ...args], { encoding: "utf8", ...(cwd !== undefined ? { cwd } : {}) })

const start = (args: ReadonlyArray<string>, cwd?: string): ChildProcess => {
  const p = spawn(process.execPath, [main, ...args], { stdio: ["ignore", "pipe", "pipe"], ...(cwd !== undefined ? { cwd } : {}) })
  procs.push(p)
  return p
}

const stop = (p: ChildProcess): Promise<number | null> =>
  new Promise((resolve) => {
    if (p.exitCode !== null) return resolve(p.exitCode)
    p.once("exit", (code) => resolve(code))
    p.kill("SIGTERM")
  })

const computeThreads = (file: string): Set<string> => {
  const trace = decodeRecords(readFileSync(file))
  assert.equal(trace.droppedBytes, 0)
  return new Set(trace.events.filter((e) => e.name === "Compute").map((e) => String(e.thread_id)))
}

describe("tessera --cluster", () => {
  it("runs a pipeline on a local cluster of 2 worker processes, profiled", () => {
    const dir = tempDir()
    const r = tessera(["run", fixture, "--cluster", "local:2", "--profile", "c"], dir)
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stderr, /INFO - Pipeline run successfully/)
    assert.match(r.stdout, /on a local cluster of 2 worker processes/)
    const file = join(dir, `c-TracePlugin-${host}.msgpack`)
    const threads = computeThreads(file)
    assert.equal(threads.size, 2, `Compute events from both workers: ${[...threads].join(", ")}`)
    // the normalisation's reductions combine chunks made on both workers: peer fetches,
    // written as DASF-shaped X events on the receiving worker's row; and each worker's clock
    const events = decodeRecords(readFileSync(file)).events
    const transfers = events.filter((e) => e.name === "Transfer")
    assert.ok(transfers.length > 0)
    for (const t of transfers) {
      assert.equal(t.phase, "X")
      assert.ok(threads.has(String(t.thread_id)))
      assert.ok((t.args.bytes as number) > 0 && (t.args.keys as Array<string>).length > 0)
    }
    assert.equal(new Set(events.filter((e) => e.name === "Clock Offset").map((e) => e.thread_id)).size, 2)
  })

  it("runs on the workers of a tessera scheduler, whose processes write the profile's host files", async () => {
    const port = await freePort("127.0.0.1")
    const sched = start(["scheduler", "--port", String(port)])
    let schedLog = ""
    const bothJoined = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the workers did not join within 60 s:\n${schedLog}`)), 60_000)
      sched.stderr!.on("data", (d) => {
        schedLog += d
        if (/2 workers now/.test(schedLog)) {
          clearTimeout(timer)
          resolve()
        }
      })
    })
    const addr = `127.0.0.1:${port}`
    const ws = [start(["worker", "--scheduler", addr]), start(["worker", "--scheduler", addr, "--threads", "2"])]
    // both workers in before the driver starts (its tasks would all go to one worker otherwise)
    await bothJoined
    const dir = tempDir()
    const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = start(["run", fixture, "--cluster", addr, "--profile", "s"], dir)
      let stdout = ""
      let stderr = ""
      p.stdout!.on("data", (d) => (stdout += d))
      p.stderr!.on("data", (d) => (stderr += d))
      p.once("exit", (status) => resolve({ status, stdout, stderr }))
    })
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, new RegExp(`on the cluster of scheduler ${addr.replace(/\./g, "\\.")}`))
    for (const w of ws) assert.equal(w.exitCode, null, "workers outlive a driver")
    // written by the worker processes, flushed when the driver's profile closed (they still run)
    const threads = computeThreads(join(dir, `s-TracePlugin-${host}.msgpack`))
    assert.ok([...threads].some((t) => t.endsWith("-0")) && [...threads].some((t) => /-1[67]$/.test(t)), [...threads].join(", "))
    for (const w of ws) await stop(w)
    await stop(sched)
  })

  it("rejects bad cluster addresses with a message naming the flag", () => {
    const a = tessera(["run", fixture, "--cluster", "nowhere"])
    assert.equal(a.status, 2)
    assert.match(a.stderr, /--cluster "nowhere": expected local:N, HOST:PORT of a tessera scheduler or postgres:/)
    const b = tessera(["run", fixture, "--cluster", "local:0"])
    assert.equal(b.status, 2)
    assert.match(b.stderr, /--cluster "local:0": local:N needs 1 <= N <= \d+/)
    const c = tessera(["worker", "--scheduler", "nohost"])
    assert.equal(c.status, 2)
    assert.match(c.stderr, /--scheduler "nohost": expected HOST:PORT/)
    // PostgreSQL runner storage: bad URLs are usage errors; the password never shows
    const e = tessera(["run", fixture, "--cluster", "postgres://u:secret@h/db?prefix=Bad"])
    assert.equal(e.status, 2)
    assert.match(e.stderr, /--cluster "postgres:\/\/u:\*\*\*@h\/db\?prefix=Bad": the prefix parameter must be a lower-case SQL identifier/)
    const f = tessera(["worker", "--storage", "mysql://h/db"])
    assert.equal(f.status, 2)
    assert.match(f.stderr, /--storage "mysql:\/\/h\/db": expected a PostgreSQL URL/)
    for (const args of [["worker"], ["worker", "--scheduler", "h:1", "--storage", "postgres://h/db"]]) {
      const g = tessera(args)
      assert.equal(g.status, 2)
      assert.match(g.stderr, /a worker takes exactly one of --scheduler HOST:PORT and --storage postgres:/)
    }
    // a server that is not there: a failure naming the URL (exit 1), not an internal error
    const h = tessera(["scheduler", "--storage", "postgres://u:secret@127.0.0.1:1/db"])
    assert.equal(h.status, 1)
    assert.match(h.stderr, /PostgreSQL runner storage at postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db: .*ECONNREFUSED/)
    assert.doesNotMatch(h.stderr, /secret|internal error/)
    const d = tessera(["run", fixture, "--cluster", "local:2", "--gpu"])
    assert.equal(d.status, 2)
    assert.match(d.stderr, /--gpu "with --cluster": --gpu runs on worker threads only/)
  })
})

/**
 * The edges of a hand-started cluster (issue 31): a worker or driver whose scheduler is
 * not there says so within seconds, retries visibly, gives up after `--connect-timeout`
 * and stops at once on SIGTERM / SIGINT; `--port 0` / `--listen HOST:0` take a free
 * port and print it; the scheduler logs joins and leaves; a worker's trace rows name its
 * process and address; relative dataset paths resolve on the driver, not in a worker's
 * directory. Loopback only, every process bounded and killed at the end.
 */
import assert from "node:assert/strict"
import type { ChildProcess } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { freePort } from "../../src/engine/Cluster.ts"
import { decodeRecordsUnsafe as decodeRecords } from "../../src/trace/TraceFormat.ts"
import { startTessera } from "./tesseraProcess.ts"

const src = fileURLToPath(new URL("../../src/", import.meta.url))
const host = hostname()

const dirs: Array<string> = []
const procs: Array<ChildProcess> = []
after(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL")
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "tessera-cluster-edges-"))
  dirs.push(d)
  return d
}

/** A `tessera` process whose output is collected; `wait(re)` resolves when stdout or stderr matches. */
const start = (args: ReadonlyArray<string>, cwd?: string) => startTessera(procs, args, { cwd })

/** Sends `signal`; the exit code and how long the process took to exit after it. */
const signalled = async (s: ReturnType<typeof start>, signal: "SIGTERM" | "SIGINT") => {
  const t0 = performance.now()
  s.p.kill(signal)
  const e = await s.exited
  return { ...e, seconds: (performance.now() - t0) / 1000 }
}

describe("a cluster's edges", { timeout: 240_000 }, () => {
  for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130]] as const) {
    it(`issue 31 item 5: a worker with no scheduler says so within seconds, naming the address, retries visibly, and exits ${code} on ${signal}`, async () => {
      const port = await freePort("127.0.0.1")
      const w = start(["worker", "--scheduler", `127.0.0.1:${port}`])
      // start-up (imports) takes a few seconds on a loaded machine; the first refusal is said at once
      await w.wait(new RegExp(`cannot reach scheduler 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\); retrying \\(1\\)`), 30)
      await w.wait(/retrying \(2\)/, 10)
      const r = await signalled(w, signal)
      assert.equal(r.code, code, w.out.stderr)
      assert.ok(r.seconds < 5, `exited ${r.seconds.toFixed(1)} s after ${signal}`)
      assert.match(w.out.stderr, new RegExp(`interrupted \\(${signal}\\)`))
      assert.doesNotMatch(w.out.stderr, /internal error|Shard lock storage/)
    })

    it(`issue 31 item 5: a driver (demo --cluster HOST:PORT) with no scheduler says so within seconds and exits ${code} on ${signal}`, async () => {
      const port = await freePort("127.0.0.1")
      const d = start(["demo", "--cluster", `127.0.0.1:${port}`], tempDir())
      await d.wait(new RegExp(`cannot reach scheduler 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\); retrying \\(1\\)`), 30)
      const r = await signalled(d, signal)
      assert.equal(r.code, code, d.out.stderr)
      assert.ok(r.seconds < 5, `exited ${r.seconds.toFixed(1)} s after ${signal}`)
    })
  }

  it("issue 31 item 5: a worker gives up with exit 1 after --connect-timeout, saying so", async () => {
    const port = await freePort("127.0.0.1")
    const w = start(["worker", "--scheduler", `127.0.0.1:${port}`, "--connect-timeout", "2"])
    const r = await w.exited
    assert.equal(r.code, 1, w.out.stderr)
    assert.match(w.out.stderr, new RegExp(`tessera worker: cannot reach scheduler 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\): gave up after 2 s and \\d+ attempts`))
    assert.doesNotMatch(w.out.stderr, /internal error/)
  })

  describe("a scheduler on --port 0, a worker on --listen 127.0.0.1:0 in one folder, a driver in another", () => {
    let sched: ReturnType<typeof start>
    let worker: ReturnType<typeof start>
    let run: { code: number | null; stdout: string; stderr: string }
    let scheduler = ""
    let workerAt = ""
    let driverDir = ""

    before(async () => {
      sched = start(["scheduler", "--port", "0"])
      scheduler = (await sched.wait(/workers join with {2}tessera worker --scheduler (127\.0\.0\.1:\d+)/, 60))[1]!
      // the worker runs in a folder without the data: a relative path read there fails
      worker = start(["worker", "--scheduler", scheduler, "--listen", "127.0.0.1:0", "--threads", "2"], tempDir())
      workerAt = (await worker.wait(/tessera worker at (127\.0\.0\.1:\d+),/, 60))[1]!
      await sched.wait(/worker joined/, 60)
      driverDir = tempDir()
      mkdirSync(join(driverDir, "data"))
      // a .npy file of 40 rows × 2 float64 columns (format 1.0, header padded to 128 bytes)
      const header = "{'descr': '<f8', 'fortran_order': False, 'shape': (40, 2), }"
      const head = Buffer.concat([Buffer.from([0x93]), Buffer.from("NUMPY"), Buffer.from([1, 0, 128 - 10, 0]), Buffer.from(header.padEnd(128 - 10 - 1) + "\n")])
      const data = Float64Array.from({ length: 80 }, (_, i) => (i % 7) - 3)
      writeFileSync(join(driverDir, "data", "X.npy"), Buffer.concat([head, Buffer.from(data.buffer)]))
      writeFileSync(
        join(driverDir, "pipeline.ts"),
        `import { Effect } from ${JSON.stringify(import.meta.resolve("effect"))}
import * as DatasetArray from ${JSON.stringify(join(src, "dsl/DatasetArray.ts"))}
import { Normalize, Persist } from ${JSON.stringify(join(src, "dsl/Estimators.ts"))}
import * as Pipeline from ${JSON.stringify(join(src, "dsl/Pipeline.ts"))}
import * as NodeDatasetSource from ${JSON.stringify(join(src, "kernels/io/NodeDatasetSource.ts"))}

export default async () => {
  const X = await Effect.runPromise(DatasetArray.make("data/X.npy", { chunks: 10, dtype: "float64" }).pipe(Effect.provide(NodeDatasetSource.layer)))
  const p = Pipeline.make("relative")
  const scaled = p.add(new Normalize().transform, { X })
  p.add(Persist<"float64">("Persist.scaled"), { X: scaled })
  return p
}
`
      )
      const d = start(["run", "pipeline.ts", "--cluster", scheduler, "--profile", "rel"], driverDir)
      const e = await d.exited
      run = { code: e.code, stdout: d.out.stdout, stderr: d.out.stderr }
    })

    it("issue 31 item 14: --port 0 and --listen HOST:0 pick free ports and print them", () => {
      assert.notEqual(scheduler.split(":")[1], "0")
      assert.notEqual(workerAt.split(":")[1], "0")
    })

    it("issue 31 item 6: a relative .npy path resolves on the driver: the workers, started elsewhere, read it", () => {
      assert.equal(run.code, 0, run.stderr)
      assert.doesNotMatch(run.stderr, /NotNpy|NotFound|ENOENT/)
    })

    it("issue 31 item 14: the worker's trace rows carry its process and address", () => {
      const events = decodeRecords(readFileSync(join(driverDir, `rel-TracePlugin-${host}.msgpack`))).events
      const rows = new Set(events.filter((e) => e.name === "Compute").map((e) => String(e.thread_id)))
      assert.ok(rows.size > 0)
      const expected = new RegExp(`^worker-${host}-${workerAt.replace(/\./g, "\\.")}-pid${worker.p.pid}-[01]$`)
      for (const r of rows) assert.match(r, expected)
      // DASF's fields kept: process_id is still the host
      for (const e of events.filter((e) => e.name === "Compute")) assert.equal(e.process_id, host)
    })

    it("issue 31 item 14: the scheduler logs a worker's join and leave with its address, pid and threads", async () => {
      const said = `tessera-worker@${workerAt.replace(/\./g, "\\.")} \\(pid ${worker.p.pid} on ${host}, 2 threads\\)`
      assert.match(sched.out.stderr, new RegExp(`tessera scheduler: worker joined: ${said}; 1 worker now`))
      const r = await signalled(worker, "SIGTERM")
      assert.equal(r.code, 143, worker.out.stderr)
      await sched.wait(new RegExp(`tessera scheduler: worker (left|lost[^:]*): ${said}; 0 workers now`), 30)
      assert.equal((await signalled(sched, "SIGTERM")).code, 143)
    })
  })
})

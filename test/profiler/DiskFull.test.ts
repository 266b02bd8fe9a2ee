/**
 * Issue 32 item 3, with real processes and files: a failed write stops that profiler, not
 * the run. On a 1 MiB tmpfs (where the test may mount one) and with an injected write
 * failure (fixtures/failWrites.ts), the demo prints its result and exits 0, one warning
 * per stopped file names it and the bytes it keeps, and those bytes load as whole
 * records. A report that cannot be written fails the run after its result is printed.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { DatabaseError } from "../../src/profiler/EventDatabase.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import { demo, host, locks, scratch } from "./issue32.ts"

const failWrites = fileURLToPath(new URL("./fixtures/failWrites.ts", import.meta.url))
const folder = scratch("tessera-disk-full-")

/** The warnings of stopped files: file, error code, bytes and events kept. */
const stoppedFiles = (stderr: string) =>
  [...stderr.matchAll(/^warning: (\S+): writing failed \(([A-Z]+)[^\n]*?The file keeps (\d+) bytes, readable, with the first (\d+) events/gm)].map((m) => ({
    file: m[1]!,
    code: m[2]!,
    kept: Number(m[3]),
    events: Number(m[4])
  }))

describe("a failed write stops the profiler, not the run (issue 32 item 3)", { timeout: 300_000 }, () => {
  /** The run printed its result, exit 0; each stopped file warned once and loads whole. */
  const checkRun = async (dir: string, r: ReturnType<typeof demo>, code: string) => {
    assert.equal(r.status, 0, r.stderr)
    const summary = JSON.parse(r.stdout.trim().split("\n").at(-1)!)
    assert.ok(summary.kmeans.ari >= 0.99, r.stdout)
    assert.doesNotMatch(r.stderr, /internal error/)
    const stopped = stoppedFiles(r.stderr)
    assert.ok(stopped.length > 0, r.stderr)
    assert.equal(new Set(stopped.map((s) => s.file)).size, stopped.length, `one warning per file:\n${r.stderr}`)
    assert.equal(r.stderr.split("\n").filter((l) => l.includes("writing failed")).length, stopped.length, r.stderr)
    for (const s of stopped) {
      assert.equal(s.code, code)
      assert.match(r.stderr, new RegExp(`${s.file}: writing failed .*this profiler stopped writing it and the run goes on`))
      const path = join(dir, s.file)
      assert.equal(statSync(path).size, s.kept, `${s.file} holds the bytes its warning says`)
      const t = await FileDatabase.readPromise(path)
      assert.equal(t.droppedBytes, 0, `${s.file} ends at a record boundary`)
      assert.equal(t.events.length, s.events)
    }
    return { summary, stopped }
  }

  it("issue 32 item 3: on a full 1 MiB tmpfs the demo completes with its result, one warning per stopped file naming it and the bytes kept, which load", async (t) => {
    const dir = folder()
    const mnt = join(dir, "full")
    mkdirSync(mnt)
    const m = process.getuid?.() === 0 ? spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt], { encoding: "utf8" }) : undefined
    if (m === undefined || m.status !== 0) {
      t.skip(`cannot mount a tmpfs here (needs root and mount): ${m?.stderr.trim() ?? "not root"}; the injected failure below covers the path`)
      return
    }
    try {
      const r = demo(mnt, ["--workers", "2", "--profile", "p", "--json"])
      const { summary, stopped } = await checkRun(mnt, r, "ENOSPC")
      // the trace's first records are there: the Pipeline Graph and tasks
      assert.ok(stopped.some((s) => s.file === `p-TracePlugin-${host}.msgpack` && s.events > 0), r.stderr)
      const trace = await FileDatabase.readPromise(join(mnt, `p-TracePlugin-${host}.msgpack`))
      assert.equal(trace.events[0]!.name, "Pipeline Graph")
      assert.ok(trace.events.some((e) => e.name === "Compute"))
      assert.equal(summary.databases.length, 3)
      assert.deepEqual(locks(mnt), [])
    } finally {
      spawnSync("umount", [mnt])
    }
  })

  it("issue 32 item 3: an injected write failure in each of the Trace, ResourceMonitor and StatisticalProfiler files stops each with one warning; the run completes; the kept records load", async () => {
    const dir = folder()
    const r = demo(dir, ["--workers", "2", "--samples", "20000", "--profile", "inj", "--json"], {
      TESSERA_TEST_FAIL: "TracePlugin=60000,ResourceMonitor=1500,StatisticalProfiler=3000",
      TESSERA_TEST_FAIL_CODE: "EIO"
    }, ["--import", failWrites])
    const { stopped } = await checkRun(dir, r, "EIO")
    const byFile = new Map(stopped.map((s) => [s.file, s]))
    for (const kind of ["TracePlugin", "ResourceMonitor", "StatisticalProfiler"]) {
      assert.ok(byFile.has(`inj-${kind}-${host}.msgpack`), `${kind} stopped:\n${r.stderr}`)
    }
    const trace = byFile.get(`inj-TracePlugin-${host}.msgpack`)!
    // a partial write was cut back to whole records: below the 60000 bytes written
    assert.ok(trace.kept > 0 && trace.kept <= 60000 && trace.events > 0, JSON.stringify(trace))
    const first = (await FileDatabase.readPromise(join(dir, trace.file))).events[0]!
    assert.equal(first.name, "Pipeline Graph")
  })

  it("issue 32 item 3: a FileDatabase with stopOnWriteError stops on ENOSPC (/dev/full) with one warning; without it the write throws WriteFailed", (t) => {
    if (!existsSync("/dev/full")) {
      t.skip("no /dev/full here")
      return
    }
    const warnings: Array<string> = []
    const db = new FileDatabase.FileDatabase("/dev/full", { stopOnWriteError: true, commitInterval: 0, warn: (l) => void warnings.push(l) })
    for (let i = 0; i < 10; i++) db.record({ name: "x", timestamp: i, phase: "I", process_id: "h", thread_id: null, args: {} })
    db.commit()
    assert.equal(db.stopped?.reason._tag, "WriteFailed")
    db.record({ name: "x", timestamp: 11, phase: "I", process_id: "h", thread_id: null, args: {} })
    db.commit()
    db.close()
    assert.equal(db.dropped, 11)
    assert.equal(warnings.length, 1)
    assert.match(warnings[0]!, /^warning: \/dev\/full: writing failed \(ENOSPC.*keeps 0 bytes, readable, with the first 0 events.*10 events of the failed write and all later ones are lost\.$/)
    const plain = new FileDatabase.FileDatabase("/dev/full", { commitInterval: 0 })
    plain.record({ name: "x", timestamp: 1, phase: "I", process_id: "h", thread_id: null, args: {} })
    assert.throws(() => plain.commit(), (e: unknown) => e instanceof DatabaseError && e.reason._tag === "WriteFailed" && /ENOSPC/.test(e.message))
  })

  it("issue 32 item 3: a report that cannot be written fails the run after its result is printed", () => {
    const dir = folder()
    writeFileSync(join(dir, "blocker"), "")
    const r = demo(dir, ["--workers", "1", "--samples", "2000", "--profile", "rep", "--no-sample", "--report", "blocker/r.html"])
    assert.equal(r.status, 1, r.stderr)
    assert.match(r.stdout, /KMeans centers/)
    assert.match(r.stdout, /trace database: rep-TracePlugin-/)
    assert.match(r.stderr, /tessera demo: --report blocker\/r\.html: /)
  })
})

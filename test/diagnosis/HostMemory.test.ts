/**
 * The hosts' memory `memory-pressure` reads: Tessera's ResourceMonitor adds the host's
 * total and available memory to each sample (checked against /proc/meminfo, read here
 * independently), and `tessera diagnose` reads them back from a resource monitor's file
 * (HostMemory.ts: the loader keeps DASF's resource columns only), names the pressured
 * host and says nothing on a file without them.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { Effect } from "effect"
import * as fc from "fast-check"
import { diagnoseFilesPromise } from "../../src/analysis/Diagnose.ts"
import { hostMemoryOfEvents, readHostMemory } from "../../src/analysis/diagnosis/HostMemory.ts"
import * as MemoryDatabase from "../../src/profiler/MemoryDatabase.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { hostMemoryTotal, traceArb } from "../../src/testing/index.ts"

/** /proc/meminfo's field in bytes (null where there is no /proc) */
const meminfo = (field: string): number | null => {
  if (!existsSync("/proc/meminfo")) return null
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync("/proc/meminfo", "latin1"))
  return m === null ? null : Number(m[1]) * 1024
}

describe("issue 35: the hosts' memory, for memory-pressure", () => {
  it("issue 35: ResourceMonitor's samples carry host_memory.total and host_memory.available (against /proc/meminfo)", async () => {
    const db = MemoryDatabase.make()
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      yield* ResourceMonitor.run(db, { interval: 20, host: "h" })
      yield* Effect.sleep(60)
    })))
    assert.ok(db.list.length >= 2)
    for (const e of db.list) {
      const a = e.args as Record<string, number>
      const total = a["host_memory.total"]!
      const available = a["host_memory.available"]!
      assert.ok(total > 0 && available >= 0 && available <= total, JSON.stringify(a))
      // DASF's args are all still there, and first
      assert.deepEqual(Object.keys(a).slice(0, 10), [
        "cpu", "memory", "time", "host_net_io.read_bps", "host_net_io.write_bps", "host_disk_io.read_bps",
        "host_disk_io.write_bps", "num_fds", "gpu_utilization", "gpu_memory_used"
      ])
      const memTotal = meminfo("MemTotal")
      if (memTotal !== null) assert.equal(total, memTotal)
      // available was read at another instant (other tests may have taken or given back GiBs since): only
      // bounded by the total here; os.freemem() is MemAvailable on Linux (docs/profiler.md)
    }
    // what the diagnosis reads of them
    const [h] = hostMemoryOfEvents(db.list)
    assert.equal(h!.host, "h")
    assert.equal(h!.time.length, db.list.length)
  })

  it("issue 35: tessera diagnose reads them from the resource monitor's file: a pressured host is named, a file without them says nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-host-memory-"))
    try {
      const [t] = fc.sample(traceArb({ format: "tessera", faults: ["memory-pressure"], maxHosts: 1, minTasks: 20 }), { numRuns: 1, seed: 35 })
      const isSample = (e: TraceEvent) => e.name === "Resource Usage"
      // as the default profiler writes them: tasks in one file, samples in another
      writeFileSync(join(dir, "run-TracePlugin-host0.msgpack"), encodeRecords(t!.events.filter((e) => !isSample(e))))
      writeFileSync(join(dir, "run-ResourceMonitor-host0.msgpack"), encodeRecords(t!.events.filter(isSample)))
      const files = [join(dir, "run-TracePlugin-host0.msgpack"), join(dir, "run-ResourceMonitor-host0.msgpack")]
      const [h] = await readHostMemory(files)
      assert.equal(h!.total, hostMemoryTotal)
      assert.equal(Math.max(...h!.used), t!.truth.memoryPressure!.peak)
      const d = await diagnoseFilesPromise(files)
      const f = d.findings.find((x) => x.rule === "memory-pressure")
      assert.ok(f !== undefined, d.findings.map((x) => x.rule).join(", "))
      assert.equal(f.evidence.host, "host0")
      assert.equal(f.severity, "high")
      assert.equal(d.clean, false)
      // without the samples: no memory finding
      const none = await diagnoseFilesPromise(files.slice(0, 1))
      assert.ok(!none.findings.some((x) => x.rule === "memory-pressure"))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

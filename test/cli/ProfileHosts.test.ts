/**
 * `--report` on a profiled run reads every host's files of the profile: the driver's
 * own, and those cluster workers wrote for other hosts next to them.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { otherHosts } from "../../src/cli/profiling.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-profile-hosts-"))
after(() => rmSync(dir, { recursive: true, force: true }))

describe("otherHosts", () => {
  it("finds the profile's files of other hosts, and nothing of other profiles", () => {
    const files = [
      "p-TracePlugin-a.msgpack", "p-ResourceMonitor-a.msgpack", "p-StatisticalProfiler-a.msgpack",
      "p-TracePlugin-b.msgpack", "p-ResourceMonitor-b.msgpack", "p-StatisticalProfiler-b.msgpack",
      "q-TracePlugin-b.msgpack", "p-TracePlugin-b.msgpack.bak", "notes.txt"
    ]
    for (const f of files) writeFileSync(join(dir, f), "")
    const own = ["p-TracePlugin-a.msgpack", "p-ResourceMonitor-a.msgpack", "p-StatisticalProfiler-a.msgpack"].map((f) => join(dir, f))
    assert.deepEqual(
      otherHosts(own).sort(),
      ["p-ResourceMonitor-b.msgpack", "p-StatisticalProfiler-b.msgpack", "p-TracePlugin-b.msgpack"].map((f) => join(dir, f))
    )
    assert.deepEqual(otherHosts([join(dir, "missing", "p-TracePlugin-a.msgpack")]), [])
  })
})

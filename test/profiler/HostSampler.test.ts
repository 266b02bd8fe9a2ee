import assert from "node:assert/strict"
import { existsSync, readdirSync } from "node:fs"
import { describe, it } from "node:test"
import { HostSampler } from "../../src/profiler/internal/hostSampler.ts"

const proc = existsSync("/proc/net/dev") && existsSync("/proc/diskstats") && existsSync("/proc/self/fd")

describe("HostSampler", () => {
  it("counts the process's descriptors without its own, and releases them on close", { skip: proc ? false : "no /proc here" }, () => {
    const open = () => readdirSync("/proc/self/fd").length - 1
    const before = open()
    const s = new HostSampler({ gpu: null })
    const first = s.sampleUnsafe(0)
    assert.equal(open() - before, 2, "/proc/net/dev and /proc/diskstats stay open while sampling")
    assert.equal(first.num_fds, before)
    s.close()
    assert.equal(open(), before)
    // a sample after close reopens them, and rates stay non-negative numbers
    const again = s.sampleUnsafe(1)
    for (const k of ["host_net_io.read_bps", "host_net_io.write_bps", "host_disk_io.read_bps", "host_disk_io.write_bps"] as const) {
      assert.ok(Number.isFinite(again[k]) && again[k] >= 0, `${k} = ${again[k]}`)
    }
    s.close()
    assert.equal(open(), before)
  })
})

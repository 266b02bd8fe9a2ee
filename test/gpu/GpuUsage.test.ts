import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as Gpu from "../../src/engine/Gpu.ts"
import { HostSampler } from "../../src/profiler/internal/hostSampler.ts"

// No adapter needed: the usage the GPU workers report, as the resource monitor reads it.
describe("Resource Usage's GPU fields without nvidia-smi", () => {
  it("come from the GPU workers: device bytes held, busy seconds per interval per worker in %", async () => {
    const s = new HostSampler({ gpu: null })
    try {
      assert.equal(Gpu.usage(), null)
      const none = s.sampleUnsafe(0)
      assert.equal(none.gpu_utilization, 0)
      assert.equal(none.gpu_memory_used, 0)
      let u: Gpu.Usage = { devices: 2, heldBytes: 1000, busySeconds: 5 }
      const unregister = Gpu.registerUsage(() => u)
      try {
        const first = s.sampleUnsafe(1)
        assert.equal(first.gpu_memory_used, 1000)
        assert.equal(first.gpu_utilization, 0, "no interval yet: the busy time before it is not this sample's")
        await new Promise((r) => setTimeout(r, 200))
        u = { devices: 2, heldBytes: 4096, busySeconds: 5.1 }
        const second = s.sampleUnsafe(2)
        assert.equal(second.gpu_memory_used, 4096)
        // 0.1 s busy over at least 0.2 s and 2 workers: at most 25 %
        assert.ok(second.gpu_utilization > 0 && second.gpu_utilization <= 25.1, String(second.gpu_utilization))
      } finally {
        unregister()
      }
      assert.equal(Gpu.usage(), null)
      assert.equal(s.sampleUnsafe(3).gpu_memory_used, 0)
    } finally {
      s.close()
    }
  })
})

/**
 * Two GPU workers in one process: both compute, and the process exits cleanly. Closed at
 * once, their two llvmpipe devices crashed the process (a segmentation fault, every run
 * of this command before the pool closed GPU workers one at a time). Runs the GPU bench
 * (small, GPU only, JSON), which also checks that it prints per-kernel GPU times.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { skip } from "./gpu.ts"

const bench = fileURLToPath(new URL("../../bench/gpu/gpu.ts", import.meta.url))

describe("two GPU workers", { skip }, () => {
  it("run the GPU bench on both and exit with status 0", () => {
    const r = spawnSync(process.execPath, [bench, "--samples", "20000", "--chunk-rows", "5000", "--demo-samples", "none", "--gpus", "2", "--only", "gpu", "--json"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 240_000
    })
    assert.equal(r.signal, null, `killed by ${r.signal}`)
    assert.equal(r.status, 0, r.stderr.split("\n").filter((l) => !/warning|libvulkan/i.test(l)).slice(-10).join("\n"))
    const out = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { perKernel: Array<{ kernel: string; on: string; "gpu mean ms": number | string }> }
    const lloyd = out.perKernel.find((k) => k.kernel === "lloyd")!
    assert.equal(lloyd.on, "GPU")
    assert.ok(typeof lloyd["gpu mean ms"] === "number" && lloyd["gpu mean ms"] > 0)
  })
})

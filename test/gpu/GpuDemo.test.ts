import assert from "node:assert/strict"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { decodeRecordsUnsafe as decodeRecords } from "../../src/trace/TraceFormat.ts"
import { skip } from "./gpu.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

describe("tessera demo --gpu", { skip }, () => {
  it("runs the GPU kernels on the GPU worker's row, with Transfer events and device bytes in the trace", () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-gpu-demo-test-"))
    const out = execFileSync(process.execPath, [main, "demo", "--gpu", "--samples", "3000", "--chunk-rows", "500", "--workers", "1", "--profile", "t", "--json"], {
      cwd: dir,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"]
    })
    const summary = JSON.parse(out.trim().split("\n").at(-1)!)
    assert.equal(summary.gpu, true)
    assert.ok(summary.kmeans.ari >= 0.99 && summary.som.ari >= 0.99)
    const events = decodeRecords(readFileSync(join(dir, summary.databases[0]))).events
    const threadOf = new Map<string, Set<unknown>>()
    for (const e of events.filter((e) => e.name === "Compute")) {
      const name = (e.args as { name: string }).name
      if (!threadOf.has(name)) threadOf.set(name, new Set())
      threadOf.get(name)!.add(e.thread_id)
    }
    const gpuThread = [...threadOf.get("lloyd")!][0] as string
    assert.match(gpuThread, /^worker-.*-1$/)
    for (const name of ["make_blobs_X", "make_blobs_y", "moments", "normalize", "lloyd", "som_epoch", "kmeans_predict", "som_predict"]) assert.deepEqual([...threadOf.get(name)!], [gpuThread], name)
    for (const name of ["lloyd-combine", "som_epoch-combine"]) assert.ok(!threadOf.get(name)!.has(gpuThread), name)
    // GPU tasks carry their kernel time, CPU tasks none
    const computes = events.filter((e) => e.name === "Compute")
    assert.ok(computes.filter((e) => e.thread_id === gpuThread).every((e) => typeof (e.args as { gpu_time?: number }).gpu_time === "number"))
    assert.ok(computes.filter((e) => e.thread_id !== gpuThread).every((e) => !("gpu_time" in e.args)))
    const transfers = events.filter((e) => e.name === "Transfer")
    const dirs = new Set(transfers.map((t) => (t.args as { direction: string }).direction))
    assert.deepEqual([...dirs].sort(), ["device-to-host", "host-to-device"])
    for (const t of transfers) {
      const a = t.args as { keys: Array<string>; bytes: number; worker: string; start: number; stop: number }
      assert.equal(a.worker, gpuThread)
      assert.ok(a.bytes > 0 && a.stop >= a.start && a.keys.length === 1)
      assert.equal(t.thread_id, gpuThread)
    }
    // the blobs are made on the device and every later GPU task finds its chunks there
    // (across the computes of every KMeans and SOM iteration): only centers, SOM weights
    // and the scaler's vectors go up, never a chunk of X (500 x 2 float32 = 4000 bytes)
    const up = transfers.filter((t) => (t.args as { direction: string }).direction === "host-to-device")
    assert.ok(up.length > 0 && up.every((t) => (t.args as { bytes: number }).bytes < 200), JSON.stringify(up.map((t) => t.args).slice(0, 3)))
    // Resource Usage's GPU fields: nvidia-smi's where it runs, else the GPU workers' own
    const resources = decodeRecords(readFileSync(join(dir, summary.databases[1]))).events.filter((e) => e.name === "Resource Usage")
    assert.ok(resources.some((e) => (e.args as { gpu_memory_used: number }).gpu_memory_used > 0))
    const memory = events.filter((e) => e.name === "Managed Memory")
    assert.ok(memory.some((m) => m.thread_id === gpuThread && typeof (m.args as { device?: number }).device === "number"))
    assert.ok(memory.filter((m) => m.thread_id !== gpuThread).every((m) => !("device" in m.args)))
  })
})

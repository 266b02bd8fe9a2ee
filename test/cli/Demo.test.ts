import assert from "node:assert/strict"
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { readProfilePromise } from "../../src/trace/SampleEvents.ts"
import { decodeRecordsUnsafe as decodeRecords } from "../../src/trace/TraceFormat.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

describe("tessera demo", () => {
  it("samples the driver's main thread with --sample-driver, and only the workers without it", async () => {
    const threadsOf = async (extra: ReadonlyArray<string>) => {
      const dir = mkdtempSync(join(tmpdir(), "tessera-demo-driver-"))
      const out = execFileSync(process.execPath, [main, "demo", "--samples", "20000", "--workers", "2", "--profile", "s", "--json", ...extra], { cwd: dir, encoding: "utf8" })
      const summary = JSON.parse(out.trim().split("\n").at(-1)!)
      const { samples } = await readProfilePromise([join(dir, summary.databases[2])])
      return { threads: new Set(samples.thread), names: new Set(samples.name.filter((_, i) => samples.thread[i] === "driver")) }
    }
    const plain = await threadsOf([])
    assert.ok(!plain.threads.has("driver"), `threads ${[...plain.threads]}`)
    assert.ok(plain.threads.size >= 2, "both workers sampled")
    const withDriver = await threadsOf(["--sample-driver"])
    assert.ok(withDriver.threads.has("driver"), `threads ${[...withDriver.threads]}`)
    assert.deepEqual([...withDriver.names], ["driver"], "the main thread runs no task: its samples are the driver's")
  })

  it("writes both trace databases and a report with --profile and --report, one Compute event per task", () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-demo-test-"))
    const out = execFileSync(process.execPath, [main, "demo", "--samples", "3000", "--chunk-rows", "500", "--workers", "2", "--profile", "t", "--report", "r.html", "--json"], {
      cwd: dir,
      encoding: "utf8"
    })
    const summary = JSON.parse(out.trim().split("\n").at(-1)!)
    assert.ok(summary.kmeans.ari >= 0.99)
    assert.equal(summary.databases.length, 3)
    for (const f of summary.databases) assert.ok(existsSync(join(dir, f)), f)
    assert.match(summary.databases[2], /^t-StatisticalProfiler-.*\.msgpack$/)
    const events = decodeRecords(readFileSync(join(dir, summary.databases[0])))
    const computes = events.events.filter((e) => e.name === "Compute")
    assert.ok(computes.length > 0)
    // the blobs are made once: 6 chunks of X, each a single task
    assert.equal(computes.filter((e) => (e.args as { name: string }).name === "make_blobs_X").length, 6)
    // the pipeline's stage DAG, once
    const graphs = events.events.filter((e) => e.name === "Pipeline Graph")
    assert.equal(graphs.length, 1)
    assert.equal(graphs[0]!.args.pipeline, "tutorial5")
    assert.match(String(graphs[0]!.args.dot), /"Normalize\.transform" -> "KMeans\.fitPredict"/)
    const resources = decodeRecords(readFileSync(join(dir, summary.databases[1]))).events
    assert.ok(resources.some((e) => e.name === "Resource Usage"))
    const html = readFileSync(join(dir, "r.html"), "utf8")
    assert.match(html, /tessera demo/)
    assert.match(html, /<h2>Pipeline stages<\/h2><div class="dag"><svg/)
  })

  it("makes the folders --profile and --report name", () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-demo-test-"))
    const out = execFileSync(process.execPath, [main, "demo", "--samples", "2000", "--chunk-rows", "500", "--workers", "2", "--profile", "runs/a/t", "--no-sample", "--report", "html/r.html", "--json"], {
      cwd: dir,
      encoding: "utf8"
    })
    const summary = JSON.parse(out.trim().split("\n").at(-1)!)
    assert.equal(summary.databases.length, 2)
    for (const f of summary.databases) {
      assert.match(f, /^runs\/a\/t-/)
      assert.ok(existsSync(join(dir, f)), f)
    }
    assert.match(readFileSync(join(dir, "html", "r.html"), "utf8"), /tessera demo/)
    // a file where the folder should be: the database's typed error, naming the path
    writeFileSync(join(dir, "blocker"), "")
    const r = spawnSync(process.execPath, [main, "demo", "--samples", "2000", "--profile", "blocker/t", "--no-sample"], { cwd: dir, encoding: "utf8" })
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /blocker\/t-TracePlugin-.*ENOTDIR.*\(OpenFailed\)/)
  })

  it("--no-sample leaves the statistical profiler out; analyze -a profile reads its database, filtered by function", () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-demo-test-"))
    const run = (args: ReadonlyArray<string>) => execFileSync(process.execPath, [main, ...args], { cwd: dir, encoding: "utf8" })
    const without = JSON.parse(run(["demo", "--samples", "3000", "--chunk-rows", "500", "--workers", "2", "--profile", "n", "--no-sample", "--json"]).trim().split("\n").at(-1)!)
    assert.equal(without.databases.length, 2)
    assert.ok(!readdirSync(dir).some((f) => f.includes("StatisticalProfiler")))
    const withSamples = JSON.parse(run(["demo", "--samples", "3000", "--chunk-rows", "500", "--workers", "2", "--profile", "s", "--json"]).trim().split("\n").at(-1)!)
    const samples = withSamples.databases[2] as string
    const all = run(["analyze", "-d", samples, "-a", "profile", "--head", "3"])
    assert.match(all, /=+Profile: top frames=+/)
    assert.match(all, /function +location +self_s +self_pct +total_s +total_pct +samples/)
    const idle = run(["analyze", "-d", samples, "-a", "profile", "--function", "idle", "--head", "50"])
    assert.match(idle, /Profile: top frames of idle/)
  })

  it("rejects a bad option with a usage error naming it (exit 2, one stderr line)", () => {
    const r = spawnSync(process.execPath, [main, "demo", "--workers", "0"], { encoding: "utf8" })
    assert.equal(r.status, 2)
    assert.equal(r.stdout, "")
    assert.match(r.stderr, /^tessera demo: --workers "0": expected an integer of at least 1/)
  })
})

import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { decodeRecordsUnsafe as decodeRecords } from "../../src/trace/TraceFormat.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/twoStages.ts", import.meta.url))
const host = hostname()

const dirs: Array<string> = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "tessera-run-test-"))
  dirs.push(d)
  return d
}

const tessera = (args: ReadonlyArray<string>, cwd: string) =>
  spawnSync(process.execPath, [main, ...args], { cwd, encoding: "utf8", env: { ...process.env, TESSERA_PROGRESS: "0" } })

describe("tessera run", () => {
  it("writes both databases named as DASF names them, with one Pipeline Graph event, and the report with the stage DAG", () => {
    const dir = tempDir()
    const r = tessera(["run", fixture, "--workers", "2", "--profile", "u", "--report", "r.html"], dir)
    assert.equal(r.status, 0, r.stderr)
    const out = r.stdout
    const lines = out.split("\n")
    // the log (registration lines, INFO lines) on stderr; stdout has the results only
    const log = r.stderr.split("\n")
    assert.equal(log[0], "Registered worker plugin: u-TracePlugin")
    assert.equal(log[1], "Registered resource plugin: u-ResourceMonitor")
    assert.equal(log[2], "Registered sampling profiler: u-StatisticalProfiler")
    assert.ok(log.some((l) => /INFO - Pipeline run successfully$/.test(l)), r.stderr)
    assert.doesNotMatch(out, /Registered|INFO/)
    assert.ok(lines.includes(`trace database: u-TracePlugin-${host}.msgpack`), out)
    assert.ok(lines.includes(`trace database: u-ResourceMonitor-${host}.msgpack`), out)
    assert.match(out, /report: r\.html \(\d+\.\d MiB\)/)
    assert.ok(lines.includes(`trace database: u-StatisticalProfiler-${host}.msgpack`), out)
    assert.deepEqual(readdirSync(dir).sort(), [`u-ResourceMonitor-${host}.msgpack`, `u-TracePlugin-${host}.msgpack`, `u-StatisticalProfiler-${host}.msgpack`, "r.html"].sort())

    const trace = decodeRecords(readFileSync(join(dir, `u-TracePlugin-${host}.msgpack`)))
    assert.equal(trace.droppedBytes, 0)
    const graphs = trace.events.filter((e) => e.name === "Pipeline Graph")
    assert.equal(graphs.length, 1)
    const g = graphs[0]!
    assert.equal(g.phase, "I") // an instant event, which DASF's reader accepts (phase "M" in Tessera 0.1 files)
    assert.equal(g.process_id, host)
    assert.equal(g.thread_id, "main")
    assert.equal(g.args.pipeline, "twostages")
    assert.match(String(g.args.dot), /"Normalize\.transform" -> "Persist\.scaled" \[label="X"\]/)
    // 3 blob chunks, then the Normalize and Persist tasks
    const computes = trace.events.filter((e) => e.name === "Compute")
    assert.equal(computes.filter((e) => e.args.name === "make_blobs_X").length, 3)
    assert.ok(computes.length > 3)
    const resources = decodeRecords(readFileSync(join(dir, `u-ResourceMonitor-${host}.msgpack`))).events
    assert.ok(resources.length >= 2 && resources.every((e) => e.name === "Resource Usage"))

    const html = readFileSync(join(dir, "r.html"), "utf8")
    assert.match(html, /tessera run: twostages/)
    const dag = /<h2>Pipeline stages<\/h2><div class="dag">([\s\S]*?)<\/div><\/section>/.exec(html)
    assert.ok(dag, "the report has the stage DAG")
    for (const stage of ["Normalize.transform", "Persist.scaled"]) assert.ok(dag![1]!.includes(`>${stage}</text>`), stage)
  })

  it("with --report only, writes the report and leaves no database behind", () => {
    const dir = tempDir()
    const r = tessera(["run", fixture, "--workers", "1", "--report", "only.html"], dir)
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(readdirSync(dir), ["only.html"])
    assert.doesNotMatch(r.stdout, /trace database:/)
    assert.match(readFileSync(join(dir, "only.html"), "utf8"), /<h2>Pipeline stages<\/h2>/)
  })

  it("without --profile or --report, writes nothing and prints no registration line", () => {
    const dir = tempDir()
    const r = tessera(["run", fixture, "--workers", "1"], dir)
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(readdirSync(dir), [])
    assert.doesNotMatch(r.stdout, /Registered/)
    assert.match(r.stdout, /pipeline twostages: 2 stages in/)
  })

  it("a report that cannot be written fails with a message naming the file, after the databases were written", () => {
    const dir = tempDir()
    // a missing folder is made (Demo.test.ts); a file where the folder should be is not
    writeFileSync(join(dir, "blocker"), "")
    const r = tessera(["run", fixture, "--workers", "1", "--profile", "x", "--report", "blocker/r.html"], dir)
    assert.notEqual(r.status, 0)
    assert.match(r.stdout + r.stderr, /--report blocker\/r\.html: .*(EEXIST|ENOTDIR)/)
    assert.deepEqual(readdirSync(dir).sort(), ["blocker", `x-ResourceMonitor-${host}.msgpack`, `x-StatisticalProfiler-${host}.msgpack`, `x-TracePlugin-${host}.msgpack`])
  })

  it("rejects a bad option with a message naming it", () => {
    const r = spawnSync(process.execPath, [main, "run", fixture, "--workers", "0"], { encoding: "utf8" })
    assert.notEqual(r.status, 0)
    assert.equal(r.status, 2)
    assert.match(r.stderr, /^tessera run: --workers "0": expected an integer of at least 1/)
  })
})

/**
 * `tessera diagnose` and `Diagnose`: the demo (at its default and at larger chunks) gets
 * no high-severity finding; DASF's own traces (test/fixtures/dasf-small) are diagnosed
 * with findings from the fixed vocabulary, ordered by saving, with evidence inside the
 * run; the `--json` schema; thresholds change verdicts and bad ones are typed errors
 * naming what is wrong; the command's exit codes.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { after, before, describe, it } from "node:test"
import * as ChunkedArray from "../../src/dsl/ChunkedArray.ts"
import {
  DiagnoseError,
  defaultThresholds,
  diagnoseFilesPromise,
  diagnoseTables,
  parseThresholds,
  ruleIds,
  thresholdsOf,
  toJson,
  toText
} from "../../src/analysis/Diagnose.ts"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"
import { dataset, even, K } from "../../examples/faults/common.ts"
import { closePool, runAndDiagnose, sharedPool, show } from "./gallery.ts"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as fc from "fast-check"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Executor from "../../src/engine/Executor.ts"
import { chain, perChunk } from "../../examples/faults/common.ts"
import { toBytes, traceArb } from "../../src/testing/index.ts"

const run = promisify(execFile)
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = (f: string) => fileURLToPath(new URL(`../fixtures/dasf-small/${f}`, import.meta.url))
const dasf = [fixture("small-TracePlugin.msgpack"), fixture("small-ResourceMonitor.msgpack")]

describe("issue 35: diagnose", { timeout: 180_000 }, () => {
  before(async () => {
    await sharedPool().runPromise(ChunkedArray.compute(dataset("warm", even(32, 10), 2, K.fillAndWork, [0.01])))
  })
  after(closePool)

  for (const chunkRows of [5_000, 20_000]) {
    // the default 5,000-row chunks' SOM tasks (175-285 µs against 330-830 µs of hand-over
    // under CI's load) are a medium tasks-too-small: its saving counts the median
    // compute's hand-overs, not the stalls a loaded machine adds (docs/diagnosis.md)
    it(`issue 35: the demo at ${chunkRows}-row chunks gets no high-severity finding`, async () => {
      const run = () => runAndDiagnose(`demo-${chunkRows}`, () => Tutorial5.make({ chunkRows, log: () => {} }).pipeline)
      let d = await run()
      // once more on a loaded machine: the demo's hand-overs grow with the machine's load,
      // and its tiny SOM tasks' share with them (docs/diagnosis.md, the gallery)
      const firstTry = show(d)
      if (!d.clean) {
        console.log(`demo at ${chunkRows}-row chunks: run again; the first run's findings:\n${firstTry}`)
        d = await run()
      }
      assert.ok(d.tasks > 100, "the demo ran")
      assert.ok(d.clean, `${show(d)}\n(first run:\n${firstTry})`)
      assert.ok(toText(d).includes("clean run") || d.findings.length === 0, toText(d))
    })
  }

  it("issue 35: DASF's own traces: findings from the vocabulary, by saving, evidence inside the run", async () => {
    const d = await diagnoseFilesPromise(dasf)
    assert.equal(d.tasks, 409)
    assert.ok(d.findings.length > 0)
    for (const f of d.findings) {
      assert.ok((ruleIds as ReadonlyArray<string>).includes(f.rule), f.rule)
      assert.ok(["high", "medium", "low"].includes(f.severity))
      assert.ok(f.saving.seconds >= 0 && f.saving.seconds <= d.wall + 1e-9)
      assert.ok(Math.abs(f.saving.share - f.saving.seconds / d.wall) < 1e-9)
      assert.ok(f.evidence.start >= -1e-6 && f.evidence.end <= d.wall + 1e-6 && f.evidence.start <= f.evidence.end, JSON.stringify(f.evidence))
      assert.ok(f.evidence.keys.length <= 20)
    }
    for (let i = 1; i < d.findings.length; i++) assert.ok(d.findings[i - 1]!.saving.seconds >= d.findings[i]!.saving.seconds)
    // Dask's 5 ms sum tasks against ~10 ms of hand-over: the fixture's top finding
    assert.equal(d.findings[0]!.rule, "tasks-too-small", show(d))
    assert.match(d.findings[0]!.message, /200 sum tasks take/)
  })

  it("issue 35: the JSON form has the documented fields", async () => {
    const j = JSON.parse(JSON.stringify(toJson(await diagnoseFilesPromise(dasf)))) as Record<string, unknown>
    assert.deepEqual(Object.keys(j).sort(), ["clean", "criticalPath", "findings", "runStart", "sampled", "tasks", "version", "wall", "workers"].sort())
    assert.equal(j.version, 1)
    const f = (j.findings as Array<Record<string, unknown>>)[0]!
    assert.deepEqual(Object.keys(f).sort(), ["assumptions", "evidence", "fix", "message", "rule", "saving", "severity"])
    assert.deepEqual(Object.keys(f.saving as object).sort(), ["seconds", "share"])
    assert.ok(Array.isArray((f.evidence as { keys: unknown }).keys))
  })

  it("issue 35: a threshold changes the verdict; bad thresholds are typed errors naming them", async () => {
    const tables = await loadPromise(dasf)
    assert.ok(diagnoseTables(tables).findings.some((f) => f.rule === "tasks-too-small"))
    assert.ok(!diagnoseTables(tables, { thresholds: { smallMinTasks: 1_000 } }).findings.some((f) => f.rule === "tasks-too-small"))
    // every finding saves less than a quarter under a higher bar for "high"
    const lenient = diagnoseTables(tables, { thresholds: { severity: { high: 0.99, medium: 0.05 } } })
    assert.ok(lenient.clean)
    const bad = (f: () => unknown, what: string, message: RegExp) => {
      assert.throws(f, (e: unknown) => e instanceof DiagnoseError && e.what === what && message.test(e.message) && e.usage)
    }
    bad(() => thresholdsOf({ nope: 1 } as never), "nope", /unknown threshold nope/)
    bad(() => thresholdsOf({ stragglerFactor: -1 }), "stragglerFactor", /at least 0, got -1/)
    bad(() => thresholdsOf({ stragglerFactor: Number.NaN }), "stragglerFactor", /finite/)
    bad(() => thresholdsOf({ severity: { high: "x" } } as never), "severity.high", /got x/)
    bad(() => thresholdsOf({ severity: { low: 1 } } as never), "severity.low", /unknown threshold severity.low/)
    bad(() => parseThresholds(["stragglerFactor"]), "stragglerFactor", /expected NAME=NUMBER/)
    bad(() => parseThresholds(["stragglerFactor=abc"]), "stragglerFactor=abc", /expected NAME=NUMBER/)
    bad(() => diagnoseTables(tables, { workers: 0 }), "workers", /at least 1, got 0/)
    assert.deepEqual(parseThresholds(["stragglerFactor=4", "severity.high=0.3"]), { stragglerFactor: 4, severity: { high: 0.3 } })
    assert.equal(thresholdsOf({ severity: { high: 0.3 } }).severity.medium, defaultThresholds.severity.medium)
  })

  it("issue 35: a cluster run whose worker clock is 0.5 s ahead: clock-skew, naming the worker", async () => {
    // two local worker processes, the first's clock shifted (Cluster's test-only option):
    // the offset is measured and applied, and the diagnosis reports it
    const d = await runAndDiagnose("shifted-clock", () => chain("shifted", dataset("shift_X", even(4, 1_000), 2), [perChunk("scaled", K.scale, [2])]), {
      executor: Cluster.layerLocal({ local: 2, clockShift: [0.5, 0] }) as unknown as import("effect").Layer.Layer<Executor.Executor, unknown>
    })
    const f = d.findings.find((x) => x.rule === "clock-skew")
    assert.ok(f !== undefined, show(d))
    // the measured offset, near the 0.5 s shift: within 50 ms (this machine, loaded by two busy loops, measured
    // 516 ms, ±9.50 ms by its own account: the measurement's error is Cluster's, not the rule's)
    // 516 ms, ±9.50 ms by its own account: the measurement's error is Cluster's, not the rule's); the bound
    // grows with the error the message states (round trips under load are longer)
    const m = /^tessera-worker@.*'s clock was ([\d.]+) (s|ms|µs) ahead of the scheduler's \(measured to ±([\d.]+) (s|ms|µs|ns)/.exec(f.message)
    assert.ok(m !== null, f.message)
    const ms = (x: string, unit: string) => Number(x) * ({ s: 1e3, ms: 1, µs: 1e-3, ns: 1e-6 } as Record<string, number>)[unit]!
    assert.ok(Math.abs(ms(m[1]!, m[2]!) - 500) <= 50 + 2 * ms(m[3]!, m[4]!), f.message)
  })

  it("issue 35: databases of several runs, or without a task, are refused, saying so", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-diagnose-runs-"))
    try {
      const [a, b] = fc.sample(traceArb({ minTasks: 5, maxTasks: 5 }), { numRuns: 2, seed: 35 })
      const later = { ...b!, events: b!.events.map((e) => ({ ...e, timestamp: e.timestamp + 3_600 })) }
      writeFileSync(join(dir, "a.msgpack"), toBytes(a!))
      writeFileSync(join(dir, "b.msgpack"), toBytes(later))
      await assert.rejects(diagnoseFilesPromise([join(dir, "a.msgpack"), join(dir, "b.msgpack")]), (e: unknown) =>
        e instanceof DiagnoseError && e.what === "databases" && !e.usage && /hold 2 runs/.test(e.message))
      // an empty database: nothing to diagnose, said so (not "no findings")
      writeFileSync(join(dir, "empty.msgpack"), new Uint8Array(0))
      await assert.rejects(diagnoseFilesPromise([join(dir, "empty.msgpack")]), (e: unknown) =>
        e instanceof DiagnoseError && e.what === "databases" && /hold no task .*empty\.msgpack/.test(e.message))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("issue 35: tessera diagnose --json, and a bad --threshold exits 2 naming it", async () => {
    // the two commands at once (each a process start)
    const [{ stdout }, e] = await Promise.all([
      run(process.execPath, [main, "diagnose", "-d", ...dasf, "--json"], { timeout: 60_000 }),
      run(process.execPath, [main, "diagnose", "-d", ...dasf, "--threshold", "nope=1"], { timeout: 60_000 }).then(
        () => assert.fail("should exit 2"),
        (err: { code: number; stderr: string }) => err
      )
    ])
    const j = JSON.parse(stdout) as { findings: Array<{ rule: string }>; tasks: number }
    assert.equal(j.tasks, 409)
    assert.equal(j.findings[0]!.rule, "tasks-too-small")
    assert.equal(e.code, 2)
    assert.match(e.stderr, /unknown threshold nope/)
  })
})

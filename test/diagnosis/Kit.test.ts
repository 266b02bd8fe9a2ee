/**
 * The test kit (`tessera/testing`) and what it tests: generated traces' ground truth
 * against the naive reference analyses and against the built-in ones (critical path,
 * busy time, bytes moved, function totals); the diagnosis rules never fire on traces
 * generated without their fault and do fire with it; scaling every time by a constant
 * changes no verdict (with the rules' absolute floors at 0); and the documented
 * ten-line example of a user's own analysis.
 *
 * @since 0.1.0
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { criticalPathSteps } from "../../src/analysis/CriticalPath.ts"
import { diagnoseTables } from "../../src/analysis/Diagnose.ts"
import { perFunctionBottleneck } from "../../src/analysis/Bottleneck.ts"
import { Reference, scaleTimes, tablesOf, traceArb } from "../../src/testing/index.ts"

const close = (a: number, b: number, eps = 1e-6) => Math.abs(a - b) <= eps * Math.max(1, Math.abs(a), Math.abs(b))
const runs = { numRuns: 20 }

describe("issue 35: the test kit", () => {
  it("issue 35: the reference analyses agree with the generator's ground truth, in both formats", () => {
    fc.assert(fc.property(traceArb({ format: "dasf" }), traceArb({ format: "tessera" }), (dasf, tessera) => {
      for (const t of [dasf, tessera]) {
        assert.ok(close(Reference.criticalPathLength(t.events), t.truth.criticalPath))
        const busy = Reference.busyTime(t.events)
        assert.deepEqual(Object.keys(busy).sort(), Object.keys(t.truth.busy).sort())
        for (const [w, b] of Object.entries(t.truth.busy)) assert.ok(close(busy[w]!, b))
        assert.ok(close(Reference.wallTime(t.events), t.truth.wall))
      }
      assert.ok(close(Reference.bytesMoved(tessera.events), tessera.truth.bytesMoved))
    }), runs)
  })

  it("issue 35: the built-in analyses agree with the truth: critical path, busy time, bytes moved, function totals", () => {
    fc.assert(fc.property(traceArb({ format: "tessera", maxHosts: 3 }), (t) => {
      const tables = tablesOf(t)
      const path = criticalPathSteps(tables)
      assert.ok(close(path.tasks, t.truth.criticalPath), `${path.tasks} vs ${t.truth.criticalPath}`)
      // the gating path covers the run: from the first start to the last end
      const gating = criticalPathSteps(tables, { by: "end" })
      assert.ok(gating.length <= t.truth.wall + 1e-6 && gating.tasks <= gating.length + 1e-9)
      const bytes = tables.transfers.getChild("bytes")!.toArray() as Float64Array
      assert.ok(close(bytes.reduce((a, b) => a + b, 0), t.truth.bytesMoved))
      const d = diagnoseTables(tables)
      assert.equal(d.tasks, t.tasks.length)
      assert.ok(close(d.wall, t.truth.wall, 1e-5), `${d.wall} vs ${t.truth.wall}`)
      // DASF's function bottleneck (per host, worker and function): its durations per
      // function add up to the reference's totals
      const fb = perFunctionBottleneck(tables)
      const fns = fb.getChild("Function")!.toArray() as Array<string>
      const secs = fb.getChild("Duration (s)")!.toArray() as Float64Array
      const summed: Record<string, number> = {}
      fns.forEach((f, i) => (summed[f] = (summed[f] ?? 0) + secs[i]!))
      const totals = Reference.functionTotals(t.events)
      assert.deepEqual(Object.keys(summed).sort(), Object.keys(totals).sort())
      for (const [f, x] of Object.entries(totals)) assert.ok(close(summed[f]!, x.seconds), f)
    }), runs)
  })

  it("issue 35: straggler, data-skew, clock-skew and memory-pressure never fire on traces generated without their fault", () => {
    fc.assert(fc.property(fc.constantFrom("dasf", "tessera") as fc.Arbitrary<"dasf" | "tessera">, fc.integer({ min: 10, max: 40 }), fc.boolean(), (format, n, resources) =>
      fc.assert(fc.property(traceArb({ format, minTasks: n, maxTasks: n, maxHosts: 3, resources }), (t) => {
        const rules = diagnoseTables(tablesOf(t)).findings.map((f) => f.rule)
        for (const r of ["straggler", "data-skew", "clock-skew", "recomputation", "memory-growth", "memory-pressure"]) assert.ok(!rules.includes(r as never), `${r} in ${rules}`)
      }), { numRuns: 4 })), { numRuns: 8 })
  })

  it("issue 35: a host's memory at 97% of its total is memory-pressure, naming the host and the peak; DASF's traces (no host memory) never get it", () => {
    fc.assert(fc.property(traceArb({ format: "tessera", faults: ["memory-pressure"], maxHosts: 3 }), (t) => {
      const truth = t.truth.memoryPressure!
      const tables = tablesOf(t)
      const found = diagnoseTables(tables).findings.filter((x) => x.rule === "memory-pressure")
      assert.equal(found.length, 1, "one host under pressure, one finding")
      const f = found[0]!
      assert.equal(f.evidence.host, truth.host)
      assert.equal(f.severity, "high") // 97% >= memoryPressureHigh (95%)
      assert.equal(f.saving.seconds, 0)
      assert.match(f.message, new RegExp(`^host ${truth.host}'s memory in use peaked at ${(truth.peak / 2 ** 30).toFixed(1)} GiB of 16\\.0 GiB \\(97%\\)`))
      assert.ok(f.evidence.start <= f.evidence.end && f.evidence.end <= t.truth.wall + 1e-6)
      // the evidence span is the pressured middle fifth (samples every wall/10 or 50 ms)
      assert.ok(f.evidence.start >= 0.4 * t.truth.wall - 1e-6 && f.evidence.end <= 0.6 * t.truth.wall + 1e-6, JSON.stringify(f.evidence))
      // the thresholds: above the peak, nothing; a higher bar for high, medium
      assert.ok(!diagnoseTables(tables, { thresholds: { memoryPressure: 0.98 } }).findings.some((x) => x.rule === "memory-pressure"))
      assert.equal(diagnoseTables(tables, { thresholds: { memoryPressureHigh: 0.99 } }).findings.find((x) => x.rule === "memory-pressure")?.severity, "medium")
    }), runs)
    fc.assert(fc.property(traceArb({ format: "dasf", faults: ["memory-pressure"], resources: true }), (t) => {
      assert.equal(t.truth.memoryPressure, undefined)
      assert.ok(!diagnoseTables(tablesOf(t)).findings.some((x) => x.rule === "memory-pressure"))
    }), runs)
  })

  it("issue 35: a seeded straggler, skew or shifted clock is found, naming the seeded task", () => {
    fc.assert(fc.property(traceArb({ format: "tessera", faults: ["straggler"] }), (t) => {
      const f = diagnoseTables(tablesOf(t)).findings.find((x) => x.rule === "straggler")
      assert.ok(f !== undefined, "a straggler finding")
      assert.ok(f.evidence.keys.includes(t.truth.faultKeys.straggler!))
    }), runs)
    fc.assert(fc.property(traceArb({ format: "dasf", faults: ["skew"] }), (t) => {
      const f = diagnoseTables(tablesOf(t)).findings.find((x) => x.rule === "data-skew")
      assert.ok(f !== undefined, "a data-skew finding")
      assert.ok(f.evidence.keys.includes(t.truth.faultKeys.skew!))
    }), runs)
    fc.assert(fc.property(traceArb({ format: "tessera", faults: ["clock-skew"] }), (t) => {
      assert.ok(diagnoseTables(tablesOf(t)).findings.some((x) => x.rule === "clock-skew"))
    }), runs)
    // DASF's times are uncorrected: found where a result went from the fast host to the other
    fc.assert(fc.property(traceArb({ format: "dasf", faults: ["clock-skew"] }), (t) => {
      const crosses = t.tasks.some((x) => x.host === "host0" && x.deps.some((d) => t.tasks[d]!.host === "host1"))
      assert.equal(diagnoseTables(tablesOf(t)).findings.some((x) => x.rule === "clock-skew"), crosses)
    }), runs)
  })

  it("issue 35: scaling every time by a constant changes no verdict (absolute floors at 0)", () => {
    const floors = { minSeconds: 0, fewTasksMinSeconds: 0, blockedMinSeconds: 0, clockOffset: 0, gpuGap: 0, warmupSeconds: 0 }
    const verdict = (t: Parameters<typeof tablesOf>[0]) =>
      diagnoseTables(tablesOf(t), { thresholds: floors }).findings.map((f) => `${f.rule}:${f.severity}`).sort()
    fc.assert(fc.property(
      traceArb({ format: "tessera", faults: [] }),
      fc.subarray(["straggler", "skew", "clock-skew", "memory-pressure"] as const),
      fc.constantFrom(2, 10),
      (_, faults, k) =>
        fc.assert(fc.property(traceArb({ format: "tessera", faults }), (t) => {
          assert.deepEqual(verdict(scaleTimes(t, k)), verdict(t))
        }), { numRuns: 3 })
    ), { numRuns: 15 })
  })

  it("issue 35: a user's own analysis, property-tested in ten lines (docs/diagnosis.md)", () => {
    // the analysis under test: how busy the busiest worker was, from the loaded tables
    const busiest = (tables: ReturnType<typeof tablesOf>): number => {
      const w = tables.tasks.getChild("worker")!.toArray() as Array<string>
      const d = tables.tasks.getChild("duration")!.toArray() as Float64Array
      const by = new Map<string, number>()
      w.forEach((x, i) => by.set(x, (by.get(x) ?? 0) + d[i]!))
      return Math.max(0, ...by.values())
    }
    // the ten lines
    fc.assert(fc.property(traceArb({ maxHosts: 1 }), (t) => {
      const expected = Math.max(0, ...Object.values(t.truth.busy))
      assert.ok(Math.abs(busiest(tablesOf(t)) - expected) < 1e-9)
    }))
  })
})

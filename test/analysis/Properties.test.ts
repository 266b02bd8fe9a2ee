import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import type { Table } from "apache-arrow"
import * as A from "../../src/analysis/Analysis.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

interface Task {
  readonly key: string
  readonly fn: string
  readonly host: string
  readonly worker: string
  readonly end: number
  readonly duration: number
  readonly size: number
  readonly deps: ReadonlyArray<string>
}
interface Sample {
  readonly host: string
  readonly t: number
  readonly gpu: number | undefined
}

// Times on a 1/8 s grid so that sample instants often coincide with task bounds.
const grid = fc.integer({ min: 0, max: 80 }).map((x) => 100 + x / 8)
const arbTrace = fc.record({
  tasks: fc.array(
    fc.record({
      fn: fc.constantFrom("load", "sum", "finalize"),
      host: fc.constantFrom("a", "b"),
      w: fc.integer({ min: 0, max: 2 }),
      end: grid,
      duration: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 24 }).map((x) => x / 8)),
      size: fc.integer({ min: 0, max: 1000 }),
      deps: fc.array(fc.nat(), { maxLength: 3 })
    }),
    { maxLength: 40 }
  ),
  samples: fc.array(
    fc.record({ host: fc.constantFrom("a", "b", "c"), t: grid, gpu: fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }) }),
    { maxLength: 20 }
  ),
  shuffle: fc.nat()
}).map(({ samples, shuffle, tasks }) => {
  // dependencies point to EARLIER tasks only, so the graph is a DAG
  const ts: Array<Task> = tasks.map((t, i) => ({
    key: `('${t.fn}-${i.toString(16).padStart(8, "0")}', ${i})`,
    fn: t.fn,
    host: t.host,
    worker: `worker-${t.host}-${t.w}`,
    end: t.end,
    duration: t.duration,
    size: t.size,
    deps: i === 0 ? [] : [...new Set(t.deps.map((d) => d % i))].map((d) => `('${tasks[d].fn}-${d.toString(16).padStart(8, "0")}', ${d})`)
  }))
  return { tasks: ts, samples: samples as Array<Sample>, shuffle }
})

const toEvents = (tasks: ReadonlyArray<Task>, samples: ReadonlyArray<Sample>, shuffle: number): Array<TraceEvent> => {
  const evs: Array<TraceEvent> = [
    ...tasks.map((t): TraceEvent => ({
      name: "Compute",
      timestamp: t.end,
      phase: "X",
      process_id: t.host,
      thread_id: t.worker,
      args: { key: t.key, name: t.fn, state: "memory", size: t.size, dependencies: [...t.deps], dependents: [] },
      duration: t.duration
    })),
    ...samples.map((s): TraceEvent => ({
      name: "Resource Usage",
      timestamp: s.t,
      phase: "I",
      scope: "g",
      process_id: s.host,
      thread_id: null,
      args: { cpu: 1, ...(s.gpu !== undefined ? { gpu_utilization: s.gpu, gpu_memory_used: s.gpu * 1e7 } : {}) }
    }))
  ]
  // not chronological: rotate by a random amount
  const k = evs.length === 0 ? 0 : shuffle % evs.length
  return [...evs.slice(k), ...evs.slice(0, k)]
}

const tablesOf = (tasks: ReadonlyArray<Task>, samples: ReadonlyArray<Sample>, shuffle: number) =>
  A.loadBytesUnsafe([{ file: "random.msgpack", bytes: encodeRecords(toEvents(tasks, samples, shuffle)) }])

const rowsOf = (t: Table): Array<Record<string, unknown>> => t.toArray().map((r) => r.toJSON() as Record<string, unknown>)
const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))

describe("Analysis properties", () => {
  it("per-worker percentages sum to 100 in both bottleneck tables", () => {
    fc.assert(
      fc.property(arbTrace, ({ samples, shuffle, tasks }) => {
        const t = tablesOf(tasks, samples, shuffle)
        for (const table of [A.perFunctionBottleneck(t), A.perTaskBottleneck(t)]) {
          const sums = new Map<string, number>()
          for (const r of rowsOf(table)) {
            const k = `${r.Host}|${r.GPU}`
            const p = r["Percentage of total time (%)"]
            if (p !== null) sums.set(k, (sums.get(k) ?? 0) + (p as number))
          }
          for (const [k, s] of sums) assert.ok(close(s, 100), `${k}: ${s}`)
          // a worker has null percentages only when all its tasks took zero time
          for (const r of rowsOf(table)) {
            if (r["Percentage of total time (%)"] === null) {
              const total = tasks.filter((x) => x.host === r.Host && x.worker.endsWith(`-${r.GPU}`))
                .reduce((a, x) => a + x.duration, 0)
              assert.equal(total, 0)
            }
          }
        }
      }),
      { numRuns: 100 }
    )
  })

  it("conserves the total task duration in every duration table", () => {
    fc.assert(
      fc.property(arbTrace, ({ samples, shuffle, tasks }) => {
        const t = tablesOf(tasks, samples, shuffle)
        const total = tasks.reduce((a, x) => a + x.duration, 0)
        const sum = (table: Table, col: string) => rowsOf(table).reduce((a, r) => a + (r[col] as number), 0)
        assert.ok(close(sum(A.perFunctionBottleneck(t), "Duration (s)"), total))
        assert.ok(close(sum(A.perTaskBottleneck(t), "Duration (s)"), total))
        assert.ok(close(sum(A.perFunctionSummary(t), "Total (s)"), total))
        assert.ok(close(sum(A.workerUtilization(t), "Busy (s)"), total))
        assert.equal(sum(A.perFunctionSummary(t), "Count"), tasks.length)
      }),
      { numRuns: 100 }
    )
  })

  it("attributes every resource sample to exactly the tasks running at its instant on its host", () => {
    fc.assert(
      fc.property(arbTrace, ({ samples, shuffle, tasks }) => {
        const t = tablesOf(tasks, samples, shuffle)
        const a = A.attributeSamples(t)
        const taskKeys = t.tasks.getChild("key")!.toArray() as Array<string>
        const sampleTimes = t.resources.getChild("timestamp")!.toArray() as Float64Array
        const sampleHosts = t.resources.getChild("host")!.toArray() as Array<string>
        const got = new Set<string>()
        for (let j = 0; j < a.sample.length; j++) {
          got.add(`${sampleHosts[a.sample[j]]}@${sampleTimes[a.sample[j]]}#${a.sample[j]}:${taskKeys[a.task[j]]}`)
        }
        const want = new Set<string>()
        for (let s = 0; s < sampleTimes.length; s++) {
          for (const x of tasks) {
            if (x.host === sampleHosts[s] && x.end - x.duration <= sampleTimes[s] && sampleTimes[s] <= x.end) {
              want.add(`${sampleHosts[s]}@${sampleTimes[s]}#${s}:${x.key}`)
            }
          }
        }
        assert.deepStrictEqual([...got].sort(), [...want].sort())
        assert.equal(a.sample.length, want.size)
      }),
      { numRuns: 100 }
    )
  })

  it("finds a critical path whose length is the longest path in the dependency graph", () => {
    fc.assert(
      fc.property(arbTrace, ({ samples, shuffle, tasks }) => {
        const t = tablesOf(tasks, samples, shuffle)
        const byKey = new Map(tasks.map((x) => [x.key, x]))
        const memo = new Map<string, number>()
        const longest = (k: string): number => {
          const m = memo.get(k)
          if (m !== undefined) return m
          const x = byKey.get(k)!
          const v = x.duration + Math.max(0, ...x.deps.map(longest))
          memo.set(k, v)
          return v
        }
        const want = Math.max(0, ...tasks.map((x) => longest(x.key)))
        const { length, rows } = A.criticalPathRows(t)
        assert.ok(close(length, want), `${length} != ${want}`)
        // the rows form a dependency chain whose durations add up to the length
        const keys = t.tasks.getChild("key")!.toArray() as Array<string>
        const chain = rows.map((r) => byKey.get(keys[r])!)
        for (let i = 1; i < chain.length; i++) assert.ok(chain[i].deps.includes(chain[i - 1].key))
        assert.ok(close(chain.reduce((s, x) => s + x.duration, 0), length))
      }),
      { numRuns: 100 }
    )
  })

  it("gives the same analyses whatever the order of the records", () => {
    fc.assert(
      fc.property(arbTrace, fc.nat(), ({ samples, shuffle, tasks }, other) => {
        const a = tablesOf(tasks, samples, shuffle)
        const b = tablesOf(tasks, samples, other)
        for (const f of [A.perFunctionBottleneck, A.perTaskBottleneck, A.perWorkerTaskBalance, A.perFunctionSummary]) {
          assert.deepStrictEqual(rowsOf(f(a)), rowsOf(f(b)))
        }
      }),
      { numRuns: 50 }
    )
  })

  it("handles an empty trace without crashing", () => {
    const t = tablesOf([], [], 0)
    for (const a of A.analyses) assert.equal(a.run(t).numRows, 0)
  })
})

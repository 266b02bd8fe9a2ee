/**
 * How tick-granular is a task's `cpu_time`? Runs busy-wait tasks of known lengths (the
 * `slow` kernel of test/profiler/fixtures) on the sync executor and on one worker thread,
 * and prints, per length: the share of tasks whose thread CPU time reads 0, the largest
 * cpu_time / duration, and Σ cpu_time / Σ duration (1.0 = every CPU second accounted).
 * The figures behind docs/profiler.md "cpu_time: what it measures, and its granularity".
 *
 * Usage: node bench/profiler/cputime.ts [--json]   (about 15 s)
 *
 * @since 0.1.0
 */
import * as Engine from "../../src/engine/Engine.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

const slow = new URL("../../test/profiler/fixtures/slow.ts", import.meta.url).href
const rows = []
for (const [ms, n] of [[0.05, 4000], [0.2, 2000], [1, 600], [3, 200], [10, 60], [30, 20]] as const) {
  const row: Record<string, string | number> = { "task ms": ms, tasks: n }
  for (const workers of [0, 1]) {
    const exec = workers === 0 ? "sync" : "worker"
    const g = TaskGraph.makeUnsafe(Array.from({ length: n }, (_, i) => ({ key: `s-${i}`, kernel: { module: slow, name: "slow" }, args: [i, ms] })))
    const recs: Array<TaskRecord> = []
    await Engine.computePromise(g, { workers, callbacks: [{ task: (r) => void recs.push(r) }] })
    const dur = (r: TaskRecord) => r.phases.transfer[1] - r.phases.gather[0]
    const sumDur = recs.reduce((s, r) => s + dur(r), 0)
    const sumCpu = recs.reduce((s, r) => s + r.cpuTime, 0)
    row[`${exec}: cpu_time = 0`] = `${((100 * recs.filter((r) => r.cpuTime === 0).length) / n).toFixed(0)}%`
    row[`${exec}: max cpu/dur`] = Math.max(...recs.map((r) => r.cpuTime / dur(r))).toFixed(1)
    row[`${exec}: Σcpu/Σdur`] = (sumCpu / sumDur).toFixed(2)
  }
  rows.push(row)
}
if (process.argv.includes("--json")) console.log(JSON.stringify(rows))
else console.table(rows)

/**
 * Scheduler throughput with tinybench: no-op fan-out of 10,000 and 100,000 tasks and a
 * 65,536-leaf binary tree reduction, on a 2-worker pool and on the in-process sync
 * executor (its time per task is the scheduler overhead, see docs/engine.md). The
 * baseline in the same run evaluates the same graph with no scheduler at all: one loop
 * over a precomputed topological order that resolves arguments from a results array and
 * calls the no-op kernel — the floor any in-process scheduler sits on.
 *
 * Usage: node bench/engine/scheduler.ts [--json] [--workers N]
 *
 * @since 0.1.0
 */
import { ManagedRuntime } from "effect"
import { Bench } from "tinybench"
import * as BenchGraphs from "./BenchGraphs.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"

const argv = process.argv.slice(2)
const wi = argv.indexOf("--workers")
const workers = wi >= 0 ? Number(argv[wi + 1]) : 2

const graphs = [
  ["fan-out 10,000", BenchGraphs.fanout(10_000)],
  ["fan-out 100,000", BenchGraphs.fanout(100_000)],
  ["tree 65,536 leaves", BenchGraphs.tree(131_071)]
] as const

let sink = 0
const pool = ManagedRuntime.make(Executor.layerWorkers({ workers }))
const sync = ManagedRuntime.make(Executor.layerSync)
const bench = new Bench({ time: 1500, warmupIterations: 2, iterations: 5, throws: true })

for (const [label, g] of graphs) {
  bench.add(`baseline: topological loop (${label})`, () => {
    const results = new Array<unknown>(g.graph.size)
    for (const i of g.graph.order) {
      const plan = g.graph.argPlan[i]
      const args = plan === null || plan === undefined
        ? g.graph.specs[i]!.args
        : plan.map((slot, a) => (typeof slot === "number" ? (slot < 0 ? g.graph.specs[i]!.args[a] : results[slot]) : []))
      results[i] = BenchGraphs.noop.apply(undefined, args as Array<unknown>)
    }
    sink = results.length
  })
  bench.add(`workers=${workers}: ${label}`, () => pool.runPromise(Engine.compute(g.graph, { keys: g.keys })))
  bench.add(`sync: ${label}`, () => sync.runPromise(Engine.compute(g.graph, { keys: g.keys })))
}
await bench.run()
await pool.dispose()
await sync.dispose()
if (sink < 0) console.log(sink)

const rows = bench.tasks.map((t, q) => {
  const g = graphs[Math.floor(q / 3)]![1]
  const r = t.result
  const ms = r.state === "completed" ? r.latency.mean : NaN
  return {
    task: t.name,
    tasks: g.graph.size,
    "mean ms": Number(ms.toFixed(2)),
    "tasks/s": Math.round(g.graph.size / (ms / 1000)),
    "µs/task": Number(((ms * 1000) / g.graph.size).toFixed(3)),
    samples: r.state === "completed" ? r.latency.samplesCount : 0
  }
})
if (argv.includes("--json")) console.log(JSON.stringify(rows, null, 2))
else console.table(rows)

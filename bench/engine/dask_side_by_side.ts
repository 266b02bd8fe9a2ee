/**
 * Tessera's engine vs dask's threaded scheduler on the same no-op graphs, in one run:
 * fan-out of 10,000 and 100,000 tasks and a 65,536-leaf binary tree reduction, 2 workers
 * (plus a 2,000-task chain, which measures per-task latency rather than throughput).
 * dask runs through bench/engine/dask_graphs.py with Debian's python3 (/usr/bin/python3,
 * `apt-get install -y python3-dask`); when dask is not importable its columns say so.
 *
 * Usage: node bench/engine/dask_side_by_side.ts [--json] [--workers N] [--repeats N] [--quick]
 * (--quick: only the 10,000-task fan-out)
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as BenchGraphs from "./BenchGraphs.ts"
import { missingModule, python } from "./python.ts"

const argv = process.argv.slice(2)
const flag = (name: string): boolean => argv.includes(name)
const option = (name: string, dflt: number): number => {
  const i = argv.indexOf(name)
  return i >= 0 ? Number(argv[i + 1]) : dflt
}
const workers = option("--workers", 2)
const repeats = option("--repeats", 5)
const script = fileURLToPath(new URL("./dask_graphs.py", import.meta.url))

interface DaskResult {
  readonly seconds: number
  readonly tasksPerSecond: number
  readonly overheadMicros: number
  readonly dask: string
}

const runDask = (shape: string, n: number, reps: number): DaskResult =>
  JSON.parse(execFileSync(python, [script, shape, String(n), String(workers), String(reps)], { encoding: "utf8" })) as DaskResult

const cases: ReadonlyArray<readonly [BenchGraphs.Shape, number, string]> = flag("--quick")
  ? [["fanout", 10_000, "fan-out 10,000"]]
  : [
    ["fanout", 10_000, "fan-out 10,000"],
    ["fanout", 100_000, "fan-out 100,000"],
    ["tree", 131_071, "tree 65,536 leaves"],
    // latency-bound: one task at a time, so one message round trip per task
    ["chain", 2_000, "chain 2,000"]
  ]

const skip = missingModule("dask", "python3-dask")
if (skip !== null) console.error(`dask: skipped — ${skip}`)

const rows: Array<Record<string, string | number | null>> = []
for (const [shape, n, label] of cases) {
  const t = await BenchGraphs.measure({ graph: shape, tasks: n, workers, repeats })
  // dask is ~90 µs/task: fewer repeats on the big graphs keep the run near a minute.
  const d = skip === null ? runDask(shape, n, n > 20_000 ? 1 : 3) : null
  rows.push({
    graph: label,
    tasks: t.tasks,
    workers,
    "tessera tasks/s": Math.round(t.tasksPerSecond),
    "dask tasks/s": d === null ? null : Math.round(d.tasksPerSecond),
    speedup: d === null ? null : Number((t.tasksPerSecond / d.tasksPerSecond).toFixed(1)),
    "tessera overhead µs/task": Number(t.overheadMicros.toFixed(2)),
    "dask overhead µs/task": d === null ? null : Number(d.overheadMicros.toFixed(2))
  })
}

if (flag("--json")) console.log(JSON.stringify({ workers, dask: skip ?? "ok", rows }, null, 2))
else console.table(rows)

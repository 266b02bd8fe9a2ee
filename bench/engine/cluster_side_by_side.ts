/**
 * Tessera's cluster executor against dask.distributed, in one run, on the same no-op
 * graphs: fan-out of 10,000 tasks and a 4,096-leaf binary tree reduction, on a
 * LocalCluster of 2 worker processes each (dask: `LocalCluster(n_workers=2,
 * processes=True, threads_per_worker=1)`), start-up not timed on either side. dask runs
 * through bench/engine/dask_distributed_graphs.py with Debian's python3
 * (`apt-get install -y python3-distributed`); when it is not importable its columns say so.
 *
 * Usage: node bench/engine/cluster_side_by_side.ts [--json] [--workers N] [--repeats N]
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as BenchGraphs from "./BenchGraphs.ts"
import { missingModule, python } from "./python.ts"

const argv = process.argv.slice(2)
const option = (name: string, dflt: number): number => {
  const i = argv.indexOf(name)
  return i >= 0 ? Number(argv[i + 1]) : dflt
}
const workers = option("--workers", 2)
const repeats = option("--repeats", 3)
const script = fileURLToPath(new URL("./dask_distributed_graphs.py", import.meta.url))

const skip = missingModule("distributed", "python3-distributed")
if (skip !== null) console.error(`dask.distributed: skipped — ${skip}`)

const cases: ReadonlyArray<readonly [BenchGraphs.Shape, number, string]> = [
  ["fanout", 10_000, "fan-out 10,000"],
  ["tree", 8_191, "tree 4,096 leaves"]
]

const rows: Array<Record<string, string | number | null>> = []
for (const [shape, n, label] of cases) {
  const t = await BenchGraphs.measureCluster({ graph: shape, tasks: n, workers, repeats })
  const d = skip === null
    ? JSON.parse(execFileSync(python, [script, shape, String(n), String(workers), String(repeats)], { encoding: "utf8" })) as {
      readonly tasksPerSecond: number
    }
    : null
  rows.push({
    graph: label,
    tasks: t.tasks,
    workers,
    "tessera tasks/s": Math.round(t.tasksPerSecond),
    "dask.distributed tasks/s": d === null ? null : Math.round(d.tasksPerSecond),
    speedup: d === null ? null : Number((t.tasksPerSecond / d.tasksPerSecond).toFixed(1))
  })
}

if (argv.includes("--json")) console.log(JSON.stringify({ workers, distributed: skip ?? "ok", rows }, null, 2))
else console.table(rows)

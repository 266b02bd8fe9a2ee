/**
 * What the per-task resource readings (`peak_memory`, `io_bytes`; docs/engine.md
 * "Per-task resources") add to each profiled task: the readings alone (two
 * `heapBytes()` and one `TaskIo.bytesRead()` per task, as the worker loop makes them)
 * beside the thread CPU reading the loop already made, and the whole profiled cost per
 * no-op task on the in-process executor (records delivered to a no-op hook), so the
 * readings' share of it can be read off. The demo's tasks last ~0.3 ms or more, so the
 * share of a real task is smaller still.
 *
 * Usage: node bench/profiler/taskResources.ts [--json]   (about 10 s)
 *
 * @since 0.1.0
 */
import { Bench } from "tinybench"
import * as EngineClock from "../../src/engine/EngineClock.ts"
import * as Engine from "../../src/engine/Engine.ts"
import { heapBytes } from "../../src/engine/internal/taskMemory.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as TaskIo from "../../src/engine/TaskIo.ts"

const same = new URL("../../test/profiler/fixtures/memory.ts", import.meta.url).href
let sink = 0
const bench = new Bench({ time: 1500 })
bench
  .add("resource readings of one task (2x heapBytes + bytesRead)", () => {
    sink += heapBytes() + heapBytes() + TaskIo.bytesRead()
  })
  .add("thread CPU reading (already made per task)", () => {
    sink += EngineClock.threadCpuSeconds()
  })
await bench.run()

const N = 50_000
const g = TaskGraph.makeUnsafe(Array.from({ length: N }, (_, i) => ({ key: `same-${i}`, kernel: { module: same, name: "same" }, args: [i] })))
const perTask: Array<number> = []
for (let r = 0; r < 5; r++) {
  const t0 = performance.now()
  await Engine.computePromise(g, { workers: 0, callbacks: [{ task: () => void sink++ }] })
  perTask.push(((performance.now() - t0) * 1000) / N)
}
perTask.sort((a, b) => a - b)
const rows = [
  ...bench.tasks.map((t) => {
    const r = t.result
    return { what: t.name, "µs": r.state === "completed" ? Number((r.latency.p50! * 1000).toFixed(3)) : NaN }
  }),
  { what: `profiled no-op task, sync executor (median of 5 x ${N})`, "µs": Number(perTask[2]!.toFixed(3)) }
]
if (process.argv.includes("--json")) console.log(JSON.stringify(rows))
else console.table(rows)
if (sink === -1) console.log(sink)

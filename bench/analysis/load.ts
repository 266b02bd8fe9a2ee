/**
 * Analysis benchmark: load a DASF-format trace database into Arrow tables and run
 * DASF's three analyses, against a baseline measured in the same run: the generic
 * @msgpack/msgpack decode of the same file (records to objects, no tables, no
 * analyses).
 *
 * `node bench/analysis/load.ts [PATH] [--runs N] [--json]`; PATH defaults to
 * `os.tmpdir()/tessera-bench-1M.msgpack`, written by `bench/analysis/generate.ts`.
 * Timed runs (not tinybench: one iteration is seconds long); reports the median wall
 * time, the median main-thread CPU time and the median process CPU time (all threads:
 * the default load decodes on the main thread and worker threads on machines with more than one core,
 * `decodeThreads`). `tessera load, 1 thread` is the same
 * load decoding on the main thread only (`{ threads: 1 }`), for comparison; `DASF analyses'
 * columns` the load `tessera analyze` does for them (a column projection: docs/analysis.md).
 *
 * @since 0.1.0
 */
import { existsSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Decoder } from "@msgpack/msgpack"
import * as A from "../../src/analysis/Analysis.ts"
import { scanFramesUnsafe } from "../../src/trace/TraceFormat.ts"

const argv = process.argv.slice(2)
const json = argv.includes("--json")
const runsAt = argv.indexOf("--runs")
const runs = runsAt >= 0 ? Number(argv[runsAt + 1]) : 3
const path = argv.find((a, i) => !a.startsWith("--") && (i === 0 || argv[i - 1] !== "--runs")) ??
  join(tmpdir(), "tessera-bench-1M.msgpack")
if (!existsSync(path)) {
  console.error(`no trace at ${path}: run  node bench/analysis/generate.ts ${path}`)
  process.exit(1)
}

const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
// main-thread CPU time as well as wall time: on a shared machine wall time includes
// waiting for a core; thread CPU time does not (nor GC helper threads' work)
const threadCpuMs = () => {
  const u = process.threadCpuUsage()
  return (u.user + u.system) / 1000
}
const processCpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const cpu: Record<string, Array<number>> = {}
const pcpu: Record<string, Array<number>> = {}
let current = ""
const time = async (f: () => unknown | Promise<unknown>) => {
  const c = threadCpuMs()
  const pc = processCpuMs()
  const t = performance.now()
  await f()
  const wall = performance.now() - t
  ;(cpu[current] ??= []).push(threadCpuMs() - c)
  ;(pcpu[current] ??= []).push(processCpuMs() - pc)
  return wall
}
const timed = (name: string, f: () => unknown | Promise<unknown>) => {
  current = name
  return time(f)
}

const results: Record<string, Array<number>> = {
  "generic @msgpack/msgpack decode (baseline)": [],
  "tessera load, 1 thread": [],
  "tessera load, DASF analyses' columns (as analyze)": [],
  "tessera load (Arrow tables)": [],
  "function_bottleneck": [],
  "task_bottleneck": [],
  "task_balance": [],
  "load + 3 DASF analyses": []
}
let events = 0
for (let r = 0; r < runs; r++) {
  results["generic @msgpack/msgpack decode (baseline)"].push(
    await timed("generic @msgpack/msgpack decode (baseline)", () => {
      const bytes = new Uint8Array(readFileSync(path))
      const dec = new Decoder()
      const out: Array<unknown> = []
      scanFramesUnsafe(bytes, path, 0, (s, e) => out.push(dec.decode(bytes.subarray(s, e))))
      events = out.length
    })
  )
  results["tessera load, 1 thread"].push(await timed("tessera load, 1 thread", () => A.loadPromise([path], { threads: 1 })))
  const columns = A.columnsOf(A.analyses.filter((a) => (A.dasfAnalyses as ReadonlyArray<string>).includes(a.name)))
  results["tessera load, DASF analyses' columns (as analyze)"].push(
    await timed("tessera load, DASF analyses' columns (as analyze)", () => A.loadPromise([path], columns !== undefined ? { columns } : {}))
  )
  let tables: A.TraceTables | undefined
  const tl = await timed("tessera load (Arrow tables)", async () => {
    tables = await A.loadPromise([path])
  })
  // the first analysis builds (and caches per table) the typed-array task view, as a
  // user's first query would
  const t1 = await timed("function_bottleneck", () => A.perFunctionBottleneck(tables!))
  const t2 = await timed("task_bottleneck", () => A.perTaskBottleneck(tables!))
  const t3 = await timed("task_balance", () => A.perWorkerTaskBalance(tables!))
  for (const c of [cpu, pcpu]) {
    ;(c["load + 3 DASF analyses"] ??= []).push(
      ["tessera load (Arrow tables)", "function_bottleneck", "task_bottleneck", "task_balance"]
        .reduce((s, k) => s + c[k][c[k].length - 1], 0)
    )
  }
  results["tessera load (Arrow tables)"].push(tl)
  results["function_bottleneck"].push(t1)
  results["task_bottleneck"].push(t2)
  results["task_balance"].push(t3)
  results["load + 3 DASF analyses"].push(tl + t1 + t2 + t3)
}

const rows = Object.entries(results).map(([name, xs]) => ({
  name,
  "median wall (ms)": Math.round(median(xs)),
  "median thread CPU (ms)": Math.round(median(cpu[name] ?? [NaN])),
  "median process CPU (ms)": Math.round(median(pcpu[name] ?? [NaN])),
  "events/s": name.includes("decode") || name.startsWith("tessera load") || name.startsWith("load")
    ? Math.round(events / (median(xs) / 1000))
    : undefined
}))
if (json) console.log(JSON.stringify({ file: path, events, runs, rows }))
else {
  console.log(`${events} events in ${path}, median of ${runs} run(s)`)
  console.table(rows)
}

/**
 * Profiler throughput and overhead, each next to a baseline measured in the same run:
 *
 * 1. write: FileDatabase (specialised encoder, batches of 5000, O_APPEND writes) vs the
 *    generic @msgpack/msgpack `encode` per record (+ length header, same batching and
 *    writes), and vs TraceFormat.encodeRecords; events are DASF's own (dasf-small
 *    TracePlugin + ResourceMonitor files, repeated to N events).
 * 2. read: FileDatabase.readPromise (specialised decoder, all events kept in one array)
 *    and FileDatabase.streamBatches (same decoding, each batch dropped after counting:
 *    what a streaming consumer pays) vs TraceFormat.readFilePromise (generic decoder) on
 *    the file just written.
 * 3. overhead: a 100,000-task no-op fan-out (BenchGraphs.fanout) on a 2-worker pool,
 *    unprofiled vs with the Trace + ResourceMonitor layers writing files.
 * 4. dask: the same fan-out under dask.threaded (2 workers), unprofiled vs with
 *    dask.diagnostics Profiler + ResourceProfiler + CacheProfiler, via /usr/bin/python3
 *    (skipped with a message when dask is not importable).
 *
 * Usage: node bench/profiler/throughput.ts [--json] [--events N] [--tasks N] [--quick]
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { encode } from "@msgpack/msgpack"
import { Effect, Layer, ManagedRuntime } from "effect"
import { Bench } from "tinybench"
import * as BenchGraphs from "../engine/BenchGraphs.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import * as TraceFormat from "../../src/trace/TraceFormat.ts"

const argv = process.argv.slice(2)
const opt = (name: string, dflt: number) => {
  const i = argv.indexOf(name)
  return i >= 0 ? Number(argv[i + 1]) : dflt
}
const json = argv.includes("--json")
const quick = argv.includes("--quick")
const N = opt("--events", quick ? 50_000 : 200_000)
const TASKS = opt("--tasks", quick ? 10_000 : 100_000)
const dir = mkdtempSync(join(tmpdir(), "tessera-bench-profiler-"))

const data = new URL("../../test/fixtures/dasf-small/", import.meta.url)
const seed = [
  ...(await FileDatabase.readPromise(new URL("small-TracePlugin.msgpack", data).pathname)).events,
  ...(await FileDatabase.readPromise(new URL("small-ResourceMonitor.msgpack", data).pathname)).events
]
const events: Array<TraceEvent> = []
while (events.length < N) events.push(...seed)
events.length = N

type Row = { group: string; task: string; "events/s": number; "ms (mean)": number; vs_baseline: string }
const rows: Array<Row> = []

// ---------------------------------------------------------------- write / read
let fileNo = 0
const writeFile = () => join(dir, `w-${fileNo++}.msgpack`)
const readTarget = join(dir, "read.msgpack")
{
  const db = new FileDatabase.FileDatabase(readTarget)
  for (const e of events) db.record(e)
  db.close()
}
const header = new Uint8Array(8)
const headerView = new DataView(header.buffer)
const bench = new Bench({ time: 0, iterations: quick ? 3 : 6, warmupIterations: 1, throws: true })
bench
  .add("baseline: generic @msgpack/msgpack encode per record", () => {
    const path = writeFile()
    const fd = openSync(path, "a")
    for (let b = 0; b < N; b += 5000) {
      const parts: Array<Uint8Array> = []
      for (let i = b; i < Math.min(N, b + 5000); i++) {
        const body = encode(events[i])
        headerView.setUint32(4, body.length)
        parts.push(header.slice(), body)
      }
      writeSync(fd, Buffer.concat(parts))
    }
    closeSync(fd)
    rmSync(path)
  })
  .add("TraceFormat.encodeRecords per batch", () => {
    const path = writeFile()
    const fd = openSync(path, "a")
    for (let b = 0; b < N; b += 5000) writeSync(fd, TraceFormat.encodeRecords(events.slice(b, b + 5000)))
    closeSync(fd)
    rmSync(path)
  })
  .add("FileDatabase write (batches of 5000)", () => {
    const path = writeFile()
    const db = new FileDatabase.FileDatabase(path)
    for (let i = 0; i < N; i++) db.record(events[i]!)
    db.close()
    rmSync(path)
  })
  .add("baseline: TraceFormat.readFilePromise (generic decoder)", async () => {
    const t = await TraceFormat.readFilePromise(readTarget)
    if (t.events.length !== N) throw new Error("short read")
  })
  .add("FileDatabase.readPromise (specialised decoder)", async () => {
    const t = await FileDatabase.readPromise(readTarget)
    if (t.events.length !== N) throw new Error("short read")
  })
  .add("FileDatabase.streamBatches (decoded, batches not retained)", async () => {
    let count = 0
    for await (const batch of FileDatabase.streamBatches(readTarget)) count += batch.length
    if (count !== N) throw new Error("short read")
  })
await bench.run()
const mean = (name: string) => {
  const r = bench.tasks.find((t) => t.name === name)!.result
  return r.state === "completed" ? r.latency.mean : NaN
}
const ioRow = (group: string, name: string, baseline: string) => {
  const ms = mean(name)
  rows.push({
    group,
    task: name,
    "events/s": Math.round(N / (ms / 1000)),
    "ms (mean)": Math.round(ms * 10) / 10,
    vs_baseline: name === baseline ? "baseline" : `${(mean(baseline) / ms).toFixed(2)}x faster`
  })
}
const wBase = "baseline: generic @msgpack/msgpack encode per record"
ioRow("write", wBase, wBase)
ioRow("write", "TraceFormat.encodeRecords per batch", wBase)
ioRow("write", "FileDatabase write (batches of 5000)", wBase)
const rBase = "baseline: TraceFormat.readFilePromise (generic decoder)"
ioRow("read", rBase, rBase)
ioRow("read", "FileDatabase.readPromise (specialised decoder)", rBase)
ioRow("read", "FileDatabase.streamBatches (decoded, batches not retained)", rBase)
const bytesPerEvent = statSync(readTarget).size / N

// ---------------------------------------------------------------- overhead on a fan-out
const g = BenchGraphs.fanout(TASKS)
const runtime = ManagedRuntime.make(Executor.layerWorkers({ workers: 2 }))
await runtime.runPromise(Engine.compute(g.graph, { keys: g.keys })) // start workers, warm up
const plain = () => runtime.runPromise(Engine.compute(g.graph, { keys: g.keys }))
let run = 0
const profiled = () => {
  const n = run++
  const layer = Layer.mergeAll(
    Trace.layer({ file: join(dir, `trace-${n}.msgpack`) }),
    ResourceMonitor.layer({ file: join(dir, `resource-${n}.msgpack`) })
  )
  return runtime.runPromise(Engine.compute(g.graph, { keys: g.keys }).pipe(Effect.provide(layer)))
}
const reps = quick ? 3 : 5
const times: { plain: Array<number>; profiled: Array<number> } = { plain: [], profiled: [] }
for (let r = 0; r < reps; r++) {
  // alternate to spread machine noise over both
  let t0 = performance.now()
  await plain()
  times.plain.push(performance.now() - t0)
  t0 = performance.now()
  await profiled()
  times.profiled.push(performance.now() - t0)
}
await runtime.dispose()
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const tracedEvents = (await FileDatabase.readPromise(join(dir, "trace-0.msgpack"))).events.length
const plainMs = median(times.plain)
const profMs = median(times.profiled)
const overhead = [
  { group: "tessera", task: `fan-out ${TASKS} (2 workers), unprofiled`, "ms (median)": Math.round(plainMs), overhead: "baseline" },
  {
    group: "tessera",
    task: `fan-out ${TASKS}, Trace + ResourceMonitor (${tracedEvents} trace events)`,
    "ms (median)": Math.round(profMs),
    overhead: `${(((profMs - plainMs) / plainMs) * 100).toFixed(1)}%`
  }
]

// ---------------------------------------------------------------- dask.diagnostics
let daskNote = ""
const py = spawnSync("/usr/bin/python3", [new URL("./dask_diagnostics.py", import.meta.url).pathname, String(TASKS), "2", String(reps)], {
  encoding: "utf8",
  timeout: 600_000
})
if (py.status === 0) {
  const d = JSON.parse(py.stdout.trim().split("\n").at(-1)!) as { plain_ms: number; profiled_ms: number; version: string }
  overhead.push(
    { group: `dask ${d.version}`, task: `fan-out ${TASKS} (threaded, 2 workers), unprofiled`, "ms (median)": Math.round(d.plain_ms), overhead: "baseline" },
    {
      group: `dask ${d.version}`,
      task: `fan-out ${TASKS}, Profiler + ResourceProfiler + CacheProfiler`,
      "ms (median)": Math.round(d.profiled_ms),
      overhead: `${(((d.profiled_ms - d.plain_ms) / d.plain_ms) * 100).toFixed(1)}%`
    }
  )
} else {
  daskNote = `dask skipped: ${(py.stderr || py.error?.message || "python3 failed").trim().split("\n").at(-1)}`
}
rmSync(dir, { recursive: true, force: true })

if (json) {
  console.log(JSON.stringify({ events: N, bytesPerEvent, io: rows, overhead, daskNote }))
} else {
  console.log(`${N} DASF events (${bytesPerEvent.toFixed(0)} bytes/record)`)
  console.table(rows)
  console.table(overhead)
  if (daskNote !== "") console.log(daskNote)
}

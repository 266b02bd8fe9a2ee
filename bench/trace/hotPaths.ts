/**
 * Thread-CPU time of the trace layer's three hot paths, in process, for comparing two
 * checkouts on a busy machine (CPU time is steadier than wall time under contention):
 *
 * - write: `TraceWriter.RecordEncoder.encode`, 200,000 DASF events in batches of 5000;
 * - read: `FileDatabase.decodeUnsafe` (the event-object reader) over the same records;
 * - columns: `TraceReader.ColumnDecoder.decodeFrames` over a 1M-event trace, one thread.
 *
 * Prints the best and the median of N runs (thread-CPU ms). Baselines are other
 * checkouts of this script, run interleaved with it (see BENCHMARKS.md, issue 14).
 *
 * Usage: node bench/trace/hotPaths.ts [PATH] [--runs N]; PATH defaults to
 * `os.tmpdir()/tessera-bench-1M.msgpack`, written by `bench/analysis/generate.ts`.
 *
 * @since 0.1.0
 */
import { existsSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import * as TraceFormat from "../../src/trace/TraceFormat.ts"
import { ColumnDecoder } from "../../src/trace/TraceReader.ts"
import { RecordEncoder } from "../../src/trace/TraceWriter.ts"

const argv = process.argv.slice(2)
const runsAt = argv.indexOf("--runs")
const runs = runsAt >= 0 ? Number(argv[runsAt + 1]) : 25
const path = argv.find((a, i) => !a.startsWith("--") && (i === 0 || argv[i - 1] !== "--runs")) ??
  join(tmpdir(), "tessera-bench-1M.msgpack")
if (!existsSync(path)) {
  console.error(`no trace at ${path}: run  node bench/analysis/generate.ts ${path}`)
  process.exit(1)
}

const data = new URL("../../test/fixtures/dasf-small/", import.meta.url)
const seed = [
  ...(await FileDatabase.readPromise(new URL("small-TracePlugin.msgpack", data).pathname)).events,
  ...(await FileDatabase.readPromise(new URL("small-ResourceMonitor.msgpack", data).pathname)).events
]
const events: Array<TraceEvent> = []
while (events.length < 200_000) events.push(...seed)
events.length = 200_000
const records = TraceFormat.encodeRecords(events)
const big = new Uint8Array(readFileSync(path))
const bigEnd = TraceFormat.scanFramesUnsafe(big, path, 0, () => undefined)

const cpuMs = () => {
  const u = process.threadCpuUsage()
  return (u.user + u.system) / 1000
}
const measure = (n: number, f: () => void) => {
  const t: Array<number> = []
  for (let r = 0; r < n; r++) {
    const a = cpuMs()
    f()
    t.push(cpuMs() - a)
  }
  t.sort((a, b) => a - b)
  return { "best ms": Math.round(t[0]! * 10) / 10, "median ms": Math.round(t[t.length >> 1]! * 10) / 10 }
}
const enc = new RecordEncoder()
console.table({
  "write 200k (RecordEncoder)": measure(runs, () => {
    for (let i = 0; i < events.length; i += 5000) enc.encode(events, i, Math.min(events.length, i + 5000))
  }),
  "read 200k (event objects)": measure(runs, () => void FileDatabase.decodeUnsafe(records)),
  [`columns ${bigEnd > 0 ? "1M" : "0"} (ColumnDecoder, 1 thread)`]: measure(Math.max(3, Math.round(runs / 4)), () =>
    void new ColumnDecoder().decodeFrames(big, bigEnd, path, 0))
})

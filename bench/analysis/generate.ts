/**
 * Write a DASF-format trace database with realistic shapes for the analysis benchmark:
 * `node bench/analysis/generate.ts [PATH] [--events N] [--hosts H] [--workers W]`
 * (default 1,000,000 events to `os.tmpdir()/tessera-bench-1M.msgpack`).
 *
 * Shapes follow DASF's real traces (test/fixtures/dasf-small): per task one `Compute` (X)
 * event with key `('<fn>-<32 hex>', i, j)`, name, state, size, shape, dtype, type,
 * dependencies (1-3 keys of earlier tasks), dependents [] — then one or two `Managed
 * Memory` (I) events; plus `Resource Usage` every 100 ms per host (with GPU fields on
 * half the hosts). Like DASF's files the records are not chronological: each worker's
 * events are appended in batches of 1000, interleaved. Seeded, deterministic.
 *
 * @since 0.1.0
 */
import { createWriteStream } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const argv = process.argv.slice(2)
const opt = (name: string, dflt: number): number => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 ? Number(argv[i + 1]) : dflt
}
const path = argv.find((a, i) => !a.startsWith("--") && (i === 0 || !argv[i - 1].startsWith("--"))) ??
  join(tmpdir(), "tessera-bench-1M.msgpack")
const target = opt("events", 1_000_000)
const hosts = opt("hosts", 2)
const workersPerHost = opt("workers", 8)

let seed = 42
const rand = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0
  return seed / 0x100000000
}
const hex = () => {
  let s = ""
  for (let i = 0; i < 4; i++) s += ((rand() * 0x100000000) >>> 0).toString(16).padStart(8, "0")
  return s
}
const functions = ["array", "mean_chunk", "truediv", "sum", "sum-partial", "var-partial", "assign", "getitem", "finalize"]
const tokens = functions.map(() => Array.from({ length: 8 }, hex))

const workers = Array.from({ length: hosts * workersPerHost }, (_, w) => ({
  host: `node${Math.floor(w / workersPerHost)}`,
  thread: `worker-node${Math.floor(w / workersPerHost)}-${w % workersPerHost}`,
  clock: 1000 + rand() * 0.01,
  held: 0,
  pending: [] as Array<TraceEvent>
}))

const out = createWriteStream(path)
const write = (events: Array<TraceEvent>) =>
  new Promise<void>((resolve) => (out.write(encodeRecords(events)) ? resolve() : out.once("drain", () => resolve())))

const done: Array<string> = []
let written = 0
let task = 0
const t0 = 1000
let end = t0
while (written < target) {
  const w = workers[task % workers.length]
  const f = task % functions.length
  const token = tokens[f][Math.floor(task / 5000) % 8]
  const key = functions[f] === "finalize" ? `finalize-${token}` : `('${functions[f]}-${token}', ${task}, 0)`
  const deps = done.length === 0 ? [] : Array.from({ length: 1 + Math.floor(rand() * 3) }, () =>
    done[Math.max(0, done.length - 1 - Math.floor(rand() * 64))])
  const duration = 0.0005 + rand() * rand() * 0.01
  w.clock += duration + rand() * 0.0005
  end = Math.max(end, w.clock)
  const size = [80000, 80, 336, 16][f % 4]
  w.pending.push({
    name: "Compute",
    timestamp: w.clock,
    phase: "X",
    process_id: w.host,
    thread_id: w.thread,
    args: {
      key,
      name: functions[f],
      state: "memory",
      size,
      shape: size === 80000 ? [5000, 2] : [1, 10],
      dtype: "float64",
      type: "<class 'numpy.ndarray'>",
      dependencies: deps,
      dependents: []
    },
    duration
  })
  w.held += 1
  w.pending.push({
    name: "Managed Memory",
    timestamp: w.clock,
    phase: "I",
    scope: "g",
    process_id: w.host,
    thread_id: w.thread,
    args: { key, state: "memory", size: w.held * size, tasks: w.held }
  })
  written += 2
  if (rand() < 0.35 && w.held > 1) {
    w.held -= 1
    w.pending.push({
      name: "Managed Memory",
      timestamp: w.clock + 0.0001,
      phase: "I",
      scope: "g",
      process_id: w.host,
      thread_id: w.thread,
      args: { key: deps[0] ?? key, state: "released", size: w.held * size, tasks: w.held }
    })
    written++
  }
  done.push(key)
  if (done.length > 4096) done.splice(0, 2048)
  task++
  if (w.pending.length >= 1000) {
    await write(w.pending)
    w.pending = []
  }
}
for (const w of workers) if (w.pending.length > 0) await write(w.pending)
// resource samples every 100 ms per host, appended last (as the monitor's own file would be)
const samples: Array<TraceEvent> = []
for (let h = 0; h < hosts; h++) {
  for (let t = t0; t <= end; t += 0.1) {
    const gpu = h % 2 === 0
    samples.push({
      name: "Resource Usage",
      timestamp: t,
      phase: "I",
      scope: "g",
      process_id: `node${h}`,
      thread_id: null,
      args: {
        cpu: 50 + rand() * 50,
        memory: 1e9 + rand() * 1e8,
        time: 1.7e9 + t,
        "host_net_io.read_bps": rand() * 1e6,
        "host_net_io.write_bps": rand() * 1e6,
        "host_disk_io.read_bps": 0,
        "host_disk_io.write_bps": rand() * 1e5,
        num_fds: 46,
        ...(gpu ? { gpu_utilization: rand() * 100, gpu_memory_used: 2e9 + rand() * 1e9 } : {})
      }
    })
  }
}
await write(samples)
await new Promise<void>((resolve) => out.end(() => resolve()))
console.log(`wrote ${written + samples.length} events (${task} tasks, ${samples.length} resource samples) to ${path}`)

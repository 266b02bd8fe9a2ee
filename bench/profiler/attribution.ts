/**
 * Where the profiler's time goes on the demo (DASF tutorial 5, 100,000 samples x 2,
 * chunks of 5,000 rows, 2 workers): the parts `overhead.ts` can only see as one total.
 *
 * 1. Encoding: one demo run's task and memory records are captured (no-op hooks), then
 *    encoded by the trace encoder: the first pass in this process (cold: the encoder's
 *    code not yet optimised, as in a one-shot `tessera demo --profile`) and warm passes
 *    (median of blocks).
 * 2. In place: ROUNDS profiled demo runs on a warm pool (Trace + ResourceMonitor, as
 *    `--profile` sets them up), with timers around the two record encoders and the
 *    resource sampler: milliseconds a run on the main thread, next to the run's wall
 *    time. (The timers add ~0.1 µs a record.)
 * 3. The layers alone: Trace, ResourceMonitor and both around an empty program, so
 *    without records: their start and close (file opened and closed, first and last
 *    sample), median of 300.
 *
 * Usage: node bench/profiler/attribution.ts [--rounds N] [--json]
 * About 30 s on 2 cores.
 *
 * @since 0.1.0
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"
import { isTaskRecord, type MemoryRecord, type TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import { HostSampler } from "../../src/profiler/internal/hostSampler.ts"
import { RecordEncoder } from "../../src/trace/TraceWriter.ts"
import * as ResourceMonitor from "../../src/profiler/ResourceMonitor.ts"
import * as Trace from "../../src/profiler/Trace.ts"
import { median } from "../stats.ts"

const argv = process.argv.slice(2)
const at = argv.indexOf("--rounds")
const ROUNDS = at >= 0 ? Number(argv[at + 1]) : 20
const json = argv.includes("--json")
const dir = mkdtempSync(join(tmpdir(), "tessera-attribution-"))

const rt = ManagedRuntime.make(Executor.layerWorkers({ workers: 2 }))
const options = { samples: 100_000, chunkRows: 5_000, log: () => {} }
const demo = Tutorial5.run(options)
const pipeline = Tutorial5.make(options).pipeline
const rows: Array<{ readonly part: string; readonly ms: number; readonly note: string }> = []

// ------------------------------------------------------------------ 1. encoding alone
const records: Array<TaskRecord | MemoryRecord> = []
await rt.runPromise(demo.pipe(Effect.provide(Hooks.layer({ task: (r) => void records.push(r), memory: (m) => void records.push(m) }))))
const tasks = records.filter(isTaskRecord).length
const encoder = new RecordEncoder()
const pass = (): void => {
  encoder.pos = 0
  for (const r of records) isTaskRecord(r) ? encoder.compute(r) : encoder.memory(r)
}
let t0 = performance.now()
pass()
rows.push({ part: "encoding, first pass in the process (cold)", ms: performance.now() - t0, note: `${records.length} records, ${encoder.pos} bytes` })
for (let i = 0; i < 100; i++) pass()
const blocks: Array<number> = []
for (let b = 0; b < 9; b++) {
  t0 = performance.now()
  for (let i = 0; i < 30; i++) pass()
  blocks.push((performance.now() - t0) / 30)
}
rows.push({ part: "encoding, warm pass", ms: median(blocks), note: `${(median(blocks) * 1e6 / records.length).toFixed(0)} ns a record` })

// ------------------------------------------------------------------ 2. in place
const spent = { compute: 0, memory: 0, sample: 0 }
const timed = <T, A extends Array<unknown>, R>(key: keyof typeof spent, f: (this: T, ...a: A) => R) =>
  function(this: T, ...a: A): R {
    const s = performance.now()
    try {
      return f.apply(this, a)
    } finally {
      spent[key] += performance.now() - s
    }
  }
RecordEncoder.prototype.compute = timed("compute", RecordEncoder.prototype.compute)
RecordEncoder.prototype.memory = timed("memory", RecordEncoder.prototype.memory)
HostSampler.prototype.sampleUnsafe = timed("sample", HostSampler.prototype.sampleUnsafe)
let fileNo = 0
const profiledRun = async (): Promise<number> => {
  const o = { name: `a${fileNo++}`, directory: dir, log: () => {}, pipeline }
  const f = DefaultProfiler.files(o, 0)
  const s = performance.now()
  await rt.runPromise(demo.pipe(Effect.provide(DefaultProfiler.layer(o))))
  const wall = performance.now() - s
  rmSync(f.traceFile, { force: true })
  rmSync(f.resourceFile, { force: true })
  return wall
}
await profiledRun()
spent.compute = spent.memory = spent.sample = 0
const walls: Array<number> = []
for (let r = 0; r < ROUNDS; r++) walls.push(await profiledRun())
rows.push(
  { part: "in place: encoding Compute records", ms: spent.compute / ROUNDS, note: `${tasks} a run` },
  { part: "in place: encoding Managed Memory records", ms: spent.memory / ROUNDS, note: `${records.length - tasks} a run` },
  { part: "in place: resource samples", ms: spent.sample / ROUNDS, note: "every 100 ms, plus the first and the last" },
  { part: "in place: the profiled run's wall time", ms: median(walls), note: `median of ${ROUNDS}` }
)
await rt.dispose()

// ------------------------------------------------------------------ 3. the layers alone
const bare = ManagedRuntime.make(Layer.empty)
const layers: ReadonlyArray<[string, (name: string) => Layer.Layer<never, unknown>]> = [
  ["layer start + close: Trace", (name) => Trace.layer({ file: join(dir, name) })],
  ["layer start + close: ResourceMonitor", (name) => ResourceMonitor.layer({ file: join(dir, name) })],
  ["layer start + close: both (DefaultProfiler)", (name) => DefaultProfiler.layer({ name, directory: dir, log: () => {} })]
]
for (const [part, make] of layers) {
  const ts: Array<number> = []
  for (let i = 0; i < 300; i++) {
    const name = `l${fileNo++}`
    const s = performance.now()
    await bare.runPromise(Effect.provide(Effect.void, make(name)))
    ts.push(performance.now() - s)
  }
  rows.push({ part, ms: median(ts), note: "empty program, median of 300" })
}
await bare.dispose()
rmSync(dir, { recursive: true, force: true })

if (json) console.log(JSON.stringify({ rounds: ROUNDS, rows }))
else console.table(rows.map((r) => ({ part: r.part, ms: r.ms.toFixed(2), note: r.note })))

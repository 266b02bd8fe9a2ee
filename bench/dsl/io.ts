/**
 * Dataset reading and elementwise map with tinybench: a 1,000,000 x 2 float64 array read
 * as a DatasetArray (100,000-row chunks) from a .npy file, an Arrow IPC file and an Arrow
 * IPC stream (record batches of 65,536 rows) on a worker pool; and `(X - row) / scalar`
 * with Elementwise on the persisted array. Baselines measured in the same run: one
 * readFileSync + decode in this thread (npy), tableFromIPC + interleave in this thread
 * (Arrow), and a plain single-threaded typed-array loop (elementwise; fused into one pass,
 * while the DSL runs the two operations as two passes, each writing a fresh array — a
 * pass over 16 MB of fresh memory costs ~13 ms here, mostly first-touch page faults).
 *
 * Usage: node bench/dsl/io.ts [--rows N] [--workers N] [--json]
 *
 * @since 0.1.0
 */
import * as NodeFs from "node:fs"
import * as NodeOs from "node:os"
import * as NodePath from "node:path"
import { makeTable, Table, tableFromIPC, tableToIPC } from "apache-arrow"
import { Effect, Layer, ManagedRuntime } from "effect"
import { Bench } from "tinybench"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import * as DatasetArray from "../../src/dsl/DatasetArray.ts"
import * as E from "../../src/dsl/Elementwise.ts"
import * as NodeSource from "../../src/kernels/io/NodeDatasetSource.ts"
import { decodeUnsafe } from "../../src/kernels/io/npy.ts"

const argv = process.argv.slice(2)
const opt = (name: string, def: number) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : def)
const rows = opt("--rows", 1_000_000)
const workers = opt("--workers", 2)
const chunks = 100_000

const dir = NodeFs.mkdtempSync(NodePath.join(NodeOs.tmpdir(), "bench-io-"))
const data = Float64Array.from({ length: rows * 2 }, (_, i) => Math.sin(i) * 10)
const header = (() => {
  const dict = `{'descr': '<f8', 'fortran_order': False, 'shape': (${rows}, 2), }`
  const h = dict + " ".repeat(63 - ((10 + dict.length) % 64)) + "\n"
  const out = new Uint8Array(10 + h.length)
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0])
  new DataView(out.buffer).setUint16(8, h.length, true)
  out.set(new TextEncoder().encode(h), 10)
  return out
})()
const npyFile = NodePath.join(dir, "x.npy")
NodeFs.writeFileSync(npyFile, Buffer.concat([header, new Uint8Array(data.buffer)]))
const cols = { a: Float64Array.from({ length: rows }, (_, i) => data[2 * i]!), b: Float64Array.from({ length: rows }, (_, i) => data[2 * i + 1]!) }
const batches = []
for (let o = 0; o < rows; o += 65_536) {
  batches.push(...(makeTable({ a: cols.a.slice(o, o + 65_536), b: cols.b.slice(o, o + 65_536) }) as unknown as Table).batches)
}
const arrowFile = NodePath.join(dir, "x.arrow")
const arrowStream = NodePath.join(dir, "x.arrows")
NodeFs.writeFileSync(arrowFile, tableToIPC(new Table(batches), "file"))
NodeFs.writeFileSync(arrowStream, tableToIPC(new Table(batches), "stream"))

const runtime = ManagedRuntime.make(Layer.merge(Executor.layerWorkers({ workers }), NodeSource.layer))
const read = (file: string) => runtime.runPromise(Effect.flatMap(DatasetArray.make(file, { chunks, dtype: "float64" }), CA.persist))
const persisted = await read(npyFile)
let sink = 0

const bench = new Bench({ time: 1500, warmupIterations: 2, iterations: 5, throws: true })
bench.add("baseline: readFileSync + decode (.npy, 1 thread)", () => {
  sink += decodeUnsafe(npyFile, NodeFs.readFileSync(npyFile), chunks).length
})
bench.add(`DatasetArray .npy -> persist (workers=${workers})`, async () => {
  sink += (await read(npyFile)).blocks.length
})
bench.add("baseline: tableFromIPC + interleave (Arrow file, 1 thread)", () => {
  const t = tableFromIPC(NodeFs.readFileSync(arrowFile))
  const a = t.getChild("a")!.toArray() as Float64Array
  const b = t.getChild("b")!.toArray() as Float64Array
  const out = new Float64Array(rows * 2)
  for (let i = 0; i < rows; i++) {
    out[2 * i] = a[i]!
    out[2 * i + 1] = b[i]!
  }
  sink += out.length
})
bench.add(`DatasetArray Arrow file -> persist (workers=${workers})`, async () => {
  sink += (await read(arrowFile)).blocks.length
})
bench.add(`DatasetArray Arrow stream -> persist (workers=${workers})`, async () => {
  sink += (await read(arrowStream)).blocks.length
})
bench.add("baseline: (X - row) / 4 plain loop (1 thread)", () => {
  const out = new Float64Array(data.length)
  for (let i = 0; i < data.length; i += 2) {
    out[i] = (data[i]! - 1) / 4
    out[i + 1] = (data[i + 1]! - 2) / 4
  }
  sink += out.length
})
bench.add(`Elementwise (X - row) / 4 -> persist (workers=${workers})`, async () => {
  sink += (await runtime.runPromise(CA.persist(E.div(E.sub(persisted, [1, 2]), 4)))).blocks.length
})
await bench.run()
await runtime.dispose()
NodeFs.rmSync(dir, { recursive: true, force: true })
if (sink < 0) console.log(sink)

const table = bench.tasks.map((t) => {
  const r = t.result
  const ms = r.state === "completed" ? r.latency.mean : NaN
  return { task: t.name, rows, "mean ms": Number(ms.toFixed(2)), "MB/s": Math.round((rows * 16) / 1e6 / (ms / 1000)), samples: r.state === "completed" ? r.latency.samplesCount : 0 }
})
if (argv.includes("--json")) console.log(JSON.stringify(table, null, 2))
else console.table(table)

// The kernels of the seeded-fault gallery (docs/diagnosis.md, "The gallery"): plain
// functions worker threads import by URL, each with its fault built in where a pipeline
// asks for it. They import nothing of Tessera but types and TaskIo (which imports nothing).
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import type { Chunk } from "tessera/engine/Chunk"
import { reportBytesRead } from "../../src/engine/TaskIo.ts"

const shared = (n: number) => new Float64Array(new SharedArrayBuffer(8 * n))

/** Busy the CPU for `seconds` (a kernel that computes, on any machine). */
const spin = (seconds: number): number => {
  const end = performance.now() + 1000 * seconds
  let x = 0
  while (performance.now() < end) for (let i = 0; i < 1000; i++) x += Math.sqrt(i + x)
  return x
}

/** Chunk `i` of a dataset: `rows` × `columns` numbers from a seeded sequence. */
export const fill = (i: number, rows: number, columns: number): Chunk => {
  const out = shared(rows * columns)
  let s = (i + 1) * 2654435761
  for (let j = 0; j < out.length; j++) {
    s = (s * 1103515245 + 12345) >>> 0
    out[j] = s / 4294967296 - 0.5
  }
  return { dtype: "float64", shape: [rows, columns], data: out }
}

/** `fill`, then `seconds` of computing (a kernel whose cost is per chunk, not per row). */
export const fillAndWork = (i: number, rows: number, columns: number, seconds: number): Chunk => {
  const c = fill(i, rows, columns)
  spin(seconds)
  return c
}

/** `fill`, but chunk `slowChunk` sleeps `seconds` first (the straggler's fault). */
export const fillOrSleep = (i: number, rows: number, columns: number, slowChunk: number, seconds: number): Chunk => {
  if (i === slowChunk) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000 * seconds)
  return fill(i, rows, columns)
}

/**
 * `seconds` of computing, then x * k; but the first call (of any thread) dies half-way
 * through (`process.exit` ends its worker thread), once: `marker` (a file) says it has.
 * The worker killed mid-run's fault: the engine replaces the worker and runs the task again.
 */
export const workOrDie = (chunk: Chunk, seconds: number, marker: string): Chunk => {
  if (!existsSync(marker)) {
    writeFileSync(marker, "died once\n")
    spin(seconds / 2)
    process.exit(1)
  }
  spin(seconds)
  return scale(chunk, 1)
}

/** x * k, element by element: next to no work per row. */
export const scale = (chunk: Chunk, k: number): Chunk => {
  const x = chunk.data as Float64Array
  const out = shared(x.length)
  for (let i = 0; i < x.length; i++) out[i] = x[i]! * k
  return { dtype: "float64", shape: chunk.shape, data: out }
}

/** A fixed amount of work per row: `perRow` square roots. */
export const work = (chunk: Chunk, perRow: number): Chunk => {
  const x = chunk.data as Float64Array
  const rows = chunk.shape[0] ?? 0
  const columns = chunk.shape[1] ?? 1
  const out = shared(x.length)
  for (let r = 0; r < rows; r++) {
    let acc = 0
    for (let k = 0; k < perRow; k++) acc += Math.sqrt(k + Math.abs(x[r * columns]!))
    for (let c = 0; c < columns; c++) out[r * columns + c] = x[r * columns + c]! + acc * 1e-9
  }
  return { dtype: "float64", shape: chunk.shape, data: out }
}

/** Sum of a chunk. */
export const total = (chunk: Chunk): number => {
  const x = chunk.data as Float64Array
  let s = 0
  for (let i = 0; i < x.length; i++) s += x[i]!
  return s
}

/** Sum of partial sums. */
export const addAll = (parts: ReadonlyArray<number>): number => parts.reduce((a, b) => a + b, 0)

// the leak: every chunk this thread saw, kept for ever
const kept: Array<Float64Array> = []

/** x * 2, and a copy of the chunk kept in a module-level array that is never emptied. */
export const leakyScale = (chunk: Chunk): Chunk => {
  kept.push(Float64Array.from(chunk.data as Float64Array))
  return scale(chunk, 2)
}

/**
 * Per number, 16 small objects, all of a chunk's kept until the end, then summed: they
 * live long enough to be copied out of V8's young generation, so the collector works hard.
 */
export const allocHeavy = (chunk: Chunk): Chunk => {
  const x = chunk.data as Float64Array
  const out = shared(x.length)
  const all: Array<Array<{ v: number; w: Array<number> }>> = []
  for (let i = 0; i < x.length; i++) all.push(Array.from({ length: 16 }, (_, k) => ({ v: x[i]! + k, w: [k, k + 1] })))
  for (let i = 0; i < x.length; i++) out[i] = all[i]!.reduce((a, p) => a + p.v * p.w[0]!, 0)
  return { dtype: "float64", shape: chunk.shape, data: out }
}

/** Reads `file` whole, synchronously, `times` times (reported as bytes read), then scales. */
export const readThenScale = (chunk: Chunk, file: string, times: number): Chunk => {
  for (let t = 0; t < times; t++) reportBytesRead(readFileSync(file).length)
  return scale(chunk, 1)
}

/** One step of a fold: the previous step's value plus `seconds` of work. */
export const foldStep = (previous: number, seconds: number): number => previous + spin(seconds) * 0 + 1

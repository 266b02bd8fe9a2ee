/**
 * GPU versions of `kernels/cluster.ts`: `assign` (nearest center per row), `lloydPartial`
 * (each of up to `THREADS` invocations sums the rows of a strided subset per nearest
 * center in float32; the host adds the partials in float64) and `somPartial` (the same
 * sums per best matching unit, then the host spreads them over the neighbourhood:
 * `sums[n] = Σ_b h[b, n] · S_b`, which is the CPU kernel's sum reordered).
 *
 * Ties: a row (nearly) equidistant from two centers may pick the other one than the
 * float64 CPU kernel; tests compare the distances, not the labels (docs/gpu.md).
 *
 * @since 0.1.0
 */
import type * as Chunk from "../../engine/Chunk.ts"
import * as Gpu from "../../engine/Gpu.ts"
import * as Cpu from "../cluster.ts"

const THREADS = 16384

/** Rows each invocation reduces at least: fewer partials to read back than rows read. */
const ROWS_PER_THREAD = 64

/** Most floats of per-invocation sums (k × (d + 1)) kept in registers; more runs the CPU kernel. */
const MAX_WORDS = 512

const nearestFn = (k: number, d: number): string => `
const K = ${k}u;
const D = ${d}u;
struct Near { c: u32, d: f32 }
fn nearest(r: u32) -> Near {
  var best = 0u;
  var bestD = 3.4e38;
  for (var c = 0u; c < K; c++) {
    var s = 0.0;
    for (var j = 0u; j < D; j++) {
      let t = x[r * D + j] - cs[c * D + j];
      s += t * t;
    }
    if (s < bestD) { bestD = s; best = c; }
  }
  return Near(best, bestD);
}`

const assignShader = (k: number, d: number): string => `
struct P { n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> cs: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<i32>;
@group(0) @binding(3) var<uniform> p: P;
${nearestFn(k, d)}
${Gpu.indexPrelude}
  if (i >= p.n) { return; }
  o[i] = i32(nearest(i).c);
}`

const partialShader = (k: number, d: number): string => `
struct P { n: u32, t: u32, sq: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> cs: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
${nearestFn(k, d)}
${Gpu.indexPrelude}
  if (i >= p.t) { return; }
  var sums: array<f32, ${k * d}>;
  var counts: array<f32, ${k}>;
  var err = 0.0;
  for (var r = i; r < p.n; r += p.t) {
    let b = nearest(r);
    let c = b.c;
    counts[c] += 1.0;
    for (var j = 0u; j < D; j++) { sums[c * D + j] += x[r * D + j]; }
    err += select(b.d, sqrt(b.d), p.sq == 1u);
  }
  let w = K * D + K + 1u;
  for (var q = 0u; q < K * D; q++) { o[i * w + q] = sums[q]; }
  for (var c = 0u; c < K; c++) { o[i * w + K * D + c] = counts[c]; }
  o[i * w + K * D + K] = err;
}`

/** Per-center sums, counts and error of the rows of `chunk`, summed on the host in float64. */
const partialSums = async (ctx: Gpu.TaskContext, chunk: Chunk.Chunk, centers: Float64Array, k: number, sqrtError: boolean): Promise<Cpu.Partial> => {
  const d = centers.length / k
  const rows = chunk.shape[0]!
  const t = Math.min(Math.ceil(rows / ROWS_PER_THREAD), THREADS)
  const w = k * d + k + 1
  const out = ctx.buffer(t * w)
  const params = ctx.uniform((v) => {
    v.setUint32(0, rows, true)
    v.setUint32(4, t, true)
    v.setUint32(8, sqrtError ? 1 : 0, true)
  }, 12)
  ctx.dispatch(await ctx.pipeline(partialShader(k, d)), [ctx.input(chunk), ctx.input(centers), out, params], t)
  const o = new Float32Array(await ctx.read(out, t * w))
  const sums = new Float64Array(k * d)
  const counts = new Float64Array(k)
  let error = 0
  for (let q = 0; q < t; q++) {
    const b = q * w
    for (let m = 0; m < k * d; m++) sums[m] = sums[m]! + o[b + m]!
    for (let c = 0; c < k; c++) counts[c] = counts[c]! + o[b + k * d + c]!
    error += o[b + k * d + k]!
  }
  return { sums, counts, error, rows }
}

const tooWide = (chunk: Chunk.Chunk, k: number, d: number): boolean =>
  chunk.shape[0] === 0 || k * (d + 1) > MAX_WORDS || !Number.isInteger(d) || !(chunk.data instanceof Float64Array || chunk.data instanceof Float32Array)

/**
 * `lloydPartial` on the GPU (same arguments and result as the CPU kernel).
 *
 * @since 0.1.0
 * @category kernels
 */
export const lloydPartial = (ctx: Gpu.TaskContext, chunk: Chunk.Chunk, centers: Float64Array, k: number): Promise<Cpu.Partial> | Cpu.Partial =>
  tooWide(chunk, k, centers.length / k) ? Cpu.lloydPartial(chunk, centers, k) : partialSums(ctx, chunk, centers, k, false)

/**
 * `assign` on the GPU (same arguments and result as the CPU kernel).
 *
 * @since 0.1.0
 * @category kernels
 */
export const assign = async (ctx: Gpu.TaskContext, chunk: Chunk.Chunk, centers: Float64Array, k: number): Promise<Chunk.Chunk | Gpu.DeviceChunk> => {
  const d = centers.length / k
  if (tooWide(chunk, k, d)) return Cpu.assign(chunk, centers, k)
  const rows = chunk.shape[0]!
  const out = ctx.buffer(rows)
  const params = ctx.uniform((v) => v.setUint32(0, rows, true), 4)
  ctx.dispatch(await ctx.pipeline(assignShader(k, d)), [ctx.input(chunk), ctx.input(centers), out, params], rows)
  return ctx.chunk(out, [rows], "int32")
}

/**
 * `somPartial` on the GPU (same arguments and result as the CPU kernel).
 *
 * @since 0.1.0
 * @category kernels
 */
export const somPartial = async (ctx: Gpu.TaskContext, chunk: Chunk.Chunk, weights: Float64Array, gx: number, gy: number, sigma: number): Promise<Cpu.Partial> => {
  const nodes = gx * gy
  const d = weights.length / nodes
  if (tooWide(chunk, nodes, d)) return Cpu.somPartial(chunk, weights, gx, gy, sigma)
  const per = await partialSums(ctx, chunk, weights, nodes, true)
  const h = Cpu.neighbourhood(gx, gy, sigma)
  const sums = new Float64Array(nodes * d)
  const counts = new Float64Array(nodes)
  for (let b = 0; b < nodes; b++) {
    if (per.counts[b] === 0) continue
    for (let n = 0; n < nodes; n++) {
      const w = h[b * nodes + n]!
      if (w === 0) continue
      counts[n] = counts[n]! + w * per.counts[b]!
      for (let j = 0; j < d; j++) sums[n * d + j] = sums[n * d + j]! + w * per.sums[b * d + j]!
    }
  }
  return { sums, counts, error: per.error, rows: per.rows }
}

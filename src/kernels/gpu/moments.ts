/**
 * GPU versions of `kernels/moments.ts`: `momentsPartial` (each of up to `THREADS`
 * invocations runs Welford over a strided subset of the rows in float32; the host
 * combines their partials in float64 with `momentsCombine`) and `standardize` (an
 * elementwise shader with the column means and inverse deviations as a small buffer).
 *
 * @since 0.1.0
 */
import type * as Chunk from "../../engine/Chunk.ts"
import * as Gpu from "../../engine/Gpu.ts"
import * as Cpu from "../moments.ts"

/** Most invocations of a partial: each writes its own partial, which the host reads back. */
const THREADS = 16384

/** Rows each invocation reduces at least: fewer partials to read back than rows read. */
const ROWS_PER_THREAD = 64

/** Columns a partial keeps in registers; wider chunks run the CPU kernel. */
const MAX_D = 64

const partialShader = (d: number): string => `
struct P { n: u32, t: u32 }
const D = ${d}u;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
${Gpu.indexPrelude}
  if (i >= p.t) { return; }
  var mean: array<f32, ${d}>;
  var m2: array<f32, ${d}>;
  var lo: array<f32, ${d}>;
  var hi: array<f32, ${d}>;
  for (var j = 0u; j < D; j++) { lo[j] = 3.4e38; hi[j] = -3.4e38; }
  var c = 0.0;
  for (var r = i; r < p.n; r += p.t) {
    c += 1.0;
    for (var j = 0u; j < D; j++) {
      let v = x[r * D + j];
      let delta = v - mean[j];
      mean[j] += delta / c;
      m2[j] += delta * (v - mean[j]);
      lo[j] = min(lo[j], v);
      hi[j] = max(hi[j], v);
    }
  }
  let w = 1u + 4u * D;
  o[i * w] = c;
  for (var j = 0u; j < D; j++) {
    o[i * w + 1u + j] = mean[j];
    o[i * w + 1u + D + j] = m2[j];
    o[i * w + 1u + 2u * D + j] = lo[j];
    o[i * w + 1u + 3u * D + j] = hi[j];
  }
}`

/**
 * `momentsPartial` on the GPU (same arguments and result as the CPU kernel).
 *
 * @since 0.1.0
 * @category kernels
 */
export const momentsPartial = async (ctx: Gpu.TaskContext, chunk: Chunk.Chunk, axis: 0 | null): Promise<Cpu.Moments> => {
  const rows = chunk.shape[0] ?? 0
  const perRow = chunk.shape.length > 1 ? chunk.data.length / Math.max(rows, 1) : 1
  const d = axis === null ? 1 : perRow
  const n = axis === null ? chunk.data.length : rows
  if (n === 0 || d > MAX_D || d < 1 || chunk.data instanceof BigInt64Array) return Cpu.momentsPartial(chunk, axis)
  const t = Math.min(Math.ceil(n / ROWS_PER_THREAD), THREADS)
  const w = 1 + 4 * d
  const out = ctx.buffer(t * w)
  const params = ctx.uniform((v) => {
    v.setUint32(0, n, true)
    v.setUint32(4, t, true)
  }, 8)
  ctx.dispatch(await ctx.pipeline(partialShader(d)), [ctx.input(chunk), out, params], t)
  const o = new Float32Array(await ctx.read(out, t * w))
  const parts: Array<Cpu.Moments> = []
  for (let k = 0; k < t; k++) {
    const b = k * w
    parts.push({
      count: o[b]!,
      mean: Float64Array.from(o.subarray(b + 1, b + 1 + d)),
      m2: Float64Array.from(o.subarray(b + 1 + d, b + 1 + 2 * d)),
      min: Float64Array.from(o.subarray(b + 1 + 2 * d, b + 1 + 3 * d)),
      max: Float64Array.from(o.subarray(b + 1 + 3 * d, b + 1 + 4 * d))
    })
  }
  return Cpu.momentsCombine(parts)
}

const standardizeShader = `
struct P { n: u32, d: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> s: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;
@group(0) @binding(3) var<uniform> p: P;
${Gpu.indexPrelude}
  if (i >= p.n) { return; }
  let j = i % p.d;
  o[i] = (x[i] - s[j]) * s[p.d + j];
}`

/**
 * `standardize` on the GPU (same arguments and result as the CPU kernel).
 *
 * @since 0.1.0
 * @category kernels
 */
export const standardize = async (ctx: Gpu.TaskContext, chunk: Chunk.Chunk, m: Cpu.Moments): Promise<Chunk.Chunk | Gpu.DeviceChunk> => {
  const d = m.mean.length
  const n = chunk.data.length
  if (n === 0 || chunk.data instanceof BigInt64Array) return Cpu.standardize(chunk, m)
  const scale = new Float64Array(2 * d)
  for (let j = 0; j < d; j++) {
    const sd = Math.sqrt(m.m2[j]! / m.count)
    scale[j] = m.mean[j]!
    scale[d + j] = sd > 0 ? 1 / sd : 0
  }
  const out = ctx.buffer(n)
  const params = ctx.uniform((v) => {
    v.setUint32(0, n, true)
    v.setUint32(4, d, true)
  }, 8)
  ctx.dispatch(await ctx.pipeline(standardizeShader), [ctx.input(chunk), ctx.input(scale), out, params], n)
  return ctx.chunk(out, chunk.shape)
}

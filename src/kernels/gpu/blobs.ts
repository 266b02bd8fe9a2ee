/**
 * The GPU versions of `kernels/blobs.ts` `blobsX` and `blobsY`: the same counter-based
 * draws (`kernels/random.ts`: mix32, the 53-bit uniform, Box-Muller, the Feistel
 * permutation) in WGSL's u32 arithmetic, which wraps as `Math.imul` does, so every row
 * gets the same center (label) as on the CPU, and coordinates within float32 rounding.
 * X is made on the device and stays there for the GPU tasks that read it (normalize's
 * moments, say); the labels (int32) go to the host.
 *
 * Leaves out: seeds that are not integers, and more than 2^32 rows (the CPU kernel runs).
 *
 * @since 0.1.0
 */
import type * as Chunk from "../../engine/Chunk.ts"
import * as Gpu from "../../engine/Gpu.ts"
import * as Cpu from "../blobs.ts"

/** What both shaders share: the parameters, the draws, the permutation and a row's center. */
const common = `
struct P { rows: u32, rowStart: u32, n: u32, k: u32, d: u32, seed: u32, shuffle: u32, half: u32, sd: f32 }
fn mix32(v: u32) -> u32 {
  var x = (v ^ (v >> 16u)) * 0x85ebca6bu;
  x = (x ^ (x >> 13u)) * 0xc2b2ae35u;
  return x ^ (x >> 16u);
}
// the CPU's 53-bit uniform u as (u, 1 - u), each rounded to float32 from exact integer
// parts, so that log(u) keeps its precision when u is near 1
fn uniform01(seed: u32, row: u32, draw: u32) -> vec2f {
  var h = mix32(seed ^ 0x9e3779b9u);
  h = mix32(h ^ row);
  h = mix32(h + 0x7f4a7c15u);
  h = mix32(h ^ ((draw + 1u) * 0x632be5abu));
  let a = h >> 6u;
  let b = mix32(h + 0x68bc21ebu) >> 5u;
  let u = (f32(a) * 134217728.0 + f32(b) + 0.5) / 9007199254740992.0;
  let t = (f32((1u << 26u) - 1u - a) * 134217728.0 + f32((1u << 27u) - b) - 0.5) / 9007199254740992.0;
  return vec2f(u, t);
}
fn logU(v: vec2f) -> f32 {
  let t = v.y;
  if (t < 0.01) { return -(t + t * t * (0.5 + t * (1.0 / 3.0 + t * 0.25))); }
  return log(v.x);
}
fn permute(seed: u32, n: u32, i: u32) -> u32 {
  if (n <= 1u) { return 0u; }
  let mask = (1u << p.half) - 1u;
  var x = i;
  loop {
    var l = x >> p.half;
    var r = x & mask;
    for (var round = 0u; round < 4u; round++) {
      let f = mix32(r ^ mix32(seed + round * 0x9e3779b9u)) & mask;
      let nl = r;
      r = (l ^ f) & mask;
      l = nl;
    }
    x = (l << p.half) | r;
    if (x < n) { break; }
  }
  return x;
}
fn labelOf(row: u32) -> u32 {
  return select(row, permute(p.seed, p.n, row), p.shuffle == 1u) % p.k;
}`

const shaderX = `
@group(0) @binding(0) var<storage, read> cs: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
${common}
${Gpu.indexPrelude}
  if (i >= p.rows * p.d) { return; }
  let r = i / p.d;
  let j = i % p.d;
  let row = p.rowStart + r;
  let c = labelOf(row);
  let pair = j >> 1u;
  let rad = sqrt(-2.0 * logU(uniform01(p.seed, row, 2u * pair)));
  let a = 6.283185307179586 * uniform01(p.seed, row, 2u * pair + 1u).x;
  let z = select(rad * sin(a), rad * cos(a), (j & 1u) == 0u);
  o[i] = cs[c * p.d + j] + p.sd * z;
}`

/** Half the bits of `permute`'s Feistel network for `n` rows (as the CPU kernel's). */
const halfBits = (n: number): number => {
  let bits = 2
  while (2 ** bits < n) bits += 2
  return bits / 2
}

const shaderY = `
@group(0) @binding(0) var<storage, read_write> o: array<i32>;
@group(0) @binding(1) var<uniform> p: P;
${common}
${Gpu.indexPrelude}
  if (i >= p.rows) { return; }
  o[i] = i32(labelOf(p.rowStart + i));
}`

/** Whether the GPU kernels cannot take these options (the CPU kernel runs). */
const onCpu = (o: Cpu.BlobsChunkOptions): boolean =>
  o.rows === 0 || !Number.isInteger(o.randomState) || o.rowStart + o.rows > 2 ** 32 || halfBits(o.nSamples) > 16

/** The shaders' parameters (`P`). */
const params = (ctx: Gpu.TaskContext, o: Cpu.BlobsChunkOptions, d: number): GPUBuffer =>
  ctx.uniform((v) => {
    const u = [o.rows, o.rowStart, o.nSamples, o.centers.length, d, o.randomState >>> 0, o.shuffle ? 1 : 0, halfBits(o.nSamples)]
    u.forEach((x, i) => v.setUint32(i * 4, x, true))
    v.setFloat32(32, o.clusterStd, true)
  }, 36)

/**
 * `blobsX` on the GPU (same arguments and result as the CPU kernel).
 *
 * @since 0.1.0
 * @category kernels
 */
export const blobsX = async (ctx: Gpu.TaskContext, o: Cpu.BlobsChunkOptions): Promise<Chunk.Chunk | Gpu.DeviceChunk> => {
  const d = o.centers[0]!.length
  if (onCpu(o)) return Cpu.blobsX(o)
  const out = ctx.buffer(o.rows * d)
  ctx.dispatch(await ctx.pipeline(shaderX), [ctx.input(o.centers.flat()), out, params(ctx, o, d)], o.rows * d)
  return ctx.chunk(out, [o.rows, d])
}

/**
 * `blobsY` on the GPU (same arguments and result as the CPU kernel: the labels, int32).
 *
 * @since 0.1.0
 * @category kernels
 */
export const blobsY = async (ctx: Gpu.TaskContext, o: Cpu.BlobsChunkOptions): Promise<Chunk.Chunk | Gpu.DeviceChunk> => {
  if (onCpu(o)) return Cpu.blobsY(o)
  const out = ctx.buffer(o.rows)
  ctx.dispatch(await ctx.pipeline(shaderY), [out, params(ctx, o, o.centers[0]!.length)], o.rows)
  return ctx.chunk(out, [o.rows], "int32")
}

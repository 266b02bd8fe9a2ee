/**
 * The GPU version of `kernels/elementwise.ts` `elementwise`: one WGSL shader per
 * operation, over float arrays (float32 or float64 in, a float dtype out). An
 * integer input or output (NumPy's integer wrap-around, int64's BigInt) runs the CPU
 * kernel on the GPU worker's thread instead. See docs/gpu.md for the precision contract.
 *
 * @since 0.1.0
 */
import type * as Chunk from "../../engine/Chunk.ts"
import * as Gpu from "../../engine/Gpu.ts"
import * as Cpu from "../elementwise.ts"

const isFloat = (d: Chunk.DType): boolean => d === "float32" || d === "float64"

const unary = (op: Cpu.UnaryOp): string => {
  switch (op) {
    case "abs":
      return "abs(a)"
    case "neg":
      return "-a"
    case "square":
      return "a * a"
    case "sqrt":
      return "sqrt(a)"
    case "exp":
      return "exp(a)"
    case "log":
      return "log(a)"
  }
}

// NaN propagates through minimum / maximum as NumPy's does (WGSL's min/max need not)
const binary = (op: Cpu.BinaryOp): string => {
  switch (op) {
    case "add":
      return "a + b"
    case "sub":
      return "a - b"
    case "mul":
      return "a * b"
    case "div":
      return "a / b"
    case "minimum":
      return "select(select(b, a, a < b), a + b, isnan(a) || isnan(b))"
    case "maximum":
      return "select(select(b, a, a > b), a + b, isnan(a) || isnan(b))"
  }
}

const shader = (expr: string, second: boolean): string => `
struct P { n: u32, d: u32, s: f32, t: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<uniform> p: P;
${second ? "@group(0) @binding(3) var<storage, read> y: array<f32>;" : ""}
fn isnan(v: f32) -> bool { return !(v == v); }
${Gpu.indexPrelude}
  if (i >= p.n) { return; }
  let a = x[i];
  ${second ? "let b = y[i];" : "let b = p.s;"}
  o[i] = ${expr};
}`

/**
 * `elementwise` on the GPU (same arguments and result as the CPU kernel).
 *
 * @since 0.1.0
 * @category kernels
 */
export const elementwise = async (ctx: Gpu.TaskContext, chunk: Chunk.Chunk, spec: Cpu.ElementwiseSpec, other?: Chunk.Chunk): Promise<Chunk.Chunk | Gpu.DeviceChunk> => {
  const operand = spec._tag === "Binary" ? spec.operand : null
  if (!isFloat(chunk.dtype) || !isFloat(spec.out) || (operand?._tag === "Array" && !isFloat(operand.dtype)) || chunk.data.length === 0) {
    return Cpu.elementwise(chunk, spec, other)
  }
  const n = chunk.data.length
  const d = chunk.shape.length === 2 ? chunk.shape[1]! : 1
  let expr: string
  let second: Chunk.TypedArray | ReadonlyArray<number> | Chunk.Chunk | null = null
  let scalar = 0
  let hi = 0
  switch (spec._tag) {
    case "AsType":
      expr = "a"
      break
    case "Unary":
      expr = unary(spec.op)
      break
    case "Clip":
      scalar = Number(spec.lo)
      hi = Number(spec.hi)
      expr = "min(max(a, p.s), p.t)"
      break
    case "Binary": {
      const r = spec.operand
      expr = binary(spec.op)
      if (r._tag === "Scalar") scalar = Number(r.value)
      else if (r._tag === "Array") second = other!
      else {
        // a row vector, repeated to the chunk's length (one upload, read as an array)
        const row = r.values.map(Number)
        second = Float32Array.from({ length: n }, (_, i) => row[i % d]!)
      }
    }
  }
  const out = ctx.buffer(n)
  const params = ctx.uniform((v) => {
    v.setUint32(0, n, true)
    v.setUint32(4, d, true)
    v.setFloat32(8, scalar, true)
    v.setFloat32(12, hi, true)
  }, 16)
  const bindings = [ctx.input(chunk), out, params, ...(second === null ? [] : [ctx.input(second)])]
  ctx.dispatch(await ctx.pipeline(shader(expr, second !== null)), bindings, n)
  return ctx.chunk(out, chunk.shape, spec.out === "float32" ? "float32" : "float64")
}

import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as CA from "../../src/dsl/ChunkedArray.ts"
import { isDslError } from "../../src/dsl/DslError.ts"
import * as E from "../../src/dsl/Elementwise.ts"

const sync = <A, E>(e: Effect.Effect<A, E, Executor.Executor>) => Effect.runPromise(Effect.provide(e, Executor.layerSync))
const dtypes = ["float32", "float64", "int32", "int64", "uint8"] as const
type DType = (typeof dtypes)[number]
const ctor = { float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array } as const
const isFloat = (d: DType) => d === "float32" || d === "float64"

/** A whole array's values of a dtype (int64 as bigint). */
const valuesOf = (d: DType, n: number) =>
  d === "int64"
    ? fc.array(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { minLength: n, maxLength: n })
    : d === "uint8"
    ? fc.array(fc.integer({ min: 0, max: 255 }), { minLength: n, maxLength: n })
    : d === "int32"
    ? fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { minLength: n, maxLength: n })
    : fc.array(fc.oneof(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: -50, max: 50 }), fc.constant(NaN)), { minLength: n, maxLength: n })

/** Splits a typed array of `rows` rows into a ChunkedArray with the given row cuts. */
const chunked = (d: DType, shape: ReadonlyArray<number>, values: ReadonlyArray<number | bigint>, cuts: ReadonlyArray<number>) => {
  const all = (ctor[d] as any).from(values) as Chunk.TypedArray
  const per = shape.length === 2 ? shape[1]! : 1
  const chunks: Array<Chunk.Chunk> = []
  let r = 0
  for (const c of cuts) {
    chunks.push(Chunk.make(d, shape.length === 2 ? [c, per] : [c], all.slice(r * per, (r + c) * per)))
    r += c
  }
  return { array: CA.fromChunks(d, chunks), data: all }
}

const cutsOf = (rows: number, seed: number) => {
  const out: Array<number> = []
  let s = seed
  for (let left = rows; left > 0;) {
    s = (s * 1103515245 + 12345) >>> 0
    const take = Math.min(left, 1 + (s % Math.max(1, Math.ceil(rows / 2))))
    out.push(take)
    left -= take
  }
  return out
}

// ---- naive reference, written independently of the kernel: exact BigInt for integer
// results then wrapped to the width; plain double arithmetic for floats, float32 results
// rounded with Math.fround once (scalars cast to float32 first, as NumPy's weak scalars).
const wrap = (d: DType, v: bigint): bigint | number =>
  d === "int64" ? BigInt.asIntN(64, v) : d === "int32" ? Number(BigInt.asIntN(32, v)) : Number(BigInt.asUintN(8, v))
const big = (v: number | bigint): bigint => (typeof v === "bigint" ? v : Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n)
const exactInt = (op: string, a: bigint, b: bigint): bigint =>
  op === "add" ? a + b : op === "sub" ? a - b : op === "mul" ? a * b : op === "minimum" ? (a < b ? a : b) : op === "maximum" ? (a > b ? a : b)
    : op === "abs" ? (a < 0n ? -a : a) : op === "neg" ? -a : op === "square" ? a * a : a
const exactFloat = (op: string, a: number, b: number): number =>
  op === "add" ? a + b : op === "sub" ? a - b : op === "mul" ? a * b : op === "div" ? a / b
    : op === "minimum" ? (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b))
    : op === "maximum" ? (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b))
    : op === "abs" ? Math.abs(a) : op === "neg" ? -a : op === "square" ? a * a : op === "sqrt" ? Math.sqrt(a) : op === "exp" ? Math.exp(a) : op === "log" ? Math.log(a) : a
const reference = (out: DType, op: string, a: number | bigint, b: number | bigint | undefined): number | bigint => {
  if (!isFloat(out)) return wrap(out, exactInt(op, big(a), b === undefined ? 0n : big(b)))
  const r = (v: number | bigint) => (out === "float32" ? Math.fround(Number(v)) : Number(v))
  const v = exactFloat(op, Number(a), b === undefined ? 0 : r(b))
  return out === "float32" ? Math.fround(v) : v
}
const same = (x: number | bigint, y: number | bigint) => x === y || (typeof x === "number" && typeof y === "number" && Number.isNaN(x) && Number.isNaN(y))

const binaryOps = ["add", "sub", "mul", "div", "minimum", "maximum"] as const
const unaryOps = ["abs", "neg", "square", "sqrt", "exp", "log"] as const

describe("Elementwise", () => {
  it("map over chunks equals a naive reference over the whole array, for every dtype and operation", async () => {
    const scenario = fc.record({
      d: fc.constantFrom(...dtypes),
      e: fc.constantFrom(...dtypes),
      rows: fc.integer({ min: 1, max: 12 }),
      cols: fc.integer({ min: 0, max: 3 }),
      seed: fc.integer({ min: 0, max: 1000 }),
      kind: fc.constantFrom("scalar", "row", "array", "unary", "astype"),
      bop: fc.constantFrom(...binaryOps),
      uop: fc.constantFrom(...unaryOps),
      scalar: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.double({ min: -100, max: 100, noNaN: true }))
    }).chain((s) => {
      const n = s.rows * Math.max(1, s.cols)
      return fc.record({ s: fc.constant(s), x: valuesOf(s.d, n), y: valuesOf(s.e, n), row: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: Math.max(1, s.cols), maxLength: Math.max(1, s.cols) }) })
    })
    await fc.assert(
      fc.asyncProperty(scenario, async ({ s, x, y, row }) => {
        const shape = s.cols === 0 ? [s.rows] : [s.rows, s.cols]
        const cuts = cutsOf(s.rows, s.seed)
        const X = chunked(s.d, shape, x, cuts)
        const per = s.cols === 0 ? 1 : s.cols
        let out: CA.ChunkedArray
        let op: string
        let rightAt: (i: number) => number | bigint | undefined
        if (s.kind === "unary") {
          op = s.uop
          out = E.unary(X.array, s.uop)
          rightAt = () => undefined
        } else if (s.kind === "astype") {
          op = "astype"
          out = E.astype(X.array, s.e)
          rightAt = () => undefined
        } else if (s.kind === "array") {
          op = s.bop
          const Y = chunked(s.e, shape, y, cuts)
          out = E.binary(X.array, s.bop, Y.array)
          rightAt = (i) => Y.data[i]!
        } else if (s.kind === "row" && s.cols > 0) {
          op = s.bop
          out = E.binary(X.array, s.bop, row)
          rightAt = (i) => row[i % per]!
        } else {
          op = s.bop
          // an integral scalar outside an integer dtype's range (the generator's doubles
          // include -100 itself) is rejected before running, as NumPy 2 rejects it
          const range = s.d === "uint8" ? [0, 255] : s.d === "int32" ? [-(2 ** 31), 2 ** 31 - 1] : undefined
          if (range !== undefined && Number.isInteger(s.scalar) && (s.scalar < range[0]! || s.scalar > range[1]!)) {
            assert.throws(() => E.binary(X.array, s.bop, s.scalar), (e: unknown) => isDslError(e) && /is out of range for/.test(e.message))
            return
          }
          out = E.binary(X.array, s.bop, s.scalar)
          rightAt = () => s.scalar
        }
        const got = await sync(CA.compute(out))
        assert.equal(got.dtype, out.dtype)
        assert.deepEqual(got.shape, shape)
        const o = out.dtype as DType
        for (let i = 0; i < X.data.length; i++) {
          const want = reference(o, op, X.data[i]!, rightAt(i))
          const have = got.data[i]!
          assert.ok(same(have, want), `${s.d} ${op} ${String(rightAt(i))} -> ${o} at ${i}: ${String(X.data[i])} gave ${String(have)}, want ${String(want)}`)
        }
      }),
      { numRuns: 100 }
    )
  })

  it("promotes dtypes as NumPy 2 does", () => {
    const a = (d: DType, shape = [2, 2]) => chunked(d, shape, Array.from({ length: 4 }, () => (d === "int64" ? 1n : 1)), [2]).array
    assert.equal(E.add(a("int32"), a("uint8")).dtype, "int32")
    assert.equal(E.add(a("float32"), a("int32")).dtype, "float64")
    assert.equal(E.add(a("float32"), a("uint8")).dtype, "float32")
    assert.equal(E.add(a("int32"), a("int64")).dtype, "int64")
    assert.equal(E.add(a("int32"), 2).dtype, "int32")
    assert.equal(E.add(a("int32"), 2.5).dtype, "float64")
    assert.equal(E.add(a("float32"), 2.5).dtype, "float32")
    assert.equal(E.div(a("uint8"), 2).dtype, "float64")
    assert.equal(E.unary(a("int64"), "sqrt").dtype, "float64")
    assert.equal(E.unary(a("float32"), "exp").dtype, "float32")
    assert.equal(E.clip(a("uint8"), 1, 9).dtype, "uint8")
    const typed: CA.ChunkedArray<"float64"> = E.unary(a("int32") as CA.ChunkedArray<"int32">, "log")
    // @ts-expect-error: float32 + scalar stays float32
    const wrong: CA.ChunkedArray<"float64"> = E.add(a("float32") as CA.ChunkedArray<"float32">, 1)
    assert.ok(typed && wrong)
  })

  it("int64 arithmetic is exact in BigInt and wraps like NumPy", async () => {
    const X = chunked("int64", [3], [2n ** 62n, -(2n ** 63n), 7n], [2, 1]).array
    const got = await sync(CA.compute(E.mul(X, 2n)))
    assert.deepEqual(Array.from(got.data as BigInt64Array), [-(2n ** 63n), 0n, 14n])
    const abs = await sync(CA.compute(E.unary(X, "abs")))
    assert.deepEqual(Array.from(abs.data as BigInt64Array), [2n ** 62n, -(2n ** 63n), 7n])
  })

  const mismatch = (f: () => unknown, pattern: RegExp) => assert.throws(f, (e: unknown) => isDslError(e) && pattern.test(e.message))
  it("rejects a row vector of the wrong length, naming the stage and both shapes", () => {
    const X = chunked("float64", [2, 3], [1, 2, 3, 4, 5, 6], [1, 1]).array
    mismatch(() => E.sub(X, [1, 2], { stage: "center" }), /stage "center": shape mismatch: expected \[3\], got \[2\]/)
    const v = chunked("float64", [2], [1, 2], [2]).array
    mismatch(() => E.add(v, [1, 2]), /stage "add": shape mismatch: expected \[n, 2\], got \[2\]/)
  })
  it("rejects arrays of different shapes or chunkings, naming the stage and both", () => {
    const X = chunked("float64", [4, 2], Array.from({ length: 8 }, (_, i) => i), [2, 2]).array
    const Y = chunked("float64", [4], [1, 2, 3, 4], [2, 2]).array
    mismatch(() => E.mul(X, Y), /stage "mul": shape mismatch: expected \[4, 2\], got \[4\]/)
    const Z = chunked("float64", [4, 2], Array.from({ length: 8 }, (_, i) => i), [1, 3]).array
    mismatch(() => E.add(X, Z), /stage "add": row chunks differ: \[2, 2\] and \[1, 3\]/)
  })
  it("rejects an integer scalar out of the array dtype's range", () => {
    const X = chunked("uint8", [2], [1, 2], [2]).array
    mismatch(() => E.add(X, 300), /stage "add": 300 is out of range for uint8 \(0\.\.255\)/)
    mismatch(() => E.clip(X, -1, 5), /stage "clip": -1 is out of range for uint8/)
  })

  it("runs on worker threads", async () => {
    const X = chunked("float64", [1000, 2], Array.from({ length: 2000 }, (_, i) => i), cutsOf(1000, 3)).array
    const got = await Effect.runPromise(Effect.provide(CA.compute(E.div(E.sub(X, [1, 2]), 4)), Executor.layerWorkers({ workers: 2 })))
    assert.deepEqual(Array.from(got.data as Float64Array), Array.from({ length: 2000 }, (_, i) => (i - (i % 2 === 0 ? 1 : 2)) / 4))
  })
})

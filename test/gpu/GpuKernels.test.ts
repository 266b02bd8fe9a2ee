import assert from "node:assert/strict"
import { after, describe, it } from "node:test"
import * as fc from "fast-check"
import * as Blobs from "../../src/kernels/blobs.ts"
import * as Chunk from "../../src/engine/Chunk.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as Cluster from "../../src/kernels/cluster.ts"
import * as Elementwise from "../../src/kernels/elementwise.ts"
import * as Moments from "../../src/kernels/moments.ts"
import { chunking, chunkOf, close, cpuKernel, gpuRuntime, skip } from "./gpu.ts"

const rt = skip === false ? gpuRuntime() : null
after(() => rt?.dispose())

/** Runs one task per chunk with `kernel` (routed to the GPU worker) and returns the results in order. */
const perChunk = async <A>(module: string, name: string, chunks: ReadonlyArray<Chunk.Chunk>, extra: ReadonlyArray<unknown>): Promise<Array<A>> => {
  const specs = chunks.map((c, i) => ({ key: `${name}-${i}`, kernel: cpuKernel(module, name), args: [c, ...extra] }))
  const workers = new Set<number>()
  const out = await rt!.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs), { callbacks: [{ posttask: (_k, _r, _g, _s, w) => workers.add(w) }] }))
  assert.deepEqual([...workers], [GPU_WORKER], "every task ran on the GPU worker")
  return specs.map((s) => out.get(s.key) as A)
}

/** The GPU worker's id: after the one CPU worker. */
const GPU_WORKER = 1

/** A matrix of `rows` x `d` values and chunks of it (random sizes). */
const matrixArb = (maxRows: number, maxD: number) =>
  fc.record({
    rows: fc.integer({ min: 1, max: maxRows }),
    d: fc.integer({ min: 1, max: maxD }),
    sizes: fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 4 }),
    seed: fc.integer({ min: 1, max: 2 ** 30 })
  }).map(({ rows, d, sizes, seed }) => {
    let s = seed
    const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32)
    const values = Float64Array.from({ length: rows * d }, () => (rand() - 0.5) * 20)
    const chunks = chunking(rows, sizes).map(([r, n]) => chunkOf(values.subarray(r * d, (r + n) * d), d === 1 ? [n] : [n, d]))
    return { rows, d, values, chunks }
  })

/** Blobs around well separated centers, so no row is near a tie between two centers. */
const blobsArb = fc.record({
  k: fc.integer({ min: 1, max: 6 }),
  d: fc.integer({ min: 1, max: 4 }),
  rows: fc.integer({ min: 1, max: 3000 }),
  sizes: fc.array(fc.integer({ min: 1, max: 900 }), { minLength: 1, maxLength: 3 }),
  seed: fc.integer({ min: 1, max: 2 ** 30 })
}).map(({ k, d, rows, sizes, seed }) => {
  let s = seed
  const rand = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32)
  const centers = Float64Array.from({ length: k * d }, (_, i) => Math.floor(i / d) * 40 + (i % d) * 7)
  const values = new Float64Array(rows * d)
  for (let r = 0; r < rows; r++) {
    const c = r % k
    for (let j = 0; j < d; j++) values[r * d + j] = centers[c * d + j]! + (rand() - 0.5) * 6 + 1
  }
  const chunks = chunking(rows, sizes).map(([r, n]) => chunkOf(values.subarray(r * d, (r + n) * d), [n, d]))
  return { k, d, rows, centers, chunks }
})

const specArb: fc.Arbitrary<Elementwise.ElementwiseSpec> = fc.oneof(
  fc.constantFrom<Elementwise.UnaryOp>("abs", "neg", "square", "sqrt", "exp", "log").map((op) => ({ _tag: "Unary", op, out: "float64" }) as const),
  fc.record({ op: fc.constantFrom<Elementwise.BinaryOp>("add", "sub", "mul", "div", "minimum", "maximum"), value: fc.double({ min: -5, max: 5, noNaN: true }) })
    // within float32's normal range (docs/gpu.md): a scalar near 0 is 0 in float32
    .map(({ op, value }) => ({ _tag: "Binary", op, operand: { _tag: "Scalar", value: Math.abs(value) < 1e-3 ? 1 : value }, out: "float64" }) as const),
  fc.tuple(fc.double({ min: -8, max: 0, noNaN: true }), fc.double({ min: 0, max: 8, noNaN: true })).map(([lo, hi]) => ({ _tag: "Clip", lo, hi, out: "float64" }) as const),
  fc.constant({ _tag: "AsType", out: "float32" } as const)
)

describe("GPU kernels agree with the CPU kernels within float32 tolerance", { skip }, () => {
  it("elementwise: unary, scalar, clip and astype over random shapes and chunkings", async () => {
    await fc.assert(
      fc.asyncProperty(matrixArb(2000, 4), specArb, async ({ chunks }, spec) => {
        // sqrt / log of negatives are NaN on both; exp of up to 10 stays finite in float32
        const gpu = await perChunk<Chunk.Chunk>("elementwise", "elementwise", chunks, [spec])
        chunks.forEach((c, i) => {
          const cpu = Elementwise.elementwise(c, spec)
          assert.equal(gpu[i]!.dtype, cpu.dtype)
          assert.deepEqual(gpu[i]!.shape, cpu.shape)
          for (let q = 0; q < cpu.data.length; q++) {
            const want = cpu.data[q] as number
            // sqrt / log of a negative: NaN on the CPU, indeterminate in WGSL (docs/gpu.md)
            if (Number.isNaN(want)) continue
            assert.ok(close(gpu[i]!.data[q] as number, want, Math.abs(want)), `${JSON.stringify(spec)} at ${q}: gpu ${gpu[i]!.data[q]} cpu ${want}`)
          }
        })
      }),
      { numRuns: 12 }
    )
  })

  it("elementwise: a row vector and a second array", async () => {
    await fc.assert(
      fc.asyncProperty(matrixArb(1500, 3), fc.constantFrom<Elementwise.BinaryOp>("add", "mul", "maximum"), async ({ chunks, d }, op) => {
        const row: Elementwise.ElementwiseSpec = { _tag: "Binary", op, operand: { _tag: "Row", values: Array.from({ length: d }, (_, j) => j + 0.5) }, out: "float64" }
        const arr: Elementwise.ElementwiseSpec = { _tag: "Binary", op, operand: { _tag: "Array", dtype: "float64" }, out: "float64" }
        const specs = chunks.flatMap((c, i) => [
          { key: `row-${i}`, kernel: cpuKernel("elementwise", "elementwise"), args: [c, row] },
          { key: `arr-${i}`, kernel: cpuKernel("elementwise", "elementwise"), args: [c, arr, c] }
        ])
        const out = await rt!.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs)))
        chunks.forEach((c, i) => {
          for (const [key, spec, other] of [[`row-${i}`, row, undefined], [`arr-${i}`, arr, c]] as const) {
            const cpu = Elementwise.elementwise(c, spec, other)
            const g = out.get(key) as Chunk.Chunk
            for (let q = 0; q < cpu.data.length; q++) assert.ok(close(g.data[q] as number, cpu.data[q] as number, Math.abs(cpu.data[q] as number)), key)
          }
        })
      }),
      { numRuns: 8 }
    )
  })

  it("momentsPartial (combined over chunks) and standardize", async () => {
    await fc.assert(
      fc.asyncProperty(matrixArb(4000, 4), fc.constantFrom<0 | null>(0, null), async ({ chunks }, axis) => {
        const gpu = Moments.momentsCombine(await perChunk<Moments.Moments>("moments", "momentsPartial", chunks, [axis]))
        const cpu = Moments.momentsCombine(chunks.map((c) => Moments.momentsPartial(c, axis)))
        assert.equal(gpu.count, cpu.count)
        for (let j = 0; j < cpu.mean.length; j++) {
          assert.ok(close(gpu.mean[j]!, cpu.mean[j]!, 10), `mean ${gpu.mean[j]} ${cpu.mean[j]}`)
          assert.ok(close(gpu.m2[j]! / gpu.count, cpu.m2[j]! / cpu.count, 100, 1e-4), `var ${gpu.m2[j]! / gpu.count} ${cpu.m2[j]! / cpu.count}`)
          assert.ok(close(gpu.min[j]!, cpu.min[j]!, 10) && close(gpu.max[j]!, cpu.max[j]!, 10))
        }
        if (axis === 0) {
          const z = await perChunk<Chunk.Chunk>("moments", "standardize", chunks, [cpu])
          chunks.forEach((c, i) => {
            const want = Moments.standardize(c, cpu)
            for (let q = 0; q < want.data.length; q++) assert.ok(close(z[i]!.data[q] as number, want.data[q] as number, 10), "standardize")
          })
        }
      }),
      { numRuns: 10 }
    )
  })

  it("lloydPartial and assign on separated blobs", async () => {
    await fc.assert(
      fc.asyncProperty(blobsArb, async ({ k, centers, chunks }) => {
        const parts = await perChunk<Cluster.Partial>("cluster", "lloydPartial", chunks, [centers, k])
        const labels = await perChunk<Chunk.Chunk>("cluster", "assign", chunks, [centers, k])
        chunks.forEach((c, i) => {
          const cpu = Cluster.lloydPartial(c, centers, k)
          const g = parts[i]!
          assert.equal(g.rows, cpu.rows)
          assert.deepEqual(Array.from(g.counts), Array.from(cpu.counts))
          for (let m = 0; m < cpu.sums.length; m++) assert.ok(close(g.sums[m]!, cpu.sums[m]!, 250 * cpu.rows), `sums ${g.sums[m]} ${cpu.sums[m]}`)
          assert.ok(close(g.error, cpu.error, 10 * cpu.rows, 1e-4), `error ${g.error} ${cpu.error}`)
          assert.deepEqual(Array.from(labels[i]!.data as Int32Array), Array.from(Cluster.assign(c, centers, k).data as Int32Array))
          assert.equal(labels[i]!.dtype, "int32")
        })
      }),
      { numRuns: 10 }
    )
  })

  it("assign picks a nearest center on random data (ties may go either way)", async () => {
    await fc.assert(
      fc.asyncProperty(matrixArb(1500, 3), fc.integer({ min: 1, max: 5 }), async ({ chunks, d }, k) => {
        const centers = Float64Array.from({ length: k * d }, (_, i) => ((i * 7919) % 23) - 11)
        const labels = await perChunk<Chunk.Chunk>("cluster", "assign", chunks, [centers, k])
        const dist = (x: Float64Array, r: number, c: number) => {
          let s = 0
          for (let j = 0; j < d; j++) s += (x[r * d + j]! - centers[c * d + j]!) ** 2
          return s
        }
        chunks.forEach((c, i) => {
          const cpu = Cluster.assign(c, centers, k).data as Int32Array
          const g = labels[i]!.data as Int32Array
          const x = c.data as Float64Array
          for (let r = 0; r < cpu.length; r++) assert.ok(close(dist(x, r, g[r]!), dist(x, r, cpu[r]!), dist(x, r, cpu[r]!) + 1, 1e-5), `row ${r}`)
        })
      }),
      { numRuns: 8 }
    )
  })

  it("blobsY: the same labels as the CPU kernel, however chunked", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          nSamples: fc.integer({ min: 1, max: 70000 }),
          k: fc.integer({ min: 1, max: 9 }),
          shuffle: fc.boolean(),
          seed: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
          sizes: fc.array(fc.integer({ min: 1, max: 30000 }), { minLength: 1, maxLength: 3 })
        }),
        async ({ nSamples, k, shuffle, seed, sizes }) => {
          const centers = Array.from({ length: k }, (_, c) => [c, -c])
          const opts = chunking(nSamples, sizes).map(([rowStart, rows]) => ({ nSamples, centers, clusterStd: 1, shuffle, randomState: seed, rowStart, rows }))
          const specs = opts.map((o, i) => ({ key: `labels-${i}`, kernel: cpuKernel("blobs", "blobsY"), args: [o] }))
          const ran = new Set<number>()
          const out = await rt!.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs), { callbacks: [{ posttask: (_k, _r, _g, _s, w) => ran.add(w) }] }))
          assert.deepEqual([...ran], [1], "on the GPU worker")
          opts.forEach((o, i) => {
            const g = out.get(`labels-${i}`) as Chunk.Chunk
            assert.equal(g.dtype, "int32")
            assert.deepEqual(g.data, Blobs.blobsY(o).data, `chunk at row ${o.rowStart}`)
          })
        }
      ),
      { numRuns: 10 }
    )
  })

  it("blobsX: the same center per row and coordinates within float32 rounding, however chunked", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          nSamples: fc.integer({ min: 1, max: 5000 }),
          k: fc.integer({ min: 1, max: 5 }),
          d: fc.integer({ min: 1, max: 5 }),
          std: fc.double({ min: 0, max: 3, noNaN: true }),
          shuffle: fc.boolean(),
          seed: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
          sizes: fc.array(fc.integer({ min: 1, max: 2000 }), { minLength: 1, maxLength: 3 })
        }),
        async ({ nSamples, k, d, std, shuffle, seed, sizes }) => {
          const centers = Array.from({ length: k }, (_, c) => Array.from({ length: d }, (_, j) => c * 30 - j * 4))
          const opts = chunking(nSamples, sizes).map(([rowStart, rows]) => ({ nSamples, centers, clusterStd: std, shuffle, randomState: seed, rowStart, rows }))
          const specs = opts.map((o, i) => ({ key: `blobs-${i}`, kernel: cpuKernel("blobs", "blobsX"), args: [o] }))
          const out = await rt!.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs)))
          opts.forEach((o, i) => {
            const cpu = Blobs.blobsX(o)
            const g = out.get(`blobs-${i}`) as Chunk.Chunk
            assert.deepEqual(g.shape, cpu.shape)
            for (let q = 0; q < cpu.data.length; q++) {
              const want = cpu.data[q] as number
              // |z| <= ~8.6 for 53-bit uniforms; float32 rounding of center + std * z
              assert.ok(close(g.data[q] as number, want, Math.abs(want) + std * 9, 2e-6 * 8), `row ${o.rowStart + Math.floor(q / d)}: gpu ${g.data[q]} cpu ${want}`)
            }
          })
        }
      ),
      { numRuns: 10 }
    )
  })

  it("somPartial (per best matching unit, spread over the neighbourhood)", async () => {
    await fc.assert(
      fc.asyncProperty(blobsArb, fc.integer({ min: 1, max: 3 }), fc.double({ min: 0, max: 2, noNaN: true }), async ({ k, d, centers, chunks }, gx, sigma) => {
        const gy = k
        const weights = Float64Array.from({ length: gx * gy * d }, (_, i) => centers[i % centers.length]! + Math.floor(i / centers.length))
        const parts = await perChunk<Cluster.Partial>("cluster", "somPartial", chunks, [weights, gx, gy, sigma])
        const nodes = gx * gy
        chunks.forEach((c, i) => {
          const cpu = Cluster.somPartial(c, weights, gx, gy, sigma)
          const g = parts[i]!
          // rows whose two nearest units are equally near within float32's precision may
          // pick either (80.5000009923 is 80.5 in float32, halfway between units at 80 and
          // 81): each such row moves a unit's count by at most 1 and its sums by at most |x|
          const x = c.data as Float64Array
          let ties = 0
          let maxAbs = 0
          for (let r = 0; r < cpu.rows; r++) {
            let d1 = Infinity
            let d2 = Infinity
            let norm = 1
            for (let j = 0; j < d; j++) (norm += x[r * d + j]! ** 2, maxAbs = Math.max(maxAbs, Math.abs(x[r * d + j]!)))
            for (let n = 0; n < nodes; n++) {
              let s = 0
              for (let j = 0; j < d; j++) s += (x[r * d + j]! - weights[n * d + j]!) ** 2
              if (s < d1) (d2 = d1, d1 = s)
              else if (s < d2) d2 = s
            }
            if (d2 - d1 <= 1e-5 * norm) ties++
          }
          for (let n = 0; n < cpu.counts.length; n++) {
            assert.ok(close(g.counts[n]!, cpu.counts[n]!, cpu.rows) || Math.abs(g.counts[n]! - cpu.counts[n]!) <= ties + 2e-5 * cpu.rows, `counts ${g.counts[n]} ${cpu.counts[n]} (${ties} near ties)`)
          }
          for (let m = 0; m < cpu.sums.length; m++) {
            assert.ok(close(g.sums[m]!, cpu.sums[m]!, 250 * cpu.rows) || Math.abs(g.sums[m]! - cpu.sums[m]!) <= ties * maxAbs + 2e-5 * 250 * cpu.rows, `sums ${g.sums[m]} ${cpu.sums[m]} (${ties} near ties)`)
          }
          assert.ok(close(g.error, cpu.error, 10 * cpu.rows, 1e-4), `error ${g.error} ${cpu.error}`)
        })
      }),
      // the counterexample that found the float32 tie (seed -109427397 in a CI rehearsal), cut down
      {
        numRuns: 8,
        examples: [[{ k: 3, d: 1, rows: 6, centers: Float64Array.from([0, 40, 80]), chunks: [chunkOf(Float64Array.from([1.7, 41.1, 82.1, 80.5000009923242, 40.4, 0.2]), [6, 1])] }, 2, 0]]
      }
    )
  })
})

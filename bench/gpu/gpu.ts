/**
 * GPU benchmark: the same work on the CPU worker threads and on a GPU worker (WebGPU
 * through Dawn; Mesa's llvmpipe where there is no GPU, which is itself a CPU renderer,
 * so there the point is correctness and the transfer accounting, not speed):
 *
 * - Lloyd: blobs made and normalized, then KMeans.fit with 1 and with 11 iterations;
 *   their difference over 10 is the time per iteration (start-up and the first
 *   iteration's compiles cancel out);
 * - the demo (DASF tutorial 5) end to end;
 * - per kernel (function name): tasks, mean and total task time, where it ran, and on
 *   the GPU its mean kernel time (`gpu_time`: timestamp queries where the adapter has
 *   them, else submit to completion); per direction: transfers, bytes and seconds (GPU
 *   only);
 * - the GPU worker's speed-up over the CPU workers per size (the goal on a real GPU:
 *   at least 10x for Lloyd on 10M rows).
 *
 * Runs unchanged on a machine with a real GPU (Dawn picks Vulkan / Metal / D3D12 there and
 * the adapter line says so). Usage:
 *   node bench/gpu/gpu.ts [--samples N[,N...]] [--workers N] [--gpus N] [--chunk-rows N] [--demo-samples N[,N...]|none] [--only cpu|gpu] [--json]
 * Defaults: 1M and 10M rows, 2 CPU workers (plus one GPU worker; `--gpus N` for one per
 * GPU), 200,000-row chunks, the demo on 1M rows.
 *
 * @since 0.1.0
 */
import { Effect, type Layer } from "effect"
import { compute, persist } from "../../src/dsl/ChunkedArray.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import * as KMeans from "../../src/dsl/KMeans.ts"
import * as Normalize from "../../src/dsl/Normalize.ts"
import type { TaskRecord, TransferRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Gpu from "../../src/engine/Gpu.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as GpuKernels from "../../src/kernels/gpu/GpuKernels.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1]! : def
}
const sizes = arg("--samples", "1000000,10000000").split(",").map(Number)
const demoSizes = arg("--demo-samples", "1000000") === "none" ? [] : arg("--demo-samples", "1000000").split(",").map(Number)
const workers = Number(arg("--workers", "2"))
const gpus = Number(arg("--gpus", "1"))
const chunkRows = Number(arg("--chunk-rows", "200000"))
const only = arg("--only", "")
const json = process.argv.includes("--json")
const centers = [[-6, -6], [0, 0], [9, 1]]
const now = () => performance.now() / 1000

interface Kernels {
  readonly tasks: Map<string, { n: number; seconds: number; gpuSeconds: number; worker: Set<number> }>
  readonly transfers: Map<string, { n: number; bytes: number; seconds: number }>
}
const collect = (): Kernels & { cb: Hooks.Callbacks } => {
  const tasks: Kernels["tasks"] = new Map()
  const transfers: Kernels["transfers"] = new Map()
  return {
    tasks,
    transfers,
    cb: {
      task: (r: TaskRecord) => {
        const t = tasks.get(r.name) ?? { n: 0, seconds: 0, gpuSeconds: 0, worker: new Set() }
        t.n++
        t.seconds += r.phases.transfer[1] - r.phases.gather[0]
        t.gpuSeconds += r.gpuTime ?? 0
        t.worker.add(r.workerId)
        tasks.set(r.name, t)
      },
      transfer: (r: TransferRecord) => {
        const way = r.direction ?? "peer"
        const t = transfers.get(way) ?? { n: 0, bytes: 0, seconds: 0 }
        t.n++
        t.bytes += r.bytes
        t.seconds += r.stop - r.start
        transfers.set(way, t)
      }
    }
  }
}

/** Lloyd per iteration on `n` rows, with the kernels' times of the 11-iteration fit. */
const lloyd = (n: number) =>
  Effect.gen(function*() {
    const t0 = now()
    const { X } = makeBlobs({ nSamples: n, centers, chunks: chunkRows, randomState: 42 })
    const Xp = yield* persist(X)
    const scaled = yield* Normalize.fitTransform(Xp)
    const Xn = yield* persist(scaled.X)
    const prepared = now() - t0
    yield* KMeans.fit(Xn, { nClusters: 3, maxIter: 2, tol: 0, randomState: 1 }) // warm-up: pipelines, JIT
    const t1 = now()
    yield* KMeans.fit(Xn, { nClusters: 3, maxIter: 1, tol: 0, randomState: 1 })
    const t2 = now()
    const k = collect()
    const model = yield* Hooks.provide(k.cb)(KMeans.fit(Xn, { nClusters: 3, maxIter: 11, tol: 0, randomState: 1 }))
    const t3 = now()
    const check = (yield* compute(Xn)).data.length
    return { prepared, perIteration: ((t3 - t2) - (t2 - t1)) / 10, kernels: k, centers: Array.from(model.centers).map((v) => +v.toFixed(4)), rows: check / 2 }
  })

const demo = (n: number) =>
  Effect.gen(function*() {
    const k = collect()
    const t0 = now()
    const r = yield* Hooks.provide(k.cb)(Tutorial5.run({ samples: n, chunkRows, log: () => {} }))
    return { seconds: now() - t0, kernels: k, ari: r.summary.kmeans.ari }
  })

const ms = (s: number) => +(s * 1e3).toFixed(2)
const kernelRows = (label: string, k: Kernels, gpuWorker: number) =>
  [...k.tasks].sort((a, b) => b[1].seconds - a[1].seconds).map(([name, t]) => ({
    run: label,
    kernel: name,
    on: [...t.worker].every((w) => w >= gpuWorker) ? "GPU" : [...t.worker].some((w) => w >= gpuWorker) ? "both" : "CPU",
    tasks: t.n,
    "mean ms": ms(t.seconds / t.n),
    "gpu mean ms": t.gpuSeconds > 0 ? ms(t.gpuSeconds / t.n) : "",
    "total s": +t.seconds.toFixed(3)
  }))

const results: Array<Record<string, unknown>> = []
const perKernel: Array<Record<string, unknown>> = []
/** every GPU worker on a software rasteriser (llvmpipe): no speed goal applies */
let software = false
const transfers: Array<Record<string, unknown>> = []
const kinds: ReadonlyArray<readonly [string, Layer.Layer<Executor.Executor, unknown>]> = [
  ["cpu", Executor.layerWorkers({ workers })],
  ["gpu", Executor.layerGpu({ workers, gpus, kernels: GpuKernels.kernels })]
]
for (const [kind, layer] of kinds) {
  if (only !== "" && only !== kind) continue
  const program = Effect.gen(function*() {
    const ex = yield* Effect.service(Executor.Executor)
    if (kind === "gpu") software = ex.gpus!.every((g) => g.info.software)
    const label = kind === "cpu" ? `${workers} CPU workers` : `${workers} CPU workers + ${gpus} GPU worker(s) (${ex.gpus!.map((g) => Gpu.describe(g.info)).join("; ")})`
    console.error(`# ${label}`)
    for (const n of sizes) {
      const r = yield* lloyd(n)
      results.push({ executor: kind, rows: n, "prepare s": +r.prepared.toFixed(3), "lloyd ms/iter": ms(r.perIteration), centers: r.centers.join(" ") })
      perKernel.push(...kernelRows(`${kind} lloyd ${n}`, r.kernels, workers))
      for (const [d, t] of r.kernels.transfers) transfers.push({ run: `${kind} lloyd ${n}`, direction: d, transfers: t.n, MB: +(t.bytes / 1e6).toFixed(2), "total s": +t.seconds.toFixed(3) })
    }
    for (const n of demoSizes) {
      const d = yield* demo(n)
      results.push({ executor: kind, rows: n, "demo s": +d.seconds.toFixed(2), "demo ARI": +d.ari.toFixed(4) })
      perKernel.push(...kernelRows(`${kind} demo ${n}`, d.kernels, workers))
      for (const [dir, t] of d.kernels.transfers) transfers.push({ run: `${kind} demo ${n}`, direction: dir, transfers: t.n, MB: +(t.bytes / 1e6).toFixed(2), "total s": +t.seconds.toFixed(3) })
    }
  })
  await Effect.runPromise(Effect.provide(program, layer) as Effect.Effect<void, unknown>)
}
/** GPU over CPU per size and measure (how many times faster the GPU run was); the goal is a real GPU's. */
const goal = (ratio: number) => software ? "n/a (software adapter)" : ratio >= 10 ? "met (>= 10x)" : "not met (< 10x)"
const speedups = [...new Set(sizes.concat(demoSizes))].flatMap((n) =>
  (["lloyd ms/iter", "demo s"] as const).flatMap((m) => {
    const of = (kind: string) => results.find((r) => r.executor === kind && r.rows === n && typeof r[m] === "number")?.[m] as number | undefined
    const c = of("cpu")
    const g = of("gpu")
    return c === undefined || g === undefined ? [] : [{ rows: n, measure: m, cpu: c, gpu: g, "GPU speed-up": +(c / g).toFixed(2), "goal (10M rows, real GPU)": m === "lloyd ms/iter" && n >= 1e7 ? goal(c / g) : "" }]
  })
)
if (json) console.log(JSON.stringify({ results, perKernel, transfers, speedups }))
else {
  console.log(`chunks of ${chunkRows} rows; ${workers} CPU worker threads in both runs`)
  console.table(results)
  console.table(perKernel)
  console.table(transfers)
  console.table(speedups)
}

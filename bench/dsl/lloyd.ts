/**
 * Lloyd benchmark: normalize + 10 Lloyd iterations over makeBlobs data in 5,000-row chunks on
 * the worker-thread executor, per-iteration time next to a single-threaded plain typed-array
 * Lloyd loop measured in the same run, and numpy / dask.array via /usr/bin/python3 when
 * importable (skipped with a message otherwise). Also the demo's wall time.
 * Usage: node bench/dsl/lloyd.ts [--samples N[,N...]] [--workers N] [--json]
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { Effect } from "effect"
import * as Executor from "../../src/engine/Executor.ts"
import { makeBlobs } from "../../src/dsl/Datasets.ts"
import * as KMeans from "../../src/dsl/KMeans.ts"
import * as Normalize from "../../src/dsl/Normalize.ts"
import { compute, persist } from "../../src/dsl/ChunkedArray.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1]! : def
}
const sizes = arg("--samples", "100000,1000000").split(",").map(Number)
const workers = Number(arg("--workers", "2"))
const json = process.argv.includes("--json")
const centers = [[-6, -6], [0, 0], [9, 1]]
const now = () => performance.now() / 1000

// Baseline: plain single-threaded Lloyd over one Float64Array (hot loop kept imperative on purpose).
const lloydPlain = (x: Float64Array, c: Float64Array, k: number): Float64Array => {
  const sums = new Float64Array(k * 2)
  const counts = new Float64Array(k)
  for (let i = 0; i < x.length; i += 2) {
    const a = x[i]!, b = x[i + 1]!
    let best = 0, bd = Infinity
    for (let j = 0; j < k; j++) {
      const d = (a - c[2 * j]!) ** 2 + (b - c[2 * j + 1]!) ** 2
      if (d < bd) { bd = d; best = j }
    }
    sums[2 * best] += a; sums[2 * best + 1] += b; counts[best]++
  }
  for (let j = 0; j < k; j++) { sums[2 * j] /= counts[j]!; sums[2 * j + 1] /= counts[j]! }
  return sums
}

const py = `
import sys, time
n = int(sys.argv[1])
import numpy as np
rng = np.random.default_rng(42)
C = np.array([[-6,-6],[0,0],[9,1]], float)
X = C[rng.integers(0,3,n)] + rng.standard_normal((n,2))
def lloyd(xp, X, c, iters):
    for _ in range(iters):
        d = ((X[:, None, :] - c[None, :, :]) ** 2).sum(-1)
        l = d.argmin(1)
        c = np.stack([xp.where((l == j)[:, None], X, 0).sum(0) / (l == j).sum() for j in range(3)])
        c = np.asarray(c.compute() if hasattr(c, "compute") else c)
    return c
t = time.perf_counter(); Xn = (X - X.mean(0)) / X.std(0); lloyd(np, Xn, Xn[:3].copy(), 10); out = {"numpy": (time.perf_counter() - t) / 10}
try:
    import dask.array as da
    Xd = da.from_array(X, chunks=(5000, 2))
    t = time.perf_counter(); Xdn = ((Xd - Xd.mean(0)) / Xd.std(0)).persist(); lloyd(da, Xdn, np.asarray(Xdn[:3]), 10); out["dask"] = (time.perf_counter() - t) / 10
except ImportError as e:
    out["dask"] = "skipped: " + str(e)
import json; print(json.dumps(out))
`
const python = (n: number): Record<string, number | string> => {
  try {
    return JSON.parse(execFileSync("/usr/bin/python3", ["-c", py, String(n)], { encoding: "utf8" }))
  } catch (e) {
    return { numpy: `skipped: ${(e as Error).message.split("\n")[0]}`, dask: "skipped" }
  }
}

const rows: Array<Record<string, unknown>> = []
const program = Effect.gen(function*() {
  for (const n of sizes) {
    const t0 = now()
    yield* Tutorial5.run({ samples: n, chunkRows: 5_000, log: () => {} })
    const demo = now() - t0
    const { X } = makeBlobs({ nSamples: n, centers, chunks: 5_000, randomState: 42 })
    const Xp = yield* persist(X)
    const t1 = now()
    const scaled = yield* Normalize.fitTransform(Xp)
    const Xn = yield* persist(scaled.X)
    const t2w = now()
    yield* KMeans.fit(Xn, { nClusters: 3, maxIter: 11, tol: 0, randomState: 1 }) // warm-up (JIT, worker module cache)
    const t2 = now()
    yield* KMeans.fit(Xn, { nClusters: 3, maxIter: 1, tol: 0, randomState: 1 })
    const t3 = now()
    yield* KMeans.fit(Xn, { nClusters: 3, maxIter: 11, tol: 0, randomState: 1 })
    const t4 = now()
    const tessera = ((t4 - t3) - (t3 - t2)) / 10
    const flat = (yield* compute(Xn)).data as Float64Array
    let c: Float64Array<ArrayBufferLike> = flat.slice(0, 6)
    const t5 = now()
    for (let i = 0; i < 10; i++) c = lloydPlain(flat, c, 3)
    const plain = (now() - t5) / 10
    const p = python(n)
    rows.push({ samples: n, workers, "demo wall s": +demo.toFixed(3), "normalize s": +(t2w - t1).toFixed(4), "tessera ms/iter": +(tessera * 1e3).toFixed(2), "plain TS 1-thread ms/iter": +(plain * 1e3).toFixed(2), "numpy ms/iter": typeof p.numpy === "number" ? +(p.numpy * 1e3).toFixed(2) : p.numpy, "dask ms/iter": typeof p.dask === "number" ? +(p.dask * 1e3).toFixed(2) : p.dask })
  }
})
await Effect.runPromise(Effect.provide(program, Executor.layerWorkers({ workers })))
if (json) console.log(JSON.stringify(rows))
else console.table(rows)

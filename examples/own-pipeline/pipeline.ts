// A pipeline of your own (docs/dsl.md, "A pipeline of your own"): a .npy file, a kernel
// module, stages of your own (a per-chunk kernel, a tree reduction), then Normalize
// and KMeans. Run it, profiled, with a report:
//   node examples/own-pipeline/make-data.ts own.npy
//   npm run tessera -- run examples/own-pipeline/pipeline.ts --profile own --report own.html
import { Effect } from "effect"
import { ChunkedArray, DatasetArray, Estimators, Kernel, Pipeline } from "tessera"
import * as NodeDatasetSource from "tessera/kernels/io/NodeDatasetSource"

// the kernel module, named once; a misspelt kernel is a compile error
const K = Kernel.module<typeof import("./kernels.ts")>(new URL("./kernels.ts", import.meta.url))

type Input = { readonly X: ChunkedArray.ChunkedArray<"float64"> }

// a stage: a name, and a function from its inputs to an Effect (run on the pipeline's executor)
const signedLog = Pipeline.stage("signedLog", ({ X }: Input) =>
  ChunkedArray.persist(
    ChunkedArray.mapBlocks(X, { name: "signed_log", kernel: K.signedLog, extra: [1], dtype: "float64", columns: X.shape[1] })
  ))

// a tree reduction: absMax on every chunk, absMaxCombine over at most 8 results at a time
const absMax = Pipeline.stage("absMax", ({ X }: Input) =>
  ChunkedArray.computeDelayed(
    ChunkedArray.treeReduce<Float64Array>(X, { name: "abs_max", partial: K.absMax, combine: K.absMaxCombine })
  ))

// `tessera run` calls the default export and runs the pipeline it returns
export default async () => {
  // describe the file first (dtype, shape): DatasetArray needs a DatasetSource; a stage only an Executor
  const X = await Effect.runPromise(
    DatasetArray.make(process.env.OWN_DATA ?? "own.npy", { chunks: 10_000, dtype: "float64" }).pipe(
      Effect.provide(NodeDatasetSource.layer)
    )
  )
  const p = Pipeline.make("own")
  const logged = p.add(signedLog, { X })
  p.add(absMax, { X: logged })
  const scaled = p.add(new Estimators.Normalize().transform, { X: logged })
  const labels = p.add(new Estimators.KMeans({ nClusters: 3, randomState: 0 }).fitPredict, { X: scaled })
  p.add(Estimators.Persist<"int32">("Persist.labels"), { X: labels }) // KMeans's labels are lazy: compute and keep them
  return p
}

// What the gallery's pipelines share: the kernel module, a dataset of chunks made by
// tasks (any chunk sizes), and a per-chunk stage. Each fault file builds one small
// pipeline with one fault in it; `tessera run examples/faults/<fault>.ts --profile F`
// then `tessera diagnose -d F-*.msgpack` shows the finding (docs/diagnosis.md).
import { Effect } from "effect"
import * as ChunkedArray from "../../src/dsl/ChunkedArray.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import * as Kernel from "../../src/engine/Kernel.ts"

/** The gallery's kernels, by name. */
export const K = Kernel.module<typeof import("./kernels.ts")>(new URL("./kernels.ts", import.meta.url))

type Kernels = typeof K

/** A float64 dataset of `chunkRows.length` chunks made by `kernel(i, rows, columns, ...extra)`. */
export const dataset = (
  name: string,
  chunkRows: ReadonlyArray<number>,
  columns: number,
  kernel: Kernels["fill"] | Kernels["fillOrSleep"] | Kernels["fillAndWork"] = K.fill,
  extra: ReadonlyArray<unknown> = []
): ChunkedArray.ChunkedArray<"float64"> =>
  ChunkedArray.fromTasks({
    name,
    dtype: "float64",
    shape: [chunkRows.reduce((a, b) => a + b, 0), columns],
    chunkRows,
    kernel,
    args: (i, _start, rows) => [i, rows, columns, ...extra]
  })

/** `n` chunks of `rows` rows. */
export const even = (n: number, rows: number): Array<number> => Array.from({ length: n }, () => rows)

type Input = { readonly X: ChunkedArray.ChunkedArray<"float64"> }

/** A stage that maps every chunk through `kernel` (with `extra`) and keeps the result. */
export const perChunk = (name: string, kernel: Kernel.KernelRef, extra: ReadonlyArray<unknown> = []) =>
  Pipeline.stage(name, ({ X }: Input) =>
    ChunkedArray.persist(ChunkedArray.mapBlocks(X, { name, kernel, extra, dtype: "float64", columns: X.shape[1] })))

/** A stage that sums the array (a tree of partial sums), so its chunks are computed. */
export const sum = (name: string) =>
  Pipeline.stage(name, ({ X }: Input) =>
    ChunkedArray.computeDelayed(ChunkedArray.treeReduce<number>(X, { name, partial: K.total, combine: K.addAll })))

/** A pipeline of one dataset and the stages given, each reading the previous one's output. */
export const chain = (
  name: string,
  X: ChunkedArray.ChunkedArray<"float64">,
  stages: ReadonlyArray<Pipeline.Stage<Input, ChunkedArray.ChunkedArray<"float64">, unknown>>,
  options: { readonly log?: (line: string) => void } = {}
) => {
  const p = Pipeline.make(name, options.log === undefined ? {} : { log: options.log })
  let x: Pipeline.Node<ChunkedArray.ChunkedArray<"float64">> | ChunkedArray.ChunkedArray<"float64"> = X
  for (const s of stages) x = p.add(s, { X: x } as never)
  p.add(sum("sum"), { X: x } as never)
  return p
}

export { Effect }

// Fault: driver bound. A loop of 60 small computes, each waiting for the last one's
// result (a convergence loop written one compute per step), around tasks of a few
// hundred microseconds. Expected: driver-bound (or scheduling-latency with it).
import * as ChunkedArray from "../../src/dsl/ChunkedArray.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import { dataset, Effect, even, K } from "./common.ts"

const loop = Pipeline.stage("loop", ({ X }: { readonly X: ChunkedArray.ChunkedArray<"float64"> }) =>
  Effect.gen(function*() {
    let x = yield* ChunkedArray.persist(X)
    let total = 0
    for (let step = 0; step < 60; step++) {
      x = yield* ChunkedArray.persist(ChunkedArray.mapBlocks(x, { name: "step", kernel: K.scale, extra: [0.999], dtype: "float64", columns: 2 }))
      total = yield* ChunkedArray.computeDelayed(ChunkedArray.treeReduce<number>(x, { name: "check", partial: K.total, combine: K.addAll }))
    }
    return total
  }))

export default (o: { log?: (line: string) => void } = {}) => {
  const p = Pipeline.make("many-computes", o.log === undefined ? {} : { log: o.log })
  p.add(loop, { X: dataset("loop_X", even(2, 500), 2) })
  return p
}

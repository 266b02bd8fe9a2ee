// Fault: host-device copies. A chain of 6 steps on 8 chunks of 65,536 × 4 numbers,
// alternating a GPU kernel (×2, elementwise) and a CPU kernel (+0 through the gallery's
// `scale`): every GPU step uploads its input and reads its result back for the CPU step,
// where keeping the chain on the device (GPU kernels only) would copy once in and once
// out. The steps stay lazy: one graph, computed by the sum. Needs a GPU executor (`tessera run … --gpu`; Mesa's llvmpipe does, docs/gpu.md).
// Expected: host-device-copies.
import * as ChunkedArray from "../../src/dsl/ChunkedArray.ts"
import * as Elementwise from "../../src/dsl/Elementwise.ts"
import * as Pipeline from "../../src/dsl/Pipeline.ts"
import { dataset, Effect, even, K, sum } from "./common.ts"

type X = { readonly X: ChunkedArray.ChunkedArray<"float64"> }

export default (o: { log?: (line: string) => void } = {}) => {
  const p = Pipeline.make("gpu-readback", o.log === undefined ? {} : { log: o.log })
  let x: Pipeline.Node<ChunkedArray.ChunkedArray<"float64">> | ChunkedArray.ChunkedArray<"float64"> = dataset("gpu_X", even(8, 65_536), 4)
  for (let step = 0; step < 3; step++) {
    const gpu = Pipeline.stage(`doubled${step}`, ({ X }: X) => Effect.succeed(Elementwise.mul(X, 2, { stage: `doubled${step}` }) as ChunkedArray.ChunkedArray<"float64">))
    const cpu = Pipeline.stage(`copied${step}`, ({ X }: X) =>
      Effect.succeed(ChunkedArray.mapBlocks(X, { name: `copied${step}`, kernel: K.scale, extra: [1], dtype: "float64", columns: X.shape[1] })))
    x = p.add(cpu, { X: p.add(gpu, { X: x } as never) } as never)
  }
  p.add(sum("sum"), { X: x } as never)
  return p
}

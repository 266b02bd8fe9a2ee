/**
 * `--gpu` of `tessera demo` and `tessera run`: the executor the command runs on, the
 * worker threads alone or with a GPU worker (`Executor.layerGpu` with Tessera's GPU
 * kernels, docs/gpu.md), and one line per GPU worker naming its adapter. The GPU modules
 * load only with `--gpu`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Flag } from "effect/cli"
import type { GpuUnavailable, WorkerCountRefused } from "../engine/EngineError.ts"
import type * as ExecutorModule from "../engine/Executor.ts"
import { withDefaultShown } from "./flags.ts"

/**
 * `--gpu`: run tasks that have a GPU kernel on a GPU worker (WebGPU; llvmpipe where there is no GPU).
 *
 * @since 0.1.0
 * @category cli
 */
export const gpuFlag: Flag.Flag<boolean> = Flag.Boolean("gpu").pipe(
  withDefaultShown("add a GPU worker (WebGPU through Dawn) for the kernels that have a GPU version", false)
)

/**
 * The executor of a command: `workers` worker threads, plus a GPU worker with `gpu`
 * (`log` gets one line per GPU worker naming its adapter).
 *
 * @since 0.1.0
 * @category layers
 */
export const executorLayer = (
  Executor: typeof ExecutorModule,
  c: { readonly workers: number; readonly gpu: boolean },
  log: (line: string) => void
): Layer.Layer<ExecutorModule.Executor, GpuUnavailable | WorkerCountRefused> =>
  !c.gpu
    ? Executor.layerWorkers({ workers: c.workers })
    : Layer.effect(
      Executor.Executor,
      Effect.gen(function*() {
        const [GpuKernels, Gpu] = yield* Effect.promise(() => Promise.all([import("../kernels/gpu/GpuKernels.ts"), import("../engine/Gpu.ts")]))
        const ex = yield* Executor.makeGpu({ workers: c.workers, kernels: GpuKernels.kernels })
        for (const g of ex.gpus ?? []) log(`GPU worker ${g.worker}: ${Gpu.describe(g.info)}`)
        return ex
      })
    )

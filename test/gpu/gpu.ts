/**
 * Shared by the GPU tests: whether this machine has a WebGPU adapter at all (the tests
 * skip with that one-line reason where it has none), one GPU executor for a test file,
 * and the CPU kernels' refs the graphs name.
 */
import { ManagedRuntime } from "effect"
import * as Chunk from "../../src/engine/Chunk.ts"
import type * as EngineError from "../../src/engine/EngineError.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Gpu from "../../src/engine/Gpu.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as GpuKernels from "../../src/kernels/gpu/GpuKernels.ts"

const probe = await Gpu.open()

/** Why the GPU tests skip here (false: they run). */
export const skip: string | false = probe.device === null ? `no WebGPU adapter on this machine (${probe.why})` : false
if (probe.device !== null) probe.device.destroy()

/** A GPU executor (1 CPU worker + 1 GPU worker) for a test file; dispose it in `after`. */
export const gpuRuntime = (options: Partial<Executor.GpuWorkersOptions> = {}): ManagedRuntime.ManagedRuntime<Executor.Executor, EngineError.GpuUnavailable | EngineError.WorkerCountRefused> =>
  ManagedRuntime.make(Executor.layerGpu({ workers: 1, kernels: GpuKernels.kernels, ...options }))

/** A CPU kernel of Tessera's, as the DSL names it. */
export const cpuKernel = (module: string, name: string): Kernel.KernelRef =>
  Kernel.ref(new URL(`../../src/kernels/${module}.ts`, import.meta.url).href, name)

/** A float64 chunk in shared memory. */
export const chunkOf = (values: ArrayLike<number>, shape: ReadonlyArray<number>): Chunk.Chunk => {
  const c = Chunk.allocShared("float64", shape)
  ;(c.data as Float64Array).set(values)
  return c
}

/** Splits `rows` into chunks of the given sizes (cycled), the last one shorter. */
export const chunking = (rows: number, sizes: ReadonlyArray<number>): Array<readonly [start: number, rows: number]> => {
  const out: Array<readonly [number, number]> = []
  for (let r = 0, q = 0; r < rows; q++) {
    const n = Math.min(sizes[q % sizes.length]!, rows - r)
    out.push([r, n])
    r += n
  }
  return out
}

/**
 * float32 tolerance: `|gpu - cpu| <= rel * scale`, where `scale` is the magnitude the
 * result was computed from (1 at least).
 */
export const close = (gpu: number, cpu: number, scale: number, rel = 2e-5): boolean =>
  (Number.isNaN(gpu) && Number.isNaN(cpu)) || gpu === cpu || Math.abs(gpu - cpu) <= rel * Math.max(1, scale)

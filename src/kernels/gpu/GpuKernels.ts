/**
 * Tessera's GPU kernels: each pairs a CPU kernel (`kernels/<module>.ts`) with its WGSL
 * version (`kernels/gpu/<module>.ts`, same export name), as `Executor.layerGpu` takes
 * them. Loading this module loads neither: it only names them.
 *
 * @since 0.1.0
 */
import * as Kernel from "../../engine/Kernel.ts"

/**
 * The kernels with a GPU version, by module.
 *
 * @since 0.1.0
 * @category constants
 */
export const names: Readonly<Record<string, ReadonlyArray<string>>> = {
  blobs: ["blobsX", "blobsY"],
  elementwise: ["elementwise"],
  moments: ["momentsPartial", "standardize"],
  cluster: ["lloydPartial", "assign", "somPartial"]
}

/**
 * [CPU kernel, GPU kernel] pairs for `Executor.layerGpu({ kernels })`.
 *
 * @since 0.1.0
 * @category constants
 */
export const kernels: ReadonlyArray<readonly [Kernel.KernelRef, Kernel.KernelRef]> = Object.entries(names).flatMap(([module, list]) =>
  list.map((name) =>
    [
      Kernel.ref(Kernel.sibling(import.meta.url, `../${module}`).href, name),
      Kernel.ref(Kernel.sibling(import.meta.url, `./${module}`).href, name)
    ] as const
  )
)

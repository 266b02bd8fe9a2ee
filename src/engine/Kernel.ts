/**
 * Kernel references. A kernel is a plain exported function `(...args) => value |
 * Promise<value>` in an ES module; tasks name it by module URL + export name so a
 * worker thread can import it. Closures never cross threads.
 *
 * @since 0.1.0
 */

/**
 * Where a kernel lives: a module URL (normally `import.meta.url` of the defining module)
 * and the export name.
 *
 * @since 0.1.0
 * @category models
 */
export interface KernelRef {
  readonly module: string
  readonly name: string
}

/**
 * Any function usable as a kernel.
 *
 * @since 0.1.0
 * @category models
 */
export type KernelFn = (...args: ReadonlyArray<any>) => unknown

/**
 * Names the export `name` of the module at `module` (a file URL, e.g. `import.meta.url`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const ref = (module: string, name: string): KernelRef => ({ module, name })

/**
 * The URL of a module next to `base` (normally `import.meta.url`), given without its
 * extension: `.ts` when `base` is a TypeScript source run directly (development), `.js`
 * when it is the compiled package (`dist/`). Worker entry points and Tessera's own
 * kernel modules are found this way, so both layouts work unchanged.
 *
 * @example
 * ```ts
 * Kernel.sibling(import.meta.url, "../kernels/elementwise") // file:///…/kernels/elementwise.ts (or .js)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const sibling = (base: string, relative: string): URL =>
  new URL(relative + (base.endsWith(".ts") ? ".ts" : ".js"), base)

/**
 * A stable identifier `module#name`, used to intern kernel refs.
 *
 * @since 0.1.0
 * @category getters
 */
export const id = (k: KernelRef): string => `${k.module}#${k.name}`

/**
 * Human-readable kernel name for errors: `name (module)`.
 *
 * @since 0.1.0
 * @category getters
 */
export const describe = (k: KernelRef): string => `${k.name} (${k.module})`

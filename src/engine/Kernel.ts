/**
 * Kernel references. A kernel is a plain exported function `(...args) => value |
 * Promise<value>` in an ES module; tasks name it by module URL + export name so a
 * worker thread can import it. Closures never cross threads. `module` names a kernel
 * module once and gives its kernels by export name (typed by the module's type);
 * `ref` names one. What a kernel gets and returns: docs/dsl.md, "A pipeline of your own".
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

/**
 * The kernels of one module, by export name: every export of `M` that is a function is
 * a `KernelRef`; any other name is a compile error.
 *
 * @since 0.1.0
 * @category models
 */
export type KernelModule<M> = {
  readonly [K in keyof M as K extends string ? M[K] extends KernelFn ? K : never : never]: KernelRef
}

const moduleUrl = (url: string | URL): string => {
  if (url instanceof URL) return url.href
  if (typeof url !== "string" || !URL.canParse(url)) {
    throw new TypeError(
      `Kernel.module: ${JSON.stringify(url)} is not a URL; name the module as new URL("./kernels.ts", import.meta.url) ` +
        `(or import.meta.url inside it), which worker threads can import`
    )
  }
  return new URL(url).href
}

/**
 * Names a kernel module once and gives its kernels by export name: `K.signedLog` is
 * `ref(url, "signedLog")`. The type argument is the module's type, so a misspelt
 * export is a compile error and only function exports are kernels:
 *
 * ```ts
 * const K = Kernel.module<typeof import("./kernels.ts")>(new URL("./kernels.ts", import.meta.url))
 * ChunkedArray.mapBlocks(X, { name: "signedLog", kernel: K.signedLog, dtype: "float64", columns: 2 })
 * ```
 *
 * The module is never imported here (worker threads import it), so the driver loads
 * none of its code. Without a type argument, pass the names instead:
 * `Kernel.module(url, ["signedLog", "absMax"])` returns exactly those refs. `url` is a
 * `URL` or an absolute URL string (a path is refused: a worker would resolve it against
 * its own directory); refs are interned, so `K.f === K.f`.
 *
 * @since 0.1.0
 * @category constructors
 */
export function module<M>(url: string | URL): KernelModule<M>
export function module<const Names extends string>(url: string | URL, names: ReadonlyArray<Names>): { readonly [K in Names]: KernelRef }
export function module(url: string | URL, names?: ReadonlyArray<string>): Record<string, KernelRef> {
  const href = moduleUrl(url)
  if (names !== undefined) {
    const out: Record<string, KernelRef> = Object.create(null)
    for (const name of names) {
      if (typeof name !== "string" || name === "") throw new TypeError(`Kernel.module(${href}): kernel names must be non-empty strings, got ${JSON.stringify(name)}`)
      out[name] = Object.freeze(ref(href, name))
    }
    return Object.freeze(out)
  }
  const refs = new Map<string, KernelRef>()
  // util.inspect reads a proxy's target, not through `get`
  const target = Object.create(null, { [Symbol.for("nodejs.util.inspect.custom")]: { value: () => `Kernel.module(${href})` } })
  return new Proxy(target as Record<string, KernelRef>, {
    get: (t, name) => {
      // symbols, and `then` (so awaiting the module object does not take it for a promise)
      if (typeof name !== "string") return t[name as unknown as string]
      if (name === "then") return undefined
      let r = refs.get(name)
      if (r === undefined) refs.set(name, r = Object.freeze(ref(href, name)))
      return r
    },
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false
  })
}

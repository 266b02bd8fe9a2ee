/**
 * How a `tessera run` file finds Tessera wherever it lives: a module resolve hook
 * (`module.registerHooks`, Node 24), registered by `tessera run` before it imports the
 * file, on the driver's thread (and by `analyze -a` / `report --analysis` before they
 * import a user analysis module).
 *
 * - `"tessera"` and `"tessera/<layer>/<Module>"` resolve to this command's own package:
 *   the `src/` tree (`.ts`) when the command runs from the checkout's sources, the
 *   compiled `dist/src/` tree (`.js`) when it runs from the package. So a file in the
 *   checkout needs no `npm run build`, a file in any folder (no package.json, no
 *   node_modules) imports the Tessera that runs it, and the pipeline the file makes is
 *   one of this Tessera's (`instanceof Pipeline` holds). `tessera/<layer>/internal/*`
 *   is not mapped: Node refuses it as the package's `exports` do.
 * - a bare specifier the file's folder cannot resolve (`effect`, `apache-arrow`) is
 *   resolved again from Tessera's own folder, so it finds the packages Tessera itself
 *   runs with (the same instances).
 *
 * Leaves out: worker threads. Kernel modules are imported by the workers, where Node's
 * own rules apply (hooks are per thread): a kernel module imports Tessera by relative
 * path, through a project that has `tessera` installed, or not at all (docs/dsl.md).
 *
 * @since 0.1.0
 */
import { existsSync } from "node:fs"
import { registerHooks } from "node:module"

/** `src/` (from the sources) or `dist/src/` (compiled): the folder above `cli/`. */
const root = new URL("../", import.meta.url)
const ext = import.meta.url.endsWith(".ts") ? ".ts" : ".js"

/** A specifier Node resolves from node_modules: not relative, absolute, a URL or a builtin. */
const isBare = (s: string): boolean => !/^(\.{1,2}\/|\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(s) && s !== "." && s !== ".."

/**
 * The URL `"tessera"` or `"tessera/..."` stands for in this package, or undefined for
 * a specifier that is not Tessera's, or names an internal module or no module.
 *
 * @since 0.1.0
 * @category utils
 */
export const tesseraUrl = (specifier: string): string | undefined => {
  if (specifier === "tessera") return new URL(`index${ext}`, root).href
  const m = /^tessera\/([a-z]+)\/([A-Za-z0-9_]+)$/.exec(specifier)
  if (m === null || m[1] === "internal") return undefined
  const url = new URL(`${m[1]}/${m[2]}${ext}`, root)
  return existsSync(url) ? url.href : undefined
}

let registered = false

/**
 * Registers the hook (once per process; later calls do nothing).
 *
 * @since 0.1.0
 * @category utils
 */
export const registerTesseraResolve = (): void => {
  if (registered) return
  registered = true
  registerHooks({
    resolve: (specifier, context, nextResolve) => {
      const own = tesseraUrl(specifier)
      if (own !== undefined) return { url: own, shortCircuit: true }
      try {
        return nextResolve(specifier, context)
      } catch (e) {
        const code = (e as { code?: unknown }).code
        if (!isBare(specifier) || (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND")) throw e
        // not found from the user's folder: from Tessera's own, or the first error
        try {
          return nextResolve(specifier, { ...context, parentURL: import.meta.url })
        } catch {
          throw e
        }
      }
    }
  })
}

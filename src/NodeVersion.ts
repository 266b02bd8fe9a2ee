/**
 * The library's Node.js floor, checked when the package is imported: on a Node.js older
 * than 24, importing `tessera` (or any `tessera/<layer>/<Module>` of the built package)
 * throws one `UnsupportedNodeError` whose message is one line, before any other module of
 * Tessera runs. Without it, an older Node loaded the package and then misbehaved where it
 * lacks what Tessera uses (issue 31: a profiled pipeline spun at 100% CPU on Node 20).
 *
 * `src/index.ts` imports this module first; the build (`scripts/guardEntries.ts`) puts
 * the same import first in every public module of `dist/src/`, so a subpath import is
 * checked too. ES modules evaluate their imports in order, depth first, so this module
 * runs before any other of the importing module's graph. `bin/tessera.js` makes the same
 * check for the command (and re-runs itself with a pinned Node 24 where there is one).
 *
 * Leaves out: runtimes without `process` (a browser bundle of the DSL) are not checked.
 *
 * @since 0.1.0
 */

/**
 * The oldest Node.js major version the package runs on (`engines` in package.json).
 *
 * @category models
 * @since 0.1.0
 */
export const requiredMajor = 24

/**
 * Thrown by importing the package on a Node.js older than {@link requiredMajor}; its
 * message is one line: what is needed, what was found and where.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnsupportedNodeError extends Error {
  override readonly name = "UnsupportedNodeError"
}

/**
 * Why a Node.js version (`process.versions.node`, `20.20.2`) cannot run the package, as
 * one line, or `undefined` when it is new enough or there is none (not Node.js).
 *
 * @category guards
 * @since 0.1.0
 */
export const unsupported = (version: string | undefined, execPath = ""): string | undefined => {
  if (version === undefined) return undefined
  const major = Number(version.split(".")[0])
  if (!Number.isFinite(major) || major >= requiredMajor) return undefined
  return `tessera needs Node.js ${requiredMajor} or newer, found v${version}${execPath === "" ? "" : ` (${execPath})`}`
}

const proc = (globalThis as { process?: { versions?: { node?: string }; execPath?: string } }).process
const why = unsupported(proc?.versions?.node, proc?.execPath)
if (why !== undefined) throw new UnsupportedNodeError(why)

/**
 * The Python the side-by-side benches run dask with (Debian's `/usr/bin/python3`, or
 * `TESSERA_PYTHON`), and whether a module it needs imports there.
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"

/**
 * The Python interpreter of the dask baselines.
 *
 * @since 0.1.0
 * @category constants
 */
export const python = process.env["TESSERA_PYTHON"] ?? "/usr/bin/python3"

/**
 * Why `module` cannot be used (it does not import, and the Debian package that has it),
 * or null when it imports.
 *
 * @since 0.1.0
 * @category checks
 */
export const missingModule = (module: string, debianPackage: string): string | null => {
  try {
    execFileSync(python, ["-c", `import ${module}`], { stdio: "pipe" })
    return null
  } catch {
    return `${module} is not importable by ${python}; install it with: apt-get install -y ${debianPackage}`
  }
}

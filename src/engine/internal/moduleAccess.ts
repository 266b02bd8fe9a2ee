/**
 * Which modules workers import: only `file:` URLs of files inside the folders a worker
 * allows (its working directory, Tessera's install, the main script's folder, and those
 * in `TESSERA_ALLOW_MODULES`), checked before anything is imported, for kernels, worker
 * plugins and preloads alike (docs/engine.md, "Which modules workers import").
 *
 * @since 0.1.0
 * @internal
 */

/**
 * The environment variable that adds folders workers may import modules from (a list,
 * `path.delimiter`-separated): `tessera worker --allow-modules` and
 * `Executor.allowModules` set it, so worker threads and the worker processes of a local
 * cluster, started after, inherit it.
 *
 * @since 0.1.0
 * @internal
 */
export const ALLOW_MODULES_ENV = "TESSERA_ALLOW_MODULES"

/**
 * `node:` builtins a module URL may name: none. Tessera names no builtin as a kernel, a
 * worker plugin or a preload (its own modules import the builtins they use themselves).
 */
const allowedBuiltins: ReadonlySet<string> = new Set()

/** The folder above `src/` (the checkout, or the package's `dist/`): Tessera's own modules. */
const installRoot = new URL("../../../", import.meta.url)

/**
 * What a module URL is for, in {@link ModuleRefused}'s message.
 *
 * @since 0.1.0
 * @internal
 */
export type ModuleUse = "kernel" | "worker plugin" | "preload"

/**
 * A module URL a worker will not import: not a `file:` URL (`data:`, `http:`, `node:`,
 * a bare name), or a file outside the folders it may import from ({@link moduleRoots}).
 *
 * @since 0.1.0
 * @internal
 */
export class ModuleRefused extends Error {
  override readonly name = "ModuleRefused"
  /** the URL (its first 200 characters) */
  readonly url: string
  readonly use: ModuleUse
  readonly why: string
  constructor(url: string, use: ModuleUse, why: string) {
    const shown = url.length > 200 ? `${url.slice(0, 200)}…` : url
    super(`${use} module ${shown} refused: ${why}`)
    this.url = shown
    this.use = use
    this.why = why
  }
}

/**
 * The folders a worker may import kernel, worker-plugin and preload modules from: its
 * working directory, Tessera's own install, the folder of the process's main script (a
 * pipeline script run with `node`), and those in `TESSERA_ALLOW_MODULES`
 * ({@link ALLOW_MODULES_ENV}; `tessera run` adds its file's folder there, `tessera
 * worker --allow-modules` its folders). The same in every thread of a process.
 *
 * @since 0.1.0
 * @internal
 */
export const moduleRoots = (): ReadonlyArray<string> => {
  const path = process.getBuiltinModule("node:path")
  const roots = [process.cwd(), process.getBuiltinModule("node:url").fileURLToPath(installRoot)]
  const main = process.argv[1]
  if (main !== undefined && main !== "") roots.push(path.dirname(path.resolve(main)))
  for (const d of (process.env[ALLOW_MODULES_ENV] ?? "").split(path.delimiter)) if (d !== "") roots.push(d)
  return [...new Set(roots.map((r) => path.resolve(r)))]
}

/**
 * Adds `dirs` to the folders workers may import modules from ({@link moduleRoots}), for
 * this process and the worker threads and processes it starts from now on.
 *
 * @since 0.1.0
 * @internal
 */
export const allowModuleDirs = (dirs: Iterable<string>): void => {
  const path = process.getBuiltinModule("node:path")
  const have = (process.env[ALLOW_MODULES_ENV] ?? "").split(path.delimiter).filter((d) => d !== "")
  for (const d of dirs) if (d !== "" && !have.includes(path.resolve(d))) have.push(path.resolve(d))
  process.env[ALLOW_MODULES_ENV] = have.join(path.delimiter)
}

/** `p` with its links resolved, or as given when it does not exist. */
const realOr = (p: string): string => {
  try {
    return process.getBuiltinModule("node:fs").realpathSync(p)
  } catch {
    return p
  }
}

/** Whether `file` is `root` or inside it. */
const inside = (file: string, root: string): boolean => {
  const sep = process.getBuiltinModule("node:path").sep
  return file === root || file.startsWith(root.endsWith(sep) ? root : root + sep)
}

/**
 * The one check every module a worker imports by URL passes first (kernels, worker
 * plugins, preloads): returns `url` when it is a `file:` URL of a file inside
 * {@link moduleRoots} (as written, or with links resolved), else throws
 * {@link ModuleRefused} naming the URL and why. So no client of a scheduler can make a
 * worker run code that is not on its disk (a `data:` URL), fetch code (`http:`), or
 * import a builtin as a kernel.
 *
 * @since 0.1.0
 * @internal
 */
export const checkModuleUrl = (url: string, use: ModuleUse): string => {
  if (typeof url !== "string" || !URL.canParse(url)) {
    throw new ModuleRefused(String(url), use, "not a URL (workers import modules by file: URL only)")
  }
  const u = new URL(url)
  if (u.protocol === "node:" && allowedBuiltins.has(u.href)) return url
  if (u.protocol !== "file:") {
    throw new ModuleRefused(url, use, `a ${u.protocol} URL: workers import only file: URLs, code on their own disk`)
  }
  if (u.host !== "" && u.host !== "localhost") throw new ModuleRefused(url, use, `a file: URL of another host (${u.host})`)
  const path = process.getBuiltinModule("node:path")
  const file = path.resolve(process.getBuiltinModule("node:url").fileURLToPath(u))
  const roots = moduleRoots()
  if (roots.some((r) => inside(file, r))) return url
  const real = realOr(file)
  if (roots.some((r) => inside(real, realOr(r)) || inside(file, realOr(r)))) return url
  throw new ModuleRefused(
    url,
    use,
    `${file} is outside the folders this worker may import from (${roots.join(", ")}); allow its folder with \`tessera worker --allow-modules DIR\`, Executor.allowModules or ${ALLOW_MODULES_ENV}`
  )
}

/**
 * `import(url)` after {@link checkModuleUrl}: how workers import worker plugins and
 * preloads (kernels go through kernels.ts `loadKernel`, which checks the same way).
 *
 * @since 0.1.0
 * @internal
 */
export const importChecked = (url: string, use: ModuleUse): Promise<Record<string, unknown>> => {
  try {
    checkModuleUrl(url, use)
  } catch (e) {
    return Promise.reject(e)
  }
  return import(url) as Promise<Record<string, unknown>>
}

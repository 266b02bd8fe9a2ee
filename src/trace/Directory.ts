/**
 * Output folders: a folder made with its missing parents (`mkdir -p`), for everything
 * Tessera writes (trace databases, analyses' CSVs, reports, figures, profiles).
 *
 * Not `fs.mkdir(path, { recursive: true })`: where mkdir(2) answers ENOENT although the
 * parent exists (procfs and sysfs do for any new name: `-o /proc/x/y`), Node's walk takes
 * the ENOENT to mean a missing parent, finds the parent there, tries the child again,
 * and loops forever at 100% CPU (Node 24; the promise never settles). Here the missing
 * folders are found first, from the path up to the first one that exists, then made
 * once each, top down: the first that cannot be made fails with the system's error
 * naming it (as the caller spelled it: a relative path stays relative).
 *
 * @since 0.1.0
 */
import { mkdirSync, statSync } from "node:fs"
import { mkdir, stat } from "node:fs/promises"
import { dirname } from "node:path"

const code = (e: unknown): unknown => (typeof e === "object" && e !== null && "code" in e ? e.code : undefined)

/** Nothing at the path (or a file where a folder of it should be): a folder to make. */
const absent = (e: unknown): boolean => code(e) === "ENOENT" || code(e) === "ENOTDIR"

/**
 * Make `path` a folder, with its missing parents; resolves once it is one (nothing to
 * do when it already is). Rejects with the system's error (`code` ENOENT, EACCES,
 * ENOTDIR, EEXIST for a file at `path`, ...) naming the first folder that could not be
 * made; a folder that someone else makes meanwhile is fine.
 *
 * @since 0.1.0
 * @category encoding
 */
export const makeDirectory = async (path: string): Promise<void> => {
  // the missing folders, from `path` up to the first thing that exists
  const missing: Array<string> = []
  for (let p = path; ; p = dirname(p)) {
    const isDirectory = await stat(p).then((s) => s.isDirectory(), (e: unknown) => (absent(e) ? undefined : Promise.reject(e)))
    if (isDirectory === false && missing.length === 0) await mkdir(p) // a file at `path`: EEXIST
    if (isDirectory !== undefined || dirname(p) === p) break
    missing.push(p)
  }
  for (const dir of missing.reverse()) {
    await mkdir(dir).catch(async (e: unknown) => {
      if (code(e) !== "EEXIST" || !(await stat(dir).then((s) => s.isDirectory(), () => false))) throw e
    })
  }
}

/**
 * {@link makeDirectory}, synchronously (throws the system's error).
 *
 * @since 0.1.0
 * @category encoding
 */
export const makeDirectorySync = (path: string): void => {
  const missing: Array<string> = []
  for (let p = path; ; p = dirname(p)) {
    let isDirectory: boolean | undefined
    try {
      isDirectory = statSync(p).isDirectory()
    } catch (e) {
      if (!absent(e)) throw e
    }
    if (isDirectory === false && missing.length === 0) mkdirSync(p) // a file at `path`: EEXIST
    if (isDirectory !== undefined || dirname(p) === p) break
    missing.push(p)
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir)
    } catch (e) {
      if (code(e) !== "EEXIST" || !isDirectorySync(dir)) throw e
    }
  }
}

const isDirectorySync = (path: string): boolean => {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/**
 * Helpers of the issue 32 profiler tests (OneWriter, DiskFull): `tessera demo` as a child
 * process in a scratch folder, and the trace files it leaves.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after } from "node:test"
import { fileURLToPath } from "node:url"

export const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
export const host = hostname()

/** A fresh folder per call, all removed after the file's tests. */
export const scratch = (prefix: string): () => string => {
  const root = mkdtempSync(join(tmpdir(), prefix))
  after(() => rmSync(root, { recursive: true, force: true }))
  let n = 0
  return () => {
    const d = join(root, `d${n++}`)
    mkdirSync(d)
    return d
  }
}

/** The trace database of profile `name` in `dir`. */
export const traceOf = (dir: string, name: string): string => join(dir, `${name}-TracePlugin-${host}.msgpack`)

/** The lock files in `dir`. */
export const locks = (dir: string): Array<string> => readdirSync(dir).filter((f) => f.includes(".lock"))

/** `tessera demo ARGS` in `dir` (node options `preload` first), to its end. */
export const demo = (dir: string, args: ReadonlyArray<string>, env: Record<string, string> = {}, preload: ReadonlyArray<string> = []) =>
  spawnSync(process.execPath, [...preload, main, "demo", ...args], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 240_000
  })

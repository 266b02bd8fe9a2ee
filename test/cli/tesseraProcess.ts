/**
 * A `tessera` process for the CLI's cluster tests, its output collected as it comes:
 * `wait(re, seconds, from?)` resolves with the first match of `re` in stdout + stderr (or
 * in stderr from offset `from` on), and fails showing both when the time is up or the
 * process exits first. Each process is added to `procs`, for the test file to kill.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { tmpdir } from "node:os"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

/** A started `tessera` process (see the module's doc). */
export const startTessera = (
  procs: Array<ChildProcess>,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string | undefined; readonly env?: NodeJS.ProcessEnv } = {}
) => {
  const p = spawn(process.execPath, [main, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.env !== undefined ? { env: options.env } : {})
  })
  procs.push(p)
  const out = { stdout: "", stderr: "" }
  const waiters: Array<() => void> = []
  const poke = () => {
    for (const w of waiters.splice(0)) w()
  }
  p.stdout!.on("data", (d) => {
    out.stdout += d
    poke()
  })
  p.stderr!.on("data", (d) => {
    out.stderr += d
    poke()
  })
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => p.once("exit", (code, signal) => resolve({ code, signal })))
  const wait = (re: RegExp, seconds: number, from = 0): Promise<RegExpExecArray> =>
    new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${re} within ${seconds} s:\n${out.stdout}\n${out.stderr}`)), seconds * 1000)
      const check = () => {
        const m = re.exec(from > 0 ? out.stderr.slice(from) : out.stdout + out.stderr)
        if (m !== null) {
          clearTimeout(t)
          resolve(m)
        } else if (p.exitCode !== null || p.signalCode !== null) {
          clearTimeout(t)
          reject(new Error(`exited (${p.exitCode ?? p.signalCode}) before ${re}:\n${out.stdout}\n${out.stderr}`))
        } else waiters.push(check)
      }
      check()
    })
  return { p, out, exited, wait }
}

/** What a finished `tessera` process left: its exit code and its whole output. */
export interface TesseraResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `tessera ARGS…` to its end (in `cwd`, default the temporary folder), with `env`
 * over this process's environment; `progress` sets `TESSERA_PROGRESS` (undefined: unset,
 * so the command decides by whether stderr is a terminal).
 */
export const runTessera = (
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string | undefined; readonly env?: Record<string, string> | undefined; readonly progress?: string | undefined } = {}
): Promise<TesseraResult> =>
  new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = { ...process.env, TESSERA_PROGRESS: options.progress, ...options.env }
    const child = spawn(process.execPath, [main, ...args], { cwd: options.cwd ?? tmpdir(), env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s))
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

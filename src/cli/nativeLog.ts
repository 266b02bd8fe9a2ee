/**
 * Dawn's warnings under `--log-level`. With `--gpu`, Dawn (WebGPU's native library)
 * writes its warnings (`Warning: Couldn't load Vulkan: ...`, `Warning:
 * maxDynamicUniformBuffersPerPipelineLayout artificially reduced ...`) straight to the
 * process's stderr from C++, where no JavaScript sees them. When `--log-level` hides
 * warnings (`error`, `fatal`, `none`), `tessera` runs the command line in a child process
 * whose stderr it reads, drops Dawn's warning blocks (the `Warning: ` line, its `    at
 * ...` lines and the blank line after them) and passes on everything else; the child's
 * stdout is this process's, and its exit status (or signal) becomes this process's.
 * Without `--gpu`, or where warnings show, nothing of this runs.
 *
 * @since 0.1.0
 */
import { spawn } from "node:child_process"

/** Set in the child, so that it does not relaunch itself. */
const childMark = "TESSERA_NATIVE_LOG_CHILD"

const hidesWarnings = (argv: ReadonlyArray<string>): boolean => {
  let level: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const w = argv[i]!
    if (w === "--") break
    if (w === "--log-level") level = argv[i + 1]
    else if (w.startsWith("--log-level=")) level = w.slice("--log-level=".length)
  }
  return level === "error" || level === "fatal" || level === "none"
}

/**
 * Whether this command line runs in a filtering child (see the module header).
 *
 * @since 0.1.0
 * @category cli
 */
export const needsFilter = (argv: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>> = process.env): boolean => {
  const end = argv.indexOf("--")
  const head = end < 0 ? argv : argv.slice(0, end)
  return env[childMark] !== "1" && head.includes("--gpu") && hidesWarnings(head)
}

/**
 * A line filter dropping Dawn's warning blocks: feed it text as it comes, it returns
 * what to pass on (whole lines; `flush` returns the rest).
 *
 * @since 0.1.0
 * @category cli
 */
export const dawnFilter = (): { readonly push: (text: string) => string; readonly flush: () => string } => {
  let pending = ""
  let inBlock = false
  const line = (l: string): string => {
    if (/^Warning: /.test(l)) {
      inBlock = true
      return ""
    }
    if (inBlock && (/^\s+at /.test(l) || l === "")) {
      if (l === "") inBlock = false
      return ""
    }
    inBlock = false
    return l + "\n"
  }
  return {
    push: (text) => {
      pending += text
      const lines = pending.split("\n")
      pending = lines.pop()!
      return lines.map(line).join("")
    },
    flush: () => {
      const rest = pending
      pending = ""
      return rest === "" ? "" : line(rest).replace(/\n$/, "")
    }
  }
}

/**
 * Runs this command line again in a child process with Dawn's warnings filtered out of
 * its stderr; resolves with the exit status to end with.
 *
 * @since 0.1.0
 * @category cli
 */
export const relaunchFiltered = (): Promise<number> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
      stdio: ["inherit", "inherit", "pipe"],
      env: { ...process.env, [childMark]: "1" }
    })
    const filter = dawnFilter()
    child.stderr!.setEncoding("utf8")
    child.stderr!.on("data", (text: string) => {
      const out = filter.push(text)
      if (out !== "") process.stderr.write(out)
    })
    // a signal to this process is the child's too (the terminal sends Ctrl-C to both)
    for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, () => child.kill(s))
    child.on("close", (code, signal) => {
      const rest = filter.flush()
      if (rest !== "") process.stderr.write(rest)
      resolve(code ?? (signal === "SIGINT" ? 130 : signal === "SIGTERM" ? 143 : 1))
    })
  })

#!/usr/bin/env node
// Entry point of the `tessera` binary. Plain JavaScript on purpose: whichever Node
// starts it (even one that cannot strip types), it must get far enough to choose.
//
// - Node >= 24: run the CLI. In a checkout (sources present, not under node_modules)
//   that is src/cli/main.ts, run directly; in the installed package, the bundled
//   dist/bundle/cli/main.js, which runs the commands it serves (src/cli/argv.ts
//   `runsBundled`) and hands the others to the compiled dist/src/cli/main.js.
// - An older Node: re-run this file with a pinned Node 24 (the `node` package that
//   this repo, or the project that installed Tessera, has as a dependency), passing
//   the arguments, standard streams, signals and exit status through.
// - No Node 24 to be found: one line saying which Node is needed and which was found.
import { spawn } from "node:child_process"
import * as nodeModule from "node:module"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join, sep } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const REQUIRED_MAJOR = 24
const self = fileURLToPath(import.meta.url)
const root = dirname(dirname(self))
const major = Number(process.versions.node.split(".")[0])

/** The `node` registry package's binary, at major >= 24, in the nearest node_modules. */
const pinnedNode = () => {
  for (let dir = root; ; dir = dirname(dir)) {
    const pkg = join(dir, "node_modules", "node", "package.json")
    const bin = join(dir, "node_modules", "node", "bin", "node")
    if (existsSync(pkg) && existsSync(bin)) {
      try {
        const version = JSON.parse(readFileSync(pkg, "utf8")).version
        if (Number(String(version).split(".")[0]) >= REQUIRED_MAJOR) return bin
      } catch {
        // an unreadable package.json: keep looking further up
      }
    }
    if (dirname(dir) === dir) return undefined
  }
}

if (major >= REQUIRED_MAJOR) {
  // V8's code cache on disk (Node's compile cache, in the OS temp folder; NODE_DISABLE_COMPILE_CACHE=1
  // turns it off): a command's second start compiles none of its modules again. Enabled
  // here it covers this thread only: the environment variable passes it on to the worker
  // threads and processes the command starts (decoders, pools, cluster workers), which
  // would otherwise compile Effect and the engine again on every run.
  const cache = nodeModule.enableCompileCache?.()
  const { ENABLED, ALREADY_ENABLED } = nodeModule.constants?.compileCacheStatus ?? {}
  if (cache?.directory !== undefined && (cache.status === ENABLED || cache.status === ALREADY_ENABLED)) {
    process.env.NODE_COMPILE_CACHE ??= cache.directory
  }
  const source = join(root, "src", "cli", "main.ts")
  const fromSource = existsSync(source) && !root.split(sep).includes("node_modules")
  // the bundle hands the command lines it does not serve to the compiled tree itself
  const bundle = join(root, "dist", "bundle", "cli", "main.js")
  const entry = fromSource ? source : existsSync(bundle) ? bundle : join(root, "dist", "src", "cli", "main.js")
  await import(pathToFileURL(entry).href)
} else {
  const node = process.env.TESSERA_REEXEC === undefined ? pinnedNode() : undefined
  if (node === undefined) {
    process.stderr.write(
      `tessera: needs Node.js ${REQUIRED_MAJOR} or newer, found ${process.version} (${process.execPath})\n`
    )
    process.exit(1)
  }
  const child = spawn(node, [self, ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, TESSERA_REEXEC: "1" }
  })
  // Ctrl-C reaches the whole process group, the child included: let the child decide
  // (it flushes its traces), and only forward what is sent to this process alone.
  process.on("SIGINT", () => {})
  process.on("SIGTERM", () => child.kill("SIGTERM"))
  process.on("SIGHUP", () => child.kill("SIGHUP"))
  child.on("error", (e) => {
    process.stderr.write(`tessera: could not start ${node}: ${e.message}\n`)
    process.exit(1)
  })
  child.on("exit", (code, signal) => {
    if (signal !== null) {
      process.removeAllListeners(signal)
      process.kill(process.pid, signal)
    }
    process.exit(code ?? 1)
  })
}

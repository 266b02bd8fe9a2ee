/**
 * The one command-line grammar, applied to `argv` before `effect/cli` parses it:
 *
 * - `tessera help [COMMAND...]` is `tessera [COMMAND...] --help`.
 * - In the commands that read trace databases (`analyze`, `report`, `export`,
 *   `plot hist`), `-d/--databases` takes one or more paths and may repeat:
 *   `-d a b -d c` is `-d a -d b -d c` (`effect/cli` flags take one value each). The
 *   words after `-d` run up to the next word starting with `-`. In `analyze`, a word
 *   naming an analysis stays an analysis (DASF's `analyze -d A B function_bottleneck`).
 *   `--db` is an alias of `--databases`. `--baseline` (`diff`, `report`) takes a list the same way.
 * - `--verbose` (global) is noted here for the error reporter (stack traces); the flag
 *   itself is declared in main.ts so that help lists it.
 *
 * Everything after `--` is left alone.
 *
 * @since 0.1.0
 */

/**
 * Commands (paths) whose `-d/--databases` flag takes several values.
 *
 * @since 0.1.0
 * @category encoding
 */
export const databaseCommands: ReadonlyArray<ReadonlyArray<string>> = [["analyze"], ["report"], ["export"], ["plot", "hist"], ["sql"], ["diff"], ["diagnose"], ["dashboard"]]

/** Global flags that take a value: their value is not a command word. */
const globalsWithValue = new Set(["--log-level", "--completions"])

/**
 * The command path of `argv` (its leading command words, global flags skipped) and the
 * index just after it.
 *
 * @since 0.1.0
 * @category encoding
 */
export const commandPath = (argv: ReadonlyArray<string>): { readonly path: Array<string>; readonly end: number } => {
  const path: Array<string> = []
  let i = 0
  while (i < argv.length) {
    const w = argv[i]!
    if (w === "--") break
    if (w.startsWith("-")) {
      if (path.length > 0) break
      i += globalsWithValue.has(w) ? 2 : 1
      continue
    }
    // `bench FILE…`: a pipeline file, not a subcommand (those are engine and cluster)
    if (path.length === 1 && path[0] === "bench" && w !== "engine" && w !== "cluster") break
    path.push(w)
    i++
    // only `plot` and `bench` have subcommands; `help` is followed by the command it explains
    if (path[0] === "help" ? false : !(path.length === 1 && (w === "plot" || w === "bench"))) break
  }
  return { path, end: i }
}

/**
 * The commands the bundled CLI runs itself (`bundleMain.ts`, docs/package.md): those that
 * run no kernels and no module of the user's, plus help.
 *
 * @since 0.1.0
 * @category encoding
 */
export const bundledCommands: ReadonlyArray<string> = ["analyze", "report", "export", "plot", "sql", "help"]

/** A module a command would import (a user analysis): the compiled tree runs it. */
const moduleFile = /\.(ts|mts|cts|js|mjs|cjs)$/i

/**
 * Does the bundled CLI run this command line itself, or hand it to the compiled tree?
 * Itself: a command of `bundledCommands` (or none: `--help`, `--version`), with no
 * argument naming a module (`analyze`'s user analyses are `.ts`/`.js` files) and no
 * `report --analysis` that is not a `.sql` file (any other is imported as a module). A
 * user module imports `tessera` itself, and kernels are found by their module's URL:
 * both need the one compiled tree. `--wizard` picks its command later: compiled tree.
 * `TESSERA_NO_BUNDLE=1` in `env`: the compiled tree always.
 *
 * @since 0.1.0
 * @category encoding
 */
export const runsBundled = (argv: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>> = {}): boolean => {
  if (env.TESSERA_NO_BUNDLE === "1" || argv.includes("--wizard")) return false
  if (argv.some((a) => moduleFile.test(a))) return false
  const { path } = commandPath(argv)
  if (path.length > 0 && !bundledCommands.includes(path[0]!)) return false
  return !argv.some((a, i) =>
    (a === "--analysis" && i + 1 < argv.length && !/\.sql$/i.test(argv[i + 1]!)) ||
    (a.startsWith("--analysis=") && !/\.sql$/i.test(a))
  )
}

/**
 * `argv` rewritten to the form `effect/cli` parses, and whether `--verbose` was given.
 *
 * @since 0.1.0
 * @category encoding
 */
export const normalizeArgv = (
  argv: ReadonlyArray<string>,
  options: { readonly analysisNames?: ReadonlyArray<string> } = {}
): { readonly args: Array<string>; readonly verbose: boolean; readonly command: Array<string> } => {
  const dashdash = argv.indexOf("--")
  const head = dashdash < 0 ? [...argv] : argv.slice(0, dashdash)
  const tail = dashdash < 0 ? [] : argv.slice(dashdash)
  const verbose = head.includes("--verbose")
  const { end, path } = commandPath(head)
  if (path[0] === "help") {
    const rest = path.slice(1)
    const args = [...head.slice(0, end).filter((w) => w !== "help"), ...head.slice(end), "--help", ...tail]
    return { args, verbose, command: rest }
  }
  const takesList = databaseCommands.some((c) => c.length === path.length && c.every((w, k) => w === path[k]))
  if (!takesList) return { args: [...head, ...tail], verbose, command: path }
  const analyses = path[0] === "analyze" ? new Set(options.analysisNames ?? []) : new Set<string>()
  const out = head.slice(0, end)
  let inList = false
  let list = "--databases"
  for (let i = end; i < head.length; i++) {
    const w = head[i]!
    if (w === "-d" || w === "--databases" || w === "--db" || w === "--baseline") {
      list = w === "--baseline" ? w : "--databases"
      out.push(list)
      inList = true
      const next = head[i + 1]
      if (next !== undefined && !next.startsWith("-")) {
        out.push(next)
        i++
      }
      continue
    }
    if (w.startsWith("--db=")) {
      out.push(`--databases=${w.slice(5)}`)
      inList = true
      continue
    }
    if (w.startsWith("-")) {
      inList = false
      out.push(w)
      continue
    }
    // in `sql`, a word with a space is the query, not a database
    if (inList && !analyses.has(w) && !(path[0] === "sql" && /\s/.test(w))) {
      out.push(list, w)
      continue
    }
    out.push(w)
  }
  return { args: [...out, ...tail], verbose, command: path }
}

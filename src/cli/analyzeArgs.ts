/**
 * `tessera analyze`'s arguments, without the CLI framework: DASF's split of words into
 * databases and analyses (`splitArguments`, used by the command), and a conservative
 * reading of a whole command line (`preParseAnalyze`) for the head start
 * (`headStart.ts`), which begins decoding before `effect/cli` is even loaded.
 *
 * Loads nothing but `AnalysisNames` and `argv.ts` (no Effect), so that the head start
 * costs a few milliseconds.
 *
 * @since 0.1.0
 */
import { analysisNames, dasfAnalyses, isUserAnalysis } from "../analysis/AnalysisNames.ts"
import { normalizeArgv } from "./argv.ts"

/**
 * Split DASF-style arguments: databases from `-d` plus positional words, analyses from
 * `-a` plus positional words that name an analysis.
 *
 * @since 0.1.0
 * @category encoding
 */
export const splitArguments = (
  db: ReadonlyArray<string>,
  analysisFlags: ReadonlyArray<string>,
  rest: ReadonlyArray<string>
): { readonly databases: Array<string>; readonly analyses: Array<string> } => {
  const names: ReadonlyArray<string> = analysisNames
  const databases = [...db]
  const chosen = [...analysisFlags]
  for (const w of rest) (names.includes(w) || (isUserAnalysis(w) && !w.endsWith(".msgpack")) ? chosen : databases).push(w)
  return { databases, analyses: chosen.length > 0 ? chosen : [...dasfAnalyses] }
}

/** `analyze`'s flags that take a value, and the global ones it may be given. */
const valued = new Set(["--databases", "-a", "--analyses", "-o", "--output", "--head", "--format", "--function", "--stage", "--log-level"])
const booleans = new Set(["--verbose"])

/**
 * The databases and analyses of `argv` (process arguments after the script) when it is
 * plainly `tessera analyze` with flags this reading knows; `undefined` for anything else
 * (another command, help, an unknown or malformed flag). A guess, never trusted: the
 * command compares what the CLI parsed with it (`Decoding.sameDecoding`) before taking
 * the head start over.
 *
 * @since 0.1.0
 * @category encoding
 */
export const preParseAnalyze = (
  argv: ReadonlyArray<string>
): { readonly databases: Array<string>; readonly analyses: Array<string> } | undefined => {
  const { args, command } = normalizeArgv(argv, { analysisNames })
  if (command.length !== 1 || command[0] !== "analyze") return undefined
  const at = args.indexOf("analyze")
  const db: Array<string> = []
  const flags: Array<string> = []
  const rest: Array<string> = []
  for (let i = at + 1; i < args.length; i++) {
    const w = args[i]!
    if (w === "--") return undefined
    if (!w.startsWith("-")) {
      rest.push(w)
      continue
    }
    if (booleans.has(w)) continue
    const eq = w.indexOf("=")
    const name = eq > 0 && w.startsWith("--") ? w.slice(0, eq) : w
    if (!valued.has(name)) return undefined // --help, --version, a typo: the CLI decides
    const value = eq > 0 && w.startsWith("--") ? w.slice(eq + 1) : args[++i]
    if (value === undefined || (eq < 0 && value.startsWith("-"))) return undefined
    if (name === "--databases") db.push(value)
    else if (name === "-a" || name === "--analyses") flags.push(value)
  }
  const split = splitArguments(db, flags, rest)
  return split.databases.length > 0 ? split : undefined
}

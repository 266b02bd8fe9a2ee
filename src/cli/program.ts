/**
 * The `tessera` command: one Effect CLI (`effect/cli`) whose subcommands live in
 * `src/cli/commands/`, one file each. This file wires them together and runs them on
 * Node's platform services, owning what goes to stdout and stderr and the exit status:
 *
 * - argv is first put in the one grammar (src/cli/argv.ts): `tessera help [CMD]`,
 *   `-d/--databases` with several paths and/or repeated.
 * - help asked for (`--help`, `tessera help [CMD]`) and `--version` go to stdout, exit
 *   0; the version is package.json's. A command without its subcommand (`tessera`,
 *   `tessera plot`) is a usage error: its help on stderr, exit 2; so is `tessera help
 *   nope` (one line naming the word).
 * - errors are reported by src/cli/errors.ts: one line on stderr, exit 2 for usage
 *   errors, 1 for failures; `--verbose` adds stacks.
 *
 * Loaded by `main.ts` after the head start (`headStart.ts`); a head start that no
 * command took over is stopped when the program ends.
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
// Deep imports: the package's barrel loads every Node service it has (HTTP, sockets,
// cluster, ...), ~0.55 s of the CLI's start-up for two modules used here.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { CliOutput, Command, Flag, GlobalFlag } from "effect/cli"
import type { HelpDoc } from "effect/cli/HelpDoc"
import { analysisNames } from "../analysis/AnalysisNames.ts"
import { commandPath, normalizeArgv } from "./argv.ts"
import { commands } from "./commands/index.ts"
import { outcome } from "./errors.ts"
import { abortHeadStart } from "./headStart.ts"
import { setLogLevelFromArgv } from "./output.ts"

/**
 * package.json's version, read relative to this module: `src/cli/program.ts` is two levels
 * below the package root, the compiled `dist/src/cli/program.js` three.
 */
const version = (): string => {
  try {
    const pkg = JSON.parse(readFileSync(new URL(import.meta.url.endsWith(".ts") ? "../../package.json" : "../../../package.json", import.meta.url), "utf8")) as { version?: unknown }
    return typeof pkg.version === "string" ? pkg.version : "unknown"
  } catch {
    return "unknown"
  }
}

/** `--verbose`: stack traces with errors. Read from argv by argv.ts; declared here for help. */
const Verbose = GlobalFlag.Setting("verbose")({
  flag: Flag.Boolean("verbose").pipe(Flag.withDescription("print stack traces with errors (default: one line)"), Flag.withDefault(false))
})

const tessera = Command.make("tessera").pipe(
  Command.withDescription("Parallel data pipelines over Arrow chunks, with a profiler built in. `tessera help COMMAND` shows a command's flags."),
  Command.withGlobalFlags([Verbose]),
  Command.withSubcommands(commands)
)

// Help asked for goes to stdout. Help shown because of a parse error is not printed:
// the error is, in one line (errors.ts); help shown because a command needs a
// subcommand (`tessera`, `tessera plot`) is printed by the teardown below.
let implicitHelp: HelpDoc | undefined
const presenter: CliOutput.Presenter = {
  present: (event) =>
    Effect.gen(function*() {
      const formatter = yield* CliOutput.Formatter
      switch (event._tag) {
        case "Help":
          if (event.reason === "Requested") return yield* Effect.sync(() => process.stdout.write(formatter.formatHelpDoc(event.helpDoc) + "\n"))
          implicitHelp = event.helpDoc
          return
        case "Version":
          return yield* Effect.sync(() => process.stdout.write(formatter.formatVersion(event.name, event.version) + "\n"))
        case "InvalidInvocation":
          return
      }
    })
}

const argv = process.argv.slice(2)
setLogLevelFromArgv(argv)
const { args, command, verbose } = normalizeArgv(argv, { analysisNames })

/**
 * `tessera help WORDS`: the first word that names no command (`help nope`, `help plot
 * nope`), or undefined when every word does.
 */
const unknownHelpWord = (words: ReadonlyArray<string>): { readonly word: string; readonly path: ReadonlyArray<string> } | undefined => {
  let level: ReadonlyArray<Command.Command.Any> = commands
  const path: Array<string> = []
  for (const w of words) {
    const c = level.find((x) => x.name === w || x.alias === w)
    if (c === undefined) return { word: w, path }
    path.push(w)
    level = c.subcommands.flatMap((g) => g.commands)
  }
  return undefined
}
const helpPath = commandPath(argv).path
const unknownHelp = helpPath[0] === "help" ? unknownHelpWord(helpPath.slice(1)) : undefined
if (unknownHelp !== undefined) {
  // a usage error, as `tessera nope` is: one line, exit 2, nothing run
  const where = ["tessera", ...unknownHelp.path].join(" ")
  process.stderr.write(`tessera help: unknown command ${JSON.stringify(unknownHelp.word)} (see ${where} --help)\n`)
  process.exit(2)
}
const colors = process.stdout.isTTY === true && process.env.NO_COLOR === undefined

// Which signal interrupted the program, for its exit status (runMain's own listeners do
// the interrupting; these only take note).
let signal: "SIGINT" | "SIGTERM" | undefined
for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, () => (signal ??= s))

Command.runWith(tessera, { version: version(), renderErrors: false })(args).pipe(
  Effect.provide(Layer.mergeAll(NodeServices.layer, CliOutput.layerPresenter(presenter), CliOutput.layer(CliOutput.defaultFormatter({ colors })))),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    teardown: (exit, onExit) => {
      abortHeadStart()
      const o = outcome(exit, command, verbose, signal)
      // `tessera`, `tessera plot`: a command that needs a subcommand got none, a usage
      // error: its help on stderr (stdout carries results only), exit 2
      const bare = o.code === 0 && exit._tag === "Failure" && implicitHelp !== undefined
      if (bare) {
        process.stderr.write(CliOutput.defaultFormatter({ colors: process.stderr.isTTY === true && process.env.NO_COLOR === undefined }).formatHelpDoc(implicitHelp!) + "\n")
      }
      if (o.stderr.length > 0) process.stderr.write(o.stderr)
      const code = bare ? 2 : o.code
      process.exitCode = code
      onExit(code)
    }
  })
)

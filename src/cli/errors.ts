/**
 * How `tessera` reports what went wrong: one line on stderr, and the exit status.
 *
 * - Usage errors (an unknown flag or command, a bad or missing value; `effect/cli`'s
 *   parse errors and this module's {@link UsageError}) exit 2 with one line naming the
 *   flag and the value, and where to read the command's help.
 * - Failures (a typed error of the command: a missing or corrupt database, a task that
 *   threw, a report that could not be written) exit 1 with the error's own message, which
 *   names what and where (file and byte offset, task key, stage).
 * - Defects (bugs) exit 1 with `internal error: ...`; the stack only with `--verbose`,
 *   which also adds the stack and cause of a failure.
 * - Interruption exits 128 + the signal number: 130 for Ctrl-C (SIGINT), 143 for SIGTERM.
 *
 * stdout is left to results, so `--json` output always parses.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Exit from "effect/Exit"
import { CliError } from "effect/cli"

/**
 * Bad command-line use found after parsing (a value out of range, an unknown name in a
 * list): names the flag and the value. Exit status 2.
 *
 * @since 0.1.0
 * @category errors
 */
export class UsageError extends Data.TaggedError("UsageError")<{
  /** the flag or argument, as typed: `--workers` */
  readonly flag: string
  /** the value given */
  readonly value: string
  /** what is wrong or expected */
  readonly expected: string
}> {
  override get message(): string {
    return `${this.flag} ${JSON.stringify(this.value)}: ${this.expected}`
  }
}

/**
 * Guard for {@link UsageError} and errors that declare themselves usage errors (a
 * `usage: true` field, as `analyze`'s own).
 *
 * @since 0.1.0
 * @category guards
 */
export const isUsageError = (u: unknown): boolean =>
  u instanceof UsageError || (typeof u === "object" && u !== null && (u as { usage?: unknown }).usage === true)

const oneLine = (s: string): string => {
  const first = s.split("\n").map((l) => l.trim()).find((l) => l.length > 0) ?? ""
  return first
}

const suggestion = (s: ReadonlyArray<string>): string => (s.length > 0 ? ` (did you mean ${s.join(" or ")}?)` : "")

/**
 * One line for an `effect/cli` parse error.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatCliError = (e: CliError.CliError): string => {
  switch (e._tag) {
    case "UnrecognizedOption":
      return `unknown flag ${e.option}${suggestion(e.suggestions)}`
    case "UnknownSubcommand":
      return `unknown command ${JSON.stringify(e.subcommand)}${suggestion(e.suggestions)}`
    case "MissingOption":
      return `missing required flag --${e.option}`
    case "MissingArgument":
      return `missing required argument ${e.argument}`
    case "UnexpectedArgument":
      return `unexpected argument${e.arguments.length > 1 ? "s" : ""} ${e.arguments.map((a) => JSON.stringify(a)).join(" ")}`
    case "InvalidValue": {
      const what = e.kind === "argument" ? `<${e.option}>` : `--${e.option}`
      const expected = e.expected.replace(/^Expected:?\s*/, "")
      return e.value.length === 0 && e.kind === "flag"
        ? `${what} needs a value: ${oneLine(expected)}`
        : `${what} ${JSON.stringify(e.value)}: expected ${oneLine(expected)}`
    }
    case "ShowHelp":
      return e.errors.length > 0 ? formatCliError(e.errors[0]!) : "help requested"
    default:
      return oneLine(e.message)
  }
}

/**
 * What to print and the exit status for a finished run.
 *
 * @since 0.1.0
 * @category models
 */
export interface Outcome {
  readonly code: number
  /** for stderr (each line ends with a newline), or "" */
  readonly stderr: string
}

const messageOf = (u: unknown): string => {
  if (u instanceof Error) return u.message.length > 0 ? u.message : u.name
  if (typeof u === "object" && u !== null && "message" in u && typeof u.message === "string") return u.message
  if (typeof u === "object" && u !== null && "_tag" in u) return String(u._tag)
  return String(u)
}

const details = (u: unknown): string => {
  const parts: Array<string> = []
  let cur: unknown = u
  for (let depth = 0; cur !== undefined && cur !== null && depth < 5; depth++) {
    if (cur instanceof Error) parts.push(depth === 0 ? (cur.stack ?? cur.message) : `caused by: ${cur.stack ?? cur.message}`)
    else if (depth > 0) parts.push(`caused by: ${String(cur)}`)
    const reason = (cur as { reason?: { stack?: unknown } }).reason
    if (typeof reason?.stack === "string") parts.push(reason.stack)
    cur = (cur as { cause?: unknown }).cause
  }
  return parts.length > 0 ? parts.join("\n") + "\n" : ""
}

/**
 * Classify an exit: usage (2), failure (1), defect (1), interruption (128 + the signal's
 * number, as a shell reports a process killed by it: 130 for SIGINT, 143 for SIGTERM;
 * 130 when no signal is known), success (0). `command` names the command in the message
 * (`tessera report: ...`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const outcome = (
  exit: Exit.Exit<unknown, unknown>,
  command: ReadonlyArray<string>,
  verbose: boolean,
  signal?: "SIGINT" | "SIGTERM"
): Outcome => {
  if (Exit.isSuccess(exit)) return { code: 0, stderr: "" }
  const cause = exit.cause
  if (Cause.hasInterruptsOnly(cause)) {
    const code = signal === "SIGTERM" ? 143 : 130
    return { code, stderr: `interrupted${signal === undefined ? "" : ` (${signal})`}\n` }
  }
  const prefix = ["tessera", ...command].join(" ")
  const hint = `see ${prefix} --help`
  const failed = Cause.findErrorOption(cause)
  if (failed._tag === "Some") {
    const e = failed.value
    if (CliError.isCliError(e)) {
      if (e._tag === "ShowHelp" && e.errors.length === 0) return { code: 0, stderr: "" }
      const where = e._tag === "ShowHelp" && e.commandPath.length > 0 ? ["tessera", ...e.commandPath.slice(1)].join(" ") : prefix
      return { code: 2, stderr: `${where}: ${formatCliError(e)} (see ${where} --help)\n` }
    }
    if (isUsageError(e)) return { code: 2, stderr: `${prefix}: ${oneLine(messageOf(e))} (${hint})\n` }
    const line = `${prefix}: ${verbose ? messageOf(e) : oneLine(messageOf(e))}\n`
    return { code: 1, stderr: verbose ? line + details(e) : line }
  }
  const defect = Cause.squash(cause)
  const line = `${prefix}: internal error: ${oneLine(messageOf(defect))}${verbose ? "" : " (run with --verbose for the stack)"}\n`
  return { code: 1, stderr: verbose ? line + details(defect) + Cause.pretty(cause) + "\n" : line }
}

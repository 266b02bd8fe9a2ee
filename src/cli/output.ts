/**
 * What `tessera` writes besides results: the log level chosen with `--log-level`, log
 * lines and progress, all on stderr (stdout carries results only).
 *
 * Progress is shown only when the input is large (16 MiB of databases or more) or stderr is
 * a terminal, and only when `--log-level` lets info through. On a terminal it is one line,
 * rewritten in place with `\r` about four times a second; elsewhere (a log file, a pipe)
 * plain lines, the first at once and then one every 5 s while the text changes, never a
 * `\r`. `TESSERA_PROGRESS=1` forces it on (tests), `TESSERA_PROGRESS=0` off,
 * `TESSERA_PROGRESS=tty` on in the terminal style. When done, the line is ended and a
 * summary line follows (`loaded N events from K database(s) in S s`).
 *
 * @since 0.1.0
 */
import { statSync } from "node:fs"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { LoadProgress } from "../analysis/Load.ts"

const levels = ["all", "trace", "debug", "info", "warn", "error", "fatal", "none"] as const
let minimum = levels.indexOf("info")

/**
 * Note `--log-level` from argv (the `effect/cli` flag sets Effect's minimum log level
 * for the command; this is the same choice for the lines written outside Effect's
 * logger).
 *
 * @since 0.1.0
 * @category cli
 */
export const setLogLevelFromArgv = (argv: ReadonlyArray<string>): void => {
  for (let i = 0; i < argv.length; i++) {
    const w = argv[i]!
    if (w === "--") break
    const v = w === "--log-level" ? argv[i + 1] : w.startsWith("--log-level=") ? w.slice("--log-level=".length) : undefined
    if (v === undefined) continue
    const k = levels.indexOf((v === "warning" ? "warn" : v) as (typeof levels)[number])
    if (k >= 0) minimum = k
  }
}

/**
 * Whether lines of `level` are written.
 *
 * @since 0.1.0
 * @category cli
 */
export const enabled = (level: "debug" | "info" | "warn" | "error"): boolean => levels.indexOf(level) >= minimum

/**
 * A warning on stderr (dropped bytes, ...), unless `--log-level` is above warn.
 *
 * @since 0.1.0
 * @category cli
 */
export const warn = (line: string): void => {
  if (enabled("warn")) printer(line + "\n")
}

/** Where log lines go: stderr, through a live progress line's `print` while one is drawn (runLog.ts). */
let printer = (text: string): void => void process.stderr.write(text)

/**
 * Sends the log lines of {@link warn} and {@link info} through `print` (a progress
 * line's, which erases and redraws the line around them) until the returned function
 * is called.
 *
 * @since 0.1.0
 * @category cli
 */
export const printThrough = (print: (text: string) => void): () => void => {
  const saved = printer
  printer = print
  return () => {
    printer = saved
  }
}

/**
 * A log line on stderr (registration lines, the pipeline's INFO lines, a GPU worker's
 * adapter), unless `--log-level` is above info.
 *
 * @since 0.1.0
 * @category cli
 */
export const info = (line: string): void => {
  if (enabled("info")) printer(line + "\n")
}

/**
 * Whether progress is drawn as a terminal line (redrawn with `\r`) rather than plain
 * lines: stderr is a terminal, or `TESSERA_PROGRESS=tty`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const progressOnTerminal = (): boolean => process.env.TESSERA_PROGRESS === "tty" || process.stderr.isTTY === true

/**
 * Whether progress is shown at all: `--log-level` lets info through, and
 * `TESSERA_PROGRESS` does not say 0; `large` input (or a terminal) otherwise.
 *
 * @since 0.1.0
 * @category formatting
 */
export const progressShown = (large: boolean): boolean => {
  const forced = process.env.TESSERA_PROGRESS
  if (forced === "0" || !enabled("info")) return false
  return forced === "1" || forced === "tty" || large || process.stderr.isTTY === true
}

/** Seconds between plain progress lines (not a terminal). */
const plainInterval = 5

/**
 * A progress line.
 *
 * @since 0.1.0
 * @category formatting
 */
export interface Progress {
  /** bytes decoded so far (the analysis loader's callback) */
  readonly onProgress: (p: LoadProgress) => void
  /** a new phase: `rendering report.html` */
  readonly phase: (name: string) => void
  /** the databases are loaded */
  readonly loaded: (events: number, files: number, droppedBytes: number) => void
  /** a step finished: its own line (`analyze: task_bottleneck 0.31 s`), then the live line goes on */
  readonly done: (line: string) => void
  /** end the line (idempotent) */
  readonly end: () => void
}

const mib = (b: number) => (b / 2 ** 20).toFixed(0)

const totalBytes = (files: ReadonlyArray<string>): number => {
  let total = 0
  for (const f of files) {
    try {
      total += statSync(f).size
    } catch {
      // a missing file is reported by the loader, naming it
    }
  }
  return total
}

/**
 * Progress of a command reading `files`, labelled `label` (`report`, `export`, ...).
 *
 * @since 0.1.0
 * @category formatting
 */
export const progress = (label: string, files: ReadonlyArray<string>, options: { readonly minBytes?: number } = {}): Progress => {
  const total = totalBytes(files)
  const shown = progressShown(total >= (options.minBytes ?? 16 * 2 ** 20))
  const tty = progressOnTerminal()
  const t0 = performance.now()
  let text = `loading ${files.length} database(s), ${mib(total)} MiB`
  let width = 0
  let drawn = false
  let ended = false
  // plain lines: the text last written, and when
  let written = ""
  let writtenAt = -Infinity
  const draw = () => {
    if (!shown || ended) return
    const line = `${label}: ${text} [${((performance.now() - t0) / 1000).toFixed(1)} s]`
    if (!tty) {
      const now = performance.now()
      if (text === written || now - writtenAt < plainInterval * 1000) return
      process.stderr.write(`${line}\n`)
      written = text
      writtenAt = now
      return
    }
    process.stderr.write(`\r${line}${" ".repeat(Math.max(0, width - line.length))}`)
    width = line.length
    drawn = true
  }
  const timer = shown ? setInterval(draw, tty ? 250 : plainInterval * 1000) : undefined
  timer?.unref()
  draw()
  let last = 0
  const end = () => {
    if (ended) return
    if (timer !== undefined) clearInterval(timer)
    if (drawn) process.stderr.write("\n")
    ended = true
  }
  const done = (line: string) => {
    if (!shown || ended) return
    const full = `${label}: ${line}`
    process.stderr.write(tty ? `\r${full}${" ".repeat(Math.max(0, width - full.length))}\n` : `${full}\n`)
    drawn = false
    width = 0
  }
  return {
    onProgress: (p) => {
      text = `loading ${mib(p.bytesRead)}/${mib(p.bytesTotal)} MiB (${((p.bytesRead / Math.max(1, p.bytesTotal)) * 100).toFixed(0)}%), ${p.events} events`
      const now = performance.now()
      if (now - last >= 250) {
        last = now
        draw()
      }
    },
    phase: (name) => {
      text = name
      // a new phase is news: a plain line at once
      writtenAt = -Infinity
      draw()
    },
    loaded: (events, n, dropped) => {
      const seconds = ((performance.now() - t0) / 1000).toFixed(2)
      done(`loaded ${events} events from ${n} database(s) in ${seconds} s`)
      if (dropped > 0) warn(`${label}: dropped ${dropped} bytes of truncated record(s)`)
    },
    done,
    end
  }
}

/**
 * Run `f` (a promise of the report modules) with a progress line naming `phase` (by
 * default: loading N database(s), M MiB),
 * keeping the error it rejects with: a typed error of `src/report` or `src/trace`
 * stays what it is, a Node system error (a file that cannot be written) is a
 * {@link Failed}, anything else is a defect (reported as an internal error).
 *
 * @since 0.1.0
 * @category formatting
 */
export const tracked = <A>(label: string, files: ReadonlyArray<string>, phase: string | undefined, f: (p: Progress) => Promise<A>) =>
  Effect.suspend(() => {
    const p = progress(label, files)
    if (phase !== undefined) p.phase(phase)
    return Effect.tryPromise({ try: () => f(p), catch: (e) => e }).pipe(
      Effect.catch((e) => (isTagged(e) || isSystemError(e) ? Effect.fail(toTyped(e)) : Effect.die(e))),
      Effect.ensuring(Effect.sync(p.end))
    )
  })

/** A Node system error (ENOENT, EACCES, ...): a failure of the run, not a bug. */
const isSystemError = (e: unknown): boolean =>
  e instanceof Error && typeof (e as { code?: unknown }).code === "string" && typeof (e as { syscall?: unknown }).syscall === "string"

const isTagged = (e: unknown): e is { readonly _tag: string } =>
  typeof e === "object" && e !== null && typeof (e as { _tag?: unknown })._tag === "string"

/**
 * Keep a typed (tagged) error as it is; wrap anything else (a Node system error, an
 * Error thrown by a bug) so that its message and stack survive.
 *
 * @since 0.1.0
 * @category errors
 */
export const toTyped = (e: unknown): { readonly _tag: string } => (isTagged(e) ? e : new Failed({ cause: e }))

/**
 * A rejected promise without a typed error of its own (a Node system error such as
 * ENOENT on an output file, or a bug): its message, and its stack under `--verbose`.
 *
 * @since 0.1.0
 * @category errors
 */
export class Failed extends Data.TaggedError("Failed")<{ readonly cause: unknown }> {
  override get message(): string {
    const message = this.cause instanceof Error ? this.cause.message : String(this.cause)
    // an output's write error (trace/OutputFile.ts adds `output`: write(2)'s own names no file)
    const output = (this.cause as { output?: unknown } | null)?.output
    return typeof output === "string" && !message.includes(output) ? `cannot write ${output}: ${message}` : message
  }
}

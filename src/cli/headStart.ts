/**
 * The head start of `tessera analyze`: decoding the databases begins on worker threads
 * as the process starts, while this thread loads the CLI framework, the analyses and
 * Arrow (about 0.25 s of module loading that decoding then overlaps); the command takes
 * the decoding over, and this thread then joins in (`Decoding.join`).
 *
 * `main.ts` calls `startHeadStart` with the process arguments before it loads anything
 * else. It starts only for a command line that `preParseAnalyze` reads plainly as
 * `analyze` with databases; the command later asks `takeHeadStart` for exactly the
 * databases and columns it parsed (`Decoding.sameDecoding`), and a head start that does
 * not match, or that nobody takes (a usage error, help), is stopped (`abortHeadStart`).
 * Progress reported before the command listens is passed on when it does (the latest).
 *
 * @since 0.1.0
 */
import { columnsOfNames } from "../analysis/AnalysisNames.ts"
import type { Decoding } from "../analysis/Decoding.ts"
import type { LoadColumns, LoadProgress } from "../analysis/Load.ts"
import { preParseAnalyze } from "./analyzeArgs.ts"

/** Where progress goes: the latest report is kept until someone listens. */
interface Relay {
  listener: ((p: LoadProgress) => void) | undefined
  latest: LoadProgress | undefined
}

interface HeadStart {
  readonly decoding: Decoding
  readonly relay: Relay
}

let current: HeadStart | undefined

/**
 * Start decoding the databases of an `analyze` command line; resolves once decoding has
 * begun (worker threads started), or at once when `argv` is anything else. Never
 * rejects: a head start that fails is reported by the command that takes it over.
 *
 * @since 0.1.0
 * @category cli
 */
export const startHeadStart = async (argv: ReadonlyArray<string>): Promise<void> => {
  if (process.env.TESSERA_HEAD_START === "0") return
  const parsed = preParseAnalyze(argv)
  if (parsed === undefined) return
  const { startDecoding } = await import("../analysis/Decoding.ts")
  const columns = columnsOfNames(parsed.analyses)
  let begun!: () => void
  const started = new Promise<void>((resolve) => (begun = resolve))
  const relay: Relay = { listener: undefined, latest: undefined }
  const decoding = startDecoding(parsed.databases, {
    onStarted: () => begun(),
    onProgress: (p) => (relay.listener === undefined ? (relay.latest = p) : relay.listener(p)),
    ...(columns !== undefined ? { columns } : {})
  })
  decoding.decoded.then(() => begun(), () => begun())
  current = { decoding, relay }
  await started
}

/**
 * The head start's decoding when it decodes exactly `files` into `columns` (it is
 * then the caller's: progress goes to `onProgress` from now on); else `undefined`, and
 * a head start that does not match is stopped.
 *
 * @since 0.1.0
 * @category cli
 */
export const takeHeadStart = async (
  files: ReadonlyArray<string>,
  columns: LoadColumns | undefined,
  onProgress?: (p: LoadProgress) => void
): Promise<Decoding | undefined> => {
  const hs = current
  if (hs === undefined) return undefined
  current = undefined
  const { sameDecoding } = await import("../analysis/Decoding.ts")
  if (!sameDecoding(hs.decoding, files, columns)) {
    hs.decoding.abort()
    return undefined
  }
  if (onProgress !== undefined) {
    hs.relay.listener = onProgress
    if (hs.relay.latest !== undefined) onProgress(hs.relay.latest)
  }
  return hs.decoding
}

/**
 * Stop a head start nobody took over (no effect once taken or when there is none).
 *
 * @since 0.1.0
 * @category cli
 */
export const abortHeadStart = (): void => {
  current?.decoding.abort()
  current = undefined
}

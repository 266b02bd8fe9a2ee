/**
 * The streams of the commands that run a pipeline (`tessera run`, `tessera demo`):
 * stdout carries their results only; everything else goes to stderr:
 *
 * - log lines (the profiler's registration lines, the pipeline's INFO lines, a GPU
 *   worker's adapter) under `--log-level` (shown at info and below);
 * - what the pipeline's own code prints with `console.log` / `console.info` while the
 *   command loads and runs it (the DSL's default logger among it);
 * - progress by stage (profiler/ProgressBar.ts `stages`): on a terminal one line, redrawn
 *   every 0.25 s and erased at the end; elsewhere a plain line every 5 s
 *   (`TESSERA_PROGRESS_INTERVAL` seconds, which also shortens the redraw period), so a
 *   short run writes none. Shown unless `--log-level` is above info or
 *   `TESSERA_PROGRESS=0`.
 *
 * @since 0.1.0
 */
import { format } from "node:util"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Callback from "../profiler/Callback.ts"
import * as ProgressBar from "../profiler/ProgressBar.ts"
import * as Output from "./output.ts"

/**
 * The log of one command run: `info` for log lines, `layer` for the progress callbacks
 * (provide it to the computes), `around` to send `console.log` to stderr meanwhile.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunLog {
  /** a log line, shown when `--log-level` lets info through */
  readonly info: (line: string) => void
  /** the progress callbacks (empty when progress is not shown) */
  readonly layer: Layer.Layer<never>
  /** runs `self` with `console.log` and `console.info` writing to stderr, restored after */
  readonly around: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * Seconds between plain progress lines: `TESSERA_PROGRESS_INTERVAL`, default 5.
 *
 * @since 0.1.0
 * @category formatting
 */
export const plainInterval = (): number => {
  const v = Number(process.env.TESSERA_PROGRESS_INTERVAL)
  return Number.isFinite(v) && v > 0 ? v : 5
}

/**
 * A run's log, labelled `label` (`run`, `demo`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (label: string): RunLog => {
  const shown = process.env.TESSERA_PROGRESS !== "0" && Output.enabled("info")
  const progress = shown
    ? ProgressBar.stages({
      label,
      interval: plainInterval(),
      // a shorter TESSERA_PROGRESS_INTERVAL (tests) redraws faster too
      dt: Math.min(0.25, plainInterval()),
      out: { write: (s) => void process.stderr.write(s), isTTY: Output.progressOnTerminal() }
    })
    : undefined
  const print = (text: string) => (progress === undefined ? process.stderr.write(text) : progress.print(text))
  const around = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const saved = { log: console.log, info: console.info, output: Output.printThrough(print) }
        console.log = (...args: Array<unknown>) => print(format(...args) + "\n")
        console.info = console.log
        return saved
      }),
      () => self,
      (saved) =>
        Effect.sync(() => {
          console.log = saved.log
          console.info = saved.info
          saved.output()
        })
    )
  return {
    info: (line) => {
      if (Output.enabled("info")) print(line + "\n")
    },
    layer: progress === undefined ? Layer.empty : Callback.layer(progress),
    around
  }
}

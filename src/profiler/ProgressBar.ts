/**
 * ProgressBar: dask.diagnostics' `ProgressBar` — reads its fraction from the scheduler
 * state (`finishedCount / total`), keeps no books of its own.
 *
 * TTY-aware: on a terminal it redraws one line (`\r`) every `dt` seconds (default 0.1)
 * and finishes it with a newline; when the output is not a terminal (a log file, a pipe,
 * CI) it writes exactly one final line at the end, so logs are not flooded with redraws.
 * Nothing is shown for computes shorter than `minimum` seconds (default 0).
 *
 * Line format (dask's): `[########################################] | 100% Completed |  1.2s`.
 *
 * @since 0.1.0
 */
import type * as Hooks from "../engine/Hooks.ts"
import type { SchedulerState } from "../engine/State.ts"
import type { HasCallbacks } from "./Callback.ts"

/**
 * Where the bar is written: `write` plus whether it is a terminal.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProgressOutput {
  readonly write: (text: string) => void
  readonly isTTY: boolean
}

/**
 * Options of the progress bar.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProgressBarOptions {
  /** seconds before the bar is shown (default 0) */
  readonly minimum?: number
  /** bar width in characters (default 40) */
  readonly width?: number
  /** redraw period in seconds on a terminal (default 0.1) */
  readonly dt?: number
  /** default process.stdout */
  readonly out?: ProgressOutput
}

/**
 * Formats elapsed seconds as dask does: `12.3s`, `1min  2.3s`, `1hr  2min  3.4s`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatTime = (t: number): string => {
  const h = Math.floor(t / 3600)
  const m = Math.floor((t % 3600) / 60)
  const s = t % 60
  if (h > 0) return `${h}hr ${String(m).padStart(2)}min ${s.toFixed(1).padStart(4)}s`
  if (m > 0) return `${m}min ${s.toFixed(1).padStart(4)}s`
  return `${s.toFixed(1).padStart(4)}s`
}

/**
 * One bar line for `fraction` (0..1, clamped) after `elapsed` seconds.
 *
 * @since 0.1.0
 * @category formatting
 */
export const render = (fraction: number, elapsed: number, width = 40): string => {
  const f = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0
  const filled = Math.floor(f * width)
  const bar = "#".repeat(filled) + " ".repeat(width - filled)
  const percent = String(Math.floor(f * 100)).padStart(3)
  return `[${bar}] | ${percent}% Completed | ${formatTime(elapsed)}`
}

/**
 * A progress bar.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProgressBar extends HasCallbacks {
  /** the last line drawn ('' before any) */
  readonly last: string
}

const fractionOf = (state: SchedulerState): number => (state.total === 0 ? 1 : state.finishedCount / state.total)

/**
 * A new progress bar.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: ProgressBarOptions = {}): ProgressBar => {
  const minimum = options.minimum ?? 0
  const width = options.width ?? 40
  const dt = options.dt ?? 0.1
  if (!(dt > 0) || !(width >= 1) || !(minimum >= 0)) {
    throw new RangeError(`ProgressBar: dt > 0, width >= 1 and minimum >= 0 required (got ${dt}, ${width}, ${minimum})`)
  }
  const out: ProgressOutput = options.out ?? {
    write: (s) => void process.stdout.write(s),
    isTTY: process.stdout.isTTY === true
  }
  let startedAt = 0
  let state: SchedulerState | null = null
  let timer: ReturnType<typeof setInterval> | null = null
  let last = ""
  let drawn = false
  const elapsed = () => (performance.now() - startedAt) / 1000
  const draw = () => {
    if (state === null) return
    const e = elapsed()
    if (e < minimum) return
    last = render(fractionOf(state), e, width)
    out.write(`\r${last}`)
    drawn = true
  }
  const callbacks: Hooks.Callbacks = {
    start: () => {
      startedAt = performance.now()
      drawn = false
    },
    startState: (_graph, s) => {
      state = s
      if (out.isTTY) {
        timer = setInterval(draw, dt * 1000)
        timer.unref()
      }
    },
    finish: (_graph, s, failed) => {
      if (timer !== null) clearInterval(timer)
      timer = null
      const e = elapsed()
      state = null
      if (e < minimum && !drawn) return
      last = render(failed ? fractionOf(s) : 1, e, width)
      out.write(out.isTTY ? `\r${last}\n` : `${last}\n`)
    }
  }
  return {
    callbacks,
    get last() {
      return last
    }
  }
}

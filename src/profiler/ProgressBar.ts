/**
 * ProgressBar: dask.diagnostics' `ProgressBar` — reads its fraction from the scheduler
 * state (`finishedCount / total`), keeps no books of its own beyond the totals of the
 * computes that already finished.
 *
 * One bar per run, not per compute. A pipeline run is many computes (the demo at 20,000
 * samples: about a hundred, one per KMeans / SOM iteration), and dask's bar, drawn per
 * compute, prints a "100% Completed" line for each. Here:
 *
 * - under a layer or a scope (`layer(options)`, `scoped(options)`, or `Callback.layer(bar)`
 *   / `Callback.scoped(bar)`, which open `bar.open`), every compute inside counts towards
 *   one bar: the fraction is tasks finished over tasks of the computes started so far,
 *   the time runs from when the scope opened, and the line is finished when the scope
 *   closes (100% on success, the fraction reached on failure);
 * - with the callbacks alone (`compute(graph, { callbacks: [bar.callbacks] })`,
 *   `Callback.register(bar)`), nothing tells the bar where a run ends, so it draws one bar
 *   per compute, as dask does.
 *
 * A run's total grows as its computes start (an iterative stage's number of computes is
 * only known when it converges), so the fraction of a run can step back when a compute
 * starts; it reaches 100% only when the scope closes.
 *
 * TTY-aware: on a terminal it redraws one line (`\r`) every `dt` seconds (default 0.1)
 * and finishes it with a newline; when the output is not a terminal (a log file, a pipe,
 * CI) it writes exactly one final line at the end, so logs are not flooded with redraws.
 * Nothing is shown for runs (computes) shorter than `minimum` seconds (default 0).
 *
 * Line format (dask's): `[########################################] | 100% Completed |  1.2s`.
 *
 * `stages(options)`: the progress `tessera run` and `tessera demo` show on stderr, by
 * stage (the stage of the task each compute is for): `run: KMeans.fitPredict: 120/150
 * tasks, 3.2 s (run 5.1 s)`, one line redrawn on a terminal and erased at the end, a
 * plain line every few seconds elsewhere (never a `\r` into a file).
 *
 * @since 0.1.0
 */
import { Effect, type Exit, type Layer, type Scope } from "effect"
import type * as Hooks from "../engine/Hooks.ts"
import type { SchedulerState } from "../engine/State.ts"
import type { TaskGraph } from "../engine/TaskGraph.ts"
import * as Callback from "./Callback.ts"

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
export interface ProgressBar extends Callback.HasCallbacks {
  /** the last line drawn ('' before any) */
  readonly last: string
  /**
   * Opens a run: until the current scope closes, the computes this bar sees draw one bar,
   * finished when the scope closes. Nested opens join the outer run.
   */
  readonly open: Effect.Effect<void, never, Scope.Scope>
}

const fractionOf = (state: SchedulerState): number => (state.total === 0 ? 1 : state.finishedCount / state.total)

/** The computes of one open run: totals of the finished ones, the states of the running ones. */
interface Run {
  readonly startedAt: number
  depth: number
  finished: number
  total: number
  readonly running: Set<SchedulerState>
}

const runFraction = (run: Run): number => {
  let finished = run.finished
  let total = run.total
  for (const s of run.running) {
    finished += s.finishedCount
    total += s.total
  }
  return total === 0 ? 0 : finished / total
}

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
  // per-compute mode (no run open)
  let startedAt = 0
  let state: SchedulerState | null = null
  // run mode
  let run: Run | null = null
  let timer: ReturnType<typeof setInterval> | null = null
  let last = ""
  let drawn = false
  const since = (t: number) => (performance.now() - t) / 1000
  const draw = () => {
    let fraction: number
    let e: number
    if (run !== null) (fraction = runFraction(run)), (e = since(run.startedAt))
    else if (state !== null) (fraction = fractionOf(state)), (e = since(startedAt))
    else return
    if (e < minimum) return
    last = render(fraction, e, width)
    out.write(`\r${last}`)
    drawn = true
  }
  const startTimer = () => {
    if (out.isTTY && timer === null) {
      timer = setInterval(draw, dt * 1000)
      timer.unref()
    }
  }
  const stopTimer = () => {
    if (timer !== null) clearInterval(timer)
    timer = null
  }
  const finishLine = (fraction: number, e: number) => {
    if (e < minimum && !drawn) return
    last = render(fraction, e, width)
    out.write(out.isTTY ? `\r${last}\n` : `${last}\n`)
  }
  const callbacks: Hooks.Callbacks = {
    start: () => {
      if (run !== null) return
      startedAt = performance.now()
      drawn = false
    },
    startState: (_graph, s) => {
      if (run !== null) {
        run.running.add(s)
        return
      }
      state = s
      startTimer()
    },
    finish: (_graph, s, failed) => {
      if (run !== null) {
        // a compute started before the run opened is not part of it
        if (run.running.delete(s)) (run.finished += s.finishedCount), (run.total += s.total)
        return
      }
      stopTimer()
      state = null
      finishLine(failed ? fractionOf(s) : 1, since(startedAt))
    }
  }
  const openRun = Effect.sync(() => {
    if (run !== null) {
      run.depth++
      return
    }
    run = { startedAt: performance.now(), depth: 1, finished: 0, total: 0, running: new Set() }
    drawn = false
    startTimer()
  })
  const closeRun = (exit: Exit.Exit<unknown, unknown>) =>
    Effect.sync(() => {
      const r = run
      if (r === null || --r.depth > 0) return
      stopTimer()
      run = null
      finishLine(exit._tag === "Success" ? 1 : runFraction(r), since(r.startedAt))
    })
  return {
    callbacks,
    open: Effect.acquireRelease(openRun, (_, exit) => closeRun(exit)),
    get last() {
      return last
    }
  }
}

/**
 * A progress bar for the effects the layer is provided to: one bar for all their
 * computes, finished when the layer's scope closes.
 *
 * **Example** (One bar for a pipeline run)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Datasets, Estimators, Executor, Pipeline } from "tessera"
 * import * as ProgressBar from "tessera/profiler/ProgressBar"
 *
 * const { X } = Datasets.makeBlobs({ nSamples: 10_000, centers: [[0, 0], [6, 6]], chunks: 1_000 })
 * const pipeline = Pipeline.make("bar")
 * pipeline.add(new Estimators.KMeans({ nClusters: 2 }).fitPredict, { X })
 * await Effect.runPromise(pipeline.run().pipe(Effect.provide(ProgressBar.layer()), Effect.provide(Executor.layerWorkers())))
 * // [########################################] | 100% Completed |  0.3s
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ProgressBarOptions = {}): Layer.Layer<never> => Callback.layer(make(options))

/**
 * A progress bar for the rest of the current scope, registered globally (dask's
 * `with ProgressBar():`): one bar for every compute until the scope closes.
 *
 * @since 0.1.0
 * @category layers
 */
export const scoped = (options: ProgressBarOptions = {}): Effect.Effect<ProgressBar, never, Scope.Scope> =>
  Callback.scoped(make(options))

/**
 * Options of {@link stages}.
 *
 * @since 0.1.0
 * @category models
 */
export interface StageProgressOptions {
  /** where the line goes (default process.stderr) */
  readonly out?: ProgressOutput
  /** redraw period on a terminal, seconds (default 0.25) */
  readonly dt?: number
  /** period of the plain lines when the output is not a terminal, seconds (default 5) */
  readonly interval?: number
  /** what starts each line (default "progress") */
  readonly label?: string
}

/**
 * A progress line per stage of a run (`tessera run`, `tessera demo`).
 *
 * @since 0.1.0
 * @category models
 */
export interface StageProgress extends Callback.HasCallbacks {
  /** the last line drawn or written ('' before any) */
  readonly last: string
  /** Opens a run: the line is drawn until the scope closes, then erased (a terminal) or ended. */
  readonly open: Effect.Effect<void, never, Scope.Scope>
  /**
   * Writes `text` (whole lines) to the same output without mixing it into the line: on a
   * terminal the line is erased first and redrawn after.
   */
  readonly print: (text: string) => void
}

/**
 * The stage a compute works for: the `stage` of the last task of its graph that it
 * computes (in topological order: the output), else that task's function name.
 */
const stageOf = (graph: TaskGraph, state: SchedulerState): string => {
  for (let j = graph.order.length - 1; j >= 0; j--) {
    const i = graph.order[j]!
    if (state.needed[i] === 0) continue
    return graph.specs[i]?.stage ?? graph.names[i] ?? "?"
  }
  return "?"
}

/**
 * One line of a run's progress: the stage being computed, its tasks finished out of
 * those started so far (a stage's computes add up: an iterative stage's total grows as
 * its computes start), the stage's time and the run's.
 *
 * `KMeans.fitPredict: 120/150 tasks, 3.2 s (run 5.1 s)`
 *
 * @since 0.1.0
 * @category formatting
 */
export const renderStage = (stage: string, done: number, total: number, stageSeconds: number, runSeconds: number): string =>
  `${stage}: ${done}/${total} tasks, ${stageSeconds.toFixed(1)} s (run ${runSeconds.toFixed(1)} s)`

/**
 * Progress of a run by stage. On a terminal one line, redrawn with `\r` every `dt`
 * seconds and erased when the run ends; elsewhere (a file, a pipe, CI) a plain line
 * every `interval` seconds while something changed, and never a `\r`. Nothing is
 * written for a run shorter than one period.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stages = (options: StageProgressOptions = {}): StageProgress => {
  const out: ProgressOutput = options.out ?? { write: (s) => void process.stderr.write(s), isTTY: process.stderr.isTTY === true }
  const dt = options.dt ?? 0.25
  const interval = options.interval ?? 5
  if (!(dt > 0) || !(interval > 0)) throw new RangeError(`ProgressBar.stages: dt > 0 and interval > 0 required (got ${dt}, ${interval})`)
  const label = options.label ?? "progress"
  let runStart = 0
  let depth = 0
  let stage = ""
  let stageStart = 0
  let done = 0
  let total = 0
  const running = new Map<SchedulerState, string>()
  let last = ""
  let shownWidth = 0
  let written = ""
  let timer: ReturnType<typeof setInterval> | null = null
  const now = () => performance.now()
  const line = () => {
    let d = done
    let t = total
    for (const [s, name] of running) {
      if (name !== stage) continue
      d += s.finishedCount
      t += s.total
    }
    return `${label}: ${renderStage(stage, d, t, (now() - stageStart) / 1000, (now() - runStart) / 1000)}`
  }
  const erase = () => {
    if (shownWidth > 0) out.write(`\r${" ".repeat(shownWidth)}\r`)
    shownWidth = 0
  }
  const tick = () => {
    if (stage === "") return
    last = line()
    if (out.isTTY) {
      out.write(`\r${last}${" ".repeat(Math.max(0, shownWidth - last.length))}`)
      shownWidth = last.length
      return
    }
    // the same stage and counts as the last plain line: nothing new to say
    const news = last.replace(/, [\d.]+ s \(run [\d.]+ s\)$/, "")
    if (news === written) return
    written = news
    out.write(`${last}\n`)
  }
  const callbacks: Hooks.Callbacks = {
    startState: (graph, s) => {
      if (depth === 0) return
      const name = stageOf(graph, s)
      if (name !== stage) {
        stage = name
        stageStart = now()
        done = 0
        total = 0
      }
      running.set(s, name)
    },
    finish: (_graph, s) => {
      const name = running.get(s)
      running.delete(s)
      if (name !== undefined && name === stage) (done += s.finishedCount), (total += s.total)
    }
  }
  const openRun = Effect.sync(() => {
    if (depth++ > 0) return
    runStart = now()
    timer = setInterval(tick, (out.isTTY ? dt : interval) * 1000)
    timer.unref()
  })
  const closeRun = Effect.sync(() => {
    if (--depth > 0) return
    if (timer !== null) clearInterval(timer)
    timer = null
    erase()
    stage = ""
    running.clear()
  })
  return {
    callbacks,
    open: Effect.acquireRelease(openRun, () => closeRun),
    print: (text) => {
      const redraw = shownWidth > 0
      erase()
      out.write(text)
      if (redraw) tick()
    },
    get last() {
      return last
    }
  }
}

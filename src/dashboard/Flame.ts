/**
 * The dashboard's Profile tab: the statistical profiler's flame graph of a selectable
 * time window, filterable by function and stage, drawn with the report's chart
 * (report/FlameGraph.ts: the same Vega spec `flameSpec`, the same aggregation and
 * layout `flameCode`, the same page payload `flamePayload`; one set of chart
 * definitions, two data sources).
 *
 * Where the samples come from, after a run: the StatisticalProfiler's database
 * (`*-StatisticalProfiler-*.msgpack`), read once —
 *
 * - `tessera dashboard -d DB…`: the databases it replays (when one holds samples);
 * - `tessera demo|run --dashboard … --profile NAME`: after the run, once the profiler's
 *   layer has closed and flushed its file (samples attributed to tasks: by stage too).
 *
 * During a run, when the dashboard samples (sharing `--profile`'s sampler, or `sample` in
 * code), the server answers the tab from the live samples instead (`LiveFlame.ts`).
 *
 * The payload is bounded as the report's is (exact samples up to `maxSamples`, else time
 * bins), built and serialised once, sent when a page opens the tab.
 *
 * @since 0.1.0
 */
import type { LiveState } from "./LiveState.ts"

/**
 * What the Profile tab shows: no samples (and why), a load under way, the report's flame
 * payload (`flamePayload`: frames, call tree, rows with times in seconds from the
 * page's `t0`), or why the load failed.
 *
 * @since 0.1.0
 * @category models
 */
export type FlamePanel =
  | { readonly status: "none"; readonly reason: string }
  | { readonly status: "pending"; readonly source: string }
  | { readonly status: "ready"; readonly source: string; readonly samples: number; readonly payload: unknown }
  | { readonly status: "error"; readonly source: string; readonly message: string }

/**
 * The panel of a live run without a database's samples (yet): the live samples, if any, answer instead (`LiveFlame.ts`).
 *
 * @since 0.1.0
 * @category constants
 */
export const noSamples: FlamePanel = {
  status: "none",
  reason: "no stack samples: run with --profile NAME (sampling on, the default) to get the statistical profiler's flame graph here, live during the run and from its database when the run is over"
}

/**
 * The page's payload is at most this many rows (above: time bins, as the report's).
 *
 * @since 0.1.0
 * @category constants
 */
export const maxDashboardSamples = 200_000

/**
 * Reads the stack samples of `files` in a worker thread (`AfterRunWorker.ts`) and puts
 * the flame payload on `state`'s Profile tab (pending meanwhile; files without samples: says so; a failure: its message).
 * `t0`: the page's time origin (epoch seconds). `maxSamples`: rows before binning.
 * Never rejects.
 *
 * @since 0.1.0
 * @category constructors
 */
export const profileInto = async (
  state: LiveState,
  files: ReadonlyArray<string>,
  t0: number,
  maxSamples: number = maxDashboardSamples
): Promise<FlamePanel> => {
  const source = files.join(" ")
  if (files.length === 0) return (state.flame = noSamples)
  state.flame = { status: "pending", source }
  try {
    // in a worker thread of its own: the server keeps answering meanwhile
    const { runAfterRun } = await import("./AfterRunWorker.ts")
    state.flame = await runAfterRun<FlamePanel>({ kind: "flame", files: [...files], t0, maxSamples })
  } catch (e) {
    state.flame = { status: "error", source, message: e instanceof Error ? e.message : String(e) }
  }
  return state.flame
}

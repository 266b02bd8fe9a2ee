/**
 * `visualize([profiler, resourceProfiler, cacheProfiler])`: the stacked, time-aligned
 * plots `dask.diagnostics.visualize` draws, from the results of Tessera's
 * dask-style profilers — task bars per worker coloured by function (Profiler), CPU % and
 * memory (MB) over time (ResourceProfiler), and the metric held in the cache over time,
 * one line per function (CacheProfiler, as dask's `plot_cache` groups by `key_split`) —
 * as a self-contained HTML page and as SVG.
 *
 * Inputs are the profilers' plain result shapes (anything with a matching `results`
 * array), so this module does not depend on the profiler layer. Times are seconds;
 * every plot shares one x axis, seconds since the earliest time in any input.
 *
 * Axes: the CPU axis runs from 0 to the larger of 100% and the highest sample, but never
 * past 100% x `cores` (default `os.availableParallelism()`, the most a process on this
 * machine can use; samples above are drawn at the top); memory is in MB, as ResourceProfiler
 * records it, on its own axis at the right; the two lines have a legend.
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { availableParallelism } from "node:os"
import type { TopLevelSpec } from "vega-lite"
import { renderSvg } from "../report/Figure.ts"
import { toVega } from "./Charts.ts"
import { scriptJson } from "./Html.ts"
import { esc } from "./TableHtml.ts"
import { writeOutputFile } from "../trace/OutputFile.ts"

/**
 * Profiler result rows (dask's `TaskData`).
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskData {
  readonly key: string
  readonly task: string
  readonly startTime: number
  readonly endTime: number
  readonly workerId: number
}

/**
 * ResourceProfiler result rows (dask's `ResourceData`: mem in MB, cpu in % of one core).
 *
 * @since 0.1.0
 * @category models
 */
export interface ResourceData {
  readonly time: number
  readonly mem: number
  readonly cpu: number
}

/**
 * CacheProfiler result rows (dask's `CacheData`).
 *
 * @since 0.1.0
 * @category models
 */
export interface CacheData {
  readonly key: string
  readonly task: string
  readonly metric: number
  readonly cacheTime: number
  readonly freeTime: number
}

/**
 * Anything holding one of the three result kinds.
 *
 * @since 0.1.0
 * @category models
 */
export type ProfilerResults =
  | { readonly results: ReadonlyArray<TaskData> }
  | { readonly results: ReadonlyArray<ResourceData> }
  | { readonly results: ReadonlyArray<CacheData>; readonly metricName?: string }

const kindOf = (p: ProfilerResults): "task" | "resource" | "cache" | "empty" => {
  const first = p.results[0] as unknown as Record<string, unknown> | undefined
  if (first === undefined) return "empty"
  if ("startTime" in first) return "task"
  if ("cacheTime" in first) return "cache"
  return "resource"
}

/**
 * The top of the CPU axis: 100%, or the highest sample when higher, but never past
 * `cores` x 100% (a process cannot use more; the axis used to stretch to whatever a bad
 * sample read, e.g. 30,000%).
 *
 * @since 0.1.0
 * @category formatting
 */
export const cpuAxisMax = (samples: ReadonlyArray<number>, cores: number): number => {
  let max = 100
  for (const v of samples) if (Number.isFinite(v) && v > max) max = v
  return Math.min(max, 100 * Math.max(1, cores))
}

// enough distinct colours for a pipeline's functions (the demo has 11; category10 repeats)
const functionColors = { scheme: "tableau20" } as const

/**
 * The stacked Vega-Lite spec (one plot per non-empty input, in input order). `cores`
 * bounds the CPU axis (default: this machine's `availableParallelism()`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const visualizeSpec = (
  profilers: ReadonlyArray<ProfilerResults>,
  width = 800,
  cores: number = availableParallelism()
): TopLevelSpec => {
  let t0 = Infinity
  let t1 = -Infinity
  const see = (t: number) => {
    if (Number.isFinite(t)) {
      if (t < t0) t0 = t
      if (t > t1) t1 = t
    }
  }
  for (const p of profilers) {
    const k = kindOf(p)
    for (const r of p.results as ReadonlyArray<any>) {
      if (k === "task") (see(r.startTime), see(r.endTime))
      else if (k === "resource") see(r.time)
      else if (k === "cache") (see(r.cacheTime), see(r.freeTime))
    }
  }
  if (!Number.isFinite(t0)) (t0 = 0), (t1 = 1)
  const x = { type: "quantitative" as const, title: "time (s)", scale: { domain: [0, t1 - t0] } }
  const plots: Array<any> = []
  for (const p of profilers) {
    const k = kindOf(p)
    if (k === "task") {
      const rows = (p.results as ReadonlyArray<TaskData>).map((r) => ({
        key: r.key, task: r.task, worker: r.workerId, start: r.startTime - t0, end: r.endTime - t0, duration: r.endTime - r.startTime
      }))
      plots.push({
        title: "Profile Results",
        width,
        height: Math.max(80, 22 * new Set(rows.map((r) => r.worker)).size),
        data: { values: rows },
        mark: { type: "rect", tooltip: true },
        encoding: {
          x: { field: "start", ...x },
          x2: { field: "end" },
          y: { field: "worker", type: "ordinal", title: "worker" },
          color: { field: "task", type: "nominal", title: "function", scale: functionColors },
          tooltip: [
            { field: "key" },
            { field: "task", title: "function" },
            { field: "worker" },
            { field: "duration", title: "duration (s)", format: ".4~g" }
          ]
        }
      })
    } else if (k === "resource") {
      const res = p.results as ReadonlyArray<ResourceData>
      const cpuTop = cpuAxisMax(res.map((r) => r.cpu), cores)
      // a sample above what the machine can do is drawn at the top, not off the chart
      const rows = res.map((r) => ({ t: r.time - t0, cpu: Math.min(r.cpu, cpuTop), mem: r.mem }))
      // one colour scale over both layers, so the lines get a legend
      const series = { scale: { domain: ["% CPU", "memory (MB)"], range: ["#4c78a8", "#e45756"] }, title: null, legend: { orient: "top" } }
      plots.push({
        title: "Profile Results (resources)",
        width,
        height: 140,
        data: { values: rows },
        layer: [
          {
            mark: { type: "line" },
            encoding: {
              x: { field: "t", ...x },
              y: { field: "cpu", type: "quantitative", title: "% CPU", scale: { domain: [0, cpuTop], nice: false }, axis: { titleColor: "#4c78a8" } },
              color: { datum: "% CPU", ...series }
            }
          },
          {
            mark: { type: "line" },
            encoding: {
              x: { field: "t", ...x },
              y: { field: "mem", type: "quantitative", title: "memory (MB)", axis: { orient: "right", titleColor: "#e45756" } },
              color: { datum: "memory (MB)", ...series }
            }
          }
        ],
        resolve: { scale: { y: "independent" } }
      })
    } else if (k === "cache") {
      // metric held in the cache over time per function (dask's plot_cache groups by
      // key_split): +metric at cacheTime, -metric at freeTime, one step line per group
      const metricName = ("metricName" in p && p.metricName) || "metric"
      const byGroup = new Map<string, Array<[number, number]>>()
      for (const r of p.results as ReadonlyArray<CacheData>) {
        let ev = byGroup.get(r.task)
        if (ev === undefined) byGroup.set(r.task, ev = [])
        ev.push([r.cacheTime - t0, r.metric])
        if (Number.isFinite(r.freeTime)) ev.push([r.freeTime - t0, -r.metric])
      }
      const rows: Array<{ t: number; task: string; total: number }> = []
      for (const [task, ev] of byGroup) {
        ev.sort((a, b) => a[0] - b[0])
        let total = 0
        const own: Array<{ t: number; task: string; total: number }> = [{ t: 0, task, total: 0 }]
        for (const [t, d] of ev) {
          total += d
          // one point per instant, so a free and a cache at the same time draw no spike
          if (own[own.length - 1]!.t === t) own[own.length - 1]!.total = total
          else own.push({ t, task, total })
        }
        // carry the last value to the end of the axis, so every line spans the run
        if (own[own.length - 1]!.t < t1 - t0) own.push({ t: t1 - t0, task, total })
        rows.push(...own)
      }
      plots.push({
        title: "Cache",
        width,
        height: 120,
        data: { values: rows },
        mark: { type: "line", interpolate: "step-after" },
        encoding: {
          x: { field: "t", ...x },
          y: { field: "total", type: "quantitative", title: `cache size (${metricName})` },
          color: { field: "task", type: "nominal", title: "function", scale: functionColors }
        }
      })
    }
  }
  // each plot keeps its own colours and legend (the resource lines are not functions)
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    background: "white",
    vconcat: plots,
    resolve: { scale: { color: "independent" }, legend: { color: "independent" } }
  } as TopLevelSpec
}

const require = createRequire(import.meta.url)

/**
 * Write the stacked plots: `html` (self-contained page: inlined Vega runtime and
 * compiled spec, canvas renderer) and/or `svg`. Returns the paths written.
 *
 * @since 0.1.0
 * @category formatting
 */
export const visualize = async (
  profilers: ReadonlyArray<ProfilerResults>,
  out: { readonly html?: string; readonly svg?: string; readonly title?: string; readonly cores?: number }
): Promise<ReadonlyArray<string>> => {
  const spec = visualizeSpec(profilers, 800, out.cores)
  const written: Array<string> = []
  if (out.svg !== undefined) {
    await writeOutputFile(out.svg, await renderSvg(spec))
    written.push(out.svg)
  }
  if (out.html !== undefined) {
    const entry = require.resolve("vega")
    const vegaJs = readFileSync(`${entry.slice(0, entry.lastIndexOf("/vega/") + 6)}build/vega.min.js`, "utf8")
    // the spec and the title are data in the page (the shared escapes: `<`, U+2028/2029, `&`, quotes)
    const vg = scriptJson(toVega(spec))
    const title = esc(out.title ?? "Tessera profile")
    await writeOutputFile(
      out.html,
      `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<style>body{font:14px system-ui,sans-serif;margin:16px}</style></head><body><h1>${title}</h1><div id="vis"></div>
<script>${vegaJs}</script>
<script>window.view = new vega.View(vega.parse(${vg}), { renderer: "canvas", container: "#vis", hover: true }); window.ready = window.view.runAsync();</script>
</body></html>
`
    )
    written.push(out.html)
  }
  return written
}

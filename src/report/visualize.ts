/**
 * `visualize([profiler, resourceProfiler, cacheProfiler])`: the stacked, time-aligned
 * plots `dask.diagnostics.visualize` draws, from the results of Tessera's
 * dask-style profilers — task bars per worker (Profiler), CPU and memory over time
 * (ResourceProfiler), and the cache's total metric over time (CacheProfiler) — as a
 * self-contained HTML page and as SVG.
 *
 * Inputs are the profilers' plain result shapes (anything with a matching `results`
 * array), so this module does not depend on the profiler layer. Times are seconds;
 * every plot shares one x axis, seconds since the earliest time in any input.
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { writeFile } from "node:fs/promises"
import { createRequire } from "node:module"
import type { TopLevelSpec } from "vega-lite"
import { renderSvg } from "../charts/Figure.ts"
import { byteUnit, toVega } from "./Charts.ts"

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
 * ResourceProfiler result rows (dask's `ResourceData`: mem in bytes, cpu in %).
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
 * The stacked Vega-Lite spec (one plot per non-empty input, in input order).
 *
 * @since 0.1.0
 * @category specs
 */
export const visualizeSpec = (profilers: ReadonlyArray<ProfilerResults>, width = 800): TopLevelSpec => {
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
          color: { field: "task", type: "nominal", title: "task" },
          tooltip: [{ field: "key" }, { field: "task" }, { field: "duration", title: "duration (s)", format: ".4~g" }]
        }
      })
    } else if (k === "resource") {
      const res = p.results as ReadonlyArray<ResourceData>
      const u = byteUnit(res.reduce((m, r) => Math.max(m, r.mem), 0))
      const rows = res.map((r) => ({ t: r.time - t0, cpu: r.cpu, mem: r.mem / u.scale }))
      plots.push({
        title: "Profile Results (resources)",
        width,
        height: 140,
        data: { values: rows },
        layer: [
          { mark: { type: "line", color: "#4c78a8" }, encoding: { x: { field: "t", ...x }, y: { field: "cpu", type: "quantitative", title: "% CPU", axis: { titleColor: "#4c78a8" } } } },
          { mark: { type: "line", color: "#e45756" }, encoding: { x: { field: "t", ...x }, y: { field: "mem", type: "quantitative", title: `memory (${u.unit})`, axis: { titleColor: "#e45756" } } } }
        ],
        resolve: { scale: { y: "independent" } }
      })
    } else if (k === "cache") {
      // total metric held in the cache over time: +metric at cacheTime, -metric at freeTime
      const ev: Array<[number, number]> = []
      const metricName = ("metricName" in p && p.metricName) || "metric"
      for (const r of p.results as ReadonlyArray<CacheData>) {
        ev.push([r.cacheTime - t0, r.metric])
        if (Number.isFinite(r.freeTime)) ev.push([r.freeTime - t0, -r.metric])
      }
      ev.sort((a, b) => a[0] - b[0])
      let total = 0
      const rows: Array<{ t: number; total: number }> = [{ t: 0, total: 0 }]
      for (const [t, d] of ev) {
        total += d
        // one point per instant, so a free and a cache at the same time draw no spike
        if (rows[rows.length - 1]!.t === t) rows[rows.length - 1]!.total = total
        else rows.push({ t, total })
      }
      plots.push({
        title: "Cache",
        width,
        height: 120,
        data: { values: rows },
        mark: { type: "line", interpolate: "step-after", color: "#54a24b" },
        encoding: { x: { field: "t", ...x }, y: { field: "total", type: "quantitative", title: `cache size (${metricName})` } }
      })
    }
  }
  return { $schema: "https://vega.github.io/schema/vega-lite/v6.json", background: "white", vconcat: plots } as TopLevelSpec
}

const require = createRequire(import.meta.url)

/**
 * Write the stacked plots: `html` (self-contained page: inlined Vega runtime and
 * compiled spec, canvas renderer) and/or `svg`. Returns the paths written.
 *
 * @since 0.1.0
 * @category rendering
 */
export const visualize = async (
  profilers: ReadonlyArray<ProfilerResults>,
  out: { readonly html?: string; readonly svg?: string; readonly title?: string }
): Promise<ReadonlyArray<string>> => {
  const spec = visualizeSpec(profilers)
  const written: Array<string> = []
  if (out.svg !== undefined) {
    await writeFile(out.svg, await renderSvg(spec))
    written.push(out.svg)
  }
  if (out.html !== undefined) {
    const entry = require.resolve("vega")
    const vegaJs = readFileSync(`${entry.slice(0, entry.lastIndexOf("/vega/") + 6)}build/vega.min.js`, "utf8")
    const vg = JSON.stringify(toVega(spec)).replace(/</g, "\\u003c")
    const title = (out.title ?? "Tessera profile").replace(/</g, "&lt;")
    await writeFile(
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

/**
 * The self-contained HTML performance report: one file that works offline. It inlines
 * the Vega runtime (`vega/build/vega.min.js`), Vega specs compiled from Vega-Lite in
 * Node, and the trace's data as compact columnar arrays that a small page script turns
 * into rows (so 100,000 tasks cost 100,000 numbers per column, not 100,000 objects with
 * repeated keys in the file). Charts use Vega's canvas renderer.
 *
 * Sections: header (name, hosts, workers, wall time, event counts), task stream
 * (zoomable; every timeline below follows its zoom), resource usage, managed memory and
 * chunks held per worker, sortable analysis tables, Work Queue style histograms, and the
 * stage DAG (Graphviz via @viz-js/viz, inline SVG) where the trace carries a `dot` arg.
 *
 * Leaves out: computing analyses (it renders tables given to it).
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { renderDotPromise } from "../report/Graphviz.ts"
import { sanitize } from "../report/SafeSvg.ts"
import type { ReportData } from "./ReportData.ts"
import type { TopLevelSpec } from "vega-lite"
import { byteUnit, taskHistograms } from "../analysis/Histograms.ts"
import { histogramSpec, resourceSpecs, taskStreamVega, timelineSpec, timelinesSpec, toVega } from "./Charts.ts"
import { pageScript } from "./PageScript.ts"
import type { PageView } from "./PageScript.ts"

/**
 * A table for the report: column names and rows of cells (numbers sort numerically).
 *
 * @since 0.1.0
 * @category models
 */
export interface ReportTable {
  readonly title: string
  readonly description?: string
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string | number | null>>
}

/**
 * Options for `renderHtml`.
 *
 * @since 0.1.0
 * @category models
 */
export interface HtmlOptions {
  /** more sections (HTML after the timelines, script after the page script), e.g. FlameGraph's */
  readonly sections?: ReadonlyArray<{ readonly html: string; readonly script: string }>
  readonly tables?: ReadonlyArray<ReportTable>
  /** Rows shown per table (the rest are counted, not shown). Default 200. */
  readonly maxTableRows?: number
  /** Most tasks the task stream draws one bar each for; above, aggregated bars. Default 5,000. */
  readonly maxDetail?: number
}

const require = createRequire(import.meta.url)
let vegaRuntime: string | undefined
const vegaSource = (): string => {
  // vega's "exports" map hides build/, so locate the package root from its entry point.
  const entry = require.resolve("vega")
  const root = entry.slice(0, entry.lastIndexOf("/vega/") + "/vega/".length)
  vegaRuntime ??= readFileSync(`${root}build/vega.min.js`, "utf8")
  return vegaRuntime
}

const esc = (s: string): string =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

// JSON safe inside <script>: no "</script" or "<!--" can appear.
const scriptJson = (u: unknown): string => JSON.stringify(u).replace(/</g, "\\u003c")

// Numbers rounded to µs (or 6 significant digits for scaled values) keep the file small.
const numArray = (a: ArrayLike<number>, scale = 1): string => {
  const parts = new Array<string>(a.length)
  for (let i = 0; i < a.length; i++) {
    const v = a[i]! / scale
    parts[i] = Number.isFinite(v) ? String(Math.round(v * 1e6) / 1e6) : "null"
  }
  return `[${parts.join(",")}]`
}

/**
 * Indices of the Managed Memory samples the page draws: all of them up to 20,000;
 * beyond that, per worker and per time bucket (`buckets` over the run) the sample
 * holding the most bytes, the one holding the most chunks, and the bucket's last one —
 * the peaks and the step shape survive, the page stays light.
 *
 * @since 0.1.0
 * @category rendering
 */
export const memorySampleIndices = (data: ReportData, buckets = 1500): Int32Array => {
  const m = data.memory
  const n = m.time.length
  // sorted by time: the page finds a zoom window's samples by binary search
  if (n <= 20_000) return Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => m.time[a]! - m.time[b]! || a - b)
  const nw = data.workers.length
  const slots = nw * buckets
  const maxB = new Int32Array(slots).fill(-1)
  const maxC = new Int32Array(slots).fill(-1)
  const last = new Int32Array(slots).fill(-1)
  const width = data.wall > 0 ? data.wall / buckets : 1
  for (let i = 0; i < n; i++) {
    const b = Math.min(buckets - 1, Math.max(0, Math.floor(m.time[i]! / width)))
    const k = m.worker[i]! * buckets + b
    if (maxB[k]! < 0 || m.bytes[i]! > m.bytes[maxB[k]!]!) maxB[k] = i
    if (maxC[k]! < 0 || m.chunks[i]! > m.chunks[maxC[k]!]!) maxC[k] = i
    if (last[k]! < 0 || m.time[i]! >= m.time[last[k]!]!) last[k] = i
  }
  const keep = new Set<number>()
  for (let k = 0; k < slots; k++) {
    if (maxB[k]! >= 0) keep.add(maxB[k]!)
    if (maxC[k]! >= 0) keep.add(maxC[k]!)
    if (last[k]! >= 0) keep.add(last[k]!)
  }
  return Int32Array.from([...keep].sort((a, b) => m.time[a]! - m.time[b]!))
}

const pick = (a: ArrayLike<number>, idx: Int32Array): Float64Array => {
  const out = new Float64Array(idx.length)
  for (let i = 0; i < idx.length; i++) out[i] = a[idx[i]!]!
  return out
}

const fmtSeconds = (s: number): string => (s >= 1 ? `${s.toFixed(3)} s` : `${(s * 1000).toFixed(3)} ms`)

const renderTable = (t: ReportTable, max: number, id: number): string => {
  const shown = t.rows.slice(0, max)
  const head = t.columns.map((c, i) => `<th data-col="${i}" title="click to sort">${esc(c)}</th>`).join("")
  const body = shown
    .map(
      (r) =>
        `<tr>${r
          .map((c) =>
            typeof c === "number"
              ? `<td class="n" data-v="${c}">${Number.isInteger(c) ? c.toLocaleString("en-US") : c.toPrecision(6)}</td>`
              : `<td>${esc(String(c ?? ""))}</td>`
          )
          .join("")}</tr>`
    )
    .join("\n")
  if (t.columns.length === 0) return `<h3>${esc(t.title)}</h3>${t.description ? `<p class="note">${esc(t.description)}</p>` : ""}`
  const more = t.rows.length > shown.length ? `<p class="note">showing ${shown.length} of ${t.rows.length} rows</p>` : ""
  return `<h3>${esc(t.title)}</h3>${t.description ? `<p class="note">${esc(t.description)}</p>` : ""}
<div class="tablewrap"><table class="sortable" id="table-${id}"><thead><tr>${head}</tr></thead><tbody>
${body}
</tbody></table></div>${more}`
}

/**
 * Render the report HTML.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderHtml = async (data: ReportData, options: HtmlOptions = {}): Promise<string> => {
  const tables = options.tables ?? []
  const maxRows = options.maxTableRows ?? 200
  const t = data.tasks
  const m = data.memory
  const r = data.resources
  const memUnit = byteUnit(m.bytes.reduce((a, b) => (b > a ? b : a), 0))
  const resources = resourceSpecs(data)
  const hist = taskHistograms(data).filter((h) => h.n > 0)

  // every timeline in one view (one dataflow run and one canvas per zoom step)
  const timelines: Array<{ readonly spec: TopLevelSpec; readonly source: string; readonly rows: string }> = [
    ...resources.charts.map((x) => ({ spec: x.spec, source: `res_${x.column}`, rows: `resources:${x.column}` })),
    ...(m.time.length > 0
      ? [
          { spec: timelineSpec("memory_bytes", "bytes", "Managed memory per worker", memUnit.unit, "worker", data.wall, undefined, data.workers), source: "memory_bytes", rows: "memory:bytes" },
          { spec: timelineSpec("memory_chunks", "chunks", "Chunks held per worker", "chunks", "worker", data.wall, undefined, data.workers), source: "memory_chunks", rows: "memory:chunks" }
        ]
      : [])
  ]
  const views: Array<PageView> = [
    { id: "task-stream", spec: taskStreamVega(data), sources: [{ source: "tasks", rows: "stream" }] },
    ...(timelines.length > 0
      ? [{ id: "timelines", spec: toVega(timelinesSpec(timelines.map((x) => x.spec)), { wall: data.wall }), sources: timelines.map((x) => ({ source: x.source, rows: x.rows })) }]
      : []),
    ...hist.map((h) => ({ id: `hist-${h.resource}`, spec: toVega(histogramSpec(h, 420, 200)), sources: [] }))
  ]

  const mi = memorySampleIndices(data)
  // resource samples sorted by time (several hosts' files interleave): the page finds a
  // zoom window's samples by binary search
  const ri = Int32Array.from({ length: r.time.length }, (_, i) => i).sort((a, b) => r.time[a]! - r.time[b]! || a - b)
  const resourceCols = resources.charts
    .map((x) => `${JSON.stringify(x.column)}:${numArray(pick(r.values[x.field]!, ri), x.scale)}`)
    .join(",")
  const payload = `{"workers":${scriptJson(data.workers)},"functions":${scriptJson(data.functions)},"hosts":${scriptJson(data.hosts)},
"tasks":{"start":${numArray(t.start)},"end":${numArray(t.end)},"worker":${numArray(t.worker)},"fn":${numArray(t.fn)},"size":${numArray(t.size)},"cpu":${numArray(t.cpuTime)},"key":${scriptJson(t.key)}},
"memory":{"t":${numArray(pick(m.time, mi))},"worker":${numArray(pick(m.worker, mi))},"bytes":${numArray(pick(m.bytes, mi), memUnit.scale)},"chunks":${numArray(pick(m.chunks, mi))}},
"resources":{"t":${numArray(pick(r.time, ri))},"host":${numArray(pick(r.host, ri))},"cols":{${resourceCols}}}}`

  let dag = ""
  if (data.dot !== undefined) {
    try {
      dag = `<section><h2>Pipeline stages</h2><div class="dag">${sanitize(await renderDotPromise(data.dot))}</div></section>`
    } catch (e) {
      dag = `<section><h2>Pipeline stages</h2><p class="note">the trace's graph could not be drawn: ${esc(String(e))}</p></section>`
    }
  }

  const counts = Object.entries(data.eventCounts)
    .map(([k, v]) => `${esc(k)}: ${v.toLocaleString("en-US")}`)
    .join(" · ")
  const div = (id: string) => `<div class="chart" id="${id}"></div>`
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(data.title)} — Tessera report</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 24px 48px;color:#222;background:#fafafa}
header{padding:16px 0;border-bottom:1px solid #ddd;margin-bottom:8px}
h1{margin:0 0 6px;font-size:22px} h2{font-size:17px;margin:28px 0 8px} h3{font-size:15px;margin:18px 0 6px}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:0} dt{color:#666} dd{margin:0}
.chart{background:#fff;border:1px solid #e4e4e4;border-radius:4px;padding:6px;margin:6px 0;display:inline-block}
.hists{display:flex;flex-wrap:wrap;gap:8px}
.tablewrap{max-height:360px;overflow:auto;display:inline-block;border:1px solid #e4e4e4}
table{border-collapse:collapse;background:#fff;font-size:12.5px} th,td{border:1px solid #e0e0e0;padding:3px 8px}
th{background:#f0f2f5;cursor:pointer;user-select:none;position:sticky;top:0} td.n{text-align:right;font-variant-numeric:tabular-nums}
th.asc::after{content:" ▲"} th.desc::after{content:" ▼"}
.note{color:#666;font-size:12px;margin:4px 0} .dag svg{max-width:100%;height:auto;background:#fff}
#tooltip{position:fixed;pointer-events:none;background:rgba(255,255,255,.97);border:1px solid #999;border-radius:3px;padding:4px 8px;font-size:12px;display:none;z-index:10;max-width:560px;box-shadow:0 1px 4px rgba(0,0,0,.2)}
#tooltip td{border:0;padding:0 6px 0 0} #tooltip td.k{color:#666}
</style></head><body>
<header><h1>${esc(data.title)}</h1><dl>
<dt>hosts</dt><dd>${esc(data.hosts.join(", ")) || "—"}</dd>
<dt>workers</dt><dd>${data.workers.length}</dd>
<dt>wall time</dt><dd>${fmtSeconds(data.wall)}</dd>
<dt>tasks</dt><dd>${t.start.length.toLocaleString("en-US")} in ${data.functions.length} functions</dd>
<dt>events</dt><dd>${counts || "none"}</dd>
${data.sources.length > 0 ? `<dt>sources</dt><dd>${data.sources.map(esc).join("<br>")}</dd>` : ""}
</dl></header>
<section><h2>Task stream</h2>${div("task-stream")}</section>
<section><h2>Resource usage and managed memory</h2><p class="note">aligned with the task stream and following its zoom</p>${timelines.length > 0 ? div("timelines") : ""}${
    resources.charts.length + resources.constant.length === 0 ? `<p class="note">no Resource Usage events in these databases</p>` : ""}${
    resources.constant.length > 0 ? `<p class="note">constant over the whole run (not drawn): ${resources.constant.map((c) => `${esc(c.title)} ${esc(c.value)}`).join(" · ")}</p>` : ""}${
    m.time.length === 0 ? `<p class="note">no Managed Memory events in these databases</p>` : ""}</section>
${(options.sections ?? []).map((x) => x.html).join("\n")}
${tables.length > 0 ? `<section><h2>Analyses</h2>${tables.map((x, i) => renderTable(x, maxRows, i)).join("\n")}</section>` : ""}
<section><h2>Per-task resources</h2><div class="hists">${hist.map((h) => div(`hist-${h.resource}`)).join("\n")}</div></section>
${dag}
<div id="tooltip"></div>
<script>${vegaSource()}</script>
<script id="tessera-data" type="application/json">${payload}</script>
<script>${pageScript(scriptJson(views), data.wall, options.maxDetail === undefined ? {} : { maxDetail: options.maxDetail })}</script>
${(options.sections ?? []).filter((x) => x.script !== "").map((x) => `<script>${x.script}</script>`).join("\n")}
</body></html>
`
}

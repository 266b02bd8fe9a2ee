/**
 * The self-contained HTML performance report: one file that works offline. It inlines
 * the Vega runtime (`vega/build/vega.min.js`), Vega specs compiled from Vega-Lite in
 * Node, and the trace's data as compact columnar arrays that a small page script turns
 * into rows (so 100,000 tasks cost 100,000 numbers per column, not 100,000 objects with
 * repeated keys in the file). Charts use Vega's canvas renderer.
 *
 * The page: a header (name, hosts, workers, wall time, event counts), then the sections
 * of `Sections.ts` in order — where did the time go, task stream (zoomable; every
 * timeline follows its zoom), stage DAG with times and the per-stage table, resource
 * timelines, per-function and global histograms, analysis tables. Time-axis charts take
 * the page's width.
 *
 * Leaves out: computing analyses (it renders tables given to it).
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import type { ReportData } from "./ReportData.ts"
import { maxTaskSeconds } from "./ReportData.ts"
import { byteUnit } from "../analysis/Histograms.ts"
import { resourceSpecs, streamColourFunctions } from "./Charts.ts"
import { pageScript } from "./PageScript.ts"
import { reportSections } from "./Sections.ts"
import { esc, fmtSeconds } from "./TableHtml.ts"
import { timeBreakdown } from "./TimeBreakdown.ts"

export type {
  /**
   * A table for the report (TableHtml.ts).
   *
   * @since 0.1.0
   * @category models
   */
  ReportTable
} from "./TableHtml.ts"
import type { ReportTable } from "./TableHtml.ts"

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
  /** the transfer analyses' tables (ReportTables.ts `transferTables`), for the `transfers` section */
  readonly transferTables?: ReadonlyArray<ReportTable>
  /** Most tasks the task stream draws one bar each for; above, aggregated bars. Default 5,000. */
  readonly maxDetail?: number
}

const require = createRequire(import.meta.url)
let vegaRuntime: string | undefined
/**
 * The Vega runtime's source (`vega/build/vega.min.js`): the report inlines it, the live
 * dashboard serves it.
 *
 * @since 0.1.0
 * @category formatting
 */
export const vegaSource = (): string => {
  // vega's "exports" map hides build/, so locate the package root from its entry point.
  const entry = require.resolve("vega")
  const root = entry.slice(0, entry.lastIndexOf("/vega/") + "/vega/".length)
  vegaRuntime ??= readFileSync(`${root}build/vega.min.js`, "utf8")
  return vegaRuntime
}

/**
 * JSON safe inside a `<script>` element, as data or as JavaScript source: every `<` is
 * `\u003c` (no `</script` or `<!--` can appear) and U+2028 / U+2029 (legal in JSON,
 * line terminators to older JavaScript parsers and to Vega's expression parser) are
 * escaped too. `JSON.stringify` already writes non-finite numbers as `null`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const scriptJson = (u: unknown): string =>
  JSON.stringify(u).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")

// Numbers rounded to µs (or 6 significant digits for scaled values) keep the file small.
const numArray = (a: ArrayLike<number>, scale = 1): string => {
  const parts = new Array<string>(a.length)
  for (let i = 0; i < a.length; i++) {
    // JSON has no Infinity or NaN: null (the page reads it as missing); a huge finite
    // value is written unrounded (rounding it would overflow to Infinity)
    const v = a[i]! / scale
    const r = Math.round(v * 1e6) / 1e6
    parts[i] = Number.isFinite(r) ? String(r) : Number.isFinite(v) ? String(v) : "null"
  }
  return `[${parts.join(",")}]`
}

/**
 * The page's warning for tasks left out of the report (`ReportData.leftOutTasks`).
 *
 * @since 0.1.0
 * @category formatting
 */
export const leftOutLine = (n: number): string =>
  `${n.toLocaleString("en-US")} task${n === 1 ? "" : "s"} with non-finite or absurd durations (not finite, or ${maxTaskSeconds.toExponential(0)} s or longer) ${n === 1 ? "was" : "were"} left out`

/**
 * Indices of the Managed Memory samples the page draws: all of them up to 20,000;
 * beyond that, per worker and per time bucket (`buckets` over the run) the sample
 * holding the most bytes, the one holding the most chunks, and the bucket's last one —
 * the peaks and the step shape survive, the page stays light.
 *
 * @since 0.1.0
 * @category formatting
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

// an optional column: `null` (not one number per task) when every value is missing
// (NaN) or `empty`, so traces without it pay nothing in the file
const optArray = (a: ArrayLike<number>, empty = NaN): string => {
  for (let i = 0; i < a.length; i++) {
    const v = a[i]!
    if (Number.isNaN(empty) ? Number.isFinite(v) : v !== empty) return numArray(a)
  }
  return "null"
}

const pick = (a: ArrayLike<number>, idx: Int32Array): Float64Array => {
  const out = new Float64Array(idx.length)
  for (let i = 0; i < idx.length; i++) out[i] = a[idx[i]!]!
  return out
}

/**
 * Render the report HTML.
 *
 * @since 0.1.0
 * @category formatting
 */
export const renderHtml = async (data: ReportData, options: HtmlOptions = {}): Promise<string> => {
  const t = data.tasks
  const m = data.memory
  const r = data.resources
  const d = data.driver
  const memUnit = byteUnit(m.bytes.reduce((a, b) => (b > a ? b : a), 0))
  const devUnit = byteUnit(m.device.reduce((a, b) => (b > a ? b : a), 0))
  const x = data.transfers
  const resources = resourceSpecs(data)
  const breakdown = timeBreakdown(data)
  const sections = await reportSections({
    data,
    breakdown,
    tables: options.tables ?? [],
    maxTableRows: options.maxTableRows ?? 200,
    ...(options.transferTables !== undefined ? { transferTables: options.transferTables } : {})
  })
  const views = sections.flatMap((s) => s.views)

  const mi = memorySampleIndices(data)
  // resource samples sorted by time (several hosts' files interleave): the page finds a
  // zoom window's samples by binary search
  const ri = Int32Array.from({ length: r.time.length }, (_, i) => i).sort((a, b) => r.time[a]! - r.time[b]! || a - b)
  const resourceCols = resources.charts
    .map((x) => `${JSON.stringify(x.column)}:${numArray(pick(r.values[x.field]!, ri), x.scale)}`)
    .join(",")
  const fnTop = streamColourFunctions(data)
  const payload = `{"workers":${scriptJson(data.workers)},"functions":${scriptJson(data.functions)},"fnTop":${fnTop === undefined ? "null" : numArray(fnTop)},"hosts":${scriptJson(data.hosts)},"stages":${scriptJson(data.stages)},
"driverThreads":${scriptJson(data.driverThreads)},"activities":${scriptJson(data.activities)},
"tasks":{"start":${numArray(t.start)},"end":${numArray(t.end)},"worker":${numArray(t.worker)},"fn":${numArray(t.fn)},"size":${numArray(t.size)},"cpu":${numArray(t.cpuTime)},"key":${scriptJson(t.key)},
"stage":${optArray(t.stage, -1)},"gather":${optArray(t.gather)},"transfer":${optArray(t.transfer)},"bytesIn":${optArray(t.bytesIn, 0)},"peak":${optArray(t.peakMemory)},"io":${optArray(t.ioBytes)},"erred":${optArray(t.erred, 0)}},
"failures":${scriptJson(data.failures.map((f) => [f.task, f.error]))},
"driver":{"start":${numArray(d.start)},"end":${numArray(d.end)},"thread":${numArray(d.thread)},"activity":${numArray(d.activity)},"compute":${numArray(d.compute)},"tasks":${numArray(d.tasks)},"key":${scriptJson(d.key)}},
"memory":{"t":${numArray(pick(m.time, mi))},"worker":${numArray(pick(m.worker, mi))},"bytes":${numArray(pick(m.bytes, mi), memUnit.scale)},"chunks":${numArray(pick(m.chunks, mi))},"device":${optArray(pick(m.device, mi).map((v) => v / devUnit.scale))}},
"transfers":{"start":${numArray(x.start)},"end":${numArray(x.end)},"worker":${numArray(x.worker)},"bytes":${numArray(x.bytes)},"nKeys":${numArray(x.nKeys)},"peer":${scriptJson(x.peer)},"direction":${scriptJson(x.direction)},"keys":${scriptJson(x.keys)}},
"resources":{"t":${numArray(pick(r.time, ri))},"host":${numArray(pick(r.host, ri))},"cols":{${resourceCols}}}}`

  // stages: the pipeline graph's (a stage that ran no task of its own counts), else those tasks name
  const stageCount = new Set([...data.pipelineStages, ...data.stages]).size
  const counts = Object.entries(data.eventCounts)
    .map(([k, v]) => `${esc(k)}: ${v.toLocaleString("en-US")}`)
    .join(" · ")
  const nav = sections.map((s) => `<a href="#${s.id}">${esc(s.title)}</a>`).join(" · ")
  // more sections (a flame graph) follow the timelines they zoom with
  const extra = (options.sections ?? []).map((x) => x.html).join("\n")
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(data.title)} — Tessera report</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
main{margin:0 24px 48px}
header{padding:16px 0;border-bottom:1px solid #ddd;margin-bottom:8px}
h1{margin:0 0 6px;font-size:22px} h2{font-size:17px;margin:28px 0 8px} h3{font-size:15px;margin:18px 0 6px}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:0} dt{color:#666} dd{margin:0}
nav{margin-top:8px;font-size:13px} nav a{color:#2a5db0;text-decoration:none}
.chart{background:#fff;border:1px solid #e4e4e4;border-radius:4px;padding:6px;margin:6px 0;display:inline-block;max-width:100%;box-sizing:border-box}
.chart.wide{display:block;padding:6px 0} .chart.scroll{display:block;overflow-x:auto}
.summary{font-size:15px;margin:6px 0} ul.workers{margin:2px 0 6px;padding-left:20px;font-size:13px}
.hists{display:flex;flex-wrap:wrap;gap:8px}
.tablewrap{max-height:360px;max-width:100%;overflow:auto;display:inline-block;border:1px solid #e4e4e4}
table{border-collapse:collapse;background:#fff;font-size:12.5px} th,td{border:1px solid #e0e0e0;padding:3px 8px}
th{background:#f0f2f5;cursor:pointer;user-select:none;position:sticky;top:0} td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th.asc::after{content:" ▲"} th.desc::after{content:" ▼"}
.warning{color:#7a4d00;background:#fff8e1;border:1px solid #e6c200;border-radius:4px;padding:4px 10px;margin:8px 0}
.note{color:#666;font-size:12px;margin:4px 0} .dag svg{max-width:100%;height:auto;background:#fff}
#tooltip{position:fixed;pointer-events:none;background:rgba(255,255,255,.97);border:1px solid #999;border-radius:3px;padding:4px 8px;font-size:12px;display:none;z-index:10;max-width:560px;box-shadow:0 1px 4px rgba(0,0,0,.2)}
#tooltip td{border:0;padding:0 6px 0 0} #tooltip td.k{color:#666}
dd.failed{color:#8b0000;font-weight:600} .failure{border:2px solid #c00000;background:#fff5f5;border-radius:4px;padding:8px 12px}
.failure .error code{white-space:pre-wrap;color:#8b0000;font-size:13px} .failure pre{white-space:pre-wrap;font-size:12px;background:#fff;border:1px solid #e4e4e4;padding:6px;max-height:320px;overflow:auto}
</style></head><body><main>
<header><h1>${esc(data.title)}</h1><dl>
<dt>hosts</dt><dd>${esc(data.hosts.join(", ")) || "—"}</dd>
<dt>workers</dt><dd>${data.workers.length}${data.gpuWorkers.length > 0 ? ` (GPU: ${esc(data.gpuWorkers.join(", "))})` : ""}</dd>
<dt>wall time</dt><dd>${fmtSeconds(data.wall)}</dd>
<dt>tasks</dt><dd>${t.start.length.toLocaleString("en-US")} in ${data.functions.length} functions${stageCount > 0 ? `, ${stageCount} stage${stageCount === 1 ? "" : "s"}` : ""}</dd>
${data.failures.length > 0 ? `<dt>status</dt><dd class="failed"><a href="#failure">failed</a>: task <code>${esc(data.failures[0]!.key)}</code> erred${
    data.failures[0]!.stage === undefined ? "" : ` in stage ${esc(data.failures[0]!.stage)}`}${data.failures[0]!.error === "" ? "" : ` — ${esc(data.failures[0]!.error.length > 300 ? `${data.failures[0]!.error.slice(0, 300)}…` : data.failures[0]!.error)}`}</dd>` : ""}
<dt>events</dt><dd>${counts || "none"}</dd>
${data.sources.length > 0 ? `<dt>sources</dt><dd>${data.sources.map(esc).join("<br>")}</dd>` : ""}
</dl><nav>${nav}</nav></header>
${(data.leftOutTasks ?? 0) > 0 ? `<p class="warning" id="left-out">${leftOutLine(data.leftOutTasks!)}</p>` : ""}
${sections.map((s) => `<section id="${s.id}"><h2>${esc(s.title)}</h2>${s.html}</section>${s.id === "resources" ? extra : ""}`).join("\n")}
${sections.some((s) => s.id === "resources") ? "" : extra}
</main>
<div id="tooltip"></div>
<script>${vegaSource()}</script>
<script id="tessera-data" type="application/json">${payload}</script>
<script>${pageScript(scriptJson(views), data.wall, options.maxDetail === undefined ? {} : { maxDetail: options.maxDetail })}</script>
${(options.sections ?? []).filter((x) => x.script !== "").map((x) => `<script>${x.script}</script>`).join("\n")}
</body></html>
`
}

/**
 * The report's flame graph section (issue 18): the statistical profiler's samples as an
 * icicle chart (root on top, callees below, width = the seconds the samples stand for,
 * their weights: issue 31 item 1), drawn with Vega (the
 * project's charting library; one rect and one text mark over boxes the page lays out),
 * for the whole run, one task function or one stage (a select), and for the task
 * stream's time selection: each zoom / pan of the task stream re-aggregates the samples
 * inside the window (the page script's `onZoom`), as dask's profile follows its task
 * stream. The first level under "all" is the tasks' functions (and "idle", "driver").
 * Hover shows the frame, its location, seconds, samples and share; the caption the
 * selection's samples and the thread time they stand for (the same sum as `tessera
 * analyze -a profile` and SQL's `samples.seconds`).
 *
 * The page data is per sample (time relative to the report's t0, weight, call-tree node,
 * function, stage) plus the call tree and frames: a few numbers per sample, up to
 * `maxPageSamples`; above, time bins × (node, function, stage) with weights and counts
 * summed (issue 32 item 11: millions of samples made arrays and a JSON string a heap
 * could not hold), the same totals, the task stream's window followed to a bin, the
 * caption saying so. Frame names and locations are data: they reach the page as JSON
 * and Vega text, never markup.
 *
 * Leaves out: the samples' own tables (`tessera analyze -a profile`), differential
 * graphs, search.
 *
 * @since 0.1.0
 */
import type { ProfileData } from "../analysis/Profile.ts"
import { label, location } from "../analysis/Profile.ts"
// the report's one rule for JSON inside a script element (escapes `<`, U+2028 and U+2029)
import { scriptJson } from "./Html.ts"

/** Row height of the icicle, px. */
const ROW = 17
/** Width of the icicle, px. */
const WIDTH = 1180

/**
 * The Vega spec of the icicle: boxes `{x0, x1, d, name, loc, s, n, self, pct, fn}` laid
 * out by the page (x in px, d the depth, s seconds, n samples, self seconds).
 *
 * @since 0.1.0
 * @category formatting
 */
export const flameSpec = (): unknown => ({
  $schema: "https://vega.github.io/schema/vega/v6.json",
  width: WIDTH,
  height: ROW,
  padding: 2,
  autosize: "none",
  data: [{ name: "boxes", values: [] }],
  scales: [{ name: "color", type: "ordinal", domain: { data: "boxes", field: "fn" }, range: { scheme: "tableau20" } }],
  marks: [
    {
      type: "rect",
      name: "flame",
      from: { data: "boxes" },
      encode: {
        enter: { stroke: { value: "#fff" }, strokeWidth: { value: 0.5 } },
        update: {
          x: { field: "x0" },
          x2: { field: "x1" },
          y: { signal: `datum.d * ${ROW}` },
          height: { value: ROW - 1 },
          fill: { scale: "color", field: "fn" },
          tooltip: { signal: "{title: datum.name, location: datum.loc, seconds: format(datum.s, '.4f'), samples: datum.n, share: datum.pct + '%', 'self seconds': format(datum.self, '.4f')}" }
        }
      }
    },
    {
      type: "text",
      from: { data: "boxes" },
      interactive: false,
      encode: {
        update: {
          x: { signal: "datum.x0 + 3" },
          y: { signal: `datum.d * ${ROW} + ${ROW / 2}` },
          baseline: { value: "middle" },
          fontSize: { value: 11 },
          fill: { value: "#111" },
          limit: { signal: "max(0, datum.x1 - datum.x0 - 6)" },
          text: { signal: "datum.x1 - datum.x0 > 24 ? datum.name : ''" }
        }
      }
    }
  ]
})

/**
 * Above this many samples the page gets time bins, not samples (issue 32 item 11).
 *
 * @since 0.1.0
 * @category models
 */
export const maxPageSamples = 200_000

/**
 * At most this many time bins over the run when the samples are binned.
 *
 * @since 0.1.0
 * @category models
 */
export const maxPageBins = 2_000

/**
 * How the page's rows are made: exact samples up to `maxSamples`, else bins (at most
 * `maxBins` over the run, fewer when the rows would outnumber `maxSamples`).
 *
 * @since 0.1.0
 * @category models
 */
export interface FlameBounds {
  readonly maxSamples?: number
  readonly maxBins?: number
}

/**
 * The page's rows (see `flamePayload`): per sample, or per bin with its count `c`.
 *
 * @since 0.1.0
 * @category models
 */
export type FlameRows = { t: Array<number>; w: Array<number>; node: Array<number>; fn: Array<number>; stage: Array<number>; c?: Array<number> }

/**
 * The page payload: frames (label, location), the call tree (parent, frame), and its
 * rows: per sample its time relative to `t0`, weight (seconds, µs resolution), node,
 * function and stage (indices into `fns`, `stages`). Above `maxSamples` samples (issue
 * 32 item 11: 8 million samples made arrays and a JSON string the heap could not hold)
 * a row is a time bin × node × function × stage: `t` the bin's middle, `w` its samples'
 * weights summed (each rounded to µs first, so the totals are those of the exact rows),
 * `c` its sample count; `bin` is then the bins' width (seconds, 0: exact rows) and the
 * rows are at most `maxSamples` (the bins widen, up to one for the run, until they fit;
 * one bin's rows are the distinct stacks, which the call tree holds anyway). The
 * samples are read from their typed columns, no per-sample objects.
 *
 * @since 0.1.0
 * @category models
 */
export const flamePayload = (d: ProfileData, t0: number, bounds: FlameBounds = {}) => {
  const maxSamples = Math.max(1, bounds.maxSamples ?? maxPageSamples)
  const maxBins = Math.max(1, Math.floor(bounds.maxBins ?? maxPageBins))
  const fns: Array<string> = [], stages: Array<string> = []
  const fi = new Map<string, number>(), si = new Map<string, number>()
  const idx = (m: Map<string, number>, list: Array<string>, s: string) => {
    let i = m.get(s)
    if (i === undefined) m.set(s, i = list.push(s) - 1)
    return i
  }
  const s = d.samples
  const n = s.time.length
  // per task its function and stage (indices), and its (function, stage) pair
  const taskFn = new Int32Array(s.tasks.length), taskStage = new Int32Array(s.tasks.length), taskPair = new Int32Array(s.tasks.length)
  const pairs = new Map<string, number>(), pairFn: Array<number> = [], pairStage: Array<number> = []
  s.tasks.forEach((task, i) => {
    taskFn[i] = idx(fi, fns, task.name)
    taskStage[i] = idx(si, stages, task.stage)
    const k = `${taskFn[i]},${taskStage[i]}`
    let p = pairs.get(k)
    if (p === undefined) {
      pairs.set(k, p = pairFn.push(taskFn[i]!) - 1)
      pairStage.push(taskStage[i]!)
    }
    taskPair[i] = p
  })
  const tree = { names: d.frames.map(label), locs: d.frames.map(location), parent: d.parent, frame: d.frame, fns, stages }
  if (n <= maxSamples) {
    const t = new Array<number>(n), w = new Array<number>(n), node = new Array<number>(n), fn = new Array<number>(n), stage = new Array<number>(n)
    const order = Array.from({ length: n }, (_, q) => q).sort((a, b) => s.time[a]! - s.time[b]!)
    order.forEach((q, k) => {
      t[k] = Math.round((s.time[q]! - t0) * 1e6) / 1e6
      w[k] = Math.round(s.weight[q]! * 1e6) / 1e6
      node[k] = s.stack[q]!
      fn[k] = taskFn[s.taskIndex[q]!]!
      stage[k] = taskStage[s.taskIndex[q]!]!
    })
    return { ...tree, bin: 0, samples: { t, w, node, fn, stage } as FlameRows }
  }
  let lo = Infinity, hi = -Infinity
  for (let q = 0; q < n; q++) {
    const x = s.time[q]!
    if (x < lo) lo = x
    if (x > hi) hi = x
  }
  const fine = hi > lo ? (hi - lo) / maxBins : 0
  // rows: coarse bin, (function, stage) pair, node, µs, samples; `factor` fine bins a row's bin
  let bin: Array<number> = [], pair: Array<number> = [], node: Array<number> = [], us: Array<number> = [], count: Array<number> = []
  let factor = 1
  const stride = pairFn.length * (d.parent.length + 1)
  const numeric = maxBins * stride < Number.MAX_SAFE_INTEGER
  const keyOf = (b: number, p: number, v: number): number | string => (numeric ? b * stride + p * (d.parent.length + 1) + v + 1 : `${b},${p},${v}`)
  let rows = new Map<number | string, number>()
  const add = (b: number, p: number, v: number, u: number, c: number) => {
    const k = keyOf(b, p, v)
    const r = rows.get(k)
    if (r !== undefined) {
      us[r]! += u
      count[r]! += c
      return
    }
    rows.set(k, bin.push(b) - 1)
    pair.push(p), node.push(v), us.push(u), count.push(c)
  }
  // twice the bins' width: the rows merged into half as many bins
  const widen = () => {
    const old = { bin, pair, node, us, count }
    bin = [], pair = [], node = [], us = [], count = [], rows = new Map()
    factor *= 2
    for (let r = 0; r < old.bin.length; r++) add(Math.floor(old.bin[r]! / 2), old.pair[r]!, old.node[r]!, old.us[r]!, old.count[r]!)
  }
  for (let q = 0; q < n; q++) {
    const b = fine > 0 ? Math.min(maxBins - 1, Math.floor((s.time[q]! - lo) / fine)) : 0
    add(Math.floor(b / factor), taskPair[s.taskIndex[q]!]!, s.stack[q]!, Math.round(s.weight[q]! * 1e6), 1)
    while (bin.length > maxSamples && factor < maxBins) widen()
  }
  rows.clear()
  const width = fine * factor
  const order = Array.from({ length: bin.length }, (_, r) => r).sort((a, b) => bin[a]! - bin[b]!)
  const mid = (b: number) => Math.round((lo + (fine > 0 ? Math.min((b + 0.5) * width, hi - lo) : 0) - t0) * 1e6) / 1e6
  return {
    ...tree,
    bin: Math.round(width * 1e6) / 1e6,
    samples: {
      t: order.map((r) => mid(bin[r]!)),
      w: order.map((r) => us[r]! / 1e6),
      node: order.map((r) => node[r]!),
      fn: order.map((r) => pairFn[pair[r]!]!),
      stage: order.map((r) => pairStage[pair[r]!]!),
      c: order.map((r) => count[r]!)
    } as FlameRows
  }
}

/**
 * The section's HTML (empty when there are no samples): heading, the select, the chart's
 * element, the payload and the script (to follow the page script).
 *
 * @since 0.1.0
 * @category formatting
 */
export const flameSection = (d: ProfileData, t0: number, bounds: FlameBounds = {}): { readonly html: string; readonly script: string } => {
  const n = d.samples.time.length
  if (n === 0) return { html: "", script: "" }
  const payload = flamePayload(d, t0, bounds)
  const binned = payload.samples.c === undefined
    ? ""
    : ` The run's ${n} samples are binned by time (${payload.bin} s bins, ${payload.samples.t.length} rows of bin, stack, function and stage): totals are exact, the task stream's selection is to a bin.`
  const html = `<section><h2>Flame graph (CPU samples)</h2>
<p class="note">where the threads' time went, from V8's sampling profiler: width = the thread time the samples stand for (each its real interval, within its function's tasks); first level: the task's function (idle: a worker between tasks; driver: the main thread).${binned} <label>show <select id="flame-pick"></select></label> <span id="flame-window"></span></p>
<div class="chart" id="flame"></div>
<script id="tessera-flame" type="application/json">${scriptJson(payload)}</script></section>`
  return { html, script: flameScript(scriptJson(flameSpec())) }
}

/**
 * The flame graph's aggregation and layout as ES5 source, one copy for the report's page
 * and the live dashboard's (src/dashboard/Page.ts): `flameTree(P, want, dom)` sums the
 * payload's rows (`flamePayload`) whose time is in `dom` (`[from, to]` seconds from the
 * payload's t0, null: all) and whose function (`want` "f" + index) or stage ("s" +
 * index) is picked ("all": every row) into a call tree `{ name, loc, s (seconds), n
 * (samples), self (seconds), kids, fn }` under "all", the tasks' functions first;
 * `flameBoxes(root, W)` lays it out as the icicle's boxes for `flameSpec` (`W` px wide).
 *
 * @since 0.1.0
 * @category formatting
 */
export const flameCode = `
function flameChild(p, name, loc, fn){ var key = name + "\\u0000" + loc, c = p.kids[key]; if (!c) c = p.kids[key] = { name: name, loc: loc, s: 0, n: 0, self: 0, kids: {}, fn: fn }; return c; }
function flameTree(P, want, dom){
  var S = P.samples, C = S.c || null, root = { name: "all", loc: "", s: 0, n: 0, self: 0, kids: {}, fn: "all" };
  var path = [];
  for (var k = 0; k < S.t.length; k++) {
    if (dom && (S.t[k] < dom[0] || S.t[k] > dom[1])) continue;
    if (want.charAt(0) === "f" && S.fn[k] !== +want.slice(1)) continue;
    if (want.charAt(0) === "s" && S.stage[k] !== +want.slice(1)) continue;
    var f = P.fns[S.fn[k]], w = S.w[k], c = C ? C[k] : 1, box = flameChild(root, f, "", f);
    root.s += w; root.n += c; box.s += w; box.n += c;
    path.length = 0;
    for (var v = S.node[k]; v >= 0; v = P.parent[v]) path.push(P.frame[v]);
    for (var i = path.length - 1; i >= 0; i--) { box = flameChild(box, P.names[path[i]], P.locs[path[i]], f); box.s += w; box.n += c; }
    box.self += w;
  }
  return root;
}
function flameBoxes(root, W){
  var out = [], depth = 0, total = root.s || 1;
  (function place(node, x0, d){
    var w = node.s / total * W;
    if (w < 0.5) return;
    out.push({ x0: x0, x1: x0 + w, d: d, name: node.name, loc: node.loc, s: node.s, n: node.n, self: node.self, pct: Math.round(1000 * node.s / total) / 10, fn: node.fn });
    if (d > depth) depth = d;
    var kids = Object.keys(node.kids).map(function(k){ return node.kids[k]; }).sort(function(a, b){ return b.s - a.s || b.n - a.n; }), x = x0;
    kids.forEach(function(c){ place(c, x, d + 1); x += c.s / total * W; });
  })(root, 0, 0);
  return { boxes: out, depth: depth };
}
`

/**
 * The icicle's row height, px (the dashboard sizes its view as the report does).
 *
 * @since 0.1.0
 * @category constants
 */
export const flameRowHeight = ROW

/**
 * The icicle's width, px (`flameSpec`'s; `flameBoxes(root, W)` lays out to it).
 *
 * @since 0.1.0
 * @category constants
 */
export const flameWidth = WIDTH

/** The page's flame graph script (ES5, after the page script: uses `vega` and `window.tessera`). */
const flameScript = (specJson: string): string => `
(function(){
"use strict";
var P = JSON.parse(document.getElementById("tessera-flame").textContent), C = P.samples.c || null, W = ${WIDTH};
var pick = document.getElementById("flame-pick"), note = document.getElementById("flame-window");
function opt(v, t){ var o = document.createElement("option"); o.value = v; o.textContent = t; pick.appendChild(o); }
opt("all", "whole run");
P.fns.forEach(function(f, i){ opt("f" + i, "function: " + f); });
P.stages.forEach(function(s, i){ if (s !== "") opt("s" + i, "stage: " + s); });
var dom = null, view = new vega.View(vega.parse(${specJson}), { renderer: "canvas", container: "#flame", hover: true });
if (window.tessera) { window.tessera.views.flame = view; window.tessera.flame = { boxes: 0, samples: 0, seconds: 0 }; }
function fmtBin(b){ return b >= 1 ? b.toFixed(3) + " s" : b >= 1e-3 ? (b * 1e3).toFixed(3) + " ms" : (b * 1e6).toFixed(0) + " \\u00b5s"; }
${flameCode}
function draw(){
  var root = flameTree(P, pick.value, dom), l = flameBoxes(root, W);
  note.textContent = (dom ? "samples from " + dom[0].toFixed(3) + " s to " + dom[1].toFixed(3) + " s (the task stream's selection)" : "whole run") + ": " + root.n + " samples, " + root.s.toFixed(3) + " s of thread time" + (C ? " (samples binned by " + fmtBin(P.bin) + ": a bin counts when its middle is in the selection)" : "");
  view.height((l.depth + 1) * ${ROW});
  view.change("boxes", vega.changeset().remove(vega.truthy).insert(l.boxes));
  if (window.tessera) window.tessera.flame = { boxes: l.boxes.length, samples: root.n, seconds: root.s };
  return view.runAsync();
}
pick.addEventListener("change", draw);
var ready = (window.tessera ? window.tessera.ready : Promise.resolve()).then(draw), queued = false;
if (window.tessera) {
  window.tessera.flameReady = ready;
  if (window.tessera.tooltip) view.tooltip(window.tessera.tooltip);
  // a zoom step's window (null: the whole run); steps coalesce into one redraw
  if (window.tessera.onZoom) window.tessera.onZoom(function(d){
    dom = d;
    if (queued) return;
    queued = true;
    setTimeout(function(){ queued = false; window.tessera.flameReady = draw(); }, 0);
  });
}
})();
`

/**
 * The report page's script (plain ES5 text inlined into the HTML): it turns the compact
 * columnar data into rows, builds one canvas Vega `View` per chart, and keeps the task
 * stream responsive at 100,000+ tasks by feeding Vega only what the visible time window
 * needs:
 *
 * - task stream: the tasks intersecting the window, one bar each, when there are at
 *   most `maxDetail` of them; otherwise aggregated bars — per worker and per 4-pixel
 *   time bucket, coloured by the function of the longest task in it, opacity by the
 *   share of the bucket the worker was busy (adjacent full buckets of one function are
 *   merged). Hover shows the task (key, function, worker, start, duration, size, cores)
 *   or the bucket (tasks, busy share, longest task).
 * - timelines (resources, managed memory, chunks): the samples inside the window plus
 *   each series' neighbours just outside it, thinned above a budget (1,200 samples per
 *   chart, 300 per series) to the maximum and the last sample per series and bucket,
 *   so peaks and step shapes survive.
 *
 * Each zoom / pan step of the task stream (Vega-Lite's interval selection bound to the
 * x scale) sets the `xdom` signal of every timeline and replaces the windowed rows with
 * one Vega changeset per view, so only those few thousand tuples are re-encoded. Also:
 * the tooltip handler (vega-embed is not inlined) and click-to-sort tables. Exposed as
 * `window.tessera` ({ data, views, ready, idle(), stream, errors }) for tests and
 * benchmarks.
 *
 * The task stream draws each task's gather and transfer phases at its ends in their own
 * colour, data transfers (`tessera.data.transfers`: peer fetches, device copies) on the
 * receiving worker's row in theirs (hover: keys, bytes, peer, MB/s), and the driver's segments (`tessera.data.driver`) on the driver's row and, for
 * `worker start`, on the worker's; time-axis charts take the page's width (and again on
 * resize).
 *
 * Leaves out: building specs (src/report/Charts.ts) and the page's HTML (Html.ts).
 *
 * @since 0.1.0
 */

import { dataTransferLabel, erredLabel, otherFunctionsLabel, transferLabel } from "./Charts.ts"

/**
 * A view of the page: its element id, compiled Vega spec, and its windowed data
 * sources with how their rows are made (`stream`, `resources:<column>`, `memory:bytes`,
 * `memory:chunks`); none for charts with inline data.
 *
 * @since 0.1.0
 * @category models
 */
export interface PageView {
  readonly id: string
  readonly spec: unknown
  readonly sources: ReadonlyArray<{ readonly source: string; readonly rows: string }>
  /** the page sets the view's width from the page's (the time-axis charts, aligned) */
  readonly fit?: boolean
}

/**
 * The page script for these views. `viewsJson` is `scriptJson(views)` (safe inside a
 * script element).
 *
 * @since 0.1.0
 * @category formatting
 */
export const pageScript = (viewsJson: string, wall: number, options: { readonly maxDetail?: number } = {}): string => {
  const transferLabelText = transferLabel
  return `
(function(){
"use strict";
var D = JSON.parse(document.getElementById("tessera-data").textContent);
var specs = ${viewsJson};
var WALL = ${JSON.stringify(wall)}, MAX_DETAIL = ${options.maxDetail ?? 5000}, BUCKET_PX = 4, SERIES_BUDGET = 1200;
var T = D.tasks, nT = T.start.length, nW = D.workers.length;
// the colour label of each function: its name, or "(other functions)" past the task
// stream's colours (fnTop: the functions with their own, null when all have)
var FC = D.functions;
if (D.fnTop != null) { FC = new Array(D.functions.length).fill(${JSON.stringify(otherFunctionsLabel)}); D.fnTop.forEach(function(f){ FC[f] = D.functions[f]; }); }
var tS = Float64Array.from(T.start), tE = Float64Array.from(T.end), tW = Int32Array.from(T.worker), tF = Int32Array.from(T.fn);
// optional columns are null when the trace has none of their values
function floats(a, empty){ return a == null ? new Float64Array(nT).fill(empty) : Float64Array.from(a, function(x){ return x == null ? NaN : x; }); }
var tG = floats(T.gather, NaN), tX = floats(T.transfer, NaN), tSt = T.stage == null ? new Int32Array(nT).fill(-1) : Int32Array.from(T.stage);
var tIn = floats(T.bytesIn, 0), tPk = floats(T.peak, NaN), tIo = floats(T.io, NaN);
// erred tasks (a failed run): drawn in their own colour, always one bar each; their errors by task
var tErr = T.erred == null ? new Uint8Array(nT) : Uint8Array.from(T.erred), ERRED = ${JSON.stringify(erredLabel)}, errText = {};
(D.failures || []).forEach(function(f){ errText[f[0]] = f[1]; });
var erredIdx = []; for (var ei = 0; ei < nT; ei++) if (tErr[ei]) erredIdx.push(ei);
function erredRow(i){ return { _i: i, _p: "compute", worker: D.workers[tW[i]], c: ERRED, start: tS[i], end: tE[i], _o: 1, _sw: 2.5 }; }
var DR = D.driver, nD = DR.start.length, dS = Float64Array.from(DR.start), dE = Float64Array.from(DR.end);
var TRANSFER = ${JSON.stringify(transferLabelText)}, MOVED = ${JSON.stringify(dataTransferLabel)};
var X = D.transfers, nX = X.start.length, xS = Float64Array.from(X.start), xE = Float64Array.from(X.end);
// data transfers in a window, on the receiving worker's row: one bar each (a few per
// fetch or device copy); when zoomed out past the detail limit, only if they are few
function transferRows(x0, x1, rows, detail){
  if (!detail && nX > MAX_DETAIL) return;
  for (var i = 0; i < nX; i++) { if (xE[i] < x0 || xS[i] > x1) continue;
    rows.push({ _x: i, worker: D.workers[X.worker[i]], c: MOVED, start: xS[i], end: xE[i], _o: 0.9, _sw: 0 }); }
}
// the driver's segments in a window: few (a handful per compute), always drawn one each
function driverRows(x0, x1, rows){
  for (var i = 0; i < nD; i++) { if (dE[i] < x0 || dS[i] > x1) continue;
    rows.push({ _d: i, worker: D.driverThreads[DR.thread[i]], c: "driver: " + D.activities[DR.activity[i]], start: dS[i], end: dE[i], _o: 1, _sw: 0.6 }); }
}

function fmtTime(s){ var a = Math.abs(s); return a >= 1 ? s.toFixed(3) + " s" : a >= 1e-3 ? (s * 1e3).toFixed(3) + " ms" : (s * 1e6).toFixed(1) + " \\u00b5s"; }
function fmtBytes(b){ if (b == null || !isFinite(b)) return "\\u2014"; var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
  while (i < 4 && Math.abs(b) >= 1024) { b /= 1024; i++; } return (i ? b.toFixed(1) : String(b)) + " " + u[i]; }

// ---- task stream rows for a window --------------------------------------------------
// Plain loops over typed arrays: they run on every zoom step over every task.
// Tasks are visited in start order (sorted once) from the first one that can reach x0
// (start >= x0 - longest duration) to the last that starts before x1.
var order = new Int32Array(nT), sortedStart = new Float64Array(nT), maxDur = 0;
(function(){ var i; for (i = 0; i < nT; i++) { order[i] = i; if (tE[i] - tS[i] > maxDur) maxDur = tE[i] - tS[i]; }
  order.sort(function(a, b){ return tS[a] - tS[b]; }); for (i = 0; i < nT; i++) sortedStart[i] = tS[order[i]]; })();
function lowerBound(a, x){ var lo = 0, hi = a.length, m; while (lo < hi) { m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; } return lo; }
function streamRows(x0, x1, width){
  var from = lowerBound(sortedStart, x0 - maxDur), to = lowerBound(sortedStart, x1 + 1e-12 * (1 + Math.abs(x1)));
  var visible = 0, i, o;
  for (o = from; o < to; o++) { i = order[o]; if (tE[i] >= x0 && tS[i] <= x1) visible++; }
  var rows = [];
  if (visible <= MAX_DETAIL) {
    for (o = from; o < to; o++) { i = order[o]; if (tE[i] < x0 || tS[i] > x1) continue;
      if (tErr[i]) { rows.push(erredRow(i)); continue; }
      // phases as dask draws them: gather at the start and transfer at the end in their
      // own colour, compute in between coloured by function
      var g = tG[i] > 0 ? tG[i] : 0, x = tX[i] > 0 ? tX[i] : 0, w = D.workers[tW[i]], cs = tS[i] + g, ce = tE[i] - x;
      if (ce < cs) { cs = tS[i]; ce = tE[i]; g = 0; x = 0; }
      rows.push({ _i: i, _p: "compute", worker: w, c: FC[tF[i]], start: cs, end: ce, _o: 1, _sw: 0.6 });
      if (g > 0) rows.push({ _i: i, _p: "gather", worker: w, c: TRANSFER, start: tS[i], end: cs, _o: 1, _sw: 0 });
      if (x > 0) rows.push({ _i: i, _p: "transfer", worker: w, c: TRANSFER, start: ce, end: tE[i], _o: 1, _sw: 0 }); }
    transferRows(x0, x1, rows, true);
    driverRows(x0, x1, rows);
    return { rows: rows, visible: visible, detail: true };
  }
  var nb = Math.max(1, Math.floor(width / BUCKET_PX)), bw = (x1 - x0) / nb, n = nW * nb;
  var busy = new Float64Array(n), cnt = new Int32Array(n), best = new Int32Array(n).fill(-1), bestLen = new Float64Array(n);
  for (o = from; o < to; o++) { i = order[o]; if (tE[i] < x0 || tS[i] > x1) continue;
    var s = tS[i] > x0 ? tS[i] : x0, e = tE[i] < x1 ? tE[i] : x1;
    var b0 = Math.min(nb - 1, Math.max(0, Math.floor((s - x0) / bw))), b1 = Math.min(nb - 1, Math.max(0, Math.floor((e - x0) / bw)));
    for (var b = b0; b <= b1; b++) {
      var lo = x0 + b * bw, hi = lo + bw, ov = (e < hi ? e : hi) - (s > lo ? s : lo), k = tW[i] * nb + b;
      if (ov < 0) ov = 0;
      busy[k] += ov; cnt[k]++;
      if (best[k] < 0 || ov > bestLen[k]) { best[k] = i; bestLen[k] = ov; }
    }
  }
  for (var w = 0; w < nW; w++) { var prev = null;
    for (b = 0; b < nb; b++) { k = w * nb + b;
      if (cnt[k] === 0) { prev = null; continue; }
      // busy share in four opacity levels; a run of buckets with one function and one
      // level becomes one bar (fewer bars to encode and paint on every step)
      var frac = Math.min(1, busy[k] / bw), fn = FC[tF[best[k]]], level = frac > 0.75 ? 1 : frac > 0.5 ? 0.75 : frac > 0.25 ? 0.55 : 0.35;
      if (prev !== null && prev._o === level && prev.c === fn) {
        prev.end = x0 + (b + 1) * bw; prev.tasks += cnt[k]; prev._busy += busy[k];
        if (bestLen[k] > prev._bestLen) { prev._best = best[k]; prev._bestLen = bestLen[k]; }
        continue;
      }
      prev = { _agg: true, worker: D.workers[w], c: fn, start: x0 + b * bw, end: x0 + (b + 1) * bw, tasks: cnt[k],
        _busy: busy[k], _best: best[k], _bestLen: bestLen[k], _o: level, _sw: 0 };
      rows.push(prev);
    }
  }
  transferRows(x0, x1, rows, false);
  driverRows(x0, x1, rows);
  erredIdx.forEach(function(i){ if (tE[i] >= x0 && tS[i] <= x1) rows.push(erredRow(i)); });
  return { rows: rows, visible: visible, detail: false };
}

// ---- windowed, thinned time series ---------------------------------------------------
// Indices of samples (t sorted ascending) in [x0, x1], plus each series' last sample
// before x0 and first after x1 (lines enter and leave the window); above the budget,
// per series and bucket the sample with the largest value and the last one.
function seriesIdx(t, ser, val, ns, x0, x1){
  var n = t.length, lo = 0, hi = n, m;
  while (lo < hi) { m = (lo + hi) >> 1; if (t[m] < x0) lo = m + 1; else hi = m; }
  var a = lo; lo = a; hi = n;
  while (lo < hi) { m = (lo + hi) >> 1; if (t[m] <= x1) lo = m + 1; else hi = m; }
  var z = lo, out = [], seen, left, i, s;
  seen = new Uint8Array(ns); left = ns;
  for (i = a - 1; i >= 0 && left > 0 && a - i < 200000; i--) { s = ser[i]; if (!seen[s]) { seen[s] = 1; left--; out.push(i); } }
  seen = new Uint8Array(ns); left = ns;
  for (i = z; i < n && left > 0 && i - z < 200000; i++) { s = ser[i]; if (!seen[s]) { seen[s] = 1; left--; out.push(i); } }
  // at most 150 buckets (two samples each) per series, and SERIES_BUDGET per chart
  var budget = Math.min(SERIES_BUDGET, 300 * ns);
  if (z - a <= budget) { for (i = a; i < z; i++) out.push(i); }
  else {
    var nb = Math.max(1, Math.floor(budget / (2 * ns))), bw = (x1 - x0) / nb;
    var mx = new Int32Array(ns * nb).fill(-1), last = new Int32Array(ns * nb).fill(-1);
    for (i = a; i < z; i++) {
      var k = ser[i] * nb + Math.min(nb - 1, Math.floor((t[i] - x0) / bw));
      if (mx[k] < 0 || val[i] > val[mx[k]]) mx[k] = i;
      last[k] = i;
    }
    for (k = 0; k < mx.length; k++) { if (mx[k] >= 0) out.push(mx[k]); if (last[k] >= 0 && last[k] !== mx[k]) out.push(last[k]); }
  }
  out.sort(function(p, q){ return t[p] - t[q] || p - q; });
  return out;
}
var M = D.memory, mT = Float64Array.from(M.t), mW = Int32Array.from(M.worker), mB = Float64Array.from(M.bytes.map(function(x){ return x == null ? NaN : x; })),
  mC = Float64Array.from(M.chunks.map(function(x){ return x == null ? NaN : x; }));
// device bytes: only the samples that carry them (GPU workers)
var mDi = [], mDT, mDW, mDV;
if (M.device != null) M.device.forEach(function(x, i){ if (x != null) mDi.push(i); });
mDT = Float64Array.from(mDi, function(i){ return mT[i]; }); mDW = Int32Array.from(mDi, function(i){ return mW[i]; });
mDV = Float64Array.from(mDi, function(i){ return M.device[i]; });
var R = D.resources, rT = Float64Array.from(R.t), rH = Int32Array.from(R.host), nH = Math.max(1, D.hosts.length);
var rV = {}; Object.keys(R.cols).forEach(function(c){ rV[c] = Float64Array.from(R.cols[c].map(function(x){ return x == null ? NaN : x; })); });
function seriesRows(kind, x0, x1){
  var idx, rows = [], j, i;
  if (kind === "memory:device") {
    idx = seriesIdx(mDT, mDW, mDV, nW, x0, x1);
    for (j = 0; j < idx.length; j++) { i = idx[j]; rows.push({ t: mDT[i], worker: D.workers[mDW[i]], device: mDV[i] }); }
  } else if (kind === "memory:bytes" || kind === "memory:chunks") {
    idx = seriesIdx(mT, mW, kind === "memory:bytes" ? mB : mC, nW, x0, x1);
    for (j = 0; j < idx.length; j++) { i = idx[j]; rows.push({ t: mT[i], worker: D.workers[mW[i]], bytes: mB[i], chunks: mC[i] }); }
  } else {
    var col = kind.slice("resources:".length), v = rV[col];
    idx = seriesIdx(rT, rH, v, nH, x0, x1);
    for (j = 0; j < idx.length; j++) { i = idx[j]; var o = { t: rT[i], host: D.hosts[rH[i]] }; o[col] = v[i]; rows.push(o); }
  }
  return rows;
}

// ---- tooltip -------------------------------------------------------------------------
var tip = document.getElementById("tooltip");
function esc(s){ return String(s).replace(/[&<>"]/g, function(c){ return {"&":"&amp;","<":"&lt;",">":"&gt;","\\"":"&quot;"}[c]; }); }
function taskInfo(i, phase){
  var d = tE[i] - tS[i], cpu = T.cpu ? T.cpu[i] : null, out = [];
  if (phase === "gather" || phase === "transfer") out.push(["phase", phase === "gather" ? "gather (inputs in) " + fmtTime(tG[i]) : "transfer (result out) " + fmtTime(tX[i])]);
  if (tErr[i]) { var et = errText[i] || ""; out.push(["state", "erred (this task failed the run)"]); if (et !== "") out.push(["error", et.length > 400 ? et.slice(0, 400) + "\u2026" : et]); }
  out = out.concat([["key", T.key[i]], ["function", D.functions[tF[i]]], ["stage", tSt[i] >= 0 ? D.stages[tSt[i]] : "\u2014"], ["worker", D.workers[tW[i]]],
    ["start", fmtTime(tS[i])], ["end", fmtTime(tE[i])], ["duration", fmtTime(d)]]);
  if (isFinite(tG[i]) || isFinite(tX[i])) out.push(["gather / transfer", fmtTime(isFinite(tG[i]) ? tG[i] : 0) + " / " + fmtTime(isFinite(tX[i]) ? tX[i] : 0)]);
  out.push(["bytes out", fmtBytes(T.size[i])], ["bytes in", fmtBytes(tIn[i])]);
  if (isFinite(tPk[i])) out.push(["peak memory", fmtBytes(tPk[i])]);
  if (isFinite(tIo[i])) out.push(["I/O bytes", fmtBytes(tIo[i])]);
  return out.concat(cpu == null ? [] : d >= 0.01 ? [["CPU cores", (cpu / d).toFixed(2)]] :
    [["CPU time", fmtTime(cpu) + " (kernel-tick granular)"]]);
}
function driverInfo(i){
  var out = [["driver", D.activities[DR.activity[i]]], ["thread", D.driverThreads[DR.thread[i]]], ["key", DR.key[i]],
    ["start", fmtTime(dS[i])], ["end", fmtTime(dE[i])], ["duration", fmtTime(dE[i] - dS[i])]];
  if (DR.compute[i] != null) out.push(["compute", DR.compute[i]]);
  if (DR.tasks[i] > 0) out.push(["tasks", DR.tasks[i]]);
  return out;
}
function transferInfo(i){
  var d = xE[i] - xS[i], keys = X.keys[i], dir = X.direction[i];
  var out = [["transfer", dir === "peer" ? "peer fetch" : dir], ["worker", D.workers[X.worker[i]]]];
  if (X.peer[i] !== "") out.push(["from peer", X.peer[i]]);
  out.push(["keys (" + X.nKeys[i] + ")", keys.length > 400 ? keys.slice(0, 400) + "\u2026" : keys], ["bytes", fmtBytes(X.bytes[i])],
    ["start", fmtTime(xS[i])], ["duration", fmtTime(d)], ["rate", d > 0 && isFinite(X.bytes[i]) ? (X.bytes[i] / 1e6 / d).toPrecision(3) + " MB/s" : "\u2014"]);
  return out;
}
function describe(value){
  if (value && value._agg) {
    var w = value.end - value.start;
    return [["worker", value.worker], ["time", fmtTime(value.start) + " \\u2013 " + fmtTime(value.end)], ["tasks", value.tasks],
      ["busy", (100 * Math.min(1, value._busy / w)).toFixed(0) + " %"], ["longest", D.functions[tF[value._best]]],
      ["its key", T.key[value._best]], ["", "zoom in to see single tasks"]];
  }
  if (value && value._i !== undefined) return taskInfo(value._i, value._p);
  if (value && value._d !== undefined) return driverInfo(value._d);
  if (value && value._x !== undefined) return transferInfo(value._x);
  if (value && typeof value === "object") return Object.keys(value).filter(function(k){ return k.charAt(0) !== "_" && !/_sort_index$/.test(k); })
    .map(function(k){ return [k, value[k]]; });
  return null;
}
function tooltip(handler, event, item, value){
  if (value == null || value === "") { tip.style.display = "none"; return; }
  var kv = describe(value);
  tip.innerHTML = kv === null ? esc(value) : "<table>" + kv.map(function(p){ return "<tr><td class=k>" + esc(p[0]) + "</td><td>" + esc(p[1]) + "</td></tr>"; }).join("") + "</table>";
  tip.style.display = "block";
  tip.style.left = Math.max(4, Math.min(event.clientX + 12, window.innerWidth - tip.offsetWidth - 4)) + "px";
  tip.style.top = (event.clientY + 12) + "px";
}

// ---- views and the shared zoom -------------------------------------------------------
var views = {}, windowed = [], fitted = [], errors = [], stream = null, dom = [0, WALL], running = Promise.resolve(), scheduled = false;
var state = { visible: 0, drawn: 0, detail: true, domain: dom };
// other sections following the zoom (FlameGraph.ts): called with the window, or null for the whole run
var zoomListeners = [];
function plotWidth(view){ return view.width ? view.width() : 1000; }
// the time-axis charts' plot width: the page's width less the y axis (their legends
// sit above or below the plot, so the plot takes the rest) and the view's padding
function fitWidth(){ var m = document.querySelector("main") || document.body; return Math.max(360, Math.floor(m.clientWidth - 110 - 24)); }
function replace(view, source, rows){ view.change(source, vega.changeset().remove(vega.truthy).insert(rows)); }
// One zoom / pan step: the task stream first (its rows and xdom in one dataflow run),
// then — in a later task, so the browser can paint the stream in between — every
// timeline, unless a newer step is already queued (that one updates them).
function updateView(w, d){
  var t1 = performance.now();
  w.view.signal("xdom", d);
  w.sources.forEach(function(src){
    if (src.rows === "stream") {
      var r = streamRows(d[0], d[1], plotWidth(w.view));
      state = { visible: r.visible, drawn: r.rows.length, detail: r.detail, domain: d };
      replace(w.view, src.source, r.rows);
    } else replace(w.view, src.source, seriesRows(src.rows, d[0], d[1]));
  });
  var rowsMs = performance.now() - t1;
  return w.view.runAsync().then(function(){ return { rowsMs: rowsMs, ms: performance.now() - t1 }; });
}
function apply(){
  scheduled = false;
  var d = dom, t0 = performance.now(), timing = {};
  var first = windowed.filter(function(w){ return w.view === stream; }), rest = windowed.filter(function(w){ return w.view !== stream; });
  var chain = Promise.resolve();
  first.forEach(function(w){ chain = chain.then(function(){ return updateView(w, d).then(function(t){ timing.stream = t; }); }); });
  return chain.then(function(){
    var streamAt = performance.now();
    return new Promise(function(resolve){ setTimeout(resolve, 0); }).then(function(){
      var c = Promise.resolve();
      if (!scheduled) rest.forEach(function(w){ c = c.then(function(){ return updateView(w, d).then(function(t){ timing[w.view.container().id] = t; }); }); });
      return c;
    }).then(function(){
      // timings of the last step, for the benchmark
      state.timing = timing; state.startAt = t0; state.streamAt = streamAt; state.endAt = performance.now();
      if (window.tessera) window.tessera.stream = state;
    });
  });
}
function schedule(){
  if (scheduled) return;
  scheduled = true;
  running = running.then(apply, apply).catch(function(e){ errors.push(String(e)); });
}
var ready = Promise.all(specs.map(function(s){
  var view = new vega.View(vega.parse(s.spec), { renderer: "canvas", container: "#" + s.id, hover: true });
  view.tooltip(tooltip);
  if (s.fit) { view.width(fitWidth()); fitted.push(view); }
  views[s.id] = view;
  if (s.sources.length > 0) {
    windowed.push({ view: view, sources: s.sources });
    // the first run lays out axes and legends with the whole run's rows
    s.sources.forEach(function(src){
      if (src.rows === "stream") { var r0 = streamRows(0, WALL, plotWidth(view)); state = { visible: r0.visible, drawn: r0.rows.length, detail: r0.detail, domain: dom }; view.data(src.source, r0.rows); stream = view; }
      else view.data(src.source, seriesRows(src.rows, 0, WALL));
    });
  }
  return view.runAsync().catch(function(e){ errors.push(s.id + ": " + e); throw e; });
})).then(function(){
  if (stream) stream.addSignalListener("zoom", function(name, v){
    dom = v && v.start ? [v.start[0], v.start[1]] : [0, WALL];
    schedule();
    zoomListeners.forEach(function(f){ f(v && v.start ? dom : null); });
  });
  if (window.tessera) window.tessera.stream = state;
});
// a resized page: the time-axis charts take the new width, and the stream's buckets follow
var resizeTimer = null;
window.addEventListener("resize", function(){
  if (resizeTimer !== null) clearTimeout(resizeTimer);
  resizeTimer = setTimeout(function(){ resizeTimer = null; var w = fitWidth();
    fitted.forEach(function(v){ v.width(w); }); schedule(); }, 150);
});
// resolves once every zoom step asked for so far is drawn
function idle(){
  var r = running;
  return r.then(function(){ return r === running && !scheduled ? undefined : idle(); });
}
document.querySelectorAll("table.sortable th").forEach(function(th){
  th.addEventListener("click", function(){
    var table = th.closest("table"), body = table.tBodies[0], col = +th.dataset.col;
    var asc = !th.classList.contains("asc");
    table.querySelectorAll("th").forEach(function(h){ h.classList.remove("asc","desc"); });
    th.classList.add(asc ? "asc" : "desc");
    var trs = Array.prototype.slice.call(body.rows);
    trs.sort(function(a, b){
      var x = a.cells[col], y = b.cells[col];
      var p = x.dataset.v !== undefined ? +x.dataset.v : x.textContent, q = y.dataset.v !== undefined ? +y.dataset.v : y.textContent;
      var c = typeof p === "number" && typeof q === "number" ? p - q : String(p).localeCompare(String(q));
      return asc ? c : -c;
    });
    trs.forEach(function(tr){ body.appendChild(tr); });
  });
});
// zoom every timeline to [a, b] (seconds from the run's start), as a brush on the stream does (Findings.ts's evidence links)
function zoomTo(a, b){ dom = [Math.max(0, Math.min(a, b)), Math.min(WALL, Math.max(a, b))]; schedule(); zoomListeners.forEach(function(f){ f(dom); }); }
window.tessera = { data: D, views: views, ready: ready, idle: idle, stream: state, errors: errors, tooltip: tooltip, onZoom: function(f){ zoomListeners.push(f); }, zoomTo: zoomTo };
})();
`
}

/**
 * The dashboard's page: constant HTML (no run data in it) and one script, `/app.js`,
 * that starts from `/api/snapshot`, then applies the server's deltas (`/api/events`,
 * server-sent events) and draws with Vega, using the charts the report uses
 * (`/api/specs`: `report/Charts.ts`'s task stream and timelines, compiled on the server).
 *
 * Tabs: **Status** (the task stream, one row per worker thread, GPU worker, cluster
 * worker and the driver; progress bars per stage and per task group: done, running,
 * waiting, erred), **Workers** (tasks, busy and CPU seconds, held bytes, chunks, device
 * bytes, peak task memory), **Memory & resources** (managed memory per worker and for
 * all workers, busy share per worker, CPU and memory per host, over time), **Transfers**
 * (bytes, count and bandwidth per worker pair), **Stages** (per stage), **Profile** (the
 * statistical profiler's flame graph of a time window, by function or stage: the
 * report's chart and code, `report/FlameGraph.ts`, over `/api/flame`), **Findings**
 * (`tessera diagnose`'s, `/api/findings`, asked for once the run is over; a finding's
 * evidence, clicked, zooms the task stream to its range: `window.tessera.zoomTo`; these
 * two tabs' code is `PageTabs.ts`). Only the visible tab draws.
 *
 * Bounded: the page holds at most 30,000 detailed rectangles (the newest); the task
 * stream draws single rectangles when the window's are all held and at most 4,000,
 * else per-worker time buckets from the server's bins (opacity = busy share), and says
 * so; zooming into a window it does not hold fetches it (`/api/detail`) when the server
 * still holds it. Rectangles the server did not send (more than its per-tick budget)
 * are counted on the page ("shed").
 *
 * Every string from the run (keys, functions, stages, workers, hosts) reaches the page
 * as JSON and is shown with `textContent` or drawn by Vega on a canvas: never markup.
 * Exposed as `window.tessera` for tests and benchmarks.
 *
 * @since 0.1.0
 */
import { afterRunTabsScript } from "./PageTabs.ts"

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&#39;")

/**
 * The page's HTML (`token`: the request's own, already checked, carried on the script URLs).
 *
 * @since 0.1.0
 * @category formatting
 */
export const pageHtml = (title: string, token?: string): string => {
  const q = token === undefined ? "" : `?token=${encodeURIComponent(token)}`
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} — Tessera dashboard</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:10px 24px 0;border-bottom:1px solid #ddd;background:#fff;position:sticky;top:0;z-index:5}
h1{margin:0 0 4px;font-size:20px} h2{font-size:16px;margin:18px 0 6px}
main{margin:0 24px 48px}
.counts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:2px 0 4px;font-size:13px} .counts b{font-variant-numeric:tabular-nums}
#status{font-weight:600} #status.running{color:#1a7f37} #status.over{color:#555} #status.lost{color:#b00}
nav button{border:1px solid #ccc;border-bottom:0;background:#f0f2f5;padding:5px 12px;margin-right:3px;border-radius:4px 4px 0 0;cursor:pointer;font:inherit}
nav button.on{background:#fafafa;font-weight:600}
.chart{background:#fff;border:1px solid #e4e4e4;border-radius:4px;padding:6px 0;margin:8px 0;min-height:60px}
.note{color:#666;font-size:12.5px;margin:4px 0} .warn{color:#7a4d00}
.toolbar button{font:inherit;font-size:12.5px;margin-right:6px}
table{border-collapse:collapse;background:#fff;font-size:12.5px;margin:6px 0} th,td{border:1px solid #e0e0e0;padding:3px 8px;text-align:left}
th{background:#f0f2f5} td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.bar{display:flex;width:320px;height:12px;background:#ddd;border-radius:2px;overflow:hidden}
.bar span{display:block;height:100%} .done{background:#54a24b} .running{background:#4c78a8} .erred{background:#d62728}
#tooltip{position:fixed;pointer-events:none;background:rgba(255,255,255,.97);border:1px solid #999;border-radius:3px;padding:4px 8px;font-size:12px;display:none;z-index:10;max-width:560px;box-shadow:0 1px 4px rgba(0,0,0,.2)}
#tooltip td{border:0;padding:0 6px 0 0} #tooltip td.k{color:#666}
#findings{padding-left:22px} .finding{margin:0 0 10px;background:#fff;border:1px solid #e4e4e4;border-radius:4px;padding:6px 10px;font-size:13px}
.finding .sev{color:#fff;border-radius:3px;padding:0 6px;font-size:11px;text-transform:uppercase} .sev.high{background:#b00020} .sev.medium{background:#a15c00} .sev.low{background:#52606d}
.finding .ev{color:#444} .finding button.zoom{font:inherit;font-size:12.5px;color:#2a5db0;background:none;border:0;padding:0;text-decoration:underline;cursor:pointer}
</style></head><body>
<header><h1 id="title"></h1>
<div class="counts"><span id="status" class="running">connecting</span>
<span>tasks <b id="n-tasks">0</b></span><span>erred <b id="n-erred">0</b></span><span>running <b id="n-running">0</b></span>
<span>computes <b id="n-computes">0</b></span><span>transfers <b id="n-transfers">0</b></span><span>time <b id="n-time">0.0 s</b></span></div>
<nav id="tabs"><button data-tab="status" class="on">Status</button><button data-tab="workers">Workers</button><button data-tab="memory">Memory &amp; resources</button><button data-tab="transfers">Transfers</button><button data-tab="stages">Stages</button><button data-tab="profile">Profile</button><button data-tab="findings">Findings</button></nav>
</header>
<main>
<section id="tab-status">
<p id="detail-note" class="note"></p>
<div class="toolbar"><button id="follow">follow live (whole run)</button><button id="recent">last 10 s</button> <span class="note">scroll on the task stream to zoom, drag to pan, double-click for the whole run</span></div>
<div id="stream" class="chart"></div>
<h2>Progress</h2><div id="progress"></div>
</section>
<section id="tab-workers" hidden><h2>Workers</h2><table id="workers"></table></section>
<section id="tab-memory" hidden><h2>Memory and resources</h2><p class="note" id="memory-note"></p><div id="timelines" class="chart"></div></section>
<section id="tab-transfers" hidden><h2>Transfers by worker pair</h2><p class="note" id="pairs-note"></p><table id="pairs"></table></section>
<section id="tab-profile" hidden><h2>Flame graph (CPU samples)</h2><p class="note" id="flame-note"></p>
<div class="toolbar"><label>show <select id="flame-pick"><option value="all">whole run</option></select></label> <label>from <input id="flame-from" type="number" step="any" min="0" style="width:7em"> s</label> <label>to <input id="flame-to" type="number" step="any" min="0" style="width:7em"> s</label> <button id="flame-stream">the task stream's window</button><button id="flame-all">whole run</button></div>
<p class="note" id="flame-window"></p><div id="flame" class="chart"></div></section>
<section id="tab-findings" hidden><h2>Findings</h2><p class="note" id="findings-note"></p><p id="findings-summary"></p><ol id="findings"></ol></section>
<section id="tab-stages" hidden><h2>Stages</h2><p class="note" id="dag-note"></p><div id="dag" class="chart"></div><table id="stages"></table></section>
</main>
<div id="tooltip"></div>
<script src="/vega.js${q}"></script>
<script src="/app.js${q}"></script>
</body></html>
`
}

/**
 * The page's script.
 *
 * @since 0.1.0
 * @category formatting
 */
export const appScript = (): string => `(function(){
"use strict";
var token = new URLSearchParams(location.search).get("token");
function api(p){ return token === null ? p : p + (p.indexOf("?") < 0 ? "?" : "&") + "token=" + encodeURIComponent(token); }
function $(id){ return document.getElementById(id); }
function text(el, s){ el.textContent = s; return el; }
function el(tag, cls, s){ var e = document.createElement(tag); if (cls) e.className = cls; if (s !== undefined) e.textContent = s; return e; }
var MAX_HELD = 30000, MAX_DRAWN = 4000;
var S = { rows: [], functions: [], stages: [], activities: [], hosts: [], binWidth: 0.1, binEpoch: 0,
  bins: { busy: [], cpu: [], fn: [], mem: [], total: [] }, groups: [], workers: [], pairs: {}, resources: [], counts: null, t: 0, over: false, t0: 0, tickMs: 200 };
var R = { id: [], s: [], e: [], r: [], f: [], k: [] };
var coverFrom = 0, lastId = -1, fetched = null;
var T = window.tessera = { state: S, rects: R, ready: false, deltas: 0, bytes: 0, renders: 0, latencies: [], errors: [], mode: "", shown: 0, renderMs: 0, window: [0, 1], clicks: [] };
var tab = "status", follow = true, span = Infinity, dom = [0, 1];
var ownDom = false, specs = null, specKey = "", streamView = null, timeView = null, building = null, dirty = true, drawing = false;
var pending = [];

function fmtS(v){ return v < 1e-3 ? (v * 1e6).toFixed(0) + " µs" : v < 1 ? (v * 1e3).toFixed(1) + " ms" : v.toFixed(2) + " s"; }
function fmtB(v){ var u = ["B","KiB","MiB","GiB","TiB"], i = 0; while (i < 4 && v >= Math.pow(1024, i + 1)) i++; return (v / Math.pow(1024, i)).toFixed(i ? 1 : 0) + " " + u[i]; }

// ---- state -----------------------------------------------------------------------------
function putDict(name, from, items){ for (var i = 0; i < items.length; i++) S[name][from + i] = items[i]; }
function putBins(b){
  if (!b) return;
  ["busy","cpu","fn","mem"].forEach(function(k){
    b[k].forEach(function(arr, row){ var dst = S.bins[k][row] || (S.bins[k][row] = []); for (var i = 0; i < arr.length; i++) dst[b.lo + i] = arr[i]; });
  });
  for (var i = 0; i < b.total.length; i++) S.bins.total[b.lo + i] = b.total[i];
}
function addRects(c, tickEnd){
  var firstNew = -1, maxE = 0;
  for (var i = 0; i < c.id.length; i++) {
    if (c.id[i] <= lastId) continue;
    if (firstNew < 0) firstNew = c.id[i];
    R.id.push(c.id[i]); R.s.push(c.s[i]); R.e.push(c.e[i]); R.r.push(c.r[i]); R.f.push(c.f[i]); R.k.push(c.k[i]);
    if (c.e[i] > maxE) maxE = c.e[i];
    lastId = c.id[i];
  }
  // a gap (rectangles the server shed): the page holds everything only after these
  if (firstNew > 0 && tickEnd !== undefined && firstNew > tickEnd + 1) coverFrom = Math.max(coverFrom, maxE);
  if (R.id.length > MAX_HELD) {
    var drop = R.id.length - MAX_HELD + 5000, m = 0;
    for (var j = 0; j < drop; j++) if (R.e[j] > m) m = R.e[j];
    ["id","s","e","r","f","k"].forEach(function(k){ R[k].splice(0, drop); });
    coverFrom = Math.max(coverFrom, m);
  }
  return firstNew;
}
function applySnapshot(s){
  ["rows","functions","stages","activities","hosts"].forEach(function(k){ S[k] = s[k].slice(); });
  S.binWidth = s.binWidth; S.binEpoch = s.binEpoch; S.bins = { busy: [], cpu: [], fn: [], mem: [], total: [] }; putBins(s.bins);
  S.groups = []; s.groups.forEach(function(g){ S.groups[g.id] = g; });
  S.workers = s.workers; S.pairs = {}; s.pairs.forEach(function(p){ S.pairs[p.from + "\\u0000" + p.to] = p; });
  S.resources = s.resources; S.counts = s.counts; S.t = s.t; S.over = s.over; S.t0 = s.t0; S.tickMs = s.tickMs;
  text($("title"), s.title);
  document.title = s.title + " — Tessera dashboard";
  R = T.rects = { id: [], s: [], e: [], r: [], f: [], k: [] }; lastId = -1;
  addRects(s.rects);
  // the page holds every rectangle from the first one it got on (older ones: the server's bins)
  coverFrom = s.rects.id.length > 0 && s.rects.id[0] > 0 ? Math.max.apply(null, s.rects.e.slice(0, 64)) : 0;
}
function applyDelta(d){
  ["rows","functions","stages","activities","hosts"].forEach(function(k){ putDict(k, d.from[k], d[k]); });
  if (d.binEpoch !== S.binEpoch) { S.bins = { busy: [], cpu: [], fn: [], mem: [], total: [] }; S.binEpoch = d.binEpoch; }
  S.binWidth = d.binWidth; putBins(d.bins);
  d.groups.forEach(function(g){ S.groups[g.id] = g; });
  S.workers = d.workers;
  d.pairs.forEach(function(p){ S.pairs[p.from + "\\u0000" + p.to] = p; });
  d.resources.forEach(function(r, h){
    var dst = S.resources[h] || (S.resources[h] = { t: [], cpu: [], mem: [] });
    ["t","cpu","mem"].forEach(function(k){ dst[k].length = r.from; for (var i = 0; i < r[k].length; i++) dst[k].push(r[k][i]); });
  });
  var before = lastId;
  var first = addRects(d.rects, before);
  S.counts = d.counts; S.t = d.t; S.over = d.over;
  if (first >= 0) pending.push({ at: performance.now(), ids: d.rects.id.length, ends: d.rects.e.slice(-200) });
  var grew = ["rows","functions","stages","activities","hosts"].some(function(k){ return d[k].length > 0; });
  return first >= 0 || grew || d.bins !== null || d.groups.length > 0 || d.pairs.length > 0 || d.resources.some(function(r){ return r.t.length > 0; }) && tab === "memory";
}

// ---- rows for the charts -------------------------------------------------------------------
function labelOf(k, f){
  if (k === 2) return specs.labels.dataTransfer;
  if (k === 1) return specs.labels.erred;
  if (k === 3) return specs.labels.driver + (S.activities[f] || "");
  if (f <= -2) return specs.labels.driver + (S.activities[-2 - f] || "");
  if (f < 0) return specs.labels.other;
  if (specs.top !== null && specs.top.indexOf(f) < 0) return specs.labels.other;
  return S.functions[f] === undefined ? specs.labels.other : S.functions[f];
}
function detailRows(a, b){
  var src = fetched !== null && fetched.from <= a && fetched.to >= b ? fetched.R : R;
  var out = [], n = 0;
  for (var i = 0; i < src.id.length; i++) {
    if (src.e[i] < a || src.s[i] > b) continue;
    if (++n > MAX_DRAWN) return null;
    out.push({ start: src.s[i], end: Math.max(src.e[i], src.s[i]), worker: S.rows[src.r[i]], c: labelOf(src.k[i], src.f[i]), _o: 1, _sw: 0.5, _id: src.id[i], _k: src.k[i] });
  }
  return out;
}
function bucketRows(a, b, width){
  var w = S.binWidth, lo = Math.max(0, Math.floor(a / w)), hi = Math.floor(b / w);
  var per = Math.max(1, Math.ceil((hi - lo + 1) / Math.max(50, Math.floor(width / 4))));
  var out = [];
  S.bins.busy.forEach(function(busy, row){
    if (!busy) return;
    for (var x = lo; x <= hi; x += per) {
      var sum = 0, best = -1, bestV = -1;
      for (var y = x; y < x + per && y <= hi; y++) { var v = busy[y] || 0; sum += v; if (v > bestV && S.bins.fn[row] && S.bins.fn[row][y] !== undefined && S.bins.fn[row][y] !== -1) { bestV = v; best = S.bins.fn[row][y]; } }
      if (sum <= 0) continue;
      var share = Math.min(1, sum / (w * per));
      out.push({ start: x * w, end: (x + per) * w, worker: S.rows[row], c: labelOf(0, best), _o: Math.max(0.15, share), _sw: 0, _busy: share });
    }
  });
  return out;
}
function streamRows(a, b, width){
  if (a >= coverFrom || fetched !== null && fetched.from <= a && fetched.to >= b) {
    var d = detailRows(a, b);
    T.detailSource = a >= coverFrom ? "page" : fetched.source;
    if (d !== null) return { rows: d, detail: true };
  }
  return { rows: bucketRows(a, b, width), detail: false };
}
function series(source, a, b){
  var out = [], w = S.binWidth, lo = Math.max(0, Math.floor(a / w)), hi = Math.floor(b / w);
  if (source === "memory") S.bins.mem.forEach(function(m, row){ if (!m || S.rows[row] === "driver") return; for (var i = lo; i <= hi && i < m.length; i++) if (m[i] !== undefined) out.push({ t: i * w, bytes: m[i] / 1048576, worker: S.rows[row] }); });
  if (source === "memtotal") for (var i = lo; i <= hi && i < S.bins.total.length; i++) out.push({ t: i * w, bytes: (S.bins.total[i] || 0) / 1048576, scope: "all workers" });
  if (source === "busy") S.bins.busy.forEach(function(m, row){ if (!m || S.rows[row] === "driver") return; for (var i = lo; i <= hi && i < m.length; i++) out.push({ t: i * w, share: 100 * Math.min(1, (m[i] || 0) / w), worker: S.rows[row] }); });
  if (source === "res_cpu" || source === "res_mem") S.resources.forEach(function(r, h){ if (!r) return; for (var i = 0; i < r.t.length; i++) if (r.t[i] >= a - 1 && r.t[i] <= b + 1) out.push(source === "res_cpu" ? { t: r.t[i], cpu: r.cpu[i], host: S.hosts[h] } : { t: r.t[i], mem: r.mem[i] / 1073741824, host: S.hosts[h] }); });
  // thin long series to at most ~1,500 points (max per bucket)
  if (out.length > 1500) { var k = Math.ceil(out.length / 1500); out = out.filter(function(_, i){ return i % k === 0; }); }
  return out;
}

// ---- views -------------------------------------------------------------------------
var tip = $("tooltip");
function showTip(event, pairs){
  while (tip.firstChild) tip.removeChild(tip.firstChild);
  var t = el("table");
  pairs.forEach(function(p){ var tr = el("tr"); tr.appendChild(el("td", "k", p[0])); tr.appendChild(el("td", "", String(p[1]))); t.appendChild(tr); });
  tip.appendChild(t);
  tip.style.display = "block";
  tip.style.left = Math.max(4, Math.min(event.clientX + 12, window.innerWidth - tip.offsetWidth - 4)) + "px";
  tip.style.top = (event.clientY + 12) + "px";
}
var tipSeq = 0;
function tooltip(handler, event, item, value){
  if (value == null || typeof value !== "object") { tip.style.display = "none"; return; }
  var base = [["worker", value.worker], ["what", value.c], ["start", fmtS(value.start)], ["duration", fmtS(value.end - value.start)]];
  if (value._busy !== undefined) base.push(["busy", (100 * value._busy).toFixed(0) + " %"], ["", "zoom in to see single tasks"]);
  showTip(event, base);
  if (value._id !== undefined) {
    var seq = ++tipSeq;
    fetch(api("/api/task?id=" + value._id)).then(function(r){ return r.json(); }).then(function(t){
      if (seq !== tipSeq || t === null || tip.style.display === "none") return;
      var more = base.concat([["key", t.key]]);
      if (t.stage) more.push(["stage", t.stage]);
      if (t.kind === 0 || t.kind === 1) more.push(["cpu", fmtS(t.cpu)], ["bytes", fmtB(t.bytes)]);
      if (t.kind === 2) more.push(["bytes", fmtB(t.bytes)]);
      showTip(event, more);
    }).catch(function(){});
  }
}
function plotWidth(){ var m = document.querySelector("main"); return Math.max(360, Math.floor(m.clientWidth - 110 - 24)); }
function shapeKey(){ return [S.rows.length, S.functions.length, S.activities.length, S.hosts.length, S.counts && S.counts.transfers > 0, S.counts && S.counts.erred > 0, plotWidth()].join("/"); }
function ensureSpecs(){
  var key = shapeKey();
  if (key === specKey && specs !== null) return Promise.resolve(false);
  if (building) return building;
  building = fetch(api("/api/specs?w=" + plotWidth())).then(function(r){ return r.json(); }).then(function(s){
    specs = s; specKey = key;
    if (streamView) streamView.finalize();
    if (timeView) timeView.finalize();
    streamView = new vega.View(vega.parse(s.stream), { renderer: "canvas", container: "#stream", hover: true });
    streamView.tooltip(tooltip);
    streamView.addSignalListener("zoom", function(name, v){
      // the page's own xdom (a draw, a view's first run) is no user's zoom
      if (ownDom) return;
      if (v && v.start) { follow = false; dom = [v.start[0], v.start[1]]; maybeFetch(); }
      else { follow = true; span = Infinity; }
      dirty = true; kick();
    });
    timeView = new vega.View(vega.parse(s.timelines), { renderer: "canvas", container: "#timelines", hover: true });
    timeView.tooltip(function(h, e, i, v){ if (v == null || typeof v !== "object") { tip.style.display = "none"; return; } showTip(e, Object.keys(v).filter(function(k){ return k.charAt(0) !== "_" && !/Symbol/.test(k); }).map(function(k){ return [k, typeof v[k] === "number" ? +v[k].toFixed(3) : v[k]]; })); });
    building = null;
    return true;
  }, function(e){ building = null; T.errors.push(String(e)); return false; });
  return building;
}
function maybeFetch(){
  var a = dom[0], b = dom[1];
  if (a >= coverFrom) return;
  if (fetched !== null && fetched.from <= a && fetched.to >= b) return;
  fetch(api("/api/detail?from=" + a + "&to=" + b + "&limit=" + MAX_DRAWN)).then(function(r){ return r.json(); }).then(function(d){
    if (d.complete) { fetched = { from: a, to: b, R: d.rects, source: d.source }; dirty = true; kick(); }
    T.lastDetail = { from: a, to: b, count: d.count, cut: d.cut, source: d.source, complete: d.complete };
  }).catch(function(e){ T.errors.push(String(e)); });
}
function replace(view, source, rows){ view.change(source, vega.changeset().remove(vega.truthy).insert(rows)); }
function draw(){
  if (tab !== "status" && tab !== "memory") { drawTables(); return Promise.resolve(); }
  return ensureSpecs().then(function(){
    if (specs === null) return;
    var wall = Math.max(S.t, 1);
    if (follow) dom = span === Infinity ? [0, wall] : [Math.max(0, S.t - span), Math.max(S.t, span)];
    T.window = dom.slice();
    var t1 = performance.now();
    var p;
    if (tab === "status") {
      var r = streamRows(dom[0], dom[1], plotWidth());
      T.mode = r.detail ? "detail" : "aggregate"; T.shown = r.rows.length;
      streamView.signal("xdom", dom);
      replace(streamView, "tasks", r.rows);
      ownDom = true;
      p = streamView.runAsync().finally(function(){ ownDom = false; });
    } else {
      timeView.signal("xdom", dom);
      ["memory","memtotal","busy","res_cpu","res_mem"].forEach(function(src){ replace(timeView, src, series(src, dom[0], dom[1])); });
      p = timeView.runAsync();
    }
    return p.then(function(){
      var now = performance.now();
      T.renders++; T.lastRenderMs = now - t1; T.renderMs += now - t1;
      // latency: a task's end (engine clock) to the frame that shows it (page clock; same host)
      var wallNow = (performance.timeOrigin + now) / 1000;
      if (tab === "status") pending.forEach(function(x){ x.ends.forEach(function(e){ T.latencies.push(wallNow - (S.t0 + e)); }); });
      pending = [];
      if (T.latencies.length > 20000) T.latencies.splice(0, T.latencies.length - 20000);
      drawTables();
    });
  });
}
// The page's own budget: after a draw that took d ms, the next waits at least 9 d, so
// drawing takes at most a tenth of this tab's thread (and of a core the engine may need);
// on an idle machine a draw takes 10-20 ms and every delta is drawn.
var lastDrawEnd = 0, lastDrawMs = 0;
function kick(){
  if (drawing || !dirty) return;
  drawing = true;
  var wait = Math.max(0, lastDrawEnd + 9 * lastDrawMs - performance.now());
  setTimeout(function(){
    dirty = false;
    requestAnimationFrame(function(){
      var t0 = performance.now();
      draw().catch(function(e){ T.errors.push(String(e)); }).then(function(){
        lastDrawEnd = performance.now(); lastDrawMs = Math.min(200, T.lastRenderMs === undefined ? lastDrawEnd - t0 : T.lastRenderMs);
        drawing = false; if (dirty) kick();
      });
    });
  }, wait);
}

// ---- text: counts, progress, tables ---------------------------------------------------------
function cell(tr, s, num){ tr.appendChild(el("td", num ? "n" : "", s)); }
function table(t, head, rows){
  while (t.firstChild) t.removeChild(t.firstChild);
  var h = el("tr"); head.forEach(function(x){ h.appendChild(el("th", "", x)); }); t.appendChild(h);
  rows.forEach(function(r){ var tr = el("tr"); r.forEach(function(v, i){ if (v && v.bar) { var td = el("td"); td.appendChild(v.bar); tr.appendChild(td); } else cell(tr, String(v), typeof v === "number" || i > 1); }); t.appendChild(tr); });
}
function bar(g){
  var b = el("div", "bar"), tot = Math.max(1, g.total);
  [["done", g.done], ["running", g.running], ["erred", g.erred]].forEach(function(p){ var s = el("span", p[0]); s.style.width = (100 * p[1] / tot) + "%"; b.appendChild(s); });
  b.title = g.done + " done, " + g.running + " running, " + Math.max(0, g.total - g.done - g.running - g.erred) + " waiting, " + g.erred + " erred";
  return { bar: b };
}
function drawCounts(){
  var c = S.counts; if (!c) return;
  text($("n-tasks"), c.tasks.toLocaleString("en-US")); text($("n-erred"), c.erred.toLocaleString("en-US"));
  text($("n-running"), c.running.toLocaleString("en-US")); text($("n-computes"), c.computesDone + " / " + c.computes);
  text($("n-transfers"), c.transfers.toLocaleString("en-US") + " (" + fmtB(c.transferBytes) + ")"); text($("n-time"), S.t.toFixed(1) + " s");
  var st = $("status");
  if (T.lost) { st.className = "lost"; text(st, "disconnected: reconnecting"); }
  else if (c.computesFailed > 0) { st.className = "lost"; text(st, (S.over ? "run over: " : "running: ") + c.computesFailed + " compute" + (c.computesFailed === 1 ? "" : "s") + " failed" + (c.light ? " (tasks that never ran stay waiting; --profile names the erred task)" : "")); }
  else if (S.over) { st.className = "over"; text(st, "run finished: final state"); }
  else { st.className = "running"; text(st, "running"); }
  var note = "task stream: " + (T.mode === "detail" ? T.shown.toLocaleString("en-US") + " rectangles, one per task" + (T.detailSource === "trace" ? " (read from the trace database: the server's ring no longer holds this window; tasks and transfers, not the driver's segments)" : "") : "per-worker time buckets (opacity: busy share); zoom in for single tasks" + (T.lastDetail && T.lastDetail.cut > 0 && T.lastDetail.from === dom[0] && T.lastDetail.to === dom[1] ? " (" + T.lastDetail.count.toLocaleString("en-US") + " rectangles in this window, more than a page draws)" : "")) +
    ". Detail: " + c.held.toLocaleString("en-US") + " of " + c.rects.toLocaleString("en-US") + " rectangles held by the server (last " + c.capacity.toLocaleString("en-US") + ")";
  if (c.light) note = "Without a profiler the dashboard sees tasks as the driver does (dispatch to result, a batch's round trip; no CPU time or held bytes: run with --profile for each task's own times). " + note;
  note += c.shed > 0 ? "; " + c.shed.toLocaleString("en-US") + " shed from the live feed (above its budget per tick: counted in every aggregate, fetched on zoom)." : "; none shed.";
  // a scheduler's page (tessera scheduler --dashboard): the drivers' runs and what they could not forward
  if (typeof c.dropped === "number") note += " Runs: " + c.drivers + " shown (" + c.runs + " since the scheduler started); " +
    (c.dropped > 0 ? c.dropped.toLocaleString("en-US") + " records the drivers could not forward (the scheduler was slow or failing: not in these counts)." : "every record forwarded.");
  text($("detail-note"), note);
}
function drawTables(){
  drawCounts();
  if (S.over && findings === null) askFindings();
  if (tab === "status") {
    var p = $("progress");
    var stages = {};
    S.groups.forEach(function(g){ if (!g) return; var s = stages[g.stage] || (stages[g.stage] = { total: 0, done: 0, running: 0, erred: 0, groups: [] }); s.total += g.total; s.done += g.done; s.running += g.running; s.erred += g.erred; s.groups.push(g); });
    var rows = [];
    Object.keys(stages).forEach(function(k){
      var s = stages[k];
      rows.push([k === "" ? "(no stage)" : k, "all", bar(s), s.done + " / " + s.total, s.running, Math.max(0, s.total - s.done - s.running - s.erred), s.erred]);
      s.groups.slice(0, 50).forEach(function(g){ rows.push(["", g.name, bar(g), g.done + " / " + g.total, g.running, Math.max(0, g.total - g.done - g.running - g.erred), g.erred]); });
      if (s.groups.length > 50) rows.push(["", "(" + (s.groups.length - 50) + " more groups)", "", "", "", "", ""]);
    });
    var t = p.querySelector("table") || p.appendChild(el("table"));
    t.id = "progress-table";
    table(t, ["stage", "task group", "progress", "done / total", "running", "waiting", "erred"], rows);
  } else if (tab === "workers") {
    table($("workers"), ["worker", "tasks", "erred", "busy", "CPU", "held", "chunks", "device", "peak task memory"],
      S.workers.map(function(w){ return [w.name, w.tasks, w.erred, fmtS(w.busy), fmtS(w.cpu), fmtB(w.bytes), w.chunks, fmtB(w.device), fmtB(w.peakTask)]; }));
  } else if (tab === "transfers") {
    var ps = Object.keys(S.pairs).map(function(k){ return S.pairs[k]; });
    text($("pairs-note"), ps.length === 0 ? "no data moved between workers (yet): transfers are a cluster's peer fetches and GPU workers' device copies" : "");
    table($("pairs"), ["from", "to", "transfers", "bytes", "seconds", "bandwidth"], ps.map(function(p){ return [p.from, p.to, p.count, fmtB(p.bytes), fmtS(p.seconds), p.seconds > 0 ? fmtB(p.bytes / p.seconds) + "/s" : "—"]; }));
  } else if (tab === "stages") {
    var st = {};
    S.groups.forEach(function(g){ if (!g) return; var s = st[g.stage] || (st[g.stage] = { total: 0, done: 0, running: 0, erred: 0, groups: 0 }); s.total += g.total; s.done += g.done; s.running += g.running; s.erred += g.erred; s.groups++; });
    table($("stages"), ["stage", "groups", "progress", "done", "total", "running", "erred"], Object.keys(st).map(function(k){ var s = st[k]; return [k === "" ? "(no stage)" : k, s.groups, bar(s), s.done, s.total, s.running, s.erred]; }));
    drawDag(st);
  } else if (tab === "findings") {
    drawFindings();
  } else if (tab === "profile") {
    if (flameStale()) askFlame();
    drawFlame();
  } else if (tab === "memory") {
    text($("memory-note"), "managed memory and busy share are the server's time bins (" + fmtS(S.binWidth) + " each, the peak per bin); CPU and memory per host sampled every 0.5 s on the dashboard's host");
  }
}

// the stage DAG (the server's Graphviz layout, inert SVG), each stage's node coloured by state
var dagFor = -1, dagSvg = null;
function drawDag(st){
  if (dagFor !== S.stages.length) {
    dagFor = S.stages.length;
    fetch(api("/api/dag")).then(function(r){ return r.json(); }).then(function(d){
      var box = $("dag");
      while (box.firstChild) box.removeChild(box.firstChild);
      if (d.svg === null) { text($("dag-note"), "no stage graph: the run gave none (a pipeline run has one)"); box.hidden = true; dagSvg = null; return; }
      var doc = new DOMParser().parseFromString(d.svg, "image/svg+xml");
      var svg = doc.documentElement;
      if (svg.nodeName.toLowerCase() !== "svg") return;
      box.hidden = false;
      dagSvg = document.importNode(svg, true);
      box.appendChild(dagSvg);
      text($("dag-note"), "stages coloured by state: green done, blue running or partly done, grey waiting, red erred");
      drawDag(st);
    }).catch(function(e){ T.errors.push(String(e)); });
    return;
  }
  if (dagSvg === null) return;
  Array.prototype.forEach.call(dagSvg.querySelectorAll("g"), function(g){
    var t = g.firstElementChild;
    if (t === null || t.nodeName.toLowerCase() !== "title") return;
    var s = st[t.textContent];
    if (s === undefined) return;
    var shape = g.querySelector("polygon, ellipse, path");
    if (shape === null) return;
    var fill = s.erred > 0 ? "#f4a6a6" : s.total > 0 && s.done >= s.total ? "#a8d5a2" : s.running > 0 || s.done > 0 ? "#9ecae9" : "#eeeeee";
    shape.setAttribute("fill", fill);
    g.setAttribute("data-state", s.erred > 0 ? "erred" : s.total > 0 && s.done >= s.total ? "done" : s.running > 0 || s.done > 0 ? "running" : "waiting");
  });
}

${afterRunTabsScript}// ---- wiring ------------------------------------------------------------------------
Array.prototype.forEach.call(document.querySelectorAll("#tabs button"), function(b){
  b.addEventListener("click", function(){
    var t0 = performance.now();
    tab = b.dataset.tab;
    Array.prototype.forEach.call(document.querySelectorAll("#tabs button"), function(x){ x.classList.toggle("on", x === b); });
    Array.prototype.forEach.call(document.querySelectorAll("main > section"), function(s){ s.hidden = s.id !== "tab-" + tab; });
    drawTables();
    T.clicks.push(performance.now() - t0);
    dirty = true; kick();
  });
});
$("follow").addEventListener("click", function(){ follow = true; span = Infinity; dirty = true; kick(); });
$("recent").addEventListener("click", function(){ follow = true; span = 10; dirty = true; kick(); });
window.addEventListener("resize", function(){ dirty = true; kick(); });

function connect(){
  var es = new EventSource(api("/api/events"));
  es.addEventListener("delta", function(ev){
    T.deltas++; T.bytes += ev.data.length;
    var changed = true;
    try { changed = applyDelta(JSON.parse(ev.data)); } catch (e) { T.errors.push(String(e)); }
    T.lost = false;
    // nothing new (a finished run, an idle one): no redraw, the counts only
    if (changed) { dirty = true; kick(); } else drawCounts();
  });
  es.onerror = function(){ T.lost = true; drawCounts(); };
  // back after a disconnection (the server restarted the stream, or dropped a page that
  // stopped reading): what changed meanwhile is in a new snapshot, not in the deltas
  es.onopen = function(){
    if (!T.lost) return;
    fetch(api("/api/snapshot")).then(function(r){ return r.json(); }).then(function(s){ applySnapshot(s); T.lost = false; T.resyncs = (T.resyncs || 0) + 1; dirty = true; kick(); })
      .catch(function(e){ T.errors.push(String(e)); });
  };
  return es;
}
T.ready = fetch(api("/api/snapshot")).then(function(r){ if (!r.ok) throw new Error("snapshot: HTTP " + r.status); return r.json(); }).then(function(s){
  applySnapshot(s);
  connect();
  dirty = true; kick();
  return true;
}).catch(function(e){ T.errors.push(String(e)); text($("status"), String(e)); return false; });
})();
`

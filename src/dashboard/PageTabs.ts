/**
 * The page script's part for the tabs filled after the run (`Page.ts` puts it inside
 * `/app.js`, whose helpers it uses: `S`, `T`, `$`, `text`, `el`, `api`, `tip`,
 * `showTip`, `fmtS`, `dom`, `tab`, `maybeFetch`, `kick`):
 *
 * - **Profile**: the statistical profiler's flame graph of a window (typed in, or the
 *   task stream's window, or the whole run), by function or stage, from `/api/flame`:
 *   the report's chart and code (`report/FlameGraph.ts`: `flameSpec` from the server,
 *   `flameCode` here);
 * - **Findings**: `tessera diagnose`'s findings from `/api/findings`; a finding's
 *   evidence, clicked, zooms the task stream to its range (`window.tessera.zoomTo`).
 *
 * Both are asked for once the run is over (again every second while the server says
 * "pending"); every string is shown with `textContent`.
 *
 * @since 0.1.0
 */
import { flameCode, flameRowHeight, flameWidth } from "../report/FlameGraph.ts"

/**
 * The ES5 source (functions `askFlame`, `drawFlame`, `askFindings`, `drawFindings`,
 * `zoomTo` and their controls' wiring).
 *
 * @since 0.1.0
 * @category rendering
 */
export const afterRunTabsScript = `// ---- the flame graph of a window (the report's chart and code: report/FlameGraph.ts) ---------
${flameCode}
var flameP = null, flameAsked = false, flameView = null, flameDom = null, flameKey = "";
function askFlame(){
  if (flameAsked) return;
  flameAsked = true;
  fetch(api("/api/flame")).then(function(r){ return r.json(); }).then(function(p){
    flameP = T.flameData = p;
    if (p.status === "pending") setTimeout(function(){ flameAsked = false; askFlame(); }, 1000);
    if (p.status === "ready") {
      var pick = $("flame-pick");
      p.payload.fns.forEach(function(f, i){ var o = el("option", "", "function: " + f); o.value = "f" + i; pick.appendChild(o); });
      p.payload.stages.forEach(function(s, i){ if (s === "") return; var o = el("option", "", "stage: " + s); o.value = "s" + i; pick.appendChild(o); });
      flameView = new vega.View(vega.parse(p.spec), { renderer: "canvas", container: "#flame", hover: true });
      flameView.tooltip(function(h, e, i, v){ if (v == null || typeof v !== "object") { tip.style.display = "none"; return; } showTip(e, Object.keys(v).map(function(k){ return [k, v[k]]; })); });
    }
    flameKey = ""; drawFlame();
  }).catch(function(e){ flameAsked = false; T.errors.push(String(e)); });
}
function setFlameWindow(d){
  flameDom = d;
  $("flame-from").value = d === null ? "" : String(+d[0].toFixed(6));
  $("flame-to").value = d === null ? "" : String(+d[1].toFixed(6));
  drawFlame();
}
function drawFlame(){
  var note = $("flame-note");
  if (flameP === null || flameP.status === "none" && !S.over) { text(note, S.over ? "asking for the samples…" : "the flame graph comes when the run is over (with --profile: its samples are read from the StatisticalProfiler's database)"); return; }
  if (flameP.status === "none") { text(note, flameP.reason); return; }
  if (flameP.status === "pending") { text(note, "reading the samples (" + flameP.source + ")…"); return; }
  if (flameP.status === "error") { text(note, "the samples could not be read: " + flameP.message + " (" + flameP.source + ")"); return; }
  var P = flameP.payload, want = $("flame-pick").value, key = want + "/" + JSON.stringify(flameDom);
  if (key === flameKey) return;
  flameKey = key;
  text(note, "where the threads' time went, from V8's sampling profiler (" + flameP.samples.toLocaleString("en-US") + " samples of " + flameP.source + "): width = the thread time the samples stand for; first level: the task's function (idle: a worker between tasks; driver: the main thread)" +
    (P.samples.c ? "; samples binned by " + fmtS(P.bin) + ": a bin counts when its middle is in the window" : ""));
  var root = flameTree(P, want, flameDom), l = flameBoxes(root, ${flameWidth});
  text($("flame-window"), (flameDom ? "samples from " + flameDom[0].toFixed(3) + " s to " + flameDom[1].toFixed(3) + " s" : "whole run") + ": " + root.n.toLocaleString("en-US") + " samples, " + root.s.toFixed(3) + " s of thread time");
  flameView.height((l.depth + 1) * ${flameRowHeight});
  flameView.change("boxes", vega.changeset().remove(vega.truthy).insert(l.boxes));
  T.flame = { samples: root.n, seconds: root.s, boxes: l.boxes.length, window: flameDom, pick: want };
  flameView.runAsync().catch(function(e){ T.errors.push(String(e)); });
}
function flameInputs(){
  var a = parseFloat($("flame-from").value), b = parseFloat($("flame-to").value);
  flameDom = isFinite(a) || isFinite(b) ? [isFinite(a) ? a : 0, isFinite(b) ? b : Math.max(S.t, 0)] : null;
  drawFlame();
}
$("flame-pick").addEventListener("change", drawFlame);
$("flame-from").addEventListener("change", flameInputs);
$("flame-to").addEventListener("change", flameInputs);
$("flame-stream").addEventListener("click", function(){ setFlameWindow(dom.slice()); });
$("flame-all").addEventListener("click", function(){ setFlameWindow(null); });
T.flameWindow = setFlameWindow;

// ---- findings (tessera diagnose's, once the run is over) ---------------------------------
var findings = null, findingsAsked = false;
function fmtSaving(f){ return "~" + fmtS(f.saving.seconds) + " (" + (100 * f.saving.share).toFixed(f.saving.share >= 0.1 ? 0 : 1) + "% of the wall time)"; }
function zoomTo(a, b){
  follow = false; dom = [a, b];
  var btn = document.querySelector("#tabs button[data-tab=status]"); if (btn && tab !== "status") btn.click();
  maybeFetch(); dirty = true; kick();
}
T.zoomTo = zoomTo;
function askFindings(){
  if (findingsAsked) return;
  findingsAsked = true;
  fetch(api("/api/findings")).then(function(r){ return r.json(); }).then(function(p){
    findings = T.findings = p;
    drawFindings();
    // a diagnosis under way: asked again in a second
    if (p.status === "pending") setTimeout(function(){ findingsAsked = false; askFindings(); }, 1000);
  }).catch(function(e){ findingsAsked = false; T.errors.push(String(e)); });
}
function drawFindings(){
  var note = $("findings-note"), sum = $("findings-summary"), ol = $("findings");
  while (ol.firstChild) ol.removeChild(ol.firstChild);
  text(sum, "");
  if (!S.over && (findings === null || findings.status === "none")) { text(note, "tessera diagnose's findings come when the run is over."); return; }
  if (findings === null) { text(note, "asking for the findings…"); return; }
  if (findings.status === "none") { text(note, findings.reason); return; }
  if (findings.status === "pending") { text(note, "diagnosing (" + findings.source + ")…"); return; }
  if (findings.status === "error") { text(note, "the diagnosis failed: " + findings.message + " (" + findings.source + ")"); return; }
  text(note, "from " + findings.source + "; thresholds and the what-if behind each saving: docs/diagnosis.md");
  text(sum, findings.headline);
  findings.findings.forEach(function(f, i){
    var li = el("li", "finding " + f.severity); li.dataset.rule = f.rule;
    var head = el("div");
    head.appendChild(el("span", "sev " + f.severity, f.severity)); head.appendChild(document.createTextNode(" "));
    head.appendChild(el("code", "rule", f.rule)); head.appendChild(document.createTextNode(" " + f.message));
    li.appendChild(head);
    var e = f.evidence, where = [];
    if (e.stage !== undefined) where.push("stage " + e.stage);
    if (e.function !== undefined && e.function !== e.stage) where.push("function " + e.function);
    if (e.worker !== undefined) where.push("worker " + e.worker);
    if (e.keys.length > 0) where.push("keys " + e.keys.slice(0, 3).join(", ") + (e.keys.length > 3 ? " and " + (e.keys.length - 3) + (e.keys.length === 20 ? "+" : "") + " more" : ""));
    var ev = el("div", "ev", "evidence: " + where.join(" · ") + (where.length > 0 ? " · " : ""));
    var z = el("button", "zoom", f.from.toFixed(3) + "–" + f.to.toFixed(3) + " s");
    z.title = "zoom the task stream to it"; z.dataset.index = String(i);
    z.addEventListener("click", function(){ zoomTo(f.from, f.to); });
    ev.appendChild(z);
    li.appendChild(ev);
    li.appendChild(el("div", "", "fix: " + f.fix));
    var sv = el("div", "", "saving: " + fmtSaving(f) + " ");
    sv.appendChild(el("span", "note", "· assumes " + f.assumptions));
    li.appendChild(sv);
    ol.appendChild(li);
  });
}

`

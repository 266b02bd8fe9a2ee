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
 * The Profile tab asks every second while it is open during a run (the live samples,
 * when the run samples), then once the run is over; Findings once the run is over (again
 * every second while the server says "pending"); every string is shown with `textContent`.
 *
 * @since 0.1.0
 */
import { flameCode, flameRowHeight, flameWidth } from "../report/FlameGraph.ts"

/**
 * The ES5 source (functions `askFlame`, `drawFlame`, `askFindings`, `drawFindings`,
 * `zoomTo` and their controls' wiring).
 *
 * @since 0.1.0
 * @category formatting
 */
export const afterRunTabsScript = `// ---- the flame graph of a window (the report's chart and code: report/FlameGraph.ts) ---------
${flameCode}
var flameP = null, flameAsked = false, flameView = null, flameDom = null, flameKey = "", flameAt = 0, flameOver = false, flameFns = "";
// the server's answer for the tab: during a run (the dashboard sampling) its live samples of
// the window and function shown, asked again every second while the tab is open and when they
// change; after the run the profiler's database's (or the live samples' final state)
function askFlame(){
  if (flameAsked) return;
  flameAsked = true;
  var q = [], want = $("flame-pick").value;
  if (flameP && flameP.live) {
    if (flameDom) q.push("from=" + flameDom[0], "to=" + flameDom[1]);
    if (want.charAt(0) === "f") q.push("fn=" + encodeURIComponent(flameP.payload.fns[+want.slice(1)]));
    if (want.charAt(0) === "s") q.push("stage=" + encodeURIComponent(flameP.payload.stages[+want.slice(1)]));
  }
  var over = S.over, asked = want + "/" + JSON.stringify(flameDom);
  fetch(api("/api/flame" + (q.length ? "?" + q.join("&") : ""))).then(function(r){ return r.json(); }).then(function(p){
    flameAsked = false; flameAt = Date.now(); flameOver = over;
    var was = flameP;
    flameP = T.flameData = p;
    if (p.status === "pending") setTimeout(askFlame, 1000);
    if (p.status === "ready") {
      var pick = $("flame-pick"), fresh = !was || was.status !== "ready" || !!was.live !== !!p.live, sig = p.payload.fns.join("\u0000") + "|" + p.payload.stages.join("\u0000");
      if (fresh || sig !== flameFns) {
        flameFns = sig;
        var keep = fresh ? "all" : pick.value;
        while (pick.options.length > 1) pick.remove(1);
        p.payload.fns.forEach(function(f, i){ var o = el("option", "", "function: " + f); o.value = "f" + i; pick.appendChild(o); });
        p.payload.stages.forEach(function(s, i){ if (s === "") return; var o = el("option", "", "stage: " + s); o.value = "s" + i; pick.appendChild(o); });
        pick.value = keep;
      }
      if (!flameView) {
        flameView = new vega.View(vega.parse(p.spec), { renderer: "canvas", container: "#flame", hover: true });
        flameView.tooltip(function(h, e, i, v){ if (v == null || typeof v !== "object") { tip.style.display = "none"; return; } showTip(e, Object.keys(v).map(function(k){ return [k, v[k]]; })); });
      }
    }
    flameKey = ""; drawFlame();
    // the window or function changed while this was asked: ask for the new ones
    if (p.live && asked !== $("flame-pick").value + "/" + JSON.stringify(flameDom)) askFlame();
  }).catch(function(e){ flameAsked = false; T.errors.push(String(e)); });
}
// whether the tab's answer is to be asked (again): none yet; a live one (or none) a second old, or asked
// before the run was over (the profiler's database may follow); a window or function changed
function flameStale(){
  if (flameAsked) return false;
  if (flameP === null) return true;
  if ((flameP.live || flameP.status === "none") && S.over && !flameOver) return true;
  return (!!flameP.live || flameP.status === "none") && !S.over && Date.now() - flameAt > 1000;
}
T.flameStale = flameStale;
function setFlameWindow(d){
  flameDom = d;
  $("flame-from").value = d === null ? "" : String(+d[0].toFixed(6));
  $("flame-to").value = d === null ? "" : String(+d[1].toFixed(6));
  drawFlame();
}
function drawFlame(){
  var note = $("flame-note");
  if (flameP === null || flameP.status === "none" && !S.over) { text(note, S.over ? "asking for the samples…" : "the flame graph comes when the run is over (with --profile: its samples are read from the StatisticalProfiler's database); live during the run with the dashboard's own sampling (--dashboard-sample)"); return; }
  if (flameP.status === "none") { text(note, flameP.reason); return; }
  if (flameP.status === "pending") { text(note, "reading the samples (" + flameP.source + ")…"); return; }
  if (flameP.status === "error") { text(note, "the samples could not be read: " + flameP.message + " (" + flameP.source + ")"); return; }
  var P = flameP.payload, want = $("flame-pick").value, key = want + "/" + JSON.stringify(flameDom);
  if (key === flameKey) return;
  // a live answer holds only the window and function it was asked for: ask for the new ones
  if (flameP.live && flameKey !== "") askFlame();
  flameKey = key;
  if (flameP.live) text(note, "live: where the worker threads' time went so far, from V8's sampling profiler (" + flameP.samples.toLocaleString("en-US") + " samples, " + fmtS(flameP.seconds) + " of thread time" + (flameP.over ? ", the run is over" : ", handed over every " + fmtS(flameP.flushSeconds) + ", between a worker's batches of tasks") + "): width = the thread time the samples stand for; first level: the task's function (idle: a worker between tasks); samples binned by " + fmtS(P.bin) + " (the bins merge as the run grows): a bin counts when its middle is in the window" + (flameP.cutSamples > 0 ? "; " + flameP.cutSamples.toLocaleString("en-US") + " samples past the call tree's bound stand on a shorter stack" : "") + "; a stage: its kernels' samples (a kernel of several stages is their own 'a | b' entry)");
  else text(note, "where the threads' time went, from V8's sampling profiler (" + flameP.samples.toLocaleString("en-US") + " samples of " + flameP.source + "): width = the thread time the samples stand for; first level: the task's function (idle: a worker between tasks; driver: the main thread)" +
    (P.samples.c ? "; samples binned by " + fmtS(P.bin) + ": a bin counts when its middle is in the window" : ""));
  var root = flameTree(P, want, flameDom), l = flameBoxes(root, ${flameWidth});
  text($("flame-window"), (flameDom ? "samples from " + flameDom[0].toFixed(3) + " s to " + flameDom[1].toFixed(3) + " s" : "whole run") + ": " + root.n.toLocaleString("en-US") + " samples, " + root.s.toFixed(3) + " s of thread time");
  flameView.height((l.depth + 1) * ${flameRowHeight});
  flameView.change("boxes", vega.changeset().remove(vega.truthy).insert(l.boxes));
  T.flame = { samples: root.n, seconds: root.s, boxes: l.boxes.length, window: flameDom, pick: want, live: !!flameP.live };
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

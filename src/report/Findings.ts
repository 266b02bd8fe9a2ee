/**
 * The report's first section: the diagnosis's findings (src/analysis/Diagnose.ts), by
 * estimated saving, each with its severity, rule id, sentence, fix, saving and
 * assumptions, and its evidence: the stage, function, worker and keys, and a time range
 * that, clicked, zooms the task stream to it (`window.tessera.zoomTo`, PageScript.ts).
 * A clean run says so. Every string from the trace is escaped: data, never markup.
 *
 * @since 0.1.0
 */
import type { Diagnosis, Finding } from "../analysis/Diagnose.ts"
import { esc } from "./TableHtml.ts"

const seconds = (s: number): string =>
  s >= 100 ? `${s.toFixed(0)} s` : s >= 1 ? `${s.toFixed(2)} s` : s >= 0.001 ? `${(s * 1000).toPrecision(3)} ms` : `${(s * 1e6).toPrecision(3)} µs`

const colour = { high: "#b00020", medium: "#a15c00", low: "#52606d" } as const

/**
 * The page's time range (seconds from the report's `t0`) of a finding's evidence, which
 * is in seconds from the diagnosis's run start `runStart` (epoch seconds).
 *
 * @since 0.1.0
 * @category formatting
 */
export const pageRange = (f: Finding, runStart: number, t0: number): readonly [number, number] => {
  const a = runStart + f.evidence.start - t0
  const b = runStart + f.evidence.end - t0
  // a range too narrow to see: widened to a millisecond around it
  return b - a >= 1e-3 ? [a, b] : [(a + b) / 2 - 5e-4, (a + b) / 2 + 5e-4]
}

const item = (f: Finding, i: number, runStart: number, t0: number): string => {
  const e = f.evidence
  const [a, b] = pageRange(f, runStart, t0)
  const where = [
    e.stage !== undefined ? `stage <code>${esc(e.stage)}</code>` : "",
    e.function !== undefined && e.function !== e.stage ? `function <code>${esc(e.function)}</code>` : "",
    e.worker !== undefined ? `worker <code>${esc(e.worker)}</code>` : "",
    e.keys.length > 0 ? `keys <code>${e.keys.slice(0, 3).map(esc).join("</code>, <code>")}</code>${e.keys.length > 3 ? ` and ${e.keys.length - 3}${e.keys.length === 20 ? "+" : ""} more` : ""}` : ""
  ].filter((x) => x !== "").join(" · ")
  return `<li class="finding ${f.severity}" data-rule="${esc(f.rule)}">
<div><span class="sev" style="background:${colour[f.severity]}">${f.severity}</span> <code class="rule">${esc(f.rule)}</code> ${esc(f.message)}</div>
<div class="ev">evidence: ${where}${where === "" ? "" : " · "}<a href="#stream" class="finding-zoom" data-index="${i}" data-from="${a}" data-to="${b}" title="zoom the task stream to it">${a.toFixed(3)}–${b.toFixed(3)} s</a></div>
<div>fix: ${esc(f.fix)}</div>
<div>saving: ~${seconds(f.saving.seconds)} (${(100 * f.saving.share).toFixed(f.saving.share >= 0.1 ? 0 : 1)}% of the wall time) <span class="note">· assumes ${esc(f.assumptions)}</span></div>
</li>`
}

/**
 * The section's HTML and its script (the evidence links' clicks).
 *
 * @since 0.1.0
 * @category formatting
 */
export const findingsSection = (d: Diagnosis, t0: number): { readonly html: string; readonly script: string } => {
  const high = d.findings.filter((f) => f.severity === "high").length
  const head = d.findings.length === 0
    ? "No findings: nothing in this run stands out."
    : d.clean
    ? `A clean run: no finding of high severity (${d.findings.length} of lower severity).`
    : `${high} finding${high === 1 ? "" : "s"} of high severity, ${d.findings.length} in all, by estimated saving.`
  const html = `<section id="findings"><h2>Findings</h2>
<style>#findings ol{padding-left:22px;margin:6px 0} .finding{margin:0 0 10px;background:#fff;border:1px solid #e4e4e4;border-radius:4px;padding:6px 10px;font-size:13px}
.finding .sev{color:#fff;border-radius:3px;padding:0 6px;font-size:11px;text-transform:uppercase} .finding .ev{color:#444} .finding-zoom{color:#2a5db0}</style>
<p class="summary">${esc(head)}</p>
${d.findings.length === 0 ? "" : `<ol>${d.findings.map((f, i) => item(f, i, d.runStart, t0)).join("\n")}</ol>`}
<p class="note">tessera diagnose -d … prints these; thresholds and the what-ifs behind each saving: docs/diagnosis.md</p></section>`
  const script = `(function(){
document.querySelectorAll("a.finding-zoom").forEach(function(a){
  a.addEventListener("click", function(ev){
    ev.preventDefault();
    var t = window.tessera;
    if (t && t.zoomTo) t.zoomTo(+a.dataset.from, +a.dataset.to);
    var s = document.getElementById("stream"); if (s) s.scrollIntoView();
  });
});
})();`
  return { html, script }
}

/**
 * The page with the findings' section first, before the charts: after the header (and
 * after a failed run's failure section, which stays first), with a link first in the
 * header's navigation (the page is Html.ts's; its header ends with `</nav></header>`).
 * A page without that header gets the section at its start.
 *
 * @since 0.1.0
 * @category formatting
 */
export const withFindingsFirst = (page: string, sectionHtml: string): string => {
  const end = "</nav></header>"
  const at = page.indexOf(end)
  if (at < 0) return page.replace("<main>", `<main>${sectionHtml}`)
  const nav = page.lastIndexOf("<nav>", at)
  const head = nav < 0 ? page.slice(0, at) : `${page.slice(0, nav)}<nav><a href="#findings">Findings</a> · ${page.slice(nav + 5, at)}`
  const rest = page.slice(at + end.length)
  // a failed run's failure section stays first: the findings follow it
  const failure = rest.indexOf('<section id="failure">')
  const close = failure < 0 ? -1 : rest.indexOf("</section>", failure)
  if (close >= 0) return `${head}${end}${rest.slice(0, close + 10)}\n${sectionHtml}${rest.slice(close + 10)}`
  return `${head}${end}\n${sectionHtml}${rest}`
}

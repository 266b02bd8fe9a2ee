/**
 * The report's comparison section (`tessera report -d NEW… --baseline OLD…`, issue 36):
 * what `tessera diff` prints (analysis/Diff.ts), drawn: the groups' table (the pipeline,
 * stages and functions, sorted by their effect on the wall time, significant changes
 * marked), the critical path's wall-time change cut into its parts and stage by stage
 * (bars that add up to the change of the wall time), memory and transfers, and a differential flame graph of
 * the stack samples (analysis/FlameDiff.ts): box widths are NEW's share of sampled time,
 * colours the change of that share from OLD (red: grew, blue: shrank). Every string from a
 * trace is escaped: data, never markup.
 *
 * @since 0.1.0
 */
import { type DiffResult, groupName, type RunMeasures, verdictLine } from "../analysis/Diff.ts"
import type { FlameDiffNode } from "../analysis/FlameDiff.ts"
import { esc, fmtBytes, fmtSeconds } from "./TableHtml.ts"

const ratio = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : "–")
const pv = (p: number) => (!Number.isFinite(p) ? "–" : p < 1e-4 ? p.toExponential(1) : p.toFixed(4))
const signedSeconds = (x: number) => (!Number.isFinite(x) ? "–" : `${x >= 0 ? "+" : "−"}${fmtSeconds(Math.abs(x))}`)

/** The groups' table. */
const groupsTable = (d: DiffResult): string => {
  const rows = d.groups.map((g) => {
    const cls = g.verdict === "slower" ? "slower" : g.verdict === "faster" ? "faster" : g.verdict === "slower?" ? "hint-slower" : g.verdict === "faster?" ? "hint-faster" : ""
    return `<tr class="${cls}"><td>${esc(groupName(g))}</td><td>${esc(g.measure)}</td><td class="num">${fmtSeconds(g.oldMedian)}</td>` +
      `<td class="num">${fmtSeconds(g.newMedian)}</td><td class="num">${ratio(g.ratio)}</td>` +
      `<td class="num">${Number.isFinite(g.lo) && Number.isFinite(g.hi) ? `${ratio(g.lo)}–${ratio(g.hi)}` : "–"}</td>` +
      `<td class="num">${pv(g.p)}</td><td class="num">${pv(g.q)}</td><td class="num">${signedSeconds(g.wallEffect)}</td><td>${esc(g.verdict)}</td></tr>`
  })
  return `<table class="diff"><thead><tr><th>Group</th><th>Measure</th><th>OLD median</th><th>NEW median</th><th>NEW/OLD</th><th>95% interval</th>` +
    `<th>p</th><th>q (BH)</th><th>Wall effect</th><th>Verdict</th></tr></thead><tbody>${rows.join("")}</tbody></table>`
}

/**
 * Rows of OLD, NEW and their change with a bar per row (to one scale); `label` gives a
 * row's first cells, `total` marks the sum row.
 */
const changeTable = <R extends { readonly old: number; readonly new: number; readonly change: number }>(
  heads: ReadonlyArray<string>,
  rows: ReadonlyArray<R>,
  label: (r: R) => ReadonlyArray<string>,
  total: (r: R) => boolean
): string => {
  const max = Math.max(...rows.map((r) => (Number.isFinite(r.change) ? Math.abs(r.change) : 0)), 1e-12)
  const body = rows.map((r) => {
    const w = Number.isFinite(r.change) ? (Math.abs(r.change) / max) * 100 : 0
    const bar = `<span class="bar ${r.change >= 0 ? "up" : "down"}" style="width:${w.toFixed(1)}px"></span>`
    return `<tr${total(r) ? ' class="total"' : ""}>${label(r).map((c) => `<td>${esc(c)}</td>`).join("")}<td class="num">${fmtSeconds(r.old)}</td><td class="num">${fmtSeconds(r.new)}</td>` +
      `<td class="num">${signedSeconds(r.change)}</td><td>${bar}</td></tr>`
  })
  return `<table class="diff"><thead><tr>${heads.map((h) => `<th>${esc(h)}</th>`).join("")}<th>OLD</th><th>NEW</th><th>Change</th><th></th></tr></thead><tbody>${body.join("")}</tbody></table>`
}

/** The parts of the wall-time change (tasks, transfers, driver, latency, other, wall). */
const partsTable = (d: DiffResult): string =>
  d.parts.length === 0
    ? "<p>No critical path on one side (saved bench results without one): no parts.</p>"
    : changeTable(["Part"], d.parts, (p) => [p.part], (p) => p.part === "wall")

/** The critical path stage by stage, in path order (its rows' changes add up to the wall's). */
const pathTable = (d: DiffResult): string =>
  d.path.length === 0
    ? "<p>No critical path by stage on one side (saved bench results from before it was recorded).</p>"
    : changeTable(["Step", "Stage", "Part"], d.path, (r) => [r.step, r.stage, r.part], (r) => r.step === "wall")

const resourcesTable = (d: DiffResult): string => {
  const show = (what: string, x: number) => (!Number.isFinite(x) ? "–" : /bytes/.test(what) ? fmtBytes(x) : /seconds/.test(what) ? fmtSeconds(x) : String(Math.round(x)))
  const rows = d.resources.map((r) =>
    `<tr><td>${esc(r.what)}</td><td class="num">${show(r.what, r.old)}</td><td class="num">${show(r.what, r.new)}</td><td class="num">${ratio(r.ratio)}</td></tr>`
  )
  return `<table class="diff"><thead><tr><th>Measure</th><th>OLD</th><th>NEW</th><th>NEW/OLD</th></tr></thead><tbody>${rows.join("")}</tbody></table>`
}

/**
 * The differential flame graph as SVG: an icicle (callers above callees), widths NEW's
 * share of sampled time, colours the change of share from OLD (red grew, blue shrank,
 * white unchanged), boxes narrower than a pixel left out. Each box's tooltip gives both
 * shares.
 *
 * @since 0.1.0
 * @category formatting
 */
export const flameDiffSvg = (root: FlameDiffNode, width = 1000): string => {
  const rowH = 16
  const boxes: Array<string> = []
  let maxDelta = 1e-9
  const scan = (n: FlameDiffNode) => {
    maxDelta = Math.max(maxDelta, Math.abs(n.newShare - n.oldShare))
    n.children.forEach(scan)
  }
  scan(root)
  let depthMax = 0
  const draw = (n: FlameDiffNode, x: number, depth: number) => {
    const w = (n.newShare / Math.max(root.newShare, 1e-12)) * width
    if (w < 1) return
    depthMax = Math.max(depthMax, depth)
    const delta = n.newShare - n.oldShare
    const a = Math.min(1, Math.abs(delta) / maxDelta)
    const c = Math.round(255 * (1 - a))
    const fill = delta >= 0 ? `rgb(255,${c},${c})` : `rgb(${c},${c},255)`
    const label = w > 40 ? `<text x="${(x + 3).toFixed(1)}" y="${(depth * rowH + 12).toFixed(1)}" font-size="10">${esc(n.name.slice(0, Math.floor(w / 6)))}</text>` : ""
    const tip = `${n.name}${n.location === "" ? "" : ` (${n.location})`}: ${(n.oldShare * 100).toFixed(2)}% → ${(n.newShare * 100).toFixed(2)}% of sampled time`
    boxes.push(
      `<g><title>${esc(tip)}</title><rect x="${x.toFixed(1)}" y="${depth * rowH}" width="${w.toFixed(1)}" height="${rowH - 1}" fill="${fill}" stroke="#999" stroke-width="0.3"/>${label}</g>`
    )
    let cx = x
    for (const ch of n.children) {
      draw(ch, cx, depth + 1)
      cx += (ch.newShare / Math.max(root.newShare, 1e-12)) * width
    }
  }
  draw(root, 0, 0)
  const h = (depthMax + 1) * rowH
  return `<svg xmlns="http://www.w3.org/2000/svg" class="flamediff" width="${width}" height="${h}" viewBox="0 0 ${width} ${h}">${boxes.join("")}</svg>`
}

/**
 * The section, from the comparison and (when both sides have stack samples) the merged
 * call tree.
 *
 * @since 0.1.0
 * @category formatting
 */
export const baselineHtml = (d: DiffResult, flame: FlameDiffNode | undefined): string => {
  const verdict = esc(verdictLine(d)) + "."
  const effect = (d.mode === "runs" ? d.minEffect : Math.max(d.minEffect, d.tasksMinEffect)) * 100
  return `<section id="baseline"><h2>Against the baseline</h2>
<style>
#baseline table.diff{border-collapse:collapse;font-size:12px;margin:6px 0 14px}
#baseline table.diff td,#baseline table.diff th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;position:static}
#baseline td.num{text-align:right;font-variant-numeric:tabular-nums}
#baseline tr.slower td{background:#fde2e2}
#baseline tr.faster td{background:#e2ecfd}
#baseline tr.hint-slower td{background:#fdf3f3}
#baseline tr.hint-faster td{background:#f3f6fd}
#baseline tr.total td{font-weight:bold}
#baseline .bar{display:inline-block;height:10px}
#baseline .bar.up{background:#d9534f}
#baseline .bar.down{background:#428bca}
</style>
<p>NEW (${d.newRuns} run${d.newRuns === 1 ? "" : "s"}) against the baseline OLD (${d.oldRuns} run${d.oldRuns === 1 ? "" : "s"})${d.pipeline === undefined ? "" : `, pipeline ${esc(d.pipeline)}`}:
tested over ${d.mode === "runs" ? "runs" : "task durations"}${d.measure === "cpu" ? " (thread CPU time)" : ""}; a change is called where the Benjamini–Hochberg q-value is at most ${(d.alpha * 100).toFixed(0)}%,
the 95% interval of NEW/OLD excludes 1 and the ratio is beyond ${effect.toFixed(1)}% (docs/bench.md). <strong>${verdict}</strong></p>
${d.warnings.map((w) => `<p class="note">${esc(w)}</p>`).join("\n")}
<h3>Pipeline, stages and functions</h3>
${groupsTable(d)}
<h3>Wall time of the critical path, explained</h3>
<p>Means over runs; the parts' changes add up to the change of the wall time.</p>
${partsTable(d)}
<h3>The critical path of OLD against NEW, stage by stage</h3>
<p>In path order: each stage's tasks, transfers and hand-overs (the scheduling latency into its tasks) on the critical path, then the driver and the time off the path; means over runs (a stage off one run's path counts 0 there); the rows' changes add up to the change of the wall time.</p>
${pathTable(d)}
<h3>Memory and transfers</h3>
${resourcesTable(d)}
<h3>Differential flame graph</h3>
${flame === undefined
    ? "<p>No stack samples on one side (profile without --no-sample to have them).</p>"
    : `<p>Widths: NEW's share of sampled time; colour: the change of that share from OLD (red grew, blue shrank). Frames only OLD sampled are not drawn.</p><div style="overflow-x:auto">${flameDiffSvg(flame)}</div>`}
</section>`
}

/**
 * Loads the baseline and NEW, compares them and renders the section. Rejects with
 * `DiffRefused` (sides that cannot be compared) or a load error.
 *
 * @since 0.1.0
 * @category formatting
 */
export const baselineSectionPromise = async (
  newFiles: ReadonlyArray<string>,
  oldFiles: ReadonlyArray<string>
): Promise<{ readonly html: string; readonly script: string; readonly diff: DiffResult }> => {
  const Diff = await import("../analysis/Diff.ts")
  const old = await Diff.loadSidePromise(oldFiles)
  const neu = await Diff.loadSidePromise(newFiles)
  const d = Diff.compare(old, neu)
  const flame = await flameOf(old, neu)
  return { html: baselineHtml(d, flame), script: "", diff: d }
}

/** Both sides' samples merged, when both have any. */
const flameOf = async (old: ReadonlyArray<RunMeasures>, neu: ReadonlyArray<RunMeasures>): Promise<FlameDiffNode | undefined> => {
  const files = (rs: ReadonlyArray<RunMeasures>) => rs.flatMap((r) => r.sampleFiles ?? [])
  const a = files(old)
  const b = files(neu)
  if (a.length === 0 || b.length === 0) return undefined
  const { loadProfilePromise } = await import("../analysis/Profile.ts")
  const { flameDiff } = await import("../analysis/FlameDiff.ts")
  const [pa, pb] = [await loadProfilePromise(a), await loadProfilePromise(b)]
  if (pa.samples.time.length === 0 || pb.samples.time.length === 0) return undefined
  return flameDiff(pa, pb)
}

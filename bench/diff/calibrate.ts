/**
 * Calibration of `tessera diff` (issue 36; BENCHMARKS.md "issue 36"): runs, not timed tests.
 *
 *   node bench/diff/calibrate.ts [--pairs 20] [--demo-runs 1] [--runs 10] [--comparisons 10] [--workers 2] [--only demo|slowable] [--out FILE.json]
 *   (CALIBRATE_FACTORS=1,1.05,1.1,1.2: the slowdowns of part 2)
 *
 * 1. `--pairs` pairs of demo runs (DASF tutorial 5, in this process on one warm pool),
 *    `--demo-runs` runs a side (default 1), compared with the defaults: how many
 *    comparisons flag anything (one run a side: the indicative `slower?`/`faster?` too).
 * 2. The test pipeline (test/bench/fixtures/slowable.ts) with its `sharpen` function
 *    slowed by 0% (runs of the same code), 5%, 10% and 20%: `--comparisons` comparisons of
 *    `--runs` runs a side each (interleaved), on task time and on CPU time: how often
 *    `sharpen` is flagged slower, and how often anything else is flagged.
 * Prints a summary and writes every comparison's counts to `--out` (default
 * /tmp/tessera-diff-calibration.json).
 */
import { writeFileSync } from "node:fs"
import * as Diff from "../../src/analysis/Diff.ts"
import * as Tutorial5 from "../../examples/tutorial5/Tutorial5.ts"
import slowable from "../../test/bench/fixtures/slowable.ts"
import { measuredRuns, pool } from "./measuredRuns.ts"

const arg = (name: string, d: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? d : Number(process.argv[i + 1])
}
const out = (() => {
  const i = process.argv.indexOf("--out")
  return i < 0 ? "/tmp/tessera-diff-calibration.json" : process.argv[i + 1]!
})()
const pairs = arg("pairs", 20)
const demoRuns = arg("demo-runs", 1)
const runs = arg("runs", 10)
const comparisons = arg("comparisons", 10)
const factors = (process.env.CALIBRATE_FACTORS ?? "1,1.05,1.1,1.2").split(",").map(Number)
const rt = pool(arg("workers", 2))
const started = Date.now()
const flaggedOf = (d: Diff.DiffResult) => d.groups.filter((g) => g.verdict !== "same" && g.verdict !== "untested").map((g) => `${Diff.groupName(g)}: ${g.verdict}`)
const results: Record<string, unknown> = { pairs, runs, comparisons, factors }

// 1. same-code demo pairs, one run a side
const demo = () => {
  const t = Tutorial5.make({ log: () => {} })
  return { program: Tutorial5.run({ log: () => {} }, t), pipeline: t.pipeline }
}
const only = (() => {
  const i = process.argv.indexOf("--only")
  return i < 0 ? "" : process.argv[i + 1]!
})()
const demoFlags: Array<Array<string>> = []
// per pair, the tested groups' ratios and q-values: the minimum effect that keeps same-code pairs quiet
const demoTested: Array<Array<{ readonly group: string; readonly ratio: number; readonly lo: number; readonly hi: number; readonly q: number }>> = []
for (let k = 0; k < (only === "slowable" ? 0 : pairs); k++) {
  const [a, b] = await measuredRuns(rt, [{ build: demo }, { build: demo }], demoRuns, k === 0 ? 1 : 0)
  const d = Diff.compare(a!, b!)
  demoFlags.push(flaggedOf(d))
  demoTested.push(d.groups.filter((g) => Number.isFinite(g.q)).map((g) => ({ group: Diff.groupName(g), ratio: g.ratio, lo: g.lo, hi: g.hi, q: g.q })))
  console.error(`demo pair ${k + 1}/${pairs}: ${demoFlags.at(-1)!.length} flagged ${demoFlags.at(-1)!.join("; ")}`)
}
results.demoPairs = demoFlags
results.demoTested = demoTested
if (only !== "slowable") {
  console.log(`demo, same code, ${demoRuns} run(s) a side: ${demoFlags.filter((f) => f.length > 0).length} of ${pairs} comparisons flag anything (${demoFlags.flat().length} groups in all)`)
  // the smallest minimum effect under which at most 1 pair in 20 would flag anything (q ≤ 5% and the interval excluding 1)
  const worst = demoTested.map((gs) => Math.max(0, ...gs.filter((g) => g.q <= 0.05 && (g.lo > 1 || g.hi < 1)).map((g) => Math.abs(g.ratio - 1)))).sort((x, y) => y - x)
  console.log(`demo pairs' largest called effect per pair, descending: ${worst.map((w) => w.toFixed(3)).join(" ")}`)
}

// 2. the test pipeline, sharpen slowed by each factor
const build = () => {
  const p = slowable()
  return { program: p.run(), pipeline: p }
}
const slow: Array<unknown> = []
for (const f of only === "demo" ? [] : factors) {
  const tally = { time: { found: 0, other: 0, ratios: [] as Array<number> }, cpu: { found: 0, other: 0, ratios: [] as Array<number> } }
  for (let k = 0; k < comparisons; k++) {
    const [a, b] = await measuredRuns(rt, [{ env: { TESSERA_TEST_SLOWDOWN: "" }, build }, { env: { TESSERA_TEST_SLOWDOWN: `sharpen:${f}` }, build }], runs, k === 0 ? 1 : 0)
    for (const measure of ["time", "cpu"] as const) {
      const d = Diff.compare(a!, b!, { measure })
      const flagged = flaggedOf(d).filter((g) => !g.startsWith("(pipeline)"))
      const sharpen = d.groups.find((g) => g.fn === "sharpen")!
      tally[measure].ratios.push(sharpen.ratio)
      if (sharpen.verdict === "slower") tally[measure].found++
      if (flagged.some((g) => !/sharpen|stage refine/.test(g))) tally[measure].other++
    }
    console.error(`factor ${f}, comparison ${k + 1}/${comparisons}: time ${tally.time.found} found, cpu ${tally.cpu.found} found`)
  }
  slow.push({ factor: f, ...tally })
  for (const m of ["time", "cpu"] as const) {
    const r = tally[m].ratios.slice().sort((x, y) => x - y)
    console.log(
      `slowable, sharpen × ${f}, ${runs} runs a side, ${m}: sharpen flagged slower in ${tally[m].found} of ${comparisons}; ` +
        `another group flagged in ${tally[m].other}; sharpen's ratio median ${r[Math.floor(r.length / 2)]!.toFixed(3)} (min ${r[0]!.toFixed(3)}, max ${r.at(-1)!.toFixed(3)})`
    )
  }
}
results.slowable = slow
results.seconds = (Date.now() - started) / 1000
writeFileSync(out, JSON.stringify(results, null, 1))
console.log(`${results.seconds} s; written ${out}`)
await rt.dispose()

/**
 * Report generation time and size for a 1,000,000-event trace:
 * `node bench/report/report.ts [PATH] [--runs N] [--json]`.
 *
 * The trace is H2's synthetic DASF-shaped database (`bench/analysis/generate.ts`,
 * generated into `os.tmpdir()/tessera-bench-1M.msgpack` when absent). Per run it times
 * the stages of `writeReport`: loading into Arrow tables (`src/analysis` Load), the
 * report model (`fromTables`), the six analyses, HTML rendering, and writing the file;
 * the baseline in the same run is `load + analyses`, the work any report of those
 * tables needs before drawing anything. Plain `performance.now()` timing, not
 * tinybench's loop: one run takes seconds, and tinybench's minimum iteration counts
 * would take minutes.
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { stat, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { loadPromise } from "../../src/analysis/Load.ts"
import { fromTables } from "../../src/report/FromTables.ts"
import { renderHtml } from "../../src/report/Html.ts"
import { analysisTables } from "../../src/report/ReportTables.ts"
import { median } from "../stats.ts"

const argv = process.argv.slice(2)
const json = argv.includes("--json")
const runsAt = argv.indexOf("--runs")
const runs = runsAt >= 0 ? Number(argv[runsAt + 1]) : 1
const path = argv.find((a, i) => !a.startsWith("--") && (i === 0 || argv[i - 1] !== "--runs")) ??
  join(tmpdir(), "tessera-bench-1M.msgpack")

if (!existsSync(path)) {
  const gen = fileURLToPath(new URL("../analysis/generate.ts", import.meta.url))
  execFileSync(process.execPath, [gen, path, "--events", "1000000"], { stdio: "inherit" })
}

const time = async (f: () => unknown): Promise<number> => {
  const t = performance.now()
  await f()
  return performance.now() - t
}

const stages = ["load (src/analysis)", "analyses (6)", "baseline: load + analyses", "report model", "render HTML", "write file", "report total"] as const
const results: Record<string, Array<number>> = Object.fromEntries(stages.map((s) => [s, []]))
const out = join(tmpdir(), "tessera-bench-report.html")
let bytes = 0
let events = 0
let tasks = 0
for (let r = 0; r < runs; r++) {
  let tables!: Awaited<ReturnType<typeof loadPromise>>
  const tl = await time(async () => {
    tables = await loadPromise([path])
  })
  let reportTables!: ReturnType<typeof analysisTables>
  const ta = await time(() => {
    reportTables = analysisTables(tables)
  })
  let data!: ReturnType<typeof fromTables>
  const tm = await time(() => {
    data = fromTables(tables)
  })
  let html = ""
  const th = await time(async () => {
    html = await renderHtml(data, { tables: reportTables })
  })
  const tw = await time(() => writeFile(out, html))
  bytes = (await stat(out)).size
  events = tables.events
  tasks = data.tasks.start.length
  results["load (src/analysis)"]!.push(tl)
  results["analyses (6)"]!.push(ta)
  results["baseline: load + analyses"]!.push(tl + ta)
  results["report model"]!.push(tm)
  results["render HTML"]!.push(th)
  results["write file"]!.push(tw)
  results["report total"]!.push(tl + ta + tm + th + tw)
}

const rows = stages.map((name) => ({ name, "median (ms)": Math.round(median(results[name]!)) }))
if (json) {
  console.log(JSON.stringify({ file: path, events, tasks, runs, reportBytes: bytes, rows }))
} else {
  console.log(`${events.toLocaleString("en-US")} events, ${tasks.toLocaleString("en-US")} tasks, ${runs} run(s); report ${(bytes / 2 ** 20).toFixed(1)} MiB at ${out}`)
  console.table(rows)
}

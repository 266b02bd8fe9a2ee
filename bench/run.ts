/**
 * `npm run bench`: runs every benchmark script one after another (never in parallel:
 * they would steal each other's cores) on the same Node binary that runs this file.
 *
 *   npm run bench                 all of them
 *   npm run bench -- engine dsl   only the named areas
 *
 * Each script prints its own table, with the baseline it measured in the same run.
 * Scripts that need a Python baseline (Debian's python3-dask) skip it themselves, with
 * a message, where it is absent.
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { availableParallelism, cpus, totalmem } from "node:os"
import { fileURLToPath } from "node:url"

/** The benchmark scripts, by area, in the order they run. */
const scripts: ReadonlyArray<readonly [area: string, file: string, args: ReadonlyArray<string>]> = [
  ["engine", "engine/scheduler.ts", []],
  ["engine", "engine/dask_side_by_side.ts", []],
  ["cluster", "engine/transfer.ts", []],
  // the same across two network namespaces (root only; says why and skips elsewhere)
  ["cluster", "engine/transfer.ts", ["--netns"]],
  ["trace", "profiler/throughput.ts", []],
  ["profiler", "profiler/overhead.ts", []],
  ["profiler", "profiler/attribution.ts", []],
  ["analysis", "analysis/load.ts", []],
  ["analysis", "analysis/sql.ts", []],
  ["trace", "trace/hotPaths.ts", []],
  ["dsl", "dsl/lloyd.ts", []],
  ["dsl", "dsl/io.ts", []],
  ["gpu", "gpu/gpu.ts", []],
  ["report", "report/report.ts", []]
]

const wanted = new Set(process.argv.slice(2))
const here = new URL("./", import.meta.url)

console.log(
  `machine: ${cpus()[0]?.model ?? "unknown cpu"}, ${availableParallelism()} cores, ` +
    `${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString()}`
)
let failed = 0
for (const [area, file, args] of scripts) {
  if (wanted.size > 0 && !wanted.has(area)) continue
  const path = fileURLToPath(new URL(file, here))
  if (!existsSync(path)) {
    console.log(`\n## ${area}: ${file} — not present, skipped`)
    continue
  }
  console.log(`\n## ${area}: node bench/${file} ${args.join(" ")}`)
  const r = spawnSync(process.execPath, [path, ...args], { stdio: "inherit" })
  if (r.status !== 0) {
    failed++
    console.log(`!! bench/${file} exited with ${r.status ?? r.signal}`)
  }
}
process.exitCode = failed === 0 ? 0 : 1

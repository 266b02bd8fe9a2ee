/**
 * `tessera diagnose` against `tessera analyze` (its default analyses) on one trace, in
 * alternating runs of the command line (each a fresh process, output discarded):
 * medians and their ratio (issue 35's goal: diagnose ≤ 1.5× analyze).
 *
 *   node bench/analysis/generate.ts /dev/shm/t1M.msgpack   # the 1M-event trace, once
 *   node bench/analysis/diagnose.ts /dev/shm/t1M.msgpack [runs=5]
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const file = process.argv[2]
const runs = Number(process.argv[3] ?? 5)
if (file === undefined) {
  console.error("usage: node bench/analysis/diagnose.ts TRACE.msgpack [runs]")
  process.exit(2)
}
const time = (args: ReadonlyArray<string>): number => {
  const t0 = performance.now()
  const r = spawnSync(process.execPath, [main, ...args, "--log-level", "none"], { stdio: ["ignore", "ignore", "inherit"] })
  if (r.status !== 0) throw new Error(`tessera ${args.join(" ")} exited ${r.status}`)
  return (performance.now() - t0) / 1000
}
const analyze: Array<number> = []
const diagnose: Array<number> = []
for (let i = 0; i < runs; i++) {
  analyze.push(time(["analyze", "-d", file]))
  diagnose.push(time(["diagnose", "-d", file]))
}
const median = (xs: Array<number>) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!
const a = median(analyze)
const d = median(diagnose)
console.log(`analyze  : median ${a.toFixed(2)} s of ${analyze.map((x) => x.toFixed(2)).join(", ")}`)
console.log(`diagnose : median ${d.toFixed(2)} s of ${diagnose.map((x) => x.toFixed(2)).join(", ")}`)
console.log(`ratio diagnose / analyze: ${(d / a).toFixed(2)}x (goal ≤ 1.5x)`)

/**
 * `tessera analyze` end to end, as users meet it: a fresh process per run (start-up,
 * module loading, load, DASF's three analyses, the tables printed and the CSVs written),
 * optionally against an older build in the same run, runs alternating so that both see
 * the same machine load.
 *
 * `node bench/analysis/cli.ts [TRACE] [--old DIR] [--runs N] [--json]`
 *
 * - TRACE: default `os.tmpdir()/tessera-bench-1M.msgpack` (`bench/analysis/generate.ts`).
 * - `--old DIR`: the root of another built checkout (`npm run build` there; e.g.
 *   `git worktree add /tmp/tessera-old <rev>`, a `node_modules` link, `npm run build`).
 * - Each run is `node <root>/dist/src/cli/main.js analyze -d TRACE -o OUT` with Node's
 *   compile cache on (`NODE_COMPILE_CACHE`, as `bin/tessera.js` turns it on for the
 *   installed package; one warm-up run per build fills it), stdout and stderr discarded.
 *
 * Reports per build the median and minimum wall time and the median user + system CPU
 * time of the child (all its threads, from `/proc/self/stat`'s cutime and cstime:
 * Linux, 10 ms ticks), and whether the builds wrote the same CSV files, byte for byte.
 * CPU time is less sensitive than wall time to other processes on a shared machine;
 * report `uptime` with the numbers.
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const argv = process.argv.slice(2)
const flag = (name: string) => {
  const at = argv.indexOf(name)
  return at >= 0 ? argv[at + 1] : undefined
}
const runs = Number(flag("--runs") ?? 5)
const old = flag("--old")
const json = argv.includes("--json")
const trace = argv.find((a, i) => !a.startsWith("--") && !["--runs", "--old"].includes(argv[i - 1] ?? "")) ??
  join(tmpdir(), "tessera-bench-1M.msgpack")
if (!existsSync(trace)) {
  console.error(`no trace at ${trace}: run  node bench/analysis/generate.ts ${trace}`)
  process.exit(1)
}
const here = resolve(import.meta.dirname, "..", "..")
const builds = [{ name: "this build", root: here }, ...(old !== undefined ? [{ name: "old build", root: resolve(old) }] : [])]
for (const b of builds) {
  if (!existsSync(join(b.root, "dist", "src", "cli", "main.js"))) {
    console.error(`${b.root}: no dist/src/cli/main.js (run npm run build there)`)
    process.exit(1)
  }
}

const work = mkdtempSync(join(tmpdir(), "tessera-cli-bench-"))
const ticks = 100 // USER_HZ on Linux
/** The reaped children's user + system CPU seconds so far (cutime + cstime). */
const childCpu = (): number => {
  const stat = readFileSync("/proc/self/stat", "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[13]) + Number(fields[14])) / ticks // fields 16 and 17 of proc(5)
}

const run = (root: string, out: string) => {
  const before = childCpu()
  const t = performance.now()
  const r = spawnSync(process.execPath, [join(root, "dist", "src", "cli", "main.js"), "analyze", "-d", trace, "-o", out], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, NODE_COMPILE_CACHE: join(work, "cache-" + builds.findIndex((b) => b.root === root)) }
  })
  const wall = (performance.now() - t) / 1000
  if (r.status !== 0) {
    console.error(`${root}: exit ${r.status}\n${r.stderr.toString().slice(-2000)}`)
    process.exit(1)
  }
  return { wall, cpu: childCpu() - before }
}

const results = builds.map(() => ({ wall: [] as Array<number>, cpu: [] as Array<number> }))
try {
  builds.forEach((b, i) => run(b.root, join(work, `out-${i}`))) // warm-up: compile cache, page cache
  for (let r = 0; r < runs; r++) {
    // alternate which build goes first
    const order = r % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => i).reverse()
    for (const i of order) {
      const got = run(builds[i]!.root, join(work, `out-${i}`))
      results[i]!.wall.push(got.wall)
      results[i]!.cpu.push(got.cpu)
    }
  }
  const csvs = (i: number) => {
    const dir = join(work, `out-${i}`)
    return readdirSync(dir).sort().map((f) => ({ f, bytes: readFileSync(join(dir, f)) }))
  }
  const same = builds.length < 2 ||
    JSON.stringify(csvs(0).map((x) => x.f)) === JSON.stringify(csvs(1).map((x) => x.f)) &&
      csvs(0).every((x, j) => x.bytes.equals(csvs(1)[j]!.bytes))
  const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const rows = builds.map((b, i) => ({
    build: b.name,
    root: b.root,
    "median wall (s)": Number(median(results[i]!.wall).toFixed(2)),
    "min wall (s)": Number(Math.min(...results[i]!.wall).toFixed(2)),
    "median CPU user+sys (s)": Number(median(results[i]!.cpu).toFixed(2))
  }))
  const ratio = builds.length < 2 ? undefined : {
    wall: Number((rows[1]!["median wall (s)"] / rows[0]!["median wall (s)"]).toFixed(2)),
    cpu: Number((rows[1]!["median CPU user+sys (s)"] / rows[0]!["median CPU user+sys (s)"]).toFixed(2))
  }
  if (json) console.log(JSON.stringify({ trace, runs, rows, ratio, sameCsvs: same }))
  else {
    console.log(`tessera analyze -d ${trace} -o DIR, ${runs} run(s) per build, alternating`)
    console.table(rows)
    if (ratio !== undefined) console.log(`old / this: wall ${ratio.wall}x, CPU ${ratio.cpu}x; CSVs ${same ? "identical" : "DIFFER"}`)
  }
  if (!same) process.exitCode = 1
} finally {
  rmSync(work, { recursive: true, force: true })
}

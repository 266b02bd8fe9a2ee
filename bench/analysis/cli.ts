/**
 * `tessera analyze` end to end, as users meet it: a fresh process per run (start-up,
 * module loading, load, DASF's three analyses, the tables printed and the CSVs written),
 * optionally against an older build in the same run, runs alternating so that both see
 * the same machine load.
 *
 * `node bench/analysis/cli.ts [TRACE] [--old DIR] [--compiled] [--runs N] [--json]`
 *
 * - TRACE: default `os.tmpdir()/tessera-bench-1M.msgpack` (`bench/analysis/generate.ts`).
 * - `--old DIR`: the root of another built checkout (`npm run build` there; e.g.
 *   `git worktree add /tmp/tessera-old <rev>`, a `node_modules` link, `npm run build`).
 * - `--compiled`: this build's compiled tree (dist/src/cli/main.js) too, beside its bundle.
 * - Each run is `node <entry> analyze -d TRACE -o OUT`, the entry being the one the
 *   installed `tessera analyze` runs (`bin/tessera.js`): the bundled CLI,
 *   dist/bundle/cli/main.js (`npm run build`, scripts/bundleCli.ts), or, in a build that
 *   has none (before 2026-11-27), dist/src/cli/main.js; with Node's
 *   compile cache on (`NODE_COMPILE_CACHE`, as `bin/tessera.js` turns it on for the
 *   installed package; one warm-up run per build fills it), stdout and stderr discarded.
 *
 * Reports per build the median and minimum wall time, the median user + system CPU time
 * of the child (all its threads, from `/proc/self/stat`'s cutime and cstime: Linux, 10 ms
 * ticks) and the median system time alone (mostly first touches of fresh pages, whose
 * cost is what moves most between a VM's quiet and busy moments), and whether the builds
 * wrote the same CSV files, byte for byte. CPU time is less sensitive than wall time to
 * other processes on a shared machine; report `uptime` with the numbers.
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, relative, resolve } from "node:path"

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
/** The entry the installed binary runs for `analyze` (bin/tessera.js): the bundle where the build has one. */
const entryOf = (root: string) =>
  [join(root, "dist", "bundle", "cli", "main.js"), join(root, "dist", "src", "cli", "main.js")].find((f) => existsSync(f))
const builds = [
  { name: "this build", root: here, entry: entryOf(here) },
  ...(argv.includes("--compiled") ? [{ name: "this build, compiled tree", root: here, entry: join(here, "dist", "src", "cli", "main.js") }] : []),
  ...(old !== undefined ? [{ name: "old build", root: resolve(old), entry: entryOf(resolve(old)) }] : [])
]
for (const b of builds) {
  if (b.entry === undefined || !existsSync(b.entry)) {
    console.error(`${b.root}: no dist/bundle/cli/main.js or dist/src/cli/main.js (run npm run build there)`)
    process.exit(1)
  }
}

const work = mkdtempSync(join(tmpdir(), "tessera-cli-bench-"))
const ticks = 100 // USER_HZ on Linux
/** The reaped children's user and system CPU seconds so far (cutime, cstime). */
const childCpu = (): { readonly user: number; readonly sys: number } => {
  const stat = readFileSync("/proc/self/stat", "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return { user: Number(fields[13]) / ticks, sys: Number(fields[14]) / ticks } // fields 16 and 17 of proc(5)
}

const run = (i: number, out: string) => {
  const before = childCpu()
  const t = performance.now()
  const r = spawnSync(process.execPath, [builds[i]!.entry!, "analyze", "-d", trace, "-o", out], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, NODE_COMPILE_CACHE: join(work, `cache-${i}`) }
  })
  const wall = (performance.now() - t) / 1000
  if (r.status !== 0) {
    console.error(`${builds[i]!.entry}: exit ${r.status}\n${r.stderr.toString().slice(-2000)}`)
    process.exit(1)
  }
  const after = childCpu()
  const sys = after.sys - before.sys
  return { wall, cpu: after.user - before.user + sys, sys }
}

const results = builds.map(() => ({ wall: [] as Array<number>, cpu: [] as Array<number>, sys: [] as Array<number> }))
try {
  builds.forEach((_, i) => run(i, join(work, `out-${i}`))) // warm-up: compile cache, page cache
  for (let r = 0; r < runs; r++) {
    // alternate which build goes first
    const order = r % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => i).reverse()
    for (const i of order) {
      const got = run(i, join(work, `out-${i}`))
      results[i]!.wall.push(got.wall)
      results[i]!.cpu.push(got.cpu)
      results[i]!.sys.push(got.sys)
    }
  }
  const csvs = (i: number) => {
    const dir = join(work, `out-${i}`)
    return readdirSync(dir).sort().map((f) => ({ f, bytes: readFileSync(join(dir, f)) }))
  }
  const same = builds.every((_, i) =>
    JSON.stringify(csvs(0).map((x) => x.f)) === JSON.stringify(csvs(i).map((x) => x.f)) &&
    csvs(0).every((x, j) => x.bytes.equals(csvs(i)[j]!.bytes))
  )
  const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const rows = builds.map((b, i) => ({
    build: b.name,
    entry: relative(b.root, b.entry!),
    root: b.root,
    "median wall (s)": Number(median(results[i]!.wall).toFixed(2)),
    "min wall (s)": Number(Math.min(...results[i]!.wall).toFixed(2)),
    "median CPU user+sys (s)": Number(median(results[i]!.cpu).toFixed(2)),
    "median sys (s)": Number(median(results[i]!.sys).toFixed(2))
  }))
  // each other arm against this build's: > 1 means this build is faster
  const ratios = rows.slice(1).map((r) => ({
    build: r.build,
    wall: Number((r["median wall (s)"] / rows[0]!["median wall (s)"]).toFixed(2)),
    cpu: Number((r["median CPU user+sys (s)"] / rows[0]!["median CPU user+sys (s)"]).toFixed(2))
  }))
  if (json) console.log(JSON.stringify({ trace, runs, rows, ratios, sameCsvs: same }))
  else {
    console.log(`tessera analyze -d ${trace} -o DIR, ${runs} run(s) per build, alternating`)
    console.table(rows)
    for (const r of ratios) console.log(`${r.build} / this build: wall ${r.wall}x, CPU ${r.cpu}x`)
    if (builds.length > 1) console.log(`CSVs ${same ? "identical" : "DIFFER"}`)
  }
  if (!same) process.exitCode = 1
} finally {
  rmSync(work, { recursive: true, force: true })
}

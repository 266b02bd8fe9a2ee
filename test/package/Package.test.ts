/**
 * The published package, used as a new project would: `npm pack`, install the tarball
 * into a temporary consumer project, typecheck a consumer file under a standard
 * `module: nodenext` tsconfig, run it (a small profiled pipeline, its trace loaded and
 * printed as a table), and run the `tessera` binary from there — on Node 24, and on an
 * older Node, where it must say which Node it needs, as the library must when an older
 * Node imports it. The consumer is typechecked with TypeScript 7 and TypeScript 5 (the
 * `typescript5` dev dependency, an npm alias), with `skipLibCheck: false`.
 *
 * Needs the npm registry (dependencies of the tarball; npm's cache serves most of them).
 */
import assert from "node:assert/strict"
import { execFileSync, spawnSync, type SpawnSyncReturns } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { childEnv } from "../fixtures/env.ts"

const repo = fileURLToPath(new URL("../../", import.meta.url))
const fixture = join(repo, "test/fixtures/dasf-small/small-TracePlugin.msgpack")
/** TypeScript 7 and 5, by their packages' own paths (both declare a `tsc` binary). */
const tscs = [
  { major: 7, bin: join(repo, "node_modules/typescript/bin/tsc") },
  { major: 5, bin: join(repo, "node_modules/typescript5/bin/tsc") }
]
const node24 = process.execPath

/** No npm variables of an enclosing `npm test`, and a quiet npm. */
const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv =>
  childEnv({ npm_config_fund: "false", npm_config_audit: "false", npm_config_update_notifier: "false", ...extra })

const run = (cmd: string, args: ReadonlyArray<string>, cwd: string, env = cleanEnv()) => {
  const r = spawnSync(cmd, args, { cwd, env, encoding: "utf8", timeout: 240_000 })
  return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error }
}

/** A Node older than 24 on this machine (the system's), if there is one. */
const olderNode = (): string | undefined =>
  ["/usr/bin/node", "/usr/local/bin/node"].find((p) => {
    const v = spawnSync(p, ["--version"], { encoding: "utf8" })
    return v.status === 0 && Number(v.stdout.slice(1).split(".")[0]) < 24
  })

const consumerTs = `
import { mkdtempSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Analysis, Datasets, DefaultProfiler, Estimators, Executor, Pipeline } from "tessera"
import * as TaskGraph from "tessera/engine/TaskGraph"

const dir = mkdtempSync(join(tmpdir(), "tessera-consumer-"))
const { X } = Datasets.makeBlobs({ nSamples: 4_000, centers: [[0, 0], [6, 6]], chunks: 1_000 })
const kmeans = new Estimators.KMeans({ nClusters: 2 })
const pipeline = Pipeline.make("consumer")
pipeline.add(kmeans.fitPredict, { X })
await Effect.runPromise(
  pipeline.run().pipe(
    Effect.provide(Executor.layerWorkers({ workers: 2 })),
    Effect.provide(DefaultProfiler.layer({ name: "consumer", directory: dir }))
  )
)
const tables = await Analysis.loadPromise([join(dir, \`consumer-TracePlugin-\${hostname()}.msgpack\`)])
process.stdout.write(Analysis.toText(Analysis.perFunctionBottleneck(tables), 10) + "\\n")
process.stdout.write("clusters " + kmeans.model!.nClusters + " " + typeof TaskGraph.make + "\\n")
`

/** The consumer of issue 31 item 7, as plain JavaScript (`node main.mjs`): a profiled pipeline. */
const consumerJs = `
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Datasets, DefaultProfiler, Estimators, Executor, Pipeline } from "tessera"

const { X } = Datasets.makeBlobs({ nSamples: 4_000, centers: [[0, 0], [6, 6]], chunks: 1_000 })
const pipeline = Pipeline.make("consumer")
pipeline.add(new Estimators.KMeans({ nClusters: 2 }).fitPredict, { X })
await Effect.runPromise(
  pipeline.run().pipe(
    Effect.provide(Executor.layerWorkers({ workers: 2 })),
    Effect.provide(DefaultProfiler.layer({ name: "consumer", directory: mkdtempSync(join(tmpdir(), "tessera-old-")) }))
  )
)
console.log("ran")
`

describe("Package", { timeout: 300_000 }, () => {
  let work = ""
  let consumer = ""

  before(() => {
    work = mkdtempSync(join(tmpdir(), "tessera-package-"))
    const packed = run("npm", ["pack", "--pack-destination", work], repo)
    assert.equal(packed.status, 0, `npm pack failed:\n${packed.stdout}${packed.stderr}`)
    const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"))
    assert.ok(tarball !== undefined, "npm pack wrote no tarball")
    consumer = join(work, "consumer")
    execFileSync("mkdir", [consumer])
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { module: "nodenext", target: "es2023", strict: true, noEmit: true, types: ["node"], skipLibCheck: false },
        include: ["*.ts"]
      })
    )
    writeFileSync(join(consumer, "main.ts"), consumerTs)
    writeFileSync(join(consumer, "main.mjs"), consumerJs)
    const installed = run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", join(work, tarball), "@types/node@24"],
      consumer
    )
    assert.equal(installed.status, 0, `npm install of the tarball failed:\n${installed.stderr}`)
  })

  after(() => {
    if (work !== "") rmSync(work, { recursive: true, force: true })
  })

  it("ships compiled JavaScript and declarations, the bundled CLI, and no TypeScript sources", () => {
    const dist = join(consumer, "node_modules/tessera/dist/src")
    const top = readdirSync(dist)
    assert.ok(top.includes("index.js") && top.includes("index.d.ts"))
    const bundle = readdirSync(join(consumer, "node_modules/tessera/dist/bundle/cli"))
    for (const f of ["main.js", "decodeWorker.js", "csvWorker.js", "arrow.js"]) assert.ok(bundle.includes(f), `dist/bundle/cli/${f}`)
    const ls = run("find", [join(consumer, "node_modules/tessera"), "-name", "*.ts", "-not", "-name", "*.d.ts"], consumer)
    assert.equal(ls.stdout.trim(), "", `TypeScript sources in the package:\n${ls.stdout}`)
  })

  it("issue 31 item 8: typechecks a consumer file with TypeScript 7.x and 5.x, skipLibCheck false", () => {
    const files = new Map<number, string>()
    for (const { major, bin } of tscs) {
      const version = run(bin, ["--version"], consumer)
      assert.match(version.stdout, new RegExp(`Version ${major}\\.`), `${bin}: ${version.stdout}${version.stderr}`)
      const r = run(bin, ["-p", consumer, "--listFiles"], consumer)
      assert.equal(r.status, 0, `TypeScript ${major} (${version.stdout.trim()}) failed:\n${r.stdout}${r.stderr}`)
      files.set(major, r.stdout)
    }
    // WebGPU's types by TypeScript version: @webgpu/types for TypeScript 5 (no WebGPU in
    // its lib.dom), none for 7 (its lib.dom has them; both would declare each name twice)
    const gpu = readFileSync(join(consumer, "node_modules/tessera/dist/src/engine/Gpu.d.ts"), "utf8")
    assert.match(gpu, /^\/\/\/ <reference types="tessera\/webgpu" \/>/)
    assert.match(files.get(5)!, /@webgpu\/types\/dist\/index\.d\.ts/)
    assert.doesNotMatch(files.get(7)!, /@webgpu\/types/)
    assert.match(files.get(7)!, /lib\.dom\.d\.ts/)
  })

  it("runs a profiled pipeline from the package and prints its trace's table", () => {
    const r = run(node24, ["main.ts"], consumer)
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /Function bottleneck|Function\s+Duration/)
    assert.match(r.stdout, /lloyd/)
    assert.match(r.stdout, /clusters 2 function/)
  })

  it("keeps every internal/ module out of reach", () => {
    const r = run(node24, ["-e", `import("tessera/engine/internal/pool").then(() => console.log("reached"), (e) => console.log(e.code))`], consumer)
    assert.equal(r.stdout.trim(), "ERR_PACKAGE_PATH_NOT_EXPORTED")
  })

  it("hands the command lines the bundle does not serve to the compiled tree (demo, a user analysis module)", () => {
    const bundle = join(consumer, "node_modules/tessera/dist/bundle/cli/main.js")
    const demo = run(node24, [bundle, "demo", "--samples", "2000", "--chunk-rows", "500", "--workers", "2"], consumer)
    assert.equal(demo.status, 0, demo.stderr)
    assert.match(demo.stdout, /KMeans centers/)
    const module = join(work, "rows.mjs")
    writeFileSync(module, "export default (tables) => tables.tasks.slice(0, 2)\n")
    const mine = run(node24, [bundle, "analyze", "-d", fixture, "-a", module], consumer)
    assert.equal(mine.status, 0, mine.stderr)
    assert.match(mine.stdout, /rows/)
  })

  it("runs `npx tessera --version` and `npx tessera analyze` on Node 24", () => {
    const env = cleanEnv({ PATH: `${dirname(node24)}:${process.env.PATH ?? ""}` })
    const version = run("npx", ["--no-install", "tessera", "--version"], consumer, env)
    assert.equal(version.status, 0, version.stderr)
    assert.match(version.stdout, /0\.1\.0/)
    const analyze = run("npx", ["--no-install", "tessera", "analyze", "-d", fixture, "--head", "3"], consumer, env)
    assert.equal(analyze.status, 0, analyze.stderr)
    assert.match(analyze.stdout, /Function bottleneck/)
    assert.match(analyze.stdout, /Task balance/)
    // the compiled tree (TESSERA_NO_BUNDLE=1) prints the same
    const compiled = run("npx", ["--no-install", "tessera", "analyze", "-d", fixture, "--head", "3"], consumer, { ...env, TESSERA_NO_BUNDLE: "1" })
    assert.equal(compiled.status, 0, compiled.stderr)
    assert.equal(compiled.stdout, analyze.stdout)
  })

  it("runs every command the bundled CLI serves from the bundle itself, as the compiled tree does", () => {
    const bundle = join(consumer, "node_modules/tessera/dist/bundle/cli/main.js")
    const compiled = join(consumer, "node_modules/tessera/dist/src/cli/main.js")
    const out = join(work, "bundled")
    execFileSync("mkdir", ["-p", out])
    const both = (args: (entry: string) => ReadonlyArray<string>) =>
      [bundle, compiled].map((entry) => {
        const r = run(node24, [entry, ...args(entry)], consumer)
        assert.equal(r.status, 0, `${entry} ${args(entry).join(" ")}:\n${r.stderr}`)
        return r.stdout
      })
    const tag = (entry: string) => (entry === bundle ? "b" : "c")
    // help is Effect's CLI rendering: the bundle's Effect is the lockfile's, the compiled
    // tree's the one this install resolved (a newer one may word it otherwise)
    for (const help of both(() => ["--help"])) assert.match(help, /analyze/)
    const [csvB, csvC] = both((e) => ["analyze", "-d", fixture, "-o", join(out, `csv-${tag(e)}`)])
    assert.equal(csvB, csvC)
    for (const f of readdirSync(join(out, "csv-c"))) {
      assert.equal(readFileSync(join(out, "csv-b", f), "utf8"), readFileSync(join(out, "csv-c", f), "utf8"), f)
    }
    // DuckDB (a native package the bundle imports from node_modules)
    const [sqlB, sqlC] = both(() => ["sql", "-d", fixture, "select count(*) as n from tasks"])
    assert.equal(sqlB, sqlC)
    // the report (Vega and Vega-Lite imported from node_modules by both)
    both((e) => ["report", "-d", fixture, "-o", join(out, `report-${tag(e)}.html`)])
    assert.equal(readFileSync(join(out, "report-b.html"), "utf8"), readFileSync(join(out, "report-c.html"), "utf8"))
    both((e) => ["export", "-d", fixture, "--format", "chrome", "-o", join(out, `trace-${tag(e)}.json`)])
    assert.equal(readFileSync(join(out, "trace-b.json"), "utf8"), readFileSync(join(out, "trace-c.json"), "utf8"))
    // resvg (native) for the PNGs
    both((e) => ["plot", "hist", "-d", fixture, "-o", join(out, `plot-${tag(e)}`)])
    for (const f of readdirSync(join(out, "plot-c"))) assert.ok(readFileSync(join(out, "plot-b", f)).equals(readFileSync(join(out, "plot-c", f))), f)
  })

  it("runs the demo and the engine benchmark from the package (examples/ and bench/ compiled into dist/)", () => {
    const env = cleanEnv({ PATH: `${dirname(node24)}:${process.env.PATH ?? ""}` })
    const demo = run("npx", ["--no-install", "tessera", "demo", "--samples", "2000", "--chunk-rows", "500", "--workers", "2"], consumer, env)
    assert.equal(demo.status, 0, demo.stderr)
    assert.match(demo.stdout, /KMeans centers/)
    const bench = run("npx", ["--no-install", "tessera", "bench", "engine", "--tasks", "200", "--repeats", "1", "--workers", "1"], consumer, env)
    assert.equal(bench.status, 0, bench.stderr)
    assert.match(bench.stdout, /tasks\/s/)
  })

  it("says which Node it needs when an older Node starts the installed binary", (t) => {
    const old = olderNode()
    if (old === undefined) return t.skip("no Node older than 24 on this machine")
    const r = run(old, [join(consumer, "node_modules/tessera/bin/tessera.js"), "--version"], consumer)
    assert.equal(r.status, 1)
    assert.equal(r.stdout, "")
    const lines = r.stderr.trim().split("\n")
    assert.equal(lines.length, 1, r.stderr)
    assert.match(lines[0]!, /needs Node\.js 24 or newer, found v\d+/)
  })

  it("issue 31 item 7: the library refuses an older Node at import, with one line and at once", (t) => {
    const old = olderNode()
    if (old === undefined) return t.skip("no Node older than 24 on this machine")
    const version = spawnSync(old, ["--version"], { encoding: "utf8" }).stdout.trim()
    const runs: ReadonlyArray<ReadonlyArray<string>> = [
      ["main.mjs"], // import { DefaultProfiler, … } from "tessera", a profiled pipeline
      ["--input-type=module", "-e", `import "tessera/profiler/DefaultProfiler"; console.log("ran")`] // a subpath
    ]
    for (const args of runs) {
      const started = performance.now()
      const r: SpawnSyncReturns<string> = spawnSync(old, args, { cwd: consumer, env: cleanEnv(), encoding: "utf8", timeout: 30_000 })
      const seconds = (performance.now() - started) / 1000
      assert.equal(r.status, 1, `${args.join(" ")}: status ${r.status} signal ${r.signal} after ${seconds.toFixed(1)} s\n${r.stderr}`)
      assert.ok(seconds < 15, `${args.join(" ")} took ${seconds.toFixed(1)} s`)
      assert.equal(r.stdout, "")
      const said = r.stderr.split("\n").filter((l: string) => /needs Node\.js/.test(l))
      assert.deepEqual(said, [`UnsupportedNodeError: tessera needs Node.js 24 or newer, found ${version} (${old})`], r.stderr)
    }
    // and Node 24 imports the same subpath
    const ok = run(node24, ["--input-type=module", "-e", `import "tessera/profiler/DefaultProfiler"; console.log("ran")`], consumer)
    assert.equal(ok.stdout.trim(), "ran", ok.stderr)
  })

  it("re-runs itself with the pinned Node 24 when an older Node starts it in a checkout", (t) => {
    const old = olderNode()
    if (old === undefined) return t.skip("no Node older than 24 on this machine")
    const r = run(old, [join(repo, "bin/tessera.js"), "--version"], repo)
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /0\.1\.0/)
  })
})

// Issue 31, the command line: sql timestamps (item 4), a failed run leaves its trace and
// report (9), a `tessera run` file imports "tessera" wherever it lives (10), stdout only
// results, log lines and progress on stderr, --json, lazy outputs said so (11), analyses
// that refuse empty or merged input (13), usage exits and small fixes (14).
import assert from "node:assert/strict"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { runTessera, type TesseraResult } from "./tesseraProcess.ts"
import fc from "fast-check"
import { Float64, Table, vectorFromArray } from "apache-arrow"
import type { TraceTables } from "../../src/analysis/Load.ts"
import { relativeTimes } from "../../src/analysis/Query.ts"
import { minGapSeconds, runsOf } from "../../src/analysis/Runs.ts"
import { dawnFilter, needsFilter } from "../../src/cli/nativeLog.ts"
import { describeOutput, formatOutput } from "../../src/cli/commands/run.ts"

const checkout = fileURLToPath(new URL("../../", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/twoStages.ts", import.meta.url))
const host = hostname()

const dirs: Array<string> = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const tempDir = (parent = tmpdir()) => {
  const d = mkdtempSync(join(parent, "tessera-issue31-"))
  dirs.push(d)
  return d
}

type Result = TesseraResult

const tessera = (args: ReadonlyArray<string>, options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Result> =>
  runTessera(args, { ...options, progress: "0" })

const show = (r: Result) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`
const lines = (s: string) => s.split("\n").filter((l) => l.length > 0)

/** A kernel module and a pipeline module that imports "tessera" and "effect" like a user's. */
const writePipeline = (dir: string) => {
  writeFileSync(
    join(dir, "kernels.ts"),
    `export const double = (chunk: { dtype: string; shape: ReadonlyArray<number>; data: Float64Array }) => {
  const out = new Float64Array(chunk.data.length)
  for (let i = 0; i < out.length; i++) out[i] = 2 * chunk.data[i]!
  return { dtype: "float64", shape: chunk.shape, data: out }
}
export const boom = (): never => {
  throw new Error("boom in the kernel")
}
`
  )
  writeFileSync(
    join(dir, "pipeline.ts"),
    `import { Effect } from "effect"
import { ChunkedArray, Datasets, Kernel, Pipeline } from "tessera"

type In = { readonly X: ChunkedArray.ChunkedArray<"float64"> }
const kernels = new URL("./kernels.ts", import.meta.url).href
const fail = process.env.FAIL === "1"
const persisted = (name: string) => Pipeline.stage(name, ({ X }: In) => ChunkedArray.persist(X))
// lazy: a mapBlocks the stage never computes
const doubled = Pipeline.stage("doubled", ({ X }: In) =>
  Effect.succeed(ChunkedArray.mapBlocks(X, { name: "double", kernel: Kernel.ref(kernels, fail ? "boom" : "double"), dtype: "float64", columns: 2, stage: "doubled" })))

export default () => {
  const { X } = Datasets.makeBlobs({ nSamples: 3_000, centers: [[0, 0], [5, 5]], chunks: 500, randomState: 1 })
  const p = Pipeline.make("mine")
  const first = p.add(persisted("first"), { X })
  const d = p.add(doubled, { X: first })
  if (fail) p.add(persisted("again"), { X: d })
  return p
}
`
  )
  return join(dir, "pipeline.ts")
}

// one profiled run of the fixture pipeline, shared by the sql and analyze tests
let runDir = ""
before(async () => {
  runDir = tempDir()
  const r = await tessera(["run", fixture, "--workers", "1", "--profile", "one"], { cwd: runDir })
  assert.equal(r.code, 0, show(r))
})
const runFiles = () => ["TracePlugin", "ResourceMonitor", "StatisticalProfiler"].map((p) => join(runDir, `one-${p}-${host}.msgpack`))

describe("issue 31 item 4: tessera sql tables show times from the run's start", () => {
  it("issue 31 item 4: start and stop read as seconds from the run's start in tables, epoch seconds in --csv and --json", async () => {
    const [trace, res] = runFiles()
    const q = "SELECT key, start, stop, duration FROM tasks ORDER BY start LIMIT 5"
    const [text, csv, json] = await Promise.all([
      tessera(["sql", "-d", trace!, res!, q]),
      tessera(["sql", "-d", trace!, res!, "--csv", q]),
      tessera(["sql", "-d", trace!, res!, "--json", q])
    ])
    for (const r of [text, csv, json]) assert.equal(r.code, 0, show(r))
    const rows = lines(text.stdout)
    assert.match(rows[0]!, /start \(\+s\)\s+stop \(\+s\)\s+duration/)
    assert.match(rows.at(-1)!, /^\(\+s\): seconds since the run's start, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC/)
    // the values: small, no thousands separators, a stop after its start
    for (const row of rows.slice(1, -1)) {
      const [start, stop] = row.trim().split(/\s+/).slice(-3, -1).map(Number)
      assert.ok(start! >= 0 && start! < 3600 && stop! >= start!, row)
    }
    // CSV and JSON keep epoch seconds, under the plain names
    const csvRows = lines(csv.stdout)
    assert.equal(csvRows[0], "key,start,stop,duration")
    const epochStart = Number(csvRows[1]!.split(",").at(-3))
    assert.ok(epochStart > 1e9, csvRows[1])
    const first = JSON.parse(lines(json.stdout)[0]!) as { start: number; stop: number }
    assert.ok(first.start > 1e9 && first.stop >= first.start)
    // the table's first start is the CSV's minus the run's start: the same value
    const shown = Number(rows[1]!.trim().split(/\s+/).at(-3))
    const origin = Date.parse(rows.at(-1)!.match(/(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d{3})/)!.slice(1).join("T") + "Z") / 1000
    assert.ok(Math.abs(epochStart - origin - shown) < 0.002, `${epochStart} - ${origin} vs ${shown}`)
  })

  it("issue 31 item 4: relativeTimes turns only epoch-valued time columns into offsets (property)", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1.6e9, max: 2e9, noNaN: true }),
        fc.array(fc.double({ min: 0, max: 1e5, noNaN: true }), { minLength: 1, maxLength: 20 }),
        (origin, offsets) => {
          const t = new Table({
            start: vectorFromArray(offsets.map((o) => origin + o), new Float64()),
            cpu_time: vectorFromArray(offsets, new Float64()),
            bytes: vectorFromArray(offsets.map((o) => 1.5e9 + o), new Float64())
          })
          const r = relativeTimes(t, origin)
          assert.deepEqual(r.columns, ["start"])
          assert.deepEqual(r.table.schema.fields.map((f) => f.name), ["start (+s)", "cpu_time", "bytes"])
          const got = r.table.getChild("start (+s)")!.toArray() as Float64Array
          offsets.forEach((o, i) => assert.ok(Math.abs(got[i]! - o) <= 1e-6 * Math.max(1, origin), `${got[i]} vs ${o}`))
        }
      ),
      { numRuns: 50 }
    )
  })

  it("issue 31 item 4: gpu_utilization without a GPU is 0 (Tessera's monitor always writes it), as docs/queries.md says", async () => {
    const [, res] = runFiles()
    const r = await tessera(["sql", "-d", res!, "--csv", "SELECT count(*) AS n, count(gpu_utilization) AS known, max(gpu_utilization) AS top FROM resources"])
    assert.equal(r.code, 0, show(r))
    const [n, known] = lines(r.stdout)[1]!.split(",").map(Number)
    assert.ok(n! > 0)
    assert.equal(known, n, "no NULL in a Tessera trace")
    const doc = readFileSync(join(checkout, "docs/queries.md"), "utf8")
    const row = doc.split("\n").find((l) => l.startsWith("| `resources` |"))!
    assert.doesNotMatch(row, /— NULL without a GPU —/)
  })
})

describe("issue 31 item 9: a failed run leaves what it wrote, then the error", () => {
  it("issue 31 item 9: a kernel that throws: databases and report written and listed on stdout, the error last on stderr, exit 1", async () => {
    const dir = tempDir()
    const file = writePipeline(dir)
    const r = await tessera(["run", file, "--workers", "1", "--profile", "fail", "--report", "fail.html"], { cwd: dir, env: { FAIL: "1" } })
    assert.equal(r.code, 1, show(r))
    const out = lines(r.stdout)
    assert.match(out[0]!, /^pipeline mine: failed after \d+\.\d\d s on 1 worker threads$/)
    for (const p of ["TracePlugin", "ResourceMonitor", "StatisticalProfiler"]) {
      assert.ok(out.includes(`trace database: fail-${p}-${host}.msgpack`), show(r))
      assert.ok(existsSync(join(dir, `fail-${p}-${host}.msgpack`)))
    }
    assert.match(r.stdout, /^report: fail\.html \(\d+\.\d MiB\)$/m)
    assert.match(readFileSync(join(dir, "fail.html"), "utf8"), /tessera run: mine/)
    assert.match(lines(r.stderr).at(-1)!, /^tessera run: .*boom in the kernel/)
  })

  it("issue 31 item 9: a syntax error in the pipeline file names file:line:column", async () => {
    const dir = tempDir()
    writeFileSync(join(dir, "bad.ts"), `import { Pipeline } from "tessera"\nconst x: number = (1 +;\nexport default () => Pipeline.make("x")\n`)
    const r = await tessera(["run", join(dir, "bad.ts")], { cwd: dir })
    assert.equal(r.code, 1, show(r))
    assert.equal(r.stdout, "")
    assert.match(r.stderr, /^tessera run: .*bad\.ts:2:\d+: syntax error: /, show(r))
  })
})

describe("issue 31 item 10: a tessera run file imports \"tessera\" wherever it lives", () => {
  it("issue 31 item 10: in a folder outside the checkout (no package.json, no node_modules): tessera and effect resolve", async () => {
    const dir = tempDir()
    assert.ok(!dir.startsWith(checkout))
    const r = await tessera(["run", writePipeline(dir), "--workers", "1"], { cwd: dir })
    assert.equal(r.code, 0, show(r))
    assert.match(r.stdout, /^pipeline mine: 2 stages in /)
  })

  it("issue 31 item 10: in a folder inside the checkout: \"tessera\" is this CLI's source tree (no build needed, one Pipeline class)", async () => {
    // under the checkout's git-ignored tmp/, as the docs test's scratch folders
    mkdirSync(join(checkout, "tmp"), { recursive: true })
    const dir = tempDir(join(checkout, "tmp"))
    const r = await tessera(["run", writePipeline(dir), "--workers", "1", "--json"], { cwd: dir })
    assert.equal(r.code, 0, show(r))
    assert.equal(JSON.parse(r.stdout).pipeline, "mine")
  })
})

describe("issue 31 item 11: stdout carries results only; logs and progress go to stderr", () => {
  it("issue 31 item 11: run prints results on stdout, registration and INFO lines on stderr; --log-level warn silences both", async () => {
    const dir = tempDir()
    const file = writePipeline(dir)
    const [normal, quiet] = await Promise.all([
      tessera(["run", file, "--workers", "1", "--profile", "p"], { cwd: dir }),
      tessera(["run", file, "--workers", "1", "--profile", "q", "--log-level", "warn"], { cwd: dir })
    ])
    for (const r of [normal, quiet]) assert.equal(r.code, 0, show(r))
    for (const l of lines(normal.stdout)) assert.match(l, /^(pipeline mine: |  \w+: |trace database: )/, show(normal))
    assert.match(normal.stderr, /^Registered worker plugin: p-TracePlugin$/m)
    assert.match(normal.stderr, /INFO - Pipeline run successfully/)
    assert.doesNotMatch(quiet.stdout + quiet.stderr, /Registered|INFO/)
    assert.equal(quiet.stderr, "")
    // the last stage was never computed, and says so; the persisted one was
    assert.match(normal.stdout, /^ {2}doubled: float64 \[3000, 2\] in 6 chunks, lazy: not computed$/m)
    assert.match(normal.stdout, /^ {2}first: float64 \[3000, 2\] in 6 chunks, computed$/m)
  })

  it("issue 31 item 11: run --json prints one JSON object and nothing else on stdout", async () => {
    const dir = tempDir()
    const r = await tessera(["run", writePipeline(dir), "--workers", "1", "--json", "--profile", "j"], { cwd: dir })
    assert.equal(r.code, 0, show(r))
    const j = JSON.parse(r.stdout) as { ok: boolean; outputs: Array<{ stage: string; state: string; chunks: number }>; databases: Array<string> }
    assert.equal(j.ok, true)
    assert.deepEqual(j.outputs.map((o) => [o.stage, o.state, o.chunks]), [["first", "computed", 6], ["doubled", "lazy", 6]])
    assert.equal(j.databases.length, 3)
  })

  it("issue 31 item 11: run progress: plain lines without \\r off a terminal, one redrawn line on one", async () => {
    const [plain, tty] = await Promise.all([
      tessera(["run", fixture, "--workers", "1"], { env: { TESSERA_PROGRESS: "1", TESSERA_PROGRESS_INTERVAL: "0.05" } }),
      tessera(["run", fixture, "--workers", "1"], { env: { TESSERA_PROGRESS: "tty", TESSERA_PROGRESS_INTERVAL: "0.02" } })
    ])
    for (const r of [plain, tty]) assert.equal(r.code, 0, show(r))
    assert.doesNotMatch(plain.stderr, /\r/)
    assert.match(plain.stderr, /^run: [\w.]+: \d+\/\d+ tasks, \d+\.\d s \(run \d+\.\d s\)$/m)
    assert.match(tty.stderr, /\rrun: [\w.]+: \d+\/\d+ tasks/)
    for (const r of [plain, tty]) assert.doesNotMatch(r.stdout, /tasks,|\r/)
  })

  it("issue 31 item 11: analyze's progress off a terminal has no \\r", async () => {
    const [trace] = runFiles()
    const r = await tessera(["analyze", "-d", trace!, "-a", "task_balance"], { env: { TESSERA_PROGRESS: "1" } })
    assert.equal(r.code, 0, show(r))
    assert.doesNotMatch(r.stderr, /\r/)
    assert.match(r.stderr, /^analyze: loaded \d+ events from 1 database\(s\)/m)
  })

  it("issue 31 item 11: an output is described by what it is: computed, partly computed or lazy", () => {
    const chunk = { _tag: "Value" }
    const task = { _tag: "Task", key: "k" }
    const arr = (blocks: Array<unknown>) => ({ _tag: "ChunkedArray", dtype: "int32", shape: [300000], chunkRows: [], blocks, specs: new Map() })
    assert.equal(formatOutput(describeOutput("s", arr([task, task]))), "int32 [300000] in 2 chunks, lazy: not computed")
    assert.equal(formatOutput(describeOutput("s", arr([chunk, chunk]))), "int32 [300000] in 2 chunks, computed")
    assert.equal(formatOutput(describeOutput("s", arr([chunk, task]))), "int32 [300000] in 2 chunks, 1 of 2 chunks computed, the rest lazy")
    assert.equal(describeOutput("s", { _tag: "Delayed", key: "k", specs: new Map() }).state, "lazy")
  })
})

describe("issue 31 item 13: analyses say what is empty or mixed", () => {
  it("issue 31 item 13: -a profile on a trace without samples, a 0-byte trace, and a filter that keeps nothing: a sentence, exit 1", async () => {
    const [trace, , samples] = runFiles()
    const dir = tempDir()
    const empty = join(dir, "empty.msgpack")
    writeFileSync(empty, "")
    const [noSamples, zero, none] = await Promise.all([
      tessera(["analyze", "-d", trace!, "-a", "profile"]),
      tessera(["analyze", "-d", empty]),
      tessera(["analyze", "-d", trace!, samples!, "-a", "profile", "--function", "no_such_function"])
    ])
    for (const r of [noSamples, zero, none]) {
      assert.equal(r.code, 1, show(r))
      assert.equal(r.stdout, "", show(r))
    }
    assert.match(noSamples.stderr, /^tessera analyze: profile: no stack samples in .*one-TracePlugin/m)
    assert.match(zero.stderr, /^tessera analyze: no trace events in .*empty\.msgpack \(0 bytes\): nothing to analyse$/m)
    assert.match(none.stderr, /^tessera analyze: profile: none of the \d+ stack samples is of function no_such_function$/m)
  })

  it("issue 31 item 13: databases of two runs are refused, naming each run's start and files", async () => {
    const dir = tempDir()
    const second = await tessera(["run", fixture, "--workers", "1", "--profile", "two"], { cwd: dir })
    assert.equal(second.code, 0, show(second))
    const [trace, res] = runFiles()
    const other = join(dir, `two-TracePlugin-${host}.msgpack`)
    const r = await tessera(["analyze", "-d", trace!, res!, other])
    assert.equal(r.code, 1, show(r))
    assert.equal(r.stdout, "")
    const msg = lines(r.stderr).at(-1)!
    assert.match(msg, /^tessera analyze: these databases hold 2 runs/)
    assert.match(msg, /run 1 \(pipeline twostages\) started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, \d+ task\(s\), in .*one-TracePlugin.*one-ResourceMonitor/)
    assert.match(msg, /run 2 \(pipeline twostages\) started .*, in .*two-TracePlugin/)
    // one run, several files: analysed as before
    const one = await tessera(["analyze", "-d", trace!, res!, "-a", "task_balance"])
    assert.equal(one.code, 0, show(one))
  })

  it("issue 31 item 13: runs are told apart by idle gaps where no graph event says (property)", () => {
    const tables = (tasks: ReadonlyArray<readonly [number, number]>) =>
      ({
        tasks: new Table({ start: vectorFromArray(tasks.map((t) => t[0]), new Float64()), end: vectorFromArray(tasks.map((t) => t[1]), new Float64()) }),
        metadata: []
      }) as unknown as TraceTables
    // one run: tasks of up to 2 s with idle gaps of up to 20 s (under the 30 s floor)
    const run = fc.array(fc.tuple(fc.double({ min: 0, max: 20, noNaN: true }), fc.double({ min: 0.001, max: 2, noNaN: true })), { minLength: 1, maxLength: 30 })
    fc.assert(
      fc.property(fc.array(run, { minLength: 1, maxLength: 4 }), fc.double({ min: 1, max: 100, noNaN: true }), (runs, spacing) => {
        const tasks: Array<readonly [number, number]> = []
        let t = 1.7e9
        const starts: Array<number> = []
        for (const r of runs) {
          // each run starts long after the last: more than the floor and than all the busy time
          const busy = runs.flat().reduce((s, [, d]) => s + d, 0)
          t += Math.max(minGapSeconds, busy) * 2 + spacing
          starts.push(t)
          for (const [gap, d] of r) {
            t += gap
            tasks.push([t, t + d])
            t += d
          }
        }
        const found = runsOf(tables(tasks))
        assert.equal(found.length, runs.length)
        found.forEach((f, k) => {
          assert.equal(f.tasks, runs[k]!.length)
          assert.ok(Math.abs(f.start - (starts[k]! + runs[k]![0]![0])) < 1e-6)
        })
      }),
      { numRuns: 100 }
    )
  })
})

describe("issue 31 item 14: usage exits and small fixes", () => {
  it("issue 31 item 14: tessera with no arguments and tessera help nope are usage errors (exit 2, stdout empty)", async () => {
    const [bare, nope, deep, good] = await Promise.all([tessera([]), tessera(["help", "nope"]), tessera(["help", "plot", "nope"]), tessera(["help", "plot", "hist"])])
    assert.equal(bare.code, 2, show(bare))
    assert.equal(bare.stdout, "")
    assert.match(bare.stderr, /SUBCOMMANDS/)
    assert.equal(nope.code, 2, show(nope))
    assert.equal(nope.stdout, "")
    assert.equal(nope.stderr, "tessera help: unknown command \"nope\" (see tessera --help)\n")
    assert.equal(deep.code, 2, show(deep))
    assert.match(deep.stderr, /unknown command "nope" \(see tessera plot --help\)/)
    assert.equal(good.code, 0, show(good))
    assert.match(good.stdout, /USAGE\s+tessera plot hist/)
  })

  it("issue 31 item 14: export -o makes the missing folder, as report -o does", async () => {
    const [trace] = runFiles()
    const dir = tempDir()
    const out = join(dir, "missing", "deeper", "x.json")
    const r = await tessera(["export", "-d", trace!, "-o", out])
    assert.equal(r.code, 0, show(r))
    assert.ok(JSON.parse(readFileSync(out, "utf8")))
  })

  it("issue 31 item 14: Dawn's warning blocks are dropped whatever the chunking, every other line kept (property)", () => {
    const block = fc.constantFrom(
      ["Warning: Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file", "    at operator() (/x/dawn/src/dawn/native/vulkan/BackendVk.cpp:368)", ""],
      ["Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 90 to 16."]
    )
    const own = fc.stringMatching(/^[a-z][a-z :]{0,30}$/).map((s) => [s])
    fc.assert(
      fc.property(fc.array(fc.oneof(block.map((b) => ({ keep: false, b })), own.map((b) => ({ keep: true, b }))), { maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1 }), (parts, cuts) => {
        const text = parts.flatMap((p) => p.b).map((l) => l + "\n").join("")
        const want = parts.filter((p) => p.keep).flatMap((p) => p.b).map((l) => l + "\n").join("")
        const f = dawnFilter()
        let got = ""
        for (let at = 0, k = 0; at < text.length; k++) {
          const n = cuts[k % cuts.length]!
          got += f.push(text.slice(at, at + n))
          at += n
        }
        got += f.flush()
        assert.equal(got, want)
      }),
      { numRuns: 200 }
    )
    assert.equal(needsFilter(["demo", "--gpu", "--log-level", "error"], {}), true)
    assert.equal(needsFilter(["demo", "--gpu"], {}), false)
    assert.equal(needsFilter(["demo", "--log-level", "none"], {}), false)
  })

  it("issue 31 item 14: demo --gpu --log-level error prints none of Dawn's warnings", async (t) => {
    const { skip } = await import("../gpu/gpu.ts")
    if (skip !== false) return t.skip(skip)
    const r = await tessera(["demo", "--gpu", "--workers", "1", "--samples", "2000", "--chunk-rows", "500", "--log-level", "error"])
    assert.equal(r.code, 0, show(r))
    assert.equal(r.stderr, "")
    assert.match(r.stdout, /^wall time: /)
  })
})


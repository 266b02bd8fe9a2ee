// One CLI grammar (issue 13): -d/--databases everywhere with several paths and/or
// repeated, help with defaults, `tessera help`, `--version`, usage errors exit 2 with one
// stderr line, failures exit 1 with one line naming what and where, --verbose stacks,
// --log-level honoured by the pipeline's log lines, progress on stderr, --overwrite.
import assert from "node:assert/strict"
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { runTessera, type TesseraResult } from "./tesseraProcess.ts"
import { commandPath, normalizeArgv, runsBundled } from "../../src/cli/argv.ts"

const data = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/twoStages.ts", import.meta.url))
const trace = join(data, "small-TracePlugin.msgpack")
const resources = join(data, "small-ResourceMonitor.msgpack")
const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }

const dirs: Array<string> = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "tessera-grammar-"))
  dirs.push(d)
  return d
}

type Result = TesseraResult

const tessera = (args: ReadonlyArray<string>, options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Result> =>
  runTessera(args, { ...options })

const lines = (s: string) => s.split("\n").filter((l) => l.length > 0)
/** stderr without the loader's note on recomputed keys (the DASF fixture has some: DASF N15) */
const notes = (s: string) => s.split("\n").filter((l) => !/: warning: \d+ task\(s\) recomputed/.test(l)).join("\n")
const show = (r: Result) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`

/** exit 2, nothing on stdout, one stderr line matching every pattern */
const assertUsage = (r: Result, ...patterns: ReadonlyArray<RegExp>) => {
  assert.equal(r.code, 2, show(r))
  assert.equal(r.stdout, "", show(r))
  assert.equal(lines(r.stderr).length, 1, show(r))
  for (const p of patterns) assert.match(r.stderr, p, show(r))
}

/** exit 1, nothing on stdout, one stderr line without stack frames, matching every pattern */
const assertFailure = (r: Result, ...patterns: ReadonlyArray<RegExp>) => {
  assert.equal(r.code, 1, show(r))
  assert.equal(r.stdout, "", show(r))
  assert.equal(lines(r.stderr).length, 1, show(r))
  assert.doesNotMatch(r.stderr, /\n\s+at /, show(r))
  for (const p of patterns) assert.match(r.stderr, p, show(r))
}

describe("argv normalisation", () => {
  it("finds the command path past global flags", () => {
    assert.deepEqual(commandPath(["--log-level", "none", "plot", "hist", "-d", "a"]).path, ["plot", "hist"])
    assert.deepEqual(commandPath(["report", "-d", "a"]).path, ["report"])
    assert.deepEqual(commandPath(["help", "plot", "hist"]).path, ["help", "plot", "hist"])
  })

  it("runs in the bundled CLI only the command lines that load no kernel and no module of the user's", () => {
    for (const argv of [
      [], ["--help"], ["--version"], ["help", "demo"], ["analyze", "-d", "t.msgpack", "-o", "out"], ["--log-level", "none", "analyze", "-d", "t.msgpack"],
      ["report", "-d", "t.msgpack", "--analysis", "q.sql"], ["report", "-d", "t.msgpack", "--analysis=q.SQL"], ["export", "-d", "t.msgpack"],
      ["plot", "hist", "-d", "t.msgpack"], ["sql", "-d", "t.msgpack", "select 1"]
    ]) assert.equal(runsBundled(argv), true, argv.join(" "))
    for (const argv of [
      ["demo"], ["run", "p.ts"], ["bench", "engine"], ["worker", "--scheduler", "h:1"], ["scheduler"], ["--wizard"], ["--log-level", "none", "demo"],
      ["analyze", "-d", "t.msgpack", "-a", "mine.mjs"], ["analyze", "-d", "t.msgpack", "-a", "Mine.TS"],
      ["report", "-d", "t.msgpack", "--analysis", "mine"], ["report", "-d", "t.msgpack", "--analysis=mine.js"]
    ]) assert.equal(runsBundled(argv), false, argv.join(" "))
    assert.equal(runsBundled(["analyze", "-d", "t.msgpack"], { TESSERA_NO_BUNDLE: "1" }), false)
  })

  it("spreads -d lists in the database commands only, keeping analyses and other flags", () => {
    assert.deepEqual(normalizeArgv(["report", "-d", "a", "b", "-o", "r.html"]).args, ["report", "--databases", "a", "--databases", "b", "-o", "r.html"])
    assert.deepEqual(normalizeArgv(["plot", "hist", "--db", "a", "b", "-d", "c"]).args, ["plot", "hist", "--databases", "a", "--databases", "b", "--databases", "c"])
    assert.deepEqual(
      normalizeArgv(["analyze", "-d", "a", "b", "task_balance", "c", "--head", "3"], { analysisNames: ["task_balance"] }).args,
      ["analyze", "--databases", "a", "--databases", "b", "task_balance", "--databases", "c", "--head", "3"]
    )
    assert.deepEqual(normalizeArgv(["run", "-d", "a", "b"]).args, ["run", "-d", "a", "b"])
    assert.deepEqual(normalizeArgv(["report", "-d", "a", "--", "b"]).args, ["report", "--databases", "a", "--", "b"])
  })

  it("turns help [COMMAND] into --help and notes --verbose", () => {
    assert.deepEqual(normalizeArgv(["help"]).args, ["--help"])
    assert.deepEqual(normalizeArgv(["help", "plot", "hist"]).args, ["plot", "hist", "--help"])
    assert.equal(normalizeArgv(["report", "--verbose", "-d", "a"]).verbose, true)
  })
})

describe("-d/--databases in every command that reads databases", () => {
  it("report, export, plot hist and analyze take several paths after one -d, and repeated -d", async () => {
    const dir = tempDir()
    const [report, exportOne, exportTwo, exportRepeated, plot, analyze] = await Promise.all([
      tessera(["report", "-d", trace, resources, "-o", join(dir, "r.html")]),
      tessera(["export", "--databases", trace, "--format", "csv", "-o", join(dir, "one.csv")]),
      tessera(["export", "-d", trace, resources, "--format", "csv", "-o", join(dir, "two.csv")]),
      tessera(["export", "-d", trace, "--db", resources, "--format", "csv", "-o", join(dir, "repeated.csv")]),
      tessera(["plot", "hist", "-d", trace, resources, "--resource", "duration", "-o", dir]),
      tessera(["analyze", "-d", trace, resources, "function_bottleneck", "--head", "2"])
    ])
    for (const r of [report, exportOne, exportTwo, exportRepeated, plot, analyze]) {
      assert.equal(r.code, 0, show(r))
      assert.equal(notes(r.stderr), "", show(r))
    }
    assert.ok(readFileSync(join(dir, "r.html"), "utf8").includes("Task stream"))
    const rows = (f: string) => readFileSync(join(dir, f), "utf8").trimEnd().split("\n").length
    assert.equal(rows("one.csv"), 968)
    assert.ok(rows("two.csv") > rows("one.csv"), "the second database's events are exported too")
    assert.equal(rows("repeated.csv"), rows("two.csv"))
    assert.ok(existsSync(join(dir, "hist-duration.svg")))
    // a word naming an analysis is an analysis: only that one runs
    assert.match(analyze.stdout, /====================Function bottleneck====================/)
    assert.doesNotMatch(analyze.stdout, /Task bottleneck/)
  })
})

describe("help and version", () => {
  it("help shows every flag's default, on every command", async () => {
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, ReadonlyArray<RegExp>]> = [
      [["demo"], [/--samples[^\n]*\(default: 100000\)/, /--chunk-rows[^\n]*\(default: 5000\)/, /--workers[^\n]*\(default: available parallelism/, /--overwrite[^\n]*\(default: false\)/, /--json[^\n]*\(default: false\)/]],
      [["run"], [/--workers[^\n]*\(default: /, /--overwrite[^\n]*\(default: false\)/, /--report[^\n]*\(default: none\)/]],
      [["analyze"], [/--head[^\n]*\(default: 30\)/, /--format[^\n]*\(default: csv\)/, /--analyses[^\n]*\(default: function_bottleneck task_bottleneck task_balance\)/, /--databases, -d/]],
      [["report"], [/--output, -o[^\n]*\(default: report\.html\)/, /--databases, -d/]],
      [["export"], [/--format[^\n]*\(default: chrome\)/, /--databases, -d/]],
      [["plot", "hist"], [/--resource[^\n]*\(default: duration,size,cores,memory,peak_memory,io_bytes,bytes_in\)/, /--by[^\n]*\(default: run\)/, /--output, -o[^\n]*\(default: \.\)/, /--databases, -d/]],
      [["bench", "engine"], [/--tasks[^\n]*\(default: 10000\)/, /--repeats[^\n]*\(default: 5\)/, /--graph[^\n]*\(default: fanout\)/]]
    ]
    const results = await Promise.all(cases.map(([cmd]) => tessera([...cmd, "--help"])))
    cases.forEach(([cmd, patterns], i) => {
      const r = results[i]!
      assert.equal(r.code, 0, show(r))
      assert.equal(r.stderr, "", show(r))
      assert.match(r.stdout, new RegExp(`USAGE\\s+tessera ${cmd.join(" ")}`), show(r))
      assert.match(r.stdout, /--verbose/)
      for (const p of patterns) assert.match(r.stdout, p, `${cmd.join(" ")}: ${p}\n${r.stdout}`)
    })
  })

  it("tessera help lists the commands; tessera help COMMAND is COMMAND --help; --version is package.json's", async () => {
    const [help, helpReport, reportHelp, helpPlotHist, version, bare] = await Promise.all([
      tessera(["help"]),
      tessera(["help", "report"]),
      tessera(["report", "--help"]),
      tessera(["help", "plot", "hist"]),
      tessera(["--version"]),
      tessera([])
    ])
    assert.equal(help.code, 0, show(help))
    for (const c of ["demo", "run", "analyze", "report", "export", "plot", "bench"]) assert.match(help.stdout, new RegExp(`\\n  ${c}\\s`), c)
    assert.equal(helpReport.code, 0)
    assert.equal(helpReport.stdout, reportHelp.stdout)
    assert.match(helpPlotHist.stdout, /USAGE\s+tessera plot hist/)
    assert.equal(version.code, 0, show(version))
    assert.match(version.stdout, new RegExp(`^tessera v?${pkg.version.replace(/\./g, "\\.")}\\n$`))
    // a bare command that needs a subcommand: a usage error showing its help on stderr (issue 31 item 14)
    assert.equal(bare.code, 2, show(bare))
    assert.equal(bare.stdout, "")
    assert.match(bare.stderr, /SUBCOMMANDS/)
  })
})

describe("usage errors: exit 2, one stderr line naming the flag and the value", () => {
  it("unknown flag, bad value, value out of range, missing required flag, unknown command, stray argument", async () => {
    const [unknownFlag, notInt, outOfRange, missing, unknownCommand, stray, badFormat] = await Promise.all([
      tessera(["report", "-d", trace, "--bogus"]),
      tessera(["demo", "--workers", "many"]),
      tessera(["bench", "engine", "--tasks", "0"]),
      tessera(["export", "-d", trace]),
      tessera(["frob"]),
      tessera(["report", "-d", trace, "-o", "x.html", "extra"]),
      tessera(["export", "-d", trace, "--format", "pdf", "-o", "x"])
    ])
    assertUsage(unknownFlag, /--bogus/, /tessera report/)
    assertUsage(notInt, /--workers/, /"many"/)
    assertUsage(outOfRange, /--tasks/, /"0"/, /at least 1/)
    assertUsage(missing, /--output/)
    assertUsage(unknownCommand, /frob/)
    assertUsage(stray, /"extra"/)
    assertUsage(badFormat, /--format/, /"pdf"/)
  })

  it("demo --json --workers 0: stdout empty (or JSON), one stderr line, exit 2", async () => {
    const r = await tessera(["demo", "--json", "--workers", "0"])
    assertUsage(r, /--workers/, /"0"/)
    if (r.stdout.trim().length > 0) JSON.parse(r.stdout)
  })

  it("plot hist --resource bogus names the flag and the value, with no byte offset", async () => {
    const r = await tessera(["plot", "hist", "-d", trace, "--resource", "bogus"])
    assertUsage(r, /--resource/, /unknown resource bogus/)
    assert.doesNotMatch(r.stderr, /byte offset/)
  })

  it("analyze with an unknown analysis or no database", async () => {
    const [bogus, none] = await Promise.all([tessera(["analyze", "-d", trace, "-a", "bogus"]), tessera(["analyze"])])
    assertUsage(bogus, /unknown analysis bogus/)
    assertUsage(none, /no database/)
  })
})

describe("failures: exit 1, one stderr line naming what and where", () => {
  it("a missing database, in every command that reads them, names the file and no byte offset", async () => {
    const missing = join(tmpdir(), "tessera-no-such-database.msgpack")
    const results = await Promise.all([
      tessera(["report", "-d", missing, "-o", join(tempDir(), "r.html")]),
      tessera(["export", "-d", missing, "-o", join(tempDir(), "x.json")]),
      tessera(["plot", "hist", "-d", missing, "-o", tempDir()]),
      tessera(["analyze", "-d", missing])
    ])
    for (const r of results) assertFailure(r, /tessera-no-such-database\.msgpack/, /FileNotFound|no such file/)
    for (const r of results.slice(0, 3)) assert.doesNotMatch(r.stderr, /byte offset/)
  })

  it("a corrupt database names the file and the byte offset; --verbose adds the stack", async () => {
    const dir = tempDir()
    const garbage = join(dir, "garbage.msgpack")
    writeFileSync(garbage, "this is not a trace database, not even msgpack\n".repeat(20))
    const [r, v] = await Promise.all([tessera(["report", "-d", garbage, "-o", join(dir, "r.html")]), tessera(["export", "-d", garbage, "-o", join(dir, "x"), "--verbose"])])
    assertFailure(r, /garbage\.msgpack/, /byte offset \d+/)
    assert.equal(v.code, 1, show(v))
    assert.match(lines(v.stderr)[0]!, /^tessera export: .*garbage\.msgpack/)
    assert.ok(lines(v.stderr).length > 1, `--verbose prints the stack\n${v.stderr}`)
  })

  it("an output that cannot be written names it", async () => {
    // a missing folder is made (issue 31 item 14); a file where a folder should be is not
    const dir = tempDir()
    writeFileSync(join(dir, "blocker"), "")
    const r = await tessera(["export", "-d", trace, "-o", join(dir, "blocker", "sub", "x.json")])
    assertFailure(r, /tessera export:/, /blocker/, /ENOTDIR|EEXIST/)
  })

  it("run with a module that is not a pipeline names the file", async () => {
    const dir = tempDir()
    const m = join(dir, "notAPipeline.ts")
    writeFileSync(m, "export default 42\n")
    assertFailure(await tessera(["run", m]), /tessera run: .*notAPipeline\.ts: default export must be a Pipeline/)
  })
})

describe("--log-level, progress and --overwrite", () => {
  it("--log-level none silences the pipeline's INFO lines, which show by default", async () => {
    const [quiet, warn, normal] = await Promise.all([
      tessera(["run", fixture, "--workers", "1", "--log-level", "none"]),
      tessera(["--log-level", "warn", "run", fixture, "--workers", "1"]),
      tessera(["run", fixture, "--workers", "1"])
    ])
    for (const r of [quiet, warn, normal]) assert.equal(r.code, 0, show(r))
    assert.doesNotMatch(quiet.stdout + quiet.stderr, /INFO/)
    assert.doesNotMatch(warn.stdout + warn.stderr, /INFO/)
    assert.match(quiet.stdout, /pipeline twostages: 2 stages/)
    // the log goes to stderr (issue 31 item 11)
    assert.match(normal.stderr, /INFO - Task 'Normalize\.transform': Starting task run\.\.\./)
    assert.match(normal.stderr, /INFO - Pipeline run successfully/)
    assert.doesNotMatch(normal.stdout, /INFO/)
  })

  it("report, export and plot show one progress line on stderr, updated with \\r, when asked (large input or a terminal)", async () => {
    const dir = tempDir()
    // the terminal style (off a terminal, progress is plain lines: Issue31.test.ts)
    const env = { TESSERA_PROGRESS: "tty" }
    const results = await Promise.all([
      tessera(["report", "-d", trace, "-o", join(dir, "r.html")], { env }),
      tessera(["export", "-d", trace, "-o", join(dir, "x.json")], { env }),
      tessera(["plot", "hist", "-d", trace, "--resource", "size", "-o", dir], { env }),
      tessera(["report", "-d", trace, "-o", join(dir, "q.html"), "--log-level", "none"], { env })
    ])
    for (const r of results) assert.equal(r.code, 0, show(r))
    for (const [r, label] of [[results[0]!, "report"], [results[1]!, "export"], [results[2]!, "plot hist"]] as const) {
      assert.ok(r.stderr.startsWith(`\r${label}: `), show(r))
      assert.equal(lines(notes(r.stderr)).length, 1, show(r))
      assert.ok(r.stderr.endsWith("\n"))
      assert.doesNotMatch(r.stdout, /\r/)
    }
    assert.equal(results[3]!.stderr, "", "--log-level none silences progress")
  })

  it("analyze shows its load, then one finished line per analysis, with rows and seconds, when progress is shown", async () => {
    const dir = tempDir()
    const r = await tessera(["analyze", "-d", trace, "-o", dir, "-a", "function_bottleneck", "task_balance"], { env: { TESSERA_PROGRESS: "tty" } })
    assert.equal(r.code, 0, show(r))
    const finished = r.stderr.split("\n").map((l) => l.split("\r").at(-1)!.trimEnd()).filter((l) => l !== "")
    const ran = finished.filter((l) => !l.includes("warning"))
    assert.match(ran[0]!, /^analyze: loaded \d+ events from 1 database\(s\) in \d+\.\d\d s$/)
    assert.match(ran[1]!, /^analyze: function_bottleneck \(1\/2\): \d+ rows in \d+\.\d\d s$/)
    assert.match(ran[2]!, /^analyze: task_balance \(2\/2\): \d+ rows in \d+\.\d\d s$/)
    assert.equal(ran.length, 3, show(r))
    assert.doesNotMatch(r.stdout, /\r/)
    const quiet = await tessera(["analyze", "-d", trace, "-a", "task_balance"], { env: { TESSERA_PROGRESS: "0" } })
    assert.doesNotMatch(quiet.stderr, /rows in/)
  })

  it("run --profile appends (with a warning) to an earlier run's databases; --overwrite replaces them", async () => {
    const dir = tempDir()
    const file = join(dir, `u-TracePlugin-${hostname()}.msgpack`)
    const first = await tessera(["run", fixture, "--workers", "1", "--profile", "u"], { cwd: dir })
    assert.equal(first.code, 0, show(first))
    const size = statSync(file).size
    const again = await tessera(["run", fixture, "--workers", "1", "--profile", "u"], { cwd: dir })
    assert.equal(again.code, 0, show(again))
    assert.match(again.stderr, /already holds \d+ bytes/)
    assert.ok(statSync(file).size > size * 1.5)
    const replaced = await tessera(["run", fixture, "--workers", "1", "--profile", "u", "--overwrite"], { cwd: dir })
    assert.equal(replaced.code, 0, show(replaced))
    assert.doesNotMatch(replaced.stderr, /already holds|warning/)
    assert.ok(statSync(file).size < size * 1.5)
  })
})

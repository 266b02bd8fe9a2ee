/**
 * `tessera sql`, and user analyses in `tessera analyze -a FILE` and `tessera report
 * --analysis FILE`, end to end through the command line.
 */
import assert from "node:assert/strict"
import { execFile, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { tableFromIPC } from "apache-arrow"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const data = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))
const trace = join(data, "small-TracePlugin.msgpack")
const res = join(data, "small-ResourceMonitor.msgpack")
const tessera = (...args: Array<string>) => promisify(execFile)(process.execPath, [main, ...args], { timeout: 60_000 })
const fails = (args: Array<string>, input?: string) => spawnSync(process.execPath, [main, ...args], { encoding: "utf8", timeout: 60_000, ...(input !== undefined ? { input } : {}) })
const dir = mkdtempSync(join(tmpdir(), "tessera-sql-cli-"))

describe("tessera sql", () => {
  after(() => rmSync(dir, { recursive: true, force: true }))

  it("prints a table, CSV and JSON, and writes Arrow", async () => {
    const q = "SELECT worker, tasks FROM workers ORDER BY worker"
    const text = await tessera("sql", "-d", trace, res, q)
    assert.deepStrictEqual(text.stdout.trimEnd().split("\n"), ["worker       tasks", "worker-vm-0    207", "worker-vm-1    202"])
    const csv = await tessera("sql", "-d", trace, "--csv", q)
    assert.equal(csv.stdout, "worker,tasks\nworker-vm-0,207\nworker-vm-1,202\n")
    const json = await tessera("sql", "-d", trace, "--json", "--arrow", join(dir, "w.arrow"), q)
    assert.deepStrictEqual(json.stdout.trimEnd().split("\n").map((l) => JSON.parse(l)), [
      { worker: "worker-vm-0", tasks: 207 },
      { worker: "worker-vm-1", tasks: 202 }
    ])
    assert.deepStrictEqual(tableFromIPC(readFileSync(join(dir, "w.arrow"))).getChild("tasks")!.toJSON(), [207, 202])
  })

  it("fails a bad query with one stderr line naming the position, exit 1", () => {
    const r = fails(["sql", "-d", trace, "SELECT durtion FROM tasks"])
    assert.equal(r.status, 1)
    assert.equal(r.stdout, "")
    assert.equal(r.stderr, "tessera sql: Binder Error: Referenced column \"durtion\" not found in FROM clause! (line 1, column 8)\n")
  })

  it("runs statements read at its prompt, going on after an error", () => {
    const r = fails(["sql", "-d", trace], "SELECT count(*) AS n FROM tasks;\n.tables\nSELECT nope;\nSELECT\n  2 AS b;\n")
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, / +n\n409\n/)
    assert.match(r.stdout, /\ndependencies\nmemory\nresources\nsamples\nstages\ntasks\ntransfers\nworkers\n/)
    assert.match(r.stdout, /\nb\n2\n/)
    assert.match(r.stderr, /^error: Binder Error: .*"nope".* \(line 1, column 8\)\n$/)
  })

  it("completes table and column names", async () => {
    const { complete } = await import("../../src/cli/commands/sqlPrompt.ts")
    const cols = [{ table: "tasks", column: "duration" }, { table: "tasks", column: "key" }, { table: "workers", column: "busy" }]
    assert.deepStrictEqual(complete(cols, "SELECT dur"), [["duration"], "dur"])
    assert.deepStrictEqual(complete(cols, "SELECT * FROM wo"), [["workers"], "wo"])
    assert.deepStrictEqual(complete(cols, "SELECT tasks.k"), [["tasks.key"], "tasks.k"])
    assert.deepStrictEqual(complete(cols, ".sch"), [[".schema"], ".sch"])
  })

  it("does not load DuckDB for --help", () => {
    const hook = join(dir, "hook.mjs")
    writeFileSync(hook, `import { registerHooks } from "node:module"
registerHooks({ resolve(spec, ctx, next) { if (spec.includes("duckdb")) process.stderr.write("LOADED " + spec + "\\n"); return next(spec, ctx) } })
`)
    for (const args of [["--help"], ["sql", "--help"], ["analyze", "--help"]]) {
      const r = spawnSync(process.execPath, ["--import", hook, main, ...args], { encoding: "utf8", timeout: 60_000 })
      assert.equal(r.status, 0, r.stderr)
      assert.doesNotMatch(r.stderr, /LOADED/, args.join(" "))
    }
  })

  it("runs a .sql file and a module as analyses, with the built-ins' CSV and Arrow output", async () => {
    writeFileSync(join(dir, "mine.sql"), "-- busiest workers\nSELECT worker, tasks FROM workers ORDER BY worker\n")
    writeFileSync(join(dir, "count.mjs"), "export default async (tables) => tables.tasks.select([\"worker\"])\n")
    const out = join(dir, "out")
    const r = await tessera("analyze", "-d", trace, "-a", "task_balance", join(dir, "mine.sql"), join(dir, "count.mjs"), "-o", out, "--format", "arrow")
    assert.match(r.stdout, /={20}mine\.sql={20}\nworker       tasks\nworker-vm-0    207\nworker-vm-1    202\n/)
    assert.match(r.stdout, /={20}count\.mjs={20}/)
    assert.equal(readFileSync(join(out, "mine.csv"), "utf8"), "worker,tasks\nworker-vm-0,207\nworker-vm-1,202\n")
    assert.equal(tableFromIPC(readFileSync(join(out, "count.arrow"))).numRows, 409)
    assert.ok(readFileSync(join(out, "task_balance.csv"), "utf8").length > 0)
    writeFileSync(join(dir, "bad.mjs"), "export const x = 1\n")
    const bad = fails(["analyze", "-d", trace, "-a", join(dir, "bad.mjs")])
    assert.equal(bad.status, 1)
    assert.match(bad.stderr, /^tessera analyze: analysis .*bad\.mjs: exports no function/)
  })

  it("adds a user analysis to the report", async () => {
    const html = join(dir, "r.html")
    await tessera("report", "-d", trace, "--analysis", join(dir, "mine.sql"), "-o", html)
    const text = readFileSync(html, "utf8")
    assert.ok(text.includes("mine.sql"), "the table's title")
    assert.ok(text.includes("worker-vm-0"))
  })
})

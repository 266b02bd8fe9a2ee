/**
 * Issue 32 item 13: what `tessera sql` may do. Without `--safe` a query is DuckDB's full
 * SQL over your files (as DuckDB's own shell); `--safe` takes file access and extensions
 * away once the trace tables are loaded, and `.sql` analyses of `analyze -a` and `report
 * --analysis` run that way unless `--unsafe-sql`.
 */
import assert from "node:assert/strict"
import { execFile, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const trace = fileURLToPath(new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url))
const tessera = (...args: Array<string>) => promisify(execFile)(process.execPath, [main, ...args], { timeout: 60_000 })
const fails = (args: Array<string>, input?: string) => spawnSync(process.execPath, [main, ...args], { encoding: "utf8", timeout: 60_000, ...(input !== undefined ? { input } : {}) })
const dir = mkdtempSync(join(tmpdir(), "tessera-sql-safe-"))
after(() => rmSync(dir, { recursive: true, force: true }))

describe("issue 32 item 13: what a query may do", () => {
  const passwd = existsSync("/etc/passwd") ? "/etc/passwd" : undefined
  const readable = passwd ?? trace

  it("issue 32 item 13: sql --safe refuses read_csv, COPY TO, ATTACH, INSTALL and LOAD with a clear error, and cannot be switched back", () => {
    const copied = join(dir, "copied.csv")
    const attached = join(dir, "attached.db")
    const one = fails(["sql", "-d", trace, "--safe", `SELECT count(*) FROM read_csv('${readable}')`])
    assert.equal(one.status, 1)
    assert.equal(one.stdout, "")
    assert.match(one.stderr, /^tessera sql: Permission Error: Cannot access file ".*" - file system operations are disabled by configuration \(safe mode: no file access, no extensions\)/)
    assert.equal(one.stderr.trim().split("\n").length, 1, one.stderr)
    // the rest at its prompt, in one process: each refused, the tables still there
    const statements = [
      `COPY (SELECT 1 AS a) TO '${copied}';`,
      `ATTACH '${attached}';`,
      "INSTALL httpfs;",
      "LOAD httpfs;",
      "SET enable_external_access = true;",
      `SELECT * FROM read_csv('${readable}');`,
      "SELECT count(*) AS n FROM tasks;"
    ]
    const r = fails(["sql", "-d", trace, "--safe"], statements.join("\n") + "\n")
    assert.equal(r.status, 0, r.stderr)
    const errors = r.stderr.trim().split("\n").filter((l) => l.startsWith("error: "))
    assert.equal(errors.length, 6, r.stderr)
    assert.match(errors[0]!, /Permission Error: Cannot access file ".*copied\.csv"/)
    assert.match(errors[1]!, /Permission Error: Cannot access file ".*attached\.db"/)
    assert.match(errors[2]!, /Permission Error/) // INSTALL: no download tried
    assert.match(errors[3]!, /Permission Error: Loading external extensions is disabled/)
    assert.match(errors[4]!, /the configuration has been locked/)
    assert.match(errors[5]!, /Permission Error/)
    assert.match(r.stdout, / +n\n409\n/)
    assert.equal(existsSync(copied), false)
    assert.equal(existsSync(attached), false)
  })

  it("issue 32 item 13: without --safe, sql is DuckDB's full SQL over your files, as documented", () => {
    const copied = join(dir, "full.csv")
    const r = fails(["sql", "-d", trace, `COPY (SELECT count(*) AS n FROM tasks) TO '${copied}' (HEADER)`])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(readFileSync(copied, "utf8"), "n\n409\n")
  })

  it("issue 32 item 13: report --analysis and analyze -a run a .sql file in safe mode unless --unsafe-sql", async () => {
    const reads = join(dir, "reads.sql")
    const wrote = join(dir, "wrote.csv")
    writeFileSync(reads, `COPY (SELECT 1 AS a) TO '${wrote}';\nSELECT count(*) AS n FROM read_csv('${join(dir, "copied-none.csv")}')\n`)
    const html = join(dir, "safe.html")
    const rep = fails(["report", "-d", trace, "--analysis", reads, "-o", html])
    assert.equal(rep.status, 1)
    assert.match(rep.stderr, /^tessera report: Permission Error: Cannot access file ".*wrote\.csv" - file system operations are disabled by configuration \(safe mode: no file access, no extensions\)/m)
    assert.equal(existsSync(wrote), false)
    assert.equal(existsSync(html), false)
    const an = fails(["analyze", "-d", trace, "-a", reads])
    assert.equal(an.status, 1)
    assert.match(an.stderr, /^tessera analyze: Permission Error: .*\(safe mode: no file access, no extensions\)/m)
    assert.equal(existsSync(wrote), false)
    // opted out: the file is written, as the .sql says
    const full = join(dir, "full.sql")
    writeFileSync(full, `COPY (SELECT 1 AS a) TO '${wrote}';\nSELECT count(*) AS n FROM tasks\n`)
    await tessera("analyze", "-d", trace, "-a", full, "--unsafe-sql")
    assert.equal(existsSync(wrote), true)
  })
})

/**
 * `-o` never overwrites an input: report, export and analyze refuse an output that is
 * one of their databases (same file once resolved) with a usage error (exit 2), and the
 * database is left as it was.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = fileURLToPath(new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url))

describe("OutputClash", () => {
  let dir = ""
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "tessera-clash-"))
    copyFileSync(fixture, join(dir, "db.msgpack"))
    copyFileSync(fixture, join(dir, "task_balance.csv"))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, string]> = [
    ["report", ["report", "-d", "db.msgpack", "-o", "./db.msgpack"], "./db.msgpack"],
    ["export", ["export", "-d", "db.msgpack", "--format", "csv", "-o", "./sub/../db.msgpack"], "db.msgpack"],
    ["analyze", ["analyze", "-d", "task_balance.csv", "-o", "."], "task_balance.csv"]
  ]
  for (const [name, args, shown] of cases) {
    it(`${name} refuses an output that is one of its inputs`, () => {
      const before = readFileSync(join(dir, shown.replace(/^.*\//, "")))
      const r = spawnSync(process.execPath, [main, ...args], { cwd: dir, encoding: "utf8" })
      assert.equal(r.status, 2, r.stderr)
      assert.equal(r.stdout, "")
      assert.equal(r.stderr.trim().split("\n").length, 1)
      assert.match(r.stderr, /--output .*is one of the input databases/)
      assert.deepEqual(readFileSync(join(dir, shown.replace(/^.*\//, ""))), before)
    })
  }

  it("analyze fails on an output folder it cannot make before it reads the databases", () => {
    const r = spawnSync(process.execPath, [main, "analyze", "-d", "db.msgpack", "-o", "db.msgpack/out"], { cwd: dir, encoding: "utf8" })
    assert.equal(r.status, 1, r.stderr)
    assert.match(r.stderr, /could not write db\.msgpack\/out: ENOTDIR/)
    assert.doesNotMatch(r.stderr, /loaded \d+ events/)
  })

  it("analyze and plot fail at once on an output folder under /proc (where Node's recursive mkdir loops)", { skip: !existsSync("/proc/self") && "no /proc here" }, () => {
    for (const args of [
      ["analyze", "-d", "db.msgpack", "-o", "/proc/tessera-no-such-folder/out"],
      ["plot", "hist", "-d", "db.msgpack", "-o", "/proc/tessera-no-such-folder/out"]
    ]) {
      const r = spawnSync(process.execPath, [main, ...args], { cwd: dir, encoding: "utf8", timeout: 60_000 })
      assert.equal(r.signal, null, `${args[0]} returned`)
      assert.equal(r.status, 1, r.stderr)
      assert.match(r.stderr, /ENOENT.*\/proc\/tessera-no-such-folder/)
    }
  })
})

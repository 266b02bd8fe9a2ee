/**
 * `-o` never overwrites an input: report, export, analyze, plot hist and sql --arrow
 * refuse an output that is one of their databases — the same device and inode, so the
 * same path, a symbolic link or a hard link to it — with one line naming both (exit 1),
 * and the database is left as it was, byte for byte (issue 32 item 1; hard links:
 * HardLinkOutput.test.ts).
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
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
      assert.equal(r.status, 1, r.stderr)
      assert.equal(r.stdout, "")
      assert.equal(r.stderr.trim().split("\n").length, 1)
      assert.match(r.stderr, /--output .*is the same file as the input .*: choose another output/)
      assert.deepEqual(readFileSync(join(dir, shown.replace(/^.*\//, ""))), before)
    })
  }

  it("issue 32 item 1: a symbolic link to the input is refused too, and a symbolic link to another file is written through", () => {
    const d = mkdtempSync(join(dir, "sym-"))
    copyFileSync(fixture, join(d, "trace.msgpack"))
    symlinkSync("trace.msgpack", join(d, "to-input.csv"))
    const before = readFileSync(join(d, "trace.msgpack"))
    const r = spawnSync(process.execPath, [main, "export", "-d", "trace.msgpack", "--format", "csv", "-o", "to-input.csv"], { cwd: d, encoding: "utf8" })
    assert.equal(r.status, 1, r.stderr)
    assert.match(r.stderr, /to-input\.csv is the same file as the input trace\.msgpack \(a symbolic link to it\)/)
    assert.deepEqual(readFileSync(join(d, "trace.msgpack")), before)
    // a link to an output elsewhere: the link is kept, its target replaced whole
    mkdirSync(join(d, "real"))
    copyFileSync(fixture, join(d, "real", "out.csv"))
    symlinkSync("real/out.csv", join(d, "link.csv"))
    const w = spawnSync(process.execPath, [main, "export", "-d", "trace.msgpack", "--format", "csv", "-o", "link.csv"], { cwd: d, encoding: "utf8" })
    assert.equal(w.status, 0, w.stderr)
    assert.match(readFileSync(join(d, "real", "out.csv"), "utf8"), /^[a-z_]+,/)
    assert.equal(readFileSync(join(d, "link.csv"), "utf8"), readFileSync(join(d, "real", "out.csv"), "utf8"))
  })

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

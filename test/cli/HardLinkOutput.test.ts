/**
 * A hard-linked output never overwrites its input (issue 32 item 1): `ln trace.msgpack
 * rep.html; tessera report -d trace.msgpack -o rep.html` and the same for every command
 * that writes files is refused with one line naming both (exit 1), and the trace is left
 * byte for byte, its link too. Same path and symbolic links: OutputClash.test.ts.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { copyFileSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = fileURLToPath(new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url))

describe("HardLinkOutput", () => {
  let dir = ""
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "tessera-hardlink-"))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  // a hard link is another name for the same file: the check is by device and inode
  const linked: ReadonlyArray<readonly [string, (out: string) => ReadonlyArray<string>, string]> = [
    ["report", (out) => ["report", "-d", "trace.msgpack", "-o", out], "rep.html"],
    ["export --format csv", (out) => ["export", "-d", "trace.msgpack", "--format", "csv", "-o", out], "out.csv"],
        ["export --format arrow", (out) => ["export", "-d", "trace.msgpack", "--format", "arrow", "-o", out], "out.arrow"],
    ["analyze -o DIR", (out) => ["analyze", "-d", "trace.msgpack", "-o", out.replace(/\/[^/]*$/, "")], "o/task_balance.csv"],
    ["analyze -o DIR --format arrow", (out) => ["analyze", "-d", "trace.msgpack", "-o", out.replace(/\/[^/]*$/, ""), "--format", "arrow"], "a/function_bottleneck.arrow"],
    ["plot hist -o DIR", (out) => ["plot", "hist", "-d", "trace.msgpack", "--resource", "duration", "-o", out.replace(/\/[^/]*$/, "")], "p/hist-duration.png"],
    ["sql --arrow", (out) => ["sql", "-d", "trace.msgpack", "SELECT 1 AS one", "--arrow", out], "q.arrow"]
  ]
  for (const [name, args, out] of linked) {
    it(`issue 32 item 1: ${name} refuses an output hard-linked to its input, which stays byte for byte`, () => {
      const d = mkdtempSync(join(dir, "link-"))
      copyFileSync(fixture, join(d, "trace.msgpack"))
      if (out.includes("/")) mkdirSync(join(d, out.replace(/\/[^/]*$/, "")))
      linkSync(join(d, "trace.msgpack"), join(d, out))
      const before = readFileSync(join(d, "trace.msgpack"))
      const r = spawnSync(process.execPath, [main, ...args(out)], { cwd: d, encoding: "utf8", timeout: 120_000 })
      assert.equal(r.status, 1, r.stderr)
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr)
      assert.ok(r.stderr.includes(`${out} is the same file as the input trace.msgpack (a hard link to it)`), r.stderr)
      assert.match(r.stderr, /^tessera [a-z ]+: --(output|arrow) /)
      assert.deepEqual(readFileSync(join(d, "trace.msgpack")), before)
      assert.equal(statSync(join(d, "trace.msgpack")).nlink, 2, "the link is left as it was")
      // nothing half-written left beside it
      assert.deepEqual(readdirSync(out.includes("/") ? join(d, out.replace(/\/[^/]*$/, "")) : d).filter((f) => f.includes(".tmp-")), [])
    })
  }
})

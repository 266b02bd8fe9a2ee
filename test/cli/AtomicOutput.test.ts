/**
 * Outputs never half-exist (issue 32 item 3): `export`, `analyze -o` and `report` write
 * beside their output and rename once whole, so a write that fails (a full disk, a file
 * size limit) leaves the previous file, or none, and no temporary file — never a
 * truncated output. SIGTERM mid-write: AtomicOutputSignals.test.ts.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = fileURLToPath(new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url))

const temporaries = (d: string): ReadonlyArray<string> => readdirSync(d).filter((f) => f.includes(".tmp-"))

/** `tessera ARGS` in `cwd` under a file size limit of `kib` KiB (`ulimit -f`: writes past it fail with EFBIG). */
const limited = (kib: number, cwd: string, args: ReadonlyArray<string>) =>
  spawnSync("/bin/sh", ["-c", `ulimit -f ${kib} && exec "$0" "$@"`, process.execPath, main, ...args], { cwd, encoding: "utf8", timeout: 120_000 })

/** A tmpfs of `size` mounted at a new folder, where the test may (root, Linux); else the reason it may not. */
const mountTmpfs = (size: string): { readonly dir: string } | { readonly skip: string } => {
  if (process.platform !== "linux" || process.getuid?.() !== 0) return { skip: "mounting a tmpfs needs root on Linux" }
  const dir = mkdtempSync(join(tmpdir(), "tessera-tmpfs-"))
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tessera-test", dir], { encoding: "utf8" })
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    return { skip: `cannot mount a tmpfs here: ${(r.stderr || r.error?.message || "").trim()}` }
  }
  return { dir }
}

describe("AtomicOutput", () => {
  let dir = ""
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "tessera-atomic-"))
    copyFileSync(fixture, join(dir, "trace.msgpack"))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const shLimit = process.platform === "win32" ? "no ulimit -f on Windows" : false

  it("issue 32 item 3: export and report that fail mid-write (EFBIG under ulimit -f) keep the previous output and leave no temporary file", { skip: shLimit }, () => {
    const d = mkdtempSync(join(dir, "efbig-"))
    copyFileSync(join(dir, "trace.msgpack"), join(d, "trace.msgpack"))
    for (const [args, out] of [
      [["export", "-d", "trace.msgpack", "--format", "csv", "-o", "out.csv"], "out.csv"],
      [["report", "-d", "trace.msgpack", "-o", "rep.html"], "rep.html"]
    ] as const) {
      writeFileSync(join(d, out), "the previous output\n")
      // the fixture's CSV is ~190 KiB, its JSON and report larger: 64 KiB is not enough
      const r = limited(64, d, args)
      assert.equal(r.status, 1, `${args[0]}: ${r.stderr}`)
      assert.match(r.stderr, new RegExp(`${out.replace(".", "\\.")}.*EFBIG|EFBIG.*${out.replace(".", "\\.")}`), r.stderr)
      assert.equal(r.stderr.trim().split("\n").filter((l) => l.startsWith("tessera ")).length, 1, r.stderr)
      assert.equal(readFileSync(join(d, out), "utf8"), "the previous output\n", `${args[0]} kept ${out}`)
      assert.deepEqual(temporaries(d), [])
    }
  })

  it("issue 32 item 3: analyze -o that fails on one table (EFBIG) keeps that table's previous CSV, writes the others whole, no temporary file", { skip: shLimit }, () => {
    const d = mkdtempSync(join(dir, "analyze-"))
    const out = join(d, "out")
    mkdirSync(out)
    writeFileSync(join(out, "task_bottleneck.csv"), "the previous table\n")
    // task_bottleneck.csv is ~42 KiB, the others a few KiB
    const r = limited(20, dir, ["analyze", "-d", "trace.msgpack", "-o", out])
    assert.equal(r.status, 1, r.stderr)
    assert.match(r.stderr, /could not write .*task_bottleneck\.csv: EFBIG/)
    assert.equal(readFileSync(join(out, "task_bottleneck.csv"), "utf8"), "the previous table\n")
    assert.deepEqual(temporaries(out), [])
    for (const f of readdirSync(out).filter((f) => f !== "task_bottleneck.csv")) {
      assert.match(readFileSync(join(out, f), "utf8"), /\n$/, `${f} is whole`)
    }
  })

  it("issue 32 item 3: a full disk (a 32 KiB tmpfs, ENOSPC) fails export and analyze -o with the output named; the previous files stay", async (t) => {
    const m = mountTmpfs("32k")
    if ("skip" in m) return t.skip(m.skip)
    try {
      // the previous outputs, small: the tmpfs has room for them, not for the new ones
      writeFileSync(join(m.dir, "out.csv"), "previous\n")
      mkdirSync(join(m.dir, "tables"))
      writeFileSync(join(m.dir, "tables", "task_bottleneck.csv"), "previous\n")
      for (const [args, out] of [
        [["export", "-d", "trace.msgpack", "--format", "csv", "-o", join(m.dir, "out.csv")], "out.csv"],
        [["analyze", "-d", "trace.msgpack", "-o", join(m.dir, "tables")], "tables/task_bottleneck.csv"]
      ] as const) {
        const r = spawnSync(process.execPath, [main, ...args], { cwd: dir, encoding: "utf8", timeout: 120_000 })
        assert.equal(r.status, 1, `${args[0]}: ${r.stderr}`)
        assert.match(r.stderr, /ENOSPC/, r.stderr)
        assert.ok(r.stderr.includes(join(m.dir, args[0] === "analyze" ? "tables" : out)), r.stderr)
        assert.equal(readFileSync(join(m.dir, out), "utf8"), "previous\n", `${args[0]} kept ${out}`)
        assert.deepEqual(temporaries(m.dir), [])
        assert.deepEqual(temporaries(join(m.dir, "tables")), [])
      }
    } finally {
      spawnSync("umount", [m.dir])
      rmSync(m.dir, { recursive: true, force: true })
    }
  })
})

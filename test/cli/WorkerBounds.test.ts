/**
 * Issue 32 item 7 through the command line: `--workers` and `--threads` are bounded by
 * what the machine can host (a usage error naming the bound and why, exit 2, at once:
 * `demo --workers 1e9` once died after 101 s at 13.4 GB).
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { tmpdir } from "node:os"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

describe("worker counts", { timeout: 120_000 }, () => {
  it("issue 32 item 7: --workers 1e9 and --threads 1e9 are usage errors naming the bound and why (exit 2, at once)", () => {
    for (const args of [["demo", "--workers", "1e9"], ["run", "x.ts", "--workers", "1000000"], ["worker", "--scheduler", "127.0.0.1:1", "--threads", "1e9"]]) {
      const t0 = performance.now()
      const r = spawnSync(process.execPath, [main, ...args], { encoding: "utf8", timeout: 60_000, cwd: tmpdir() })
      assert.equal(r.status, 2, `${args.join(" ")}: exit ${r.status}\n${r.stderr}`)
      assert.match(r.stderr, /--(workers|threads) "\d+": expected an integer of at most \d+, what this machine can host: .*GiB free at 64 MiB a thread.*4 (threads )?per core/)
      assert.ok(performance.now() - t0 < 30_000)
    }
  })

})

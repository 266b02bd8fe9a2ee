/**
 * Issue 32 item 7 through the command line, beyond `--workers`/`--threads` of demo, run
 * and worker (test/cli/WorkerBounds.test.ts): `bench engine --workers`, `bench cluster
 * --workers` and `--cluster local:N` are bounded by the engine's own rule
 * (`Executor.maxWorkers()`), a usage error naming the bound and why (exit 2), at once and
 * before any worker starts.
 */
import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { tmpdir } from "node:os"
import { describe, it } from "node:test"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const tessera = (args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, [main, ...args], { encoding: "utf8", timeout: 60_000, cwd: tmpdir() })

const why = /what this machine can host: .*GiB free at 64 MiB a thread.*4 (threads )?per core/

describe("worker counts of bench and --cluster local:N", { timeout: 180_000 }, () => {
  it("issue 32 item 7: bench engine --workers 1e9 and bench cluster --workers 1e9 exit 2 naming the bound and why", () => {
    for (const args of [["bench", "engine", "--workers", "1e9"], ["bench", "cluster", "--workers", "1e9"], ["bench", "cluster", "--workers", "0"]]) {
      const t0 = performance.now()
      const r = tessera(args)
      assert.equal(r.status, 2, `${args.join(" ")}: exit ${r.status}\n${r.stderr}`)
      assert.match(r.stderr, args[3] === "0" ? /--workers "0": expected an integer of at least 1/ : /--workers "\d+": expected an integer of at most \d+, /)
      if (args[3] !== "0") assert.match(r.stderr, why)
      assert.equal(r.stdout, "")
      assert.ok(performance.now() - t0 < 30_000)
    }
  })

  it("issue 32 item 7: --cluster local:100000 is refused with the engine's bound (exit 2, at once)", () => {
    const t0 = performance.now()
    const r = tessera(["demo", "--cluster", "local:100000"])
    assert.equal(r.status, 2, r.stderr)
    assert.match(r.stderr, /--cluster "local:100000": local:N needs 1 <= N <= \d+, what this machine can host/)
    assert.ok(performance.now() - t0 < 30_000)
  })
})

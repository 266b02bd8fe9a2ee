/**
 * Issue 33 from the command line: `tessera scheduler` off loopback makes a token file
 * (mode 0600, reused on restart) and prints the line a worker needs; a worker without the
 * token, or with another, cannot join; one with it joins and `tessera run` computes on
 * it with the token; the token never appears in any output, trace file or process
 * title; `--insecure` works and says so; a worker bound off loopback without a token is
 * refused before it starts.
 */
import assert from "node:assert/strict"
import type { ChildProcess } from "node:child_process"
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { startTessera } from "./tesseraProcess.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/twoStages.ts", import.meta.url))
const procs: Array<ChildProcess> = []
const dir = mkdtempSync(join(tmpdir(), "tessera-cluster-security-"))
after(() => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

/** A child environment with HOME in the test's folder (the default token file goes there). */
const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => {
  const e: NodeJS.ProcessEnv = { ...process.env, HOME: dir, NODE_OPTIONS: "", ...extra }
  delete e.TESSERA_CLUSTER_TOKEN
  return e
}

const titles = (pids: ReadonlyArray<number>): string =>
  pids.map((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ")
    } catch {
      return ""
    }
  }).join("\n")

describe("tessera scheduler, worker and run with a cluster token", { timeout: 240_000 }, () => {
  it("issue 33: off loopback the scheduler makes ~/.tessera/cluster.token (0600) and prints the join line; --insecure says so; a worker bound off loopback without the token is refused", async () => {
    const s = startTessera(procs, ["scheduler", "--host", "0.0.0.0", "--port", "0"], { env: env() })
    const line = await s.wait(/workers join with {2}tessera worker --scheduler (\S+):(\d+) --token-file (\S+)/, 60)
    const file = join(dir, ".tessera", "cluster.token")
    assert.equal(line[3], file)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    const token = readFileSync(file, "utf8").trim()
    assert.match(token, /^tessera-token-v1:[A-Za-z0-9_-]{43}$/)
    await s.wait(/fingerprint [0-9a-f]{8}/, 10)
    assert.ok(!(s.out.stdout + s.out.stderr).includes(token.slice(17)), "the token is not printed")
    assert.ok(!titles([s.p.pid!]).includes(token.slice(17)), "the token is not in the process title")
    s.p.kill("SIGTERM")
    await s.exited
    // a restart reuses the file: the workers' copies stay good
    const again = startTessera(procs, ["scheduler", "--host", "0.0.0.0", "--port", "0"], { env: env() })
    await again.wait(/workers join with/, 60)
    assert.equal(readFileSync(file, "utf8").trim(), token)
    again.p.kill("SIGTERM")
    await again.exited

    const insecure = startTessera(procs, ["scheduler", "--host", "0.0.0.0", "--port", "0", "--insecure"], { env: env() })
    await insecure.wait(/--insecure: plain TCP beyond loopback/, 60)
    await insecure.wait(/workers join with {2}tessera worker --scheduler \S+ --insecure/, 10)
    insecure.p.kill("SIGTERM")
    await insecure.exited

    const w = spawnSync(process.execPath, [main, "worker", "--scheduler", "127.0.0.1:9", "--listen", "0.0.0.0:0"], { encoding: "utf8", env: env(), timeout: 60_000 })
    assert.notEqual(w.status, 0, w.stdout + w.stderr)
    assert.match(w.stderr, /0\.0\.0\.0 is not a loopback address: links beyond this machine need the cluster's token/)
  })

  it("issue 33: a worker without the token or with another cannot join a TLS scheduler; one with it joins and tessera run computes on it; the token is in no output, trace or process title", async () => {
    const tokenFile = join(dir, "cluster.token")
    const s = startTessera(procs, ["scheduler", "--host", "127.0.0.1", "--port", "0", "--token-file", tokenFile], { env: env() })
    const [, addr] = await s.wait(/workers join with {2}tessera worker --scheduler (\S+) --token-file/, 60)
    const token = readFileSync(tokenFile, "utf8").trim()
    // no token: plain TCP to a TLS port, refused in the handshake and never registered
    const plain = startTessera(procs, ["worker", "--scheduler", addr!, "--connect-timeout", "4"], { env: env() })
    // another cluster's token
    const wrongFile = join(dir, "wrong.token")
    writeFileSync(wrongFile, "tessera-token-v1:" + "B".repeat(43) + "\n", { mode: 0o600 })
    const wrong = startTessera(procs, ["worker", "--scheduler", addr!, "--token-file", wrongFile, "--connect-timeout", "4"], { env: env() })
    await s.wait(/refused \d+ connections? on the registry port .*(not TLS|wrong or no cluster token)/, 60)
    const ends = await Promise.all([plain.exited, wrong.exited])
    assert.ok(ends.every((e) => e.code !== 0), JSON.stringify(ends) + plain.out.stderr + wrong.out.stderr)
    assert.doesNotMatch(s.out.stdout + s.out.stderr, /joined/, "no worker without the token joined")

    const good = startTessera(procs, ["worker", "--scheduler", addr!, "--token-file", tokenFile], { env: env() })
    await s.wait(/joined/, 60)
    // a driver needs the token too
    const run = spawnSync(process.execPath, [main, "run", fixture, "--cluster", addr!, "--token-file", tokenFile, "--profile", "p"], { encoding: "utf8", cwd: dir, env: env(), timeout: 120_000 })
    assert.equal(run.status, 0, run.stdout + run.stderr)
    assert.match(run.stdout + run.stderr, /on the cluster of scheduler/)
    const traces = readdirSync(dir).filter((f) => f.startsWith("p-") && f.endsWith(".msgpack"))
    assert.ok(traces.length > 0)
    const secret = token.slice(17)
    for (const f of traces) assert.ok(!readFileSync(join(dir, f)).includes(secret), `the token in ${f}`)
    for (const text of [s.out.stdout, s.out.stderr, good.out.stdout, good.out.stderr, run.stdout, run.stderr, titles([s.p.pid!, good.p.pid!])]) {
      assert.ok(!text.includes(secret), "the token in an output or a process title")
    }
    good.p.kill("SIGTERM")
    s.p.kill("SIGTERM")
    await Promise.all([good.exited, s.exited])
    assert.ok(existsSync(tokenFile))
  })
})

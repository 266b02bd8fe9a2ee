/**
 * Issue 32 item 8: waits that must end on SIGINT / SIGTERM. A query that never ends
 * (`WITH RECURSIVE` without a bound) in `tessera sql`, `analyze -a q.sql` and `report
 * --analysis q.sql` is interrupted inside DuckDB and the process exits 130 / 143 at once,
 * leaving no process and no busy thread behind; a FIFO given as `-d` is refused with a
 * sentence instead of waiting for a writer; a worker whose scheduler is gone exits on
 * SIGTERM. (A driver with nothing at its `--cluster` address: ClusterEdges.test.ts,
 * issue 31 item 5.)
 *
 * Each query first writes a marker file (`COPY ... TO`: full SQL, so `--unsafe-sql`
 * where safe mode is the default), so the signal is sent while the endless query runs,
 * not while the tables still load. Bounds are generous: the machine may be loaded.
 */
import assert from "node:assert/strict"
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { freePort } from "../../src/engine/Cluster.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const trace = fileURLToPath(new URL("../fixtures/dasf-small/small-TracePlugin.msgpack", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "tessera-waits-"))
const procs: Array<ChildProcess> = []
after(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
})

const endless = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) AS n FROM r"
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const start = (args: ReadonlyArray<string>) => {
  const p = spawn(process.execPath, [main, ...args], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })
  procs.push(p)
  const out = { stdout: "", stderr: "" }
  p.stdout!.on("data", (d) => (out.stdout += d))
  p.stderr!.on("data", (d) => (out.stderr += d))
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => p.once("exit", (code, signal) => resolve({ code, signal })))
  return { p, out, exited }
}

/** Threads of `pid` (Linux: /proc), or undefined elsewhere / when it is gone. */
const threads = (pid: number): number | undefined => {
  try {
    return Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1])
  } catch {
    return undefined
  }
}

/** Processes whose parent is `pid` (Linux: /proc; [] elsewhere). */
const children = (pid: number): Array<number> => {
  if (!existsSync("/proc")) return []
  const out: Array<number> = []
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8")
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) out.push(Number(e))
    } catch {}
  }
  return out
}
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Starts `args` (a command whose query writes `marker`, then never ends), waits for the
 * marker and a second more, sends `signal`; the exit, its delay, and what is left.
 */
const interruptQuery = async (args: ReadonlyArray<string>, marker: string, signal: "SIGINT" | "SIGTERM") => {
  const s = start(args)
  const t0 = performance.now()
  while (!existsSync(marker)) {
    if (s.p.exitCode !== null) assert.fail(`exited ${s.p.exitCode} before its query ran:\n${s.out.stderr}`)
    if (performance.now() - t0 > 90_000) assert.fail(`the query did not start within 90 s:\n${s.out.stderr}`)
    await sleep(100)
  }
  await sleep(1000)
  assert.equal(s.p.exitCode, null, `the endless query ended by itself?\n${s.out.stderr}`)
  const pid = s.p.pid!
  const kids = children(pid)
  const t1 = performance.now()
  s.p.kill(signal)
  const e = await s.exited
  const seconds = (performance.now() - t1) / 1000
  await sleep(200)
  return { ...e, seconds, stderr: s.out.stderr, left: [pid, ...kids].filter(alive), threadsAfter: threads(pid) }
}

describe("issue 32 item 8: waits end on SIGINT / SIGTERM", { timeout: 300_000, concurrency: 2 }, () => {
  it("issue 32 item 8: tessera sql with an endless recursive query exits 130 on SIGINT within seconds, nothing left running", async () => {
    const marker = join(dir, "sql.started")
    const r = await interruptQuery(["sql", "-d", trace, `COPY (SELECT 1 AS started) TO '${marker}' (FORMAT csv); ${endless}`], marker, "SIGINT")
    assert.equal(r.code, 130, r.stderr)
    assert.match(r.stderr, /interrupted \(SIGINT\)/)
    assert.ok(r.seconds < 5, `exited ${r.seconds.toFixed(2)} s after SIGINT (the query used to run on at 150% CPU)`)
    assert.deepEqual(r.left, [], "no process left")
    assert.equal(r.threadsAfter, undefined, "no thread left")
  })

  it("issue 32 item 8: analyze -a q.sql with an endless query exits 143 on SIGTERM within seconds", async () => {
    const marker = join(dir, "analyze.started")
    const q = join(dir, "endless.sql")
    writeFileSync(q, `COPY (SELECT 1 AS started) TO '${marker}' (FORMAT csv);\n${endless}\n`)
    const r = await interruptQuery(["analyze", "-d", trace, "-a", q, "--unsafe-sql"], marker, "SIGTERM")
    assert.equal(r.code, 143, r.stderr)
    assert.ok(r.seconds < 5, `exited ${r.seconds.toFixed(2)} s after SIGTERM`)
    assert.deepEqual(r.left, [])
  })

  it("issue 32 item 8: report --analysis q.sql with an endless query exits 130 on SIGINT within seconds, no report written", async () => {
    const marker = join(dir, "report.started")
    const q = join(dir, "endless-report.sql")
    writeFileSync(q, `COPY (SELECT 1 AS started) TO '${marker}' (FORMAT csv);\n${endless}\n`)
    const out = join(dir, "endless.html")
    const r = await interruptQuery(["report", "-d", trace, "--analysis", q, "--unsafe-sql", "-o", out], marker, "SIGINT")
    assert.equal(r.code, 130, r.stderr)
    assert.ok(r.seconds < 5, `exited ${r.seconds.toFixed(2)} s after SIGINT`)
    assert.deepEqual(r.left, [])
    assert.equal(existsSync(out), false)
  })

  it("issue 32 item 8: a FIFO as -d (no writer) is refused at once with a sentence, not waited on", (t) => {
    const fifo = join(dir, "trace.fifo")
    try {
      execFileSync("mkfifo", [fifo])
    } catch (e) {
      return t.skip(`mkfifo unavailable: ${String(e)}`)
    }
    for (const args of [["analyze", "-d", fifo], ["report", "-d", fifo, "-o", join(dir, "fifo.html")]]) {
      const t0 = performance.now()
      const r = spawnSync(process.execPath, [main, ...args], { encoding: "utf8", timeout: 60_000, cwd: dir })
      assert.equal(r.signal, null, `${args[0]} waited on the FIFO until killed`)
      assert.equal(r.status, 1, r.stderr)
      assert.match(r.stderr, new RegExp(`${fifo.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: not a readable trace database: a FIFO \\(named pipe\\), not a file: trace databases are read at byte offsets; copy it to a file first`))
      assert.equal(r.stderr.trim().split("\n").filter((l) => l.startsWith("tessera")).length, 1, r.stderr)
      assert.ok(performance.now() - t0 < 60_000)
    }
  })

  it("issue 32 item 8: a worker whose scheduler is gone (killed) exits 143 within seconds of SIGTERM", async () => {
    const port = await freePort("127.0.0.1")
    const sched = start(["scheduler", "--host", "127.0.0.1", "--port", String(port)])
    const until = async (s: ReturnType<typeof start>, re: RegExp, seconds: number) => {
      const t0 = performance.now()
      while (!re.test(s.out.stdout + s.out.stderr)) {
        if (s.p.exitCode !== null) assert.fail(`exited ${s.p.exitCode} before ${re}:\n${s.out.stderr}`)
        if (performance.now() - t0 > seconds * 1000) assert.fail(`no ${re} within ${seconds} s:\n${s.out.stdout}\n${s.out.stderr}`)
        await sleep(100)
      }
    }
    await until(sched, /workers join with/, 60)
    const worker = start(["worker", "--scheduler", `127.0.0.1:${port}`, "--listen", "127.0.0.1:0"])
    await until(sched, /worker joined/, 60)
    sched.p.kill("SIGKILL")
    await sched.exited
    // the worker notices: it retries the address that is gone
    await until(worker, /cannot reach scheduler|retrying/, 60)
    const t0 = performance.now()
    worker.p.kill("SIGTERM")
    const e = await worker.exited
    const seconds = (performance.now() - t0) / 1000
    assert.equal(e.code, 143, worker.out.stderr)
    assert.ok(seconds < 5, `exited ${seconds.toFixed(2)} s after SIGTERM (it used to take 30 s)`)
    assert.doesNotMatch(worker.out.stderr, /internal error/)
  })
})

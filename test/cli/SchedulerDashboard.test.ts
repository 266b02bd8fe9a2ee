/**
 * `tessera scheduler --dashboard` end to end: a scheduler with its dashboard on a free
 * loopback port, two `tessera worker` processes, and `tessera run --cluster HOST:PORT`
 * drivers one after another. The page's JSON snapshot counts exactly the tasks of the
 * driver's own trace (its Compute events), shows both worker processes as rows, and
 * starts again for the next driver (runs counted). Bound off loopback, the page needs
 * the token it printed.
 */
import assert from "node:assert/strict"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { decodeRecordsUnsafe as decodeRecords } from "../../src/trace/TraceFormat.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const fixture = fileURLToPath(new URL("./fixtures/twoStages.ts", import.meta.url))

const dirs: Array<string> = []
const procs: Array<ChildProcess> = []
after(() => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL")
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

interface Proc {
  readonly p: ChildProcess
  out: string
  err: string
}
const start = (args: ReadonlyArray<string>, cwd?: string): Proc => {
  const p = spawn(process.execPath, [main, ...args], { stdio: ["ignore", "pipe", "pipe"], ...(cwd !== undefined ? { cwd } : {}) })
  procs.push(p)
  const r: Proc = { p, out: "", err: "" }
  p.stdout!.on("data", (d) => (r.out += d))
  p.stderr!.on("data", (d) => (r.err += d))
  return r
}
const until = async (what: string, f: () => boolean, p: Proc, seconds = 120) => {
  for (let t = 0; !f(); t++) {
    if (t > seconds * 10) assert.fail(`${what} within ${seconds} s:\n${p.out}\n${p.err}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
const finished = (p: Proc): Promise<number | null> =>
  new Promise((resolve) => (p.p.exitCode !== null ? resolve(p.p.exitCode) : p.p.once("exit", (code) => resolve(code))))
const stop = (p: Proc) => {
  const done = finished(p)
  p.p.kill("SIGTERM")
  return done
}

interface Snapshot {
  readonly counts: { readonly tasks: number; readonly done: number; readonly runs: number; readonly dropped: number; readonly computesDone: number; readonly transfers: number }
  readonly rows: ReadonlyArray<string>
  readonly over: boolean
}
const snapshot = async (url: string): Promise<Snapshot> => {
  const u = new URL(url)
  u.pathname = "/api/snapshot"
  const r = await fetch(u)
  assert.equal(r.status, 200)
  return (await r.json()) as Snapshot
}

/** The snapshot once `ready` holds of it (the server restarts for each new run: a moment without one). */
const settled = async (url: string, ready: (s: Snapshot) => boolean): Promise<Snapshot> => {
  for (let i = 0;; i++) {
    const s = await snapshot(url).catch(() => undefined)
    if (s !== undefined && ready(s)) return s
    if (i > 600) assert.fail(`no snapshot as expected within 60 s: ${JSON.stringify(s?.counts)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe("tessera scheduler --dashboard", () => {
  it("shows the tasks of each driver's run, exactly, and both worker processes", { timeout: 600_000 }, async () => {
    const sched = start(["scheduler", "--port", "0", "--dashboard", "127.0.0.1:0"])
    await until("the scheduler's address and dashboard said", () => /--scheduler (\S+:\d+)/.test(sched.out) && /dashboard: (http\S+)/.test(sched.err), sched)
    const addr = /--scheduler (\S+:\d+)/.exec(sched.out)![1]!
    const url = /dashboard: (http\S+)/.exec(sched.err)![1]!
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/, "loopback, no token")
    const ws = [start(["worker", "--scheduler", addr]), start(["worker", "--scheduler", addr])]
    await until("both workers joined", () => /2 workers now/.test(sched.err), sched)

    const dir = mkdtempSync(join(tmpdir(), "tessera-scheduler-dashboard-"))
    dirs.push(dir)
    const run = start(["run", fixture, "--cluster", addr, "--profile", "s"], dir)
    assert.equal(await finished(run), 0, run.err)
    // the driver's own count: its trace's Compute events
    const trace = decodeRecords(readFileSync(join(dir, `s-TracePlugin-${hostname()}.msgpack`)))
    const computed = trace.events.filter((e) => e.name === "Compute").length
    assert.ok(computed > 0)
    // the driver forwarded its last records before it exited (the page of its run: the
    // server restarted for it, on the same address)
    let s = await settled(url, (x) => x.counts.runs === 1 && x.over)
    assert.equal(s.counts.tasks, computed, "the page counts the driver's tasks exactly")
    assert.equal(s.counts.done, computed)
    assert.equal(s.counts.dropped, 0)
    assert.equal(s.counts.runs, 1)
    assert.equal(s.over, true)
    assert.ok(s.counts.computesDone > 0)
    for (const w of ws) assert.ok(s.rows.some((r) => r.includes(`-pid${w.p.pid}-`)), `worker pid ${w.p.pid} is a row: ${s.rows.join(", ")}`)

    // the next driver's run: the page starts again (the server restarts on the same address)
    const again = start(["run", fixture, "--cluster", addr], dir)
    assert.equal(await finished(again), 0, again.err)
    s = await settled(url, (x) => x.counts.runs === 2 && x.over)
    assert.equal(s.counts.tasks, computed, "the same pipeline: the same count, for this run alone")
    assert.equal(s.over, true)

    for (const w of ws) await stop(w)
    await stop(sched)
  })

  it("bound off loopback, requires the token it prints (the dashboard server's rules)", { timeout: 120_000 }, async () => {
    const sched = start(["scheduler", "--port", "0", "--dashboard", "0.0.0.0:0"])
    await until("the dashboard's URL said", () => /dashboard: (http\S+)/.test(sched.err), sched)
    const url = new URL(/dashboard: (http\S+)/.exec(sched.err)![1]!)
    assert.match(sched.err, /the token is required: bound off loopback/)
    const token = url.searchParams.get("token")
    assert.ok(token !== null && token.length >= 20)
    const at = (t: string | null) => `http://127.0.0.1:${url.port}/api/snapshot${t === null ? "" : `?token=${encodeURIComponent(t)}`}`
    assert.equal((await fetch(at(null))).status, 401)
    assert.equal((await fetch(at("wrong"))).status, 401)
    const ok = await fetch(at(token))
    assert.equal(ok.status, 200)
    assert.equal(((await ok.json()) as Snapshot).counts.runs, 0)
    await stop(sched)
  })
})

/**
 * Issue 32 item 2, with real processes and files: one writer per database. A second
 * `tessera demo` with the same `--profile` fails at once naming the first's pid (with
 * `--overwrite` too, and without touching its files); two started together never share
 * a database; the lock goes with the process (SIGTERM included), after which
 * `--overwrite` works; a lock left by a dead process is taken over with a warning.
 */
import assert from "node:assert/strict"
import { spawn, spawnSync } from "node:child_process"
import { existsSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, it } from "node:test"
import { DatabaseError } from "../../src/profiler/EventDatabase.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import { demo, host, locks, main, scratch, traceOf } from "./issue32.ts"

const folder = scratch("tessera-one-writer-")
const graphs = async (file: string) => (await FileDatabase.readPromise(file)).events.filter((e) => e.name === "Pipeline Graph").length

/** A long demo (1M samples, 20 s or more): `started` resolves once its pipeline runs (its profiler holds the locks). */
const long = (dir: string, name: string, extra: ReadonlyArray<string> = []) => {
  const child = spawn(process.execPath, [main, "demo", "--samples", "1000000", "--workers", "1", "--profile", name, ...extra], { cwd: dir })
  let stderr = ""
  let stdout = ""
  let onStart: () => void = () => {}
  const started = new Promise<void>((resolve) => (onStart = resolve))
  child.stdout.on("data", (d: Buffer) => (stdout += d))
  child.stderr.on("data", (d: Buffer) => {
    stderr += d
    if (stderr.includes("Starting task run")) onStart()
  })
  const exited = new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) =>
    child.on("exit", (code) => {
      onStart()
      resolve({ code, stderr, stdout })
    })
  )
  return { child, started, exited }
}

describe("one writer per database (issue 32 item 2)", { timeout: 300_000 }, () => {
  it("issue 32 item 2: a second run with the same --profile fails at once naming the first's pid, --overwrite too; the first run's records stay; after it ends --overwrite works", async () => {
    const dir = folder()
    const a = long(dir, "same", ["--overwrite"])
    try {
      await a.started
      const trace = traceOf(dir, "same")
      assert.ok(existsSync(`${trace}.lock`), `locks: ${locks(dir)}`)
      for (const extra of [[], ["--overwrite"]]) {
        const before = statSync(trace).size
        const b = demo(dir, ["--workers", "1", "--samples", "2000", "--profile", "same", ...extra])
        assert.equal(b.status, 1, b.stderr)
        assert.match(
          b.stderr,
          new RegExp(`same-TracePlugin-.*: another run writes this database: pid ${a.child.pid} on host ${host}, started \\d{4}-\\d\\d-\\d\\d [\\d:]+ UTC \\(tessera demo .*--profile same.*\\).*\\(Locked\\)`),
          b.stderr
        )
        if (extra.length > 0) assert.match(b.stderr, /--overwrite does not replace a file a live run writes/)
        // refused before its pipeline ran, listing no database of the other run's
        assert.doesNotMatch(b.stderr, /Starting task run/)
        assert.equal(b.stdout, "")
        assert.ok(statSync(trace).size >= before, "the first run's file is not truncated")
      }
      assert.equal(a.child.exitCode, null, "the first run is still running")
    } finally {
      a.child.kill("SIGTERM")
    }
    const ea = await a.exited
    assert.equal(ea.code, 143, ea.stderr)
    // SIGTERM released the locks; the first run's records are whole, its Pipeline Graph first
    assert.deepEqual(locks(dir), [])
    const first = await FileDatabase.readPromise(traceOf(dir, "same"))
    assert.equal(first.droppedBytes, 0)
    assert.equal(first.events.filter((e) => e.name === "Pipeline Graph").length, 1)
    assert.ok(first.events.some((e) => e.name === "Compute"))

    const c = demo(dir, ["--workers", "1", "--samples", "2000", "--profile", "same", "--overwrite", "--no-sample"])
    assert.equal(c.status, 0, c.stderr)
    assert.doesNotMatch(c.stderr, /lock/)
    assert.equal(await graphs(traceOf(dir, "same")), 1)
    assert.deepEqual(locks(dir), [])
  })

  it("issue 32 item 2: two runs started together with the same name never share a database: one fails naming the other", async () => {
    const dir = folder()
    const runs = [long(dir, "both"), long(dir, "both")]
    try {
      // the loser exits at once; the winner runs on
      const first = await Promise.race(runs.map((r, i) => r.exited.then((e) => ({ ...e, i }))))
      const winner = runs[1 - first.i]!
      assert.equal(first.code, 1, first.stderr)
      assert.match(first.stderr, new RegExp(`another run writes this database: pid ${winner.child.pid} on host`), first.stderr)
      assert.equal(first.stdout, "")
      await winner.started
      assert.equal(winner.child.exitCode, null)
    } finally {
      for (const r of runs) r.child.kill("SIGTERM")
    }
    await Promise.all(runs.map((r) => r.exited))
    assert.equal(await graphs(traceOf(dir, "both")), 1)
    assert.deepEqual(locks(dir), [])
  })

  it("issue 32 item 2: a stale lock of a dead process is taken over, with one warning naming it", () => {
    const dir = folder()
    const dead = Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout)
    assert.ok(dead > 0)
    const lock = `${traceOf(dir, "stale")}.lock`
    writeFileSync(lock, JSON.stringify({ pid: dead, host, started: Date.now() - 60_000, command: "tessera demo --profile stale", nonce: "gone" }))
    const r = demo(dir, ["--workers", "1", "--samples", "2000", "--profile", "stale", "--no-sample"])
    assert.equal(r.status, 0, r.stderr)
    const taken = r.stderr.split("\n").filter((l) => l.includes("taking the lock over"))
    assert.equal(taken.length, 1, r.stderr)
    assert.match(taken[0]!, new RegExp(`^warning: .*stale-TracePlugin-.*\\.lock was left by pid ${dead} on host ${host}, started .*, which is no longer running`))
    assert.deepEqual(locks(dir), [])
  })

  it("issue 32 item 2: in one process, a file's second locked writer is refused until the first closes; another host's lock is refused; an unreadable one is taken over", () => {
    const dir = folder()
    const file = join(dir, "p-TracePlugin-h.msgpack")
    const warnings: Array<string> = []
    const warn = (l: string) => void warnings.push(l)
    const one = new FileDatabase.FileDatabase(file, { lock: true, warn })
    one.open()
    const two = new FileDatabase.FileDatabase(file, { lock: true, overwrite: true, warn })
    assert.throws(() => two.open(), (e: unknown) =>
      e instanceof DatabaseError && e.reason._tag === "Locked" && e.database === file &&
      e.message.includes(`pid ${process.pid}`) && e.message.includes("this process"))
    one.record({ name: "x", timestamp: 1, phase: "I", process_id: "h", thread_id: null, args: {} })
    one.close()
    assert.ok(!existsSync(`${file}.lock`))
    two.open()
    two.close()
    assert.deepEqual(warnings, [])

    writeFileSync(`${file}.lock`, JSON.stringify({ pid: 1, host: "elsewhere", started: Date.now(), command: "tessera run x.ts", nonce: "n" }))
    assert.throws(() => new FileDatabase.FileDatabase(file, { lock: true, warn }).open(), (e: unknown) =>
      e instanceof DatabaseError && e.reason._tag === "Locked" && /pid 1 on host elsewhere.*cannot be checked from here/.test(e.message))
    writeFileSync(`${file}.lock`, "not json")
    const three = new FileDatabase.FileDatabase(file, { lock: true, warn })
    three.open()
    three.close()
    assert.equal(warnings.length, 1)
    assert.match(warnings[0]!, /\.lock is unreadable.*taking it over/)
    assert.ok(!existsSync(`${file}.lock`))
  })
})

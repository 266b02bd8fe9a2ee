/**
 * Cluster memory has an owner (issue 32 item 5), with real processes: a `tessera
 * scheduler`, two `tessera worker`s and `tessera run … --cluster` drivers one after
 * another. The scheduler logs what each worker holds as it changes; after each driver
 * exits (right after its compute) every worker is back to 0 bytes; a driver killed with
 * SIGKILL mid-compute (no goodbye) has its results dropped once its pings stop. And
 * (item 12) a scheduler without workers, or killed mid-run, fails the driver with one
 * line naming its address, not an internal error.
 * `--max-held-bytes` itself: test/engine/ClusterFailures.test.ts.
 * Loopback only, every process bounded and killed at the end.
 */
import assert from "node:assert/strict"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { parseBytes } from "../../src/cli/commands/worker.ts"
import { startTessera } from "./tesseraProcess.ts"

const src = fileURLToPath(new URL("../../src/", import.meta.url))
const basic = new URL("../fixtures/kernels/basic.ts", import.meta.url).href

const procs: Array<ChildProcess> = []
let dir = ""
after(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL")
  if (dir !== "") rmSync(dir, { recursive: true, force: true })
})

const start = (args: ReadonlyArray<string>, cwd?: string) => startTessera(procs, args, { cwd })

/**
 * A run file: `n` chunks of `size` float64s, each taken with its neighbour by a 1 s
 * kernel (so the chunks are held across batches, on both workers), then summed.
 */
const runFile = (n: number, size: number, spinMs = 1000) => `import { Effect } from ${JSON.stringify(import.meta.resolve("effect"))}
import * as Engine from ${JSON.stringify(join(src, "engine/Engine.ts"))}
import * as Kernel from ${JSON.stringify(join(src, "engine/Kernel.ts"))}
import * as TaskGraph from ${JSON.stringify(join(src, "engine/TaskGraph.ts"))}
import * as Pipeline from ${JSON.stringify(join(src, "dsl/Pipeline.ts"))}

const k = (name: string) => Kernel.ref(${JSON.stringify(basic)}, name)
const specs: Array<TaskGraph.TaskSpec> = []
for (let i = 0; i < ${n}; i++) {
  specs.push({ key: "arange-" + i, kernel: k("arange"), args: [i, ${size}] })
  specs.push({ key: "spin-" + i, kernel: k("spin"), args: [${spinMs}, TaskGraph.ref("arange-" + i), TaskGraph.ref("arange-" + ((i + 1) % ${n}))] })
  specs.push({ key: "sum-" + i, kernel: k("chunkSum"), args: [TaskGraph.ref("spin-" + i)] })
}
specs.push({ key: "total", kernel: k("sum"), args: [TaskGraph.refs(Array.from({ length: ${n} }, (_, i) => "sum-" + i))] })
const graph = TaskGraph.makeUnsafe(specs)

export default () => {
  const p = Pipeline.make("held")
  p.add(Pipeline.stage("hold", () => Effect.map(Engine.compute(graph, { keys: ["total"] }), (m) => m.get("total"))), {})
  return p
}
`

/** Per worker address, the bytes the scheduler last logged it holding (from `from` in its stderr). */
const lastHeld = (stderr: string): Map<string, string> => {
  const m = new Map<string, string>()
  for (const x of stderr.matchAll(/worker holds (\d+(?:\.\d+)? [KMGT]?B) in \d+ results?: tessera-worker@(\S+)/g)) m.set(x[2]!, x[1]!)
  return m
}

describe("cluster memory has an owner (tessera scheduler, two tessera workers, drivers one after another)", { timeout: 300_000 }, () => {
  let sched: ReturnType<typeof start>
  let scheduler = ""
  const workers: Array<string> = []

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "tessera-cluster-held-"))
    writeFileSync(join(dir, "held.ts"), runFile(4, 500_000))
    // a run that is surely still computing when the test kills its scheduler (15 s spins)
    writeFileSync(join(dir, "long.ts"), runFile(4, 500_000, 15_000))
    sched = start(["scheduler", "--port", "0"])
    scheduler = (await sched.wait(/workers join with {2}tessera worker --scheduler (127\.0\.0\.1:\d+)/, 60))[1]!
    for (let i = 0; i < 2; i++) {
      const w = start(["worker", "--scheduler", scheduler, "--listen", "127.0.0.1:0"])
      workers.push((await w.wait(/tessera worker at (127\.0\.0\.1:\d+),/, 60))[1]!)
    }
    await sched.wait(/2 workers now/, 60)
  })

  /** Waits until the scheduler's log says every worker holds 0 B (after `from`). */
  const allZero = async (from: number, seconds: number) => {
    await sched.wait(/all workers 0 B/, seconds, from)
    const held = lastHeld(sched.out.stderr)
    for (const w of workers) assert.ok(held.get(w) === undefined || held.get(w) === "0 B", `${w} holds ${held.get(w)}\n${sched.out.stderr}`)
  }

  it("issue 32 item 5: after each of two drivers exits, the workers' held bytes (logged by the scheduler) are back to 0", async () => {
    for (let round = 0; round < 2; round++) {
      const from = sched.out.stderr.length
      const d = start(["run", "held.ts", "--cluster", scheduler], dir)
      const e = await d.exited
      assert.equal(e.code, 0, d.out.stderr)
      const log = sched.out.stderr.slice(from)
      // while it ran the scheduler saw what the workers held: the 4 MB chunks, on each worker
      assert.match(log, /worker holds \d+(\.\d+)? MB in \d+ results?: tessera-worker@127\.0\.0\.1:\d+ \(pid \d+/, log)
      await allZero(from, 30)
    }
  })

  it("issue 32 item 5: a driver killed with SIGKILL mid-compute (no goodbye) has its results dropped once its pings stop", async () => {
    const from = sched.out.stderr.length
    const d = start(["run", "held.ts", "--cluster", scheduler], dir)
    await sched.wait(/worker holds \d+(\.\d+)? MB/, 60, from)
    d.p.kill("SIGKILL")
    await d.exited
    const killedAt = sched.out.stderr.length
    // 10 missed pings (at least 5 s), then the worker's next sweep and report
    await allZero(killedAt, 60)
  })

  it("issue 32 item 5: tessera worker --max-held-bytes takes a size (2GB, 512MiB); anything else is a usage error naming the flag", async () => {
    const bad = start(["worker", "--scheduler", scheduler, "--max-held-bytes", "lots"])
    assert.equal((await bad.exited).code, 2, bad.out.stderr)
    assert.match(bad.out.stderr, /--max-held-bytes/)
    assert.equal(parseBytes("2GB"), 2e9)
    assert.equal(parseBytes("512MiB"), 512 * 2 ** 20)
    assert.equal(parseBytes("1000"), 1000)
    assert.equal(parseBytes("0"), undefined)
    assert.equal(parseBytes("-5MB"), undefined)
  })

  it("issue 32 item 12: a driver whose scheduler has no worker fails with one line naming it (exit 1), not an internal error", async () => {
    const empty = start(["scheduler", "--port", "0"])
    const at = (await empty.wait(/workers join with {2}tessera worker --scheduler (127\.0\.0\.1:\d+)/, 60))[1]!
    const r = startTessera(procs, ["run", "held.ts", "--cluster", at], { cwd: dir, env: { ...process.env, TESSERA_CLUSTER_START_TIMEOUT: "3" } })
    const code = (await r.exited).code
    const err = r.out.stderr
    assert.equal(code, 1, err)
    assert.match(err, new RegExp(`^tessera run: cluster: 0 of 1 workers started at scheduler ${at.replace(/\./g, "\\.")} within 3 s$`, "m"))
    assert.doesNotMatch(err, /internal error/)
    empty.p.kill("SIGTERM")
  })

  it("issue 32 item 12: a scheduler killed mid-run: the driver fails with a sentence naming the scheduler's address (exit 1), not an internal error", async () => {
    const from = sched.out.stderr.length
    const d = start(["run", "long.ts", "--cluster", scheduler], dir)
    await sched.wait(/worker holds \d+(\.\d+)? MB/, 60, from)
    sched.p.kill("SIGKILL")
    const e = await d.exited
    assert.equal(e.code, 1, d.out.stderr)
    assert.match(d.out.stderr, new RegExp(`its scheduler at ${scheduler.replace(/\./g, "\\.")} does not answer`), d.out.stderr)
    assert.doesNotMatch(d.out.stderr, /internal error|PersistenceError/)
  })
})

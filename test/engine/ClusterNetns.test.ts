/**
 * A cluster across network namespaces as separate hosts, so that traffic really crosses
 * an interface: namespaces (`ip netns`; three, the first two used first), each with its own host name (`unshare
 * --uts`) and one veth pair to a bridge in the root namespace; the driver (scheduler and
 * registry) runs here, in the root namespace, listening on the bridge's address; one
 * `tessera worker` runs in each namespace. The workers find their own contact address
 * (their address on the route to the scheduler), one listening on every interface
 * (`--listen 0.0.0.0:PORT`), the other with no address flag at all.
 *
 *   root ns: bridge tbr<pid> 10.A.B.1/24 ── tve<pid>1 ══ eth0 10.A.B.2 (ns …-h1, host tns…h1)
 *                                      └── tve<pid>2 ══ eth0 10.A.B.3 (ns …-h2, host tns…h2)
 *
 * A profiled compute whose last tasks need arrays made on the other worker: the results
 * are the sync executor's, each host writes its own files, the Transfer events' bytes
 * equal the bytes the workers sent and received, the root-side veth counters grew by at
 * least those bytes in each direction, and `tessera analyze` reads every host's files
 * together.
 *
 * Then docs/cluster.md's several-machines recipe on three hosts: `tessera scheduler
 * --host BRIDGE` in the root namespace, a `tessera worker --scheduler BRIDGE:PORT` in the
 * first two namespaces, and `tessera run … --cluster BRIDGE:PORT --profile` in the third:
 * it succeeds, the workers' tasks are in their hosts' files, the driver's events in its
 * host's, and the driver's veth carried its traffic.
 *
 * Needs root, `ip` (iproute2) and `unshare` (util-linux), and a kernel and container
 * that allow network namespaces, veth pairs and bridges; otherwise it skips, saying
 * which. The namespaces are bench/netns.ts's `virtualHosts` (shared with `node
 * bench/engine/transfer.ts --netns`): names and subnet from the pid (parallel runs do not
 * collide), all of it removed in `after`, also when a test fails.
 */
import assert from "node:assert/strict"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { Effect, ManagedRuntime, Redacted } from "effect"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import { type VirtualHost, virtualHosts } from "../../bench/netns.ts"
import { k } from "./graphs.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const floats = new URL("../fixtures/kernels/floats.ts", import.meta.url).href
const fixture = fileURLToPath(new URL("../cli/fixtures/twoStages.ts", import.meta.url))

const vh = virtualHosts(3)
const skip = "reason" in vh ? vh.reason : false
after(() => {
  if (!("reason" in vh)) vh.tearDown()
})

/** Resolves once something listens on host:port. */
const listening = async (host: string, port: number) => {
  for (let i = 0; i < 600; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, host, () => {
        s.destroy()
        resolve(true)
      })
      s.on("error", () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`nothing listens on ${host}:${port}`)
}

/** A started process and everything it printed. */
interface Started {
  readonly proc: ChildProcess
  readonly out: () => string
}

/** Starts `tessera ARGS…` here or in a virtual host, capturing its output. */
const tessera = (args: ReadonlyArray<string>, at?: (argv: ReadonlyArray<string>) => readonly [string, ReadonlyArray<string>], cwd?: string): Started => {
  const argv = [process.execPath, main, ...args]
  const [cmd, rest] = at !== undefined ? at(argv) : [argv[0]!, argv.slice(1)]
  const proc = spawn(cmd, rest, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_OPTIONS: "" }, ...(cwd !== undefined ? { cwd } : {}) })
  let out = ""
  proc.stdout!.setEncoding("utf8").on("data", (d: string) => void (out += d))
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => void (out += d))
  return { proc, out: () => out }
}

/** Stops processes: SIGTERM, SIGKILL after 3 s. */
const stopAll = (ps: ReadonlyArray<Started>) =>
  Promise.all(ps.map(({ proc }) =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve()
      const t = setTimeout(() => proc.kill("SIGKILL"), 3000)
      proc.once("exit", () => {
        clearTimeout(t)
        resolve()
      })
      proc.kill("SIGTERM")
    })
  ))

/** A pattern matching `s` literally. */
const literally = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** 8 arrays of 256 Ki float64 (2 MiB each) spread over the workers, then sums of arrays from both. */
const N = 8
const LEN = 256 * 1024
const graph = (): TaskGraph.TaskGraph => {
  const specs: Array<TaskGraph.TaskSpec> = []
  for (let i = 0; i < N; i++) specs.push({ key: `floats-${i}`, kernel: Kernel.ref(floats, "floats"), args: [i, LEN] })
  const of = (odd: number) => Array.from({ length: N / 2 }, (_, j) => TaskGraph.ref(`floats-${2 * j + odd}`))
  specs.push({ key: "evens", kernel: Kernel.ref(floats, "sumAll"), args: of(0) })
  specs.push({ key: "odds", kernel: Kernel.ref(floats, "sumAll"), args: of(1) })
  specs.push({ key: "all", kernel: Kernel.ref(floats, "sumAll"), args: Array.from({ length: N }, (_, i) => TaskGraph.ref(`floats-${i}`)) })
  specs.push({ key: "total", kernel: k("sum"), args: [TaskGraph.ref("evens"), TaskGraph.ref("odds")] })
  return TaskGraph.makeUnsafe(specs)
}
const keys = ["evens", "odds", "all", "total"]

describe("a cluster across network namespaces (driver in the root namespace, a worker in each of 2)", { skip, timeout: 240_000 }, () => {
  if ("reason" in vh) return
  const net = { ...vh, hosts: vh.hosts.slice(0, 2) }
  const bridgeIp = net.bridgeIp
  const dir = mkdtempSync(join(tmpdir(), "tessera-cluster-netns-"))
  const tokenFile = join(dir, "cluster.token")
  const token = "tessera-token-v1:" + randomBytes(32).toString("base64url")
  const workers: Array<Started> = []
  let rt: ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never> | undefined
  let port = 0

  before(async () => {
    port = await Cluster.freePort(bridgeIp)
    // off loopback every link is TLS keyed by the cluster's token (issue 33): the workers get its file
    writeFileSync(tokenFile, token + "\n", { mode: 0o600 })
    rt = ManagedRuntime.make(Cluster.layerLocal({ local: 0, host: bridgeIp, port, minWorkers: 2, startTimeout: 120, token: Redacted.make(token) }))
    const ready = rt.runPromise(Effect.void)
    await listening(bridgeIp, port)
    for (const [i, h] of net.hosts.entries()) {
      // worker 1 listens on every interface of its namespace; worker 2 is given no address
      const extra = i === 0 ? ["--listen", "0.0.0.0:9001"] : []
      workers.push(tessera(["worker", "--scheduler", `${bridgeIp}:${port}`, "--token-file", tokenFile, ...extra], (argv) => net.exec(h, argv)))
    }
    await ready.catch((e: unknown) => {
      throw new Error(`${String(e)}\n${workers.map((w) => w.out()).join("\n")}`)
    })
  })

  after(async () => {
    await rt?.dispose()
    await stopAll(workers)
    rmSync(dir, { recursive: true, force: true })
  })

  it("issue 33: a worker in a namespace without the token, or with another cluster's, cannot join: told so, exit 1", async () => {
    const wrong = join(dir, "wrong.token")
    writeFileSync(wrong, "tessera-token-v1:" + "C".repeat(43) + "\n", { mode: 0o600 })
    for (const extra of [[], ["--insecure"], ["--token-file", wrong]]) {
      const w = tessera(["worker", "--scheduler", `${bridgeIp}:${port}`, "--connect-timeout", "5", ...extra], (argv) => net.exec(net.hosts[0]!, argv))
      const code = await new Promise<number | null>((resolve) => w.proc.once("exit", resolve))
      assert.notEqual(code, 0, w.out())
      assert.match(w.out(), /not a loopback address|serves TLS|refused this process's cluster token/, w.out())
    }
    const joined = await rt!.runPromise(Effect.map(Cluster.Cluster, (c) => c.workers().filter((x) => x.alive).length))
    assert.equal(joined, 2, "only the two workers with the token")
  })

  it("each worker is reached at its namespace's address (its route to the scheduler), not loopback", async () => {
    const ws = await rt!.runPromise(Effect.map(Cluster.Cluster, (c) => c.workers()))
    const byHost = new Map(ws.map((w) => [w.host, w]))
    for (const h of net.hosts) {
      const w = byHost.get(h.name)
      assert.ok(w !== undefined, `a worker on ${h.name}: ${ws.map((x) => `${x.name} on ${x.host}`).join(", ")}`)
      assert.match(w.name, new RegExp(`^${literally(`tessera-worker@${h.ip}:`)}\\d+$`))
      assert.ok(w.alive)
    }
    assert.match(workers[0]!.out(), new RegExp(literally(`tessera worker at ${net.hosts[0]!.ip}:9001 (listening on 0.0.0.0:9001)`)))
    assert.match(workers[1]!.out(), new RegExp(`${literally(`tessera worker at ${net.hosts[1]!.ip}:`)}\\d+, scheduler`))
  })

  it("a profiled compute moves arrays between the namespaces over their veths; every host writes its files", async (t) => {
    const g = graph()
    const expected = await Effect.runPromise(Effect.provide(Engine.compute(g, { keys }), Executor.layerSync))
    const hostOfWorker = new Map<string, (typeof net.hosts)[number]>()
    const before0 = net.hosts.map((h) => net.counters(h))
    const { out, after: stats1, before: stats0 } = await rt!.runPromise(Effect.gen(function*() {
      const c = yield* Cluster.Cluster
      for (const w of c.workers()) {
        const h = net.hosts.find((x) => x.name === w.host)
        if (h !== undefined) hostOfWorker.set(w.name, h)
      }
      const before = yield* c.stats
      const profile = DefaultProfiler.layer({ name: "netns", directory: dir, interval: 50, overwrite: true, log: () => {}, warn: () => {} })
      const out = yield* Effect.provide(Engine.compute(g, { keys }), profile)
      return { out, before, after: yield* c.stats }
    }))
    const after1 = net.hosts.map((h) => net.counters(h))

    // the sync executor's answers
    for (const key of keys) assert.equal(out.get(key), expected.get(key), key)

    // bytes the data plane moved, per namespace, by the workers' own counters
    const delta = (name: string) => {
      const a = stats0.find((s) => s.name === name)
      const b = stats1.find((s) => s.name === name)!
      return { sent: b.sent - (a?.sent ?? 0), received: b.received - (a?.received ?? 0) }
    }
    const moved = net.hosts.map((h) => {
      const names = [...hostOfWorker].filter(([, x]) => x === h).map(([n]) => n)
      return names.map(delta).reduce((x, y) => ({ sent: x.sent + y.sent, received: x.received + y.received }), { sent: 0, received: 0 })
    })
    const sent = moved.reduce((s, m) => s + m.sent, 0)
    const received = moved.reduce((s, m) => s + m.received, 0)
    assert.equal(sent, received, "bytes sent = bytes received")
    assert.ok(received >= 2 * LEN * 8, `at least two arrays crossed (${received} bytes)`)

    // the Transfer events, in the receiving host's file, add up to those bytes
    const traceOf = (host: string) => join(dir, `netns-TracePlugin-${host}.msgpack`)
    const events = (await Promise.all(net.hosts.map((h) => FileDatabase.readPromise(traceOf(h.name))))).map((d) => d.events)
    const transfers = events.flatMap((es, i) => es.filter((e) => e.name === "Transfer").map((e) => ({ e, host: net.hosts[i]! })))
    assert.ok(transfers.length > 0, "Transfer events")
    for (const { e, host } of transfers) assert.equal(e.process_id, host.name, "a transfer is on the receiving host's row")
    assert.equal(transfers.reduce((s, { e }) => s + (e.args.bytes as number), 0), received, "Transfer bytes = bytes received")
    // each host's tasks in its own file
    const computes = events.map((es) => es.filter((e) => e.name === "Compute"))
    assert.deepEqual(computes.flat().map((e) => e.args.key).sort(), [...g.keys].sort())
    for (const [i, cs] of computes.entries()) {
      assert.ok(cs.length > 0, `${net.hosts[i]!.name} ran tasks`)
      for (const e of cs) assert.equal(e.process_id, net.hosts[i]!.name)
    }
    for (const h of net.hosts) {
      const res = (await FileDatabase.readPromise(join(dir, `netns-ResourceMonitor-${h.name}.msgpack`))).events
      assert.ok(res.length > 0 && res.every((e) => e.name === "Resource Usage" && e.process_id === h.name), `${h.name}'s resources`)
    }

    // the traffic crossed the interfaces: each namespace's veth carried at least what its
    // worker sent (rx on the root side) and received (tx on the root side)
    for (const [i, h] of net.hosts.entries()) {
      const rx = after1[i]!.rx - before0[i]!.rx
      const tx = after1[i]!.tx - before0[i]!.tx
      t.diagnostic(`${h.veth} (${h.ns}, ${h.ip}): rx +${rx} B, tx +${tx} B; its worker sent ${moved[i]!.sent} B, received ${moved[i]!.received} B`)
      assert.ok(rx >= moved[i]!.sent, `${h.veth}: rx +${rx} >= sent ${moved[i]!.sent}`)
      assert.ok(tx >= moved[i]!.received, `${h.veth}: tx +${tx} >= received ${moved[i]!.received}`)
    }

    // tessera analyze reads every host's files together
    const files = [hostname(), ...net.hosts.map((h) => h.name)].map(traceOf)
    const r = spawnSync(process.execPath, [main, "analyze", "-d", ...files, "-a", "transfer_bandwidth"], { encoding: "utf8" })
    assert.equal(r.status, 0, r.stderr)
    for (const h of net.hosts) {
      if (transfers.some(({ host }) => host === h)) assert.match(r.stdout, new RegExp(`worker-${h.name}-\\d+`), r.stdout)
    }
    t.diagnostic(r.stdout.trim().split("\n").slice(0, 12).join("\n"))
  })
})

describe("tessera scheduler, workers and a driver on three hosts (the docs' several-machines recipe)", { skip, timeout: 240_000 }, () => {
  if ("reason" in vh) return
  const net = vh
  const [b, c, a] = net.hosts as [VirtualHost, VirtualHost, VirtualHost]
  const dir = mkdtempSync(join(tmpdir(), "tessera-cluster-netns-cli-"))
  const procs: Array<Started> = []
  after(async () => {
    await stopAll(procs)
    rmSync(dir, { recursive: true, force: true })
  })

  it("tessera run --cluster from a third namespace runs on the workers of the scheduler in the root namespace; the workers' hosts' files hold the tasks, the driver's host's its events", async () => {
    const port = await Cluster.freePort(net.bridgeIp)
    // the docs' recipe: the scheduler makes the token file, each machine gets a copy (here: the same file)
    const tokenFile = join(dir, "cluster.token")
    const sched = tessera(["scheduler", "--host", net.bridgeIp, "--port", String(port), "--token-file", tokenFile])
    procs.push(sched)
    await listening(net.bridgeIp, port)
    const addr = `${net.bridgeIp}:${port}`
    const workers = [b, c].map((h) => tessera(["worker", "--scheduler", addr, "--token-file", tokenFile], (argv) => net.exec(h, argv)))
    procs.push(...workers)
    // both workers up before the driver starts (else the first may run the whole pipeline)
    for (let t = 0; t < 600 && !workers.every((w) => /tessera worker at /.test(w.out())); t++) await new Promise((r) => setTimeout(r, 50))
    const before = net.counters(a)
    const run = tessera(["run", fixture, "--cluster", addr, "--token-file", tokenFile, "--profile", "p"], (argv) => net.exec(a, argv), dir)
    const status = await new Promise<number | null>((resolve) => run.proc.once("exit", resolve))
    const moved = { rx: net.counters(a).rx - before.rx, tx: net.counters(a).tx - before.tx }
    assert.equal(status, 0, run.out() + procs.map((p) => p.out()).join("\n"))
    assert.match(sched.out(), new RegExp(literally(`workers join with  tessera worker --scheduler ${addr} --token-file ${tokenFile}`)))
    assert.match(run.out(), new RegExp(literally(`on the cluster of scheduler ${addr}`)))
    // the workers' tasks in their hosts' files (none for a worker that ran no task: the
    // scheduler may place a small pipeline on one worker, as a CI run saw); the driver's
    // events in its host's
    const tasks = async (h: VirtualHost) => {
      const file = join(dir, `p-TracePlugin-${h.name}.msgpack`)
      if (h !== a && !existsSync(file)) return 0
      return (await FileDatabase.readPromise(file)).events.filter((e) => e.name === "Compute").length
    }
    assert.ok((await tasks(b)) + (await tasks(c)) > 0, "the workers ran the pipeline")
    assert.equal(await tasks(a), 0, "the driver runs no task")
    const driver = (await FileDatabase.readPromise(join(dir, `p-TracePlugin-${a.name}.msgpack`))).events
    assert.ok(driver.some((e) => e.name === "Driver" && e.process_id === a.name), "the driver's events, under its host")
    // the driver's host talked to the others through its veth only
    assert.ok(moved.rx > 0 && moved.tx > 0, `${a.veth}: rx +${moved.rx}, tx +${moved.tx}`)
  })
})

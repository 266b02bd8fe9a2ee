/**
 * Where a worker listens and where it is reached (`tessera worker --listen HOST:PORT
 * --advertise HOST`, `Cluster.runWorker`'s `listen` / `advertise`): the checks of a
 * contact host, the default contact host (this machine's address on the route to the
 * scheduler), their errors, and a worker listening on every interface but advertising
 * loopback, which joins and computes.
 */
import assert from "node:assert/strict"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { Effect, Exit, ManagedRuntime, Redacted } from "effect"
import * as fc from "fast-check"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as Executor from "../../src/engine/Executor.ts"
import { routeTo } from "../../src/engine/internal/cluster/addresses.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { k } from "./graphs.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

describe("a worker's contact host", () => {
  it("takes host names and IPv4 / IPv6 addresses", () => {
    for (const h of ["10.0.0.2", "worker-b.example", "b", "::1", "fe80::1", "2001:db8::7"]) assert.equal(Cluster.contactProblem(h), undefined, h)
  })

  it("refuses wildcards, ports, spaces and the empty string, saying why", () => {
    for (const [h, re] of [
      ["0.0.0.0", /listens on every interface but reaches none/],
      ["::", /listens on every interface but reaches none/],
      ["", /empty string/],
      ["10.0.0.2:9001", /without a port/],
      ["host:9001", /without a port/],
      ["a b", /expected a host name or IP address/]
    ] as const) assert.match(Cluster.contactProblem(h) ?? "", re, h)
  })

  it("property: a host with a port appended is refused; a wildcard is never a contact host", () => {
    const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/)
    fc.assert(fc.property(fc.array(label, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: 65535 }), (parts, port) => {
      const host = parts.join(".")
      assert.equal(Cluster.contactProblem(host), undefined)
      assert.match(Cluster.contactProblem(`${host}:${port}`) ?? "", /without a port/)
    }))
    for (const w of ["0.0.0.0", "::", "[::]", ""]) assert.ok(Cluster.isWildcardHost(w) && Cluster.contactProblem(w) !== undefined)
  })

  it("defaults to this machine's address on the route to the scheduler (loopback for loopback)", async () => {
    assert.equal(await routeTo("127.0.0.1"), "127.0.0.1")
    assert.equal(await routeTo("[::1]").then((a) => a === "::1", () => "no IPv6 loopback here"), true)
    assert.equal(await routeTo("localhost").then((a) => a === "127.0.0.1" || a === "::1"), true)
  })

  it("rejects where there is no route or no host, instead of answering a wildcard", async () => {
    await assert.rejects(routeTo("255.255.255.255"), /no route to 255\.255\.255\.255|EACCES|ENETUNREACH/)
    await assert.rejects(routeTo(""), /no host to route to/)
  })
})

describe("Cluster.runWorker's address errors", () => {
  const failure = async (o: Cluster.WorkerProcessOptions) => {
    const exit = await Effect.runPromiseExit(Cluster.runWorker(o))
    assert.ok(Exit.isFailure(exit))
    const f = exit.cause.reasons.find((r) => r._tag === "Fail")
    assert.ok(f?._tag === "Fail" && f.error instanceof Cluster.ClusterAddressError, String(exit))
    return f.error.message
  }

  it("a bad --advertise is a ClusterAddressError naming it", async () => {
    assert.match(await failure({ scheduler: "127.0.0.1:1", advertise: "0.0.0.0" }), /^--advertise: 0\.0\.0\.0 listens on every interface/)
    assert.match(await failure({ scheduler: "127.0.0.1:1", advertise: "h:1" }), /^--advertise: expected a host without a port/)
  })

  it("no route to the scheduler, with no --advertise, is a ClusterAddressError saying so", async () => {
    assert.match(
      await failure({ scheduler: "no-such-host.invalid:8786" }),
      /^--advertise: no address of this machine reaches no-such-host\.invalid \(.*\); give --advertise HOST$/
    )
  })

  it("--advertise alone, not an address of this machine, is a ClusterAddressError asking for --listen", async () => {
    // 203.0.113.7: TEST-NET-3 (RFC 5737), never an address of this machine
    assert.match(
      await failure({ scheduler: "127.0.0.1:1", advertise: "203.0.113.7" }),
      /^--advertise: cannot listen on 203\.0\.113\.7 \(.*\); give --listen HOST:PORT/
    )
  })

  it("tessera worker refuses a bad --advertise as a usage error", () => {
    const r = spawnSync(process.execPath, [main, "worker", "--scheduler", "127.0.0.1:1", "--advertise", "0.0.0.0"], { encoding: "utf8" })
    assert.equal(r.status, 2)
    assert.match(r.stderr, /--advertise "0\.0\.0\.0": 0\.0\.0\.0 listens on every interface but reaches none/)
  })
})

describe("tessera scheduler --host 0.0.0.0", { timeout: 120_000 }, () => {
  it("tells workers this machine's name to join at, not the wildcard", async () => {
    const port = await Cluster.freePort("0.0.0.0")
    // off loopback the scheduler makes its token file in ~/.tessera (issue 33): a HOME of the test's own
    const home = mkdtempSync(join(tmpdir(), "tessera-addresses-home-"))
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home }
    delete env.TESSERA_CLUSTER_TOKEN
    const p = spawn(process.execPath, [main, "scheduler", "--host", "0.0.0.0", "--port", String(port)], { stdio: ["ignore", "pipe", "pipe"], env })
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = ""
        p.stdout!.setEncoding("utf8").on("data", (d: string) => {
          out += d
          if (out.includes("\n")) resolve(out)
        })
        p.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)))
      })
      assert.equal(line.trim(), `tessera scheduler: workers join with  tessera worker --scheduler ${hostname()}:${port} --token-file ${join(home, ".tessera", "cluster.token")}`)
    } finally {
      p.kill("SIGTERM")
      rmSync(home, { recursive: true, force: true })
    }
  })
})

describe("a worker listening on every interface, reached at loopback", { timeout: 120_000 }, () => {
  const procs: Array<ChildProcess> = []
  let rt: ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never> | undefined
  after(async () => {
    await rt?.dispose()
    for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL")
  })

  it("joins under its contact address and computes", async () => {
    const port = await Cluster.freePort("127.0.0.1")
    // listening on every interface takes the cluster's token (issue 33): TLS on every link
    const token = "tessera-token-v1:" + randomBytes(32).toString("base64url")
    rt = ManagedRuntime.make(Cluster.layerLocal({ local: 0, port, minWorkers: 1, startTimeout: 120, token: Redacted.make(token) }))
    const ready = rt.runPromise(Effect.void)
    const wport = await Cluster.freePort("0.0.0.0")
    const p = spawn(process.execPath, [main, "worker", "--scheduler", `127.0.0.1:${port}`, "--listen", `0.0.0.0:${wport}`, "--advertise", "127.0.0.1"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TESSERA_CLUSTER_TOKEN: token }
    })
    procs.push(p)
    let out = ""
    p.stdout!.setEncoding("utf8").on("data", (d: string) => void (out += d))
    p.stderr!.setEncoding("utf8").on("data", (d: string) => void (out += d))
    await ready.catch((e: unknown) => {
      throw new Error(`${String(e)}\n${out}`)
    })
    assert.match(out, new RegExp(`tessera worker at 127\\.0\\.0\\.1:${wport} \\(listening on 0\\.0\\.0\\.0:${wport}\\)`))
    const g = TaskGraph.makeUnsafe([
      { key: "a", kernel: k("arange"), args: [0, 100] },
      { key: "s", kernel: k("chunkSum"), args: [TaskGraph.ref("a")] }
    ])
    const { names, out: res } = await rt.runPromise(Effect.gen(function*() {
      const c = yield* Cluster.Cluster
      const out = yield* Engine.compute(g, { keys: ["s"] })
      return { names: c.workers().map((w) => w.name), out }
    }))
    assert.deepEqual(names, [`tessera-worker@127.0.0.1:${wport}`])
    assert.equal(res.get("s"), 4950)
  })
})

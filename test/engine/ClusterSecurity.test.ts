/**
 * Issue 33 on loopback: a local cluster keyed by a token (every link TLS 1.3 with a key
 * derived from it) computes right; on each of its ports (the registry, each worker's
 * runner socket and data plane) a client with a wrong token or none fails the handshake
 * before anything of it is decoded; garbage bytes and 1,000 half-open connections on each
 * port leave a compute running at the same time unharmed and its result right. The same
 * abuse on a plain (loopback, no token) cluster is bounded too.
 */
import assert from "node:assert/strict"
import { randomBytes } from "node:crypto"
import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { describe, it } from "node:test"
import * as Tls from "node:tls"
import { Effect, ManagedRuntime, Redacted } from "effect"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { encodeRequest } from "../../src/engine/internal/cluster/frames.ts"
import { k } from "./graphs.ts"

const floats = new URL("../fixtures/kernels/floats.ts", import.meta.url).href
const TOKEN = "tessera-token-v1:" + randomBytes(32).toString("base64url")
const WRONG = "tessera-token-v1:" + randomBytes(32).toString("base64url")

/** 8 arrays of 128 Ki float64 over the workers, then sums needing arrays from both. */
const N = 8
const LEN = 128 * 1024
const graph = (): TaskGraph.TaskGraph => {
  const specs: Array<TaskGraph.TaskSpec> = []
  for (let i = 0; i < N; i++) specs.push({ key: `floats-${i}`, kernel: Kernel.ref(floats, "floats"), args: [i, LEN] })
  specs.push({ key: "all", kernel: Kernel.ref(floats, "sumAll"), args: Array.from({ length: N }, (_, i) => TaskGraph.ref(`floats-${i}`)) })
  specs.push({ key: "total", kernel: k("sum"), args: [TaskGraph.ref("all"), 0] })
  return TaskGraph.makeUnsafe(specs)
}

type Rt = ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never>

/** the sum the graph's `total` must be */
const TOTAL = Array.from({ length: N }, (_, i) => LEN * i + (LEN * (LEN - 1)) / 2).reduce((a, b) => a + b, 0)

const compute = (rt: Rt) => rt.runPromise(Engine.compute(graph(), { keys: ["total"] })).then((out) => out.get("total"))

/** The TCP ports `pid` listens on (its sockets' inodes in /proc/net/tcp{,6}). */
const listening = (pid: number): Array<number> => {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m !== null) inodes.add(m[1]!)
    } catch {
      // closed meanwhile
    }
  }
  const ports: Array<number> = []
  for (const f of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(f, "utf8").split("\n").slice(1)) {
      const c = line.trim().split(/\s+/)
      if (c[3] === "0A" && inodes.has(c[9]!)) ports.push(parseInt(c[1]!.split(":")[1]!, 16))
    }
  }
  return ports
}

/** Every port of the cluster: its registry, and each worker process's runner and data plane. */
const portsOf = async (rt: Rt): Promise<Array<{ what: string; port: number }>> => {
  const c = await rt.runPromise(Effect.gen(function*() {
    return yield* Cluster.Cluster
  }))
  const out = [{ what: "registry", port: Number(c.address.slice(c.address.lastIndexOf(":") + 1)) }]
  for (const pid of c.localPids()) for (const port of listening(pid)) out.push({ what: `worker pid ${pid}`, port })
  return out
}

/** A TLS client keyed by `token`: "connected", or the error's message. */
const tlsAttempt = (port: number, token: string | undefined) =>
  new Promise<string>((resolve) => {
    const s = Tls.connect({
      host: "127.0.0.1",
      port,
      minVersion: "TLSv1.3",
      checkServerIdentity: () => undefined,
      ...(token !== undefined
        ? {
          ciphers: "TLS_AES_128_GCM_SHA256",
          pskCallback: () => ({
            psk: Buffer.from(
              (process.getBuiltinModule("node:crypto")).hkdfSync("sha256", Buffer.from(token), Buffer.alloc(0), "tessera cluster psk v1", 32)
            ),
            identity: "tessera-cluster-v1"
          })
        }
        : {})
    })
    const t = setTimeout(() => resolve("no answer"), 15_000)
    s.once("secureConnect", () => {
      clearTimeout(t)
      s.destroy()
      resolve("connected")
    })
    s.once("error", (e) => {
      clearTimeout(t)
      resolve(e.message)
    })
  })

/** The bytes a plain-TCP data-plane request for a result's key gets back before the connection ends (or 3 s). */
const plainRequest = (port: number) =>
  new Promise<number>((resolve) => {
    let got = 0
    const s = connect({ host: "127.0.0.1", port }, () => s.write(encodeRequest(["floats-0"])))
    s.on("data", (d: Buffer) => void (got += d.length))
    s.on("error", () => {})
    s.once("close", () => resolve(got))
    setTimeout(() => s.destroy(), 3000)
  })

/** Opens `n` connections to `port` that say nothing (a half-open flood); resolves once all are connected or failed. */
const halfOpen = async (port: number, n: number): Promise<Array<Socket>> => {
  const out: Array<Socket> = []
  await Promise.all(Array.from({ length: n }, () =>
    new Promise<void>((resolve) => {
      const s = connect({ host: "127.0.0.1", port })
      s.on("error", () => resolve())
      s.once("connect", () => resolve())
      s.once("close", () => resolve())
      out.push(s)
    })))
  return out
}

/** Sends 64 KiB of random bytes on each of `n` connections to `port`. */
const garbage = (port: number, n: number): Promise<void> =>
  Promise.all(Array.from({ length: n }, () =>
    new Promise<void>((resolve) => {
      // written whole, then dropped: a server may well keep a connection that sent garbage open
      const s = connect({ host: "127.0.0.1", port }, () => s.write(randomBytes(65536), () => setTimeout(() => s.destroy(), 1000)))
      s.on("error", () => resolve())
      s.once("close", () => resolve())
    }))).then(() => undefined)

/** The abuse of every port while a compute runs: its result must be the one it had before. */
const abuseEveryPort = async (rt: Rt, expected: unknown) => {
  const ports = await portsOf(rt)
  assert.ok(ports.length >= 5, `registry + 2 ports a worker: ${JSON.stringify(ports)}`)
  for (const { what, port } of ports) {
    const t0 = performance.now()
    const running = compute(rt)
    const flood = await halfOpen(port, 1000)
    await garbage(port, 16)
    assert.deepEqual(await running, expected, `the compute during the abuse of ${what}'s port ${port}`)
    assert.deepEqual(await compute(rt), expected, `a compute with 1,000 connections open on ${what}'s port ${port}`)
    for (const s of flood) s.destroy()
    if (process.env.TESSERA_TEST_TIMES) console.log(what, port, ((performance.now() - t0) / 1000).toFixed(1), "s")
  }
}

describe("a local cluster keyed by a token (TLS on every link)", { timeout: 300_000 }, () => {
  it("issue 33: computes right with peer transfers; a wrong token or none is refused in the handshake on every port; garbage and 1,000 half-open connections on each port leave computes unharmed", async () => {
    const rt: Rt = ManagedRuntime.make(Cluster.layerLocal({ local: 2, token: Redacted.make(TOKEN) }))
    try {
      const c = await rt.runPromise(Effect.gen(function*() {
        return yield* Cluster.Cluster
      }))
      const seen: Array<Cluster.TransferInfo> = []
      const off = c.onTransfer((t) => seen.push(t))
      const expected = await compute(rt)
      off()
      assert.equal(expected, TOTAL)
      // arrays crossed between the workers over the TLS data plane
      assert.ok(seen.reduce((a, t) => a + t.bytes, 0) >= LEN * 8, `peer bytes moved: ${JSON.stringify(seen)}`)
      for (const { what, port } of await portsOf(rt)) {
        // the right key gets through the handshake (the ports do speak TLS keyed by it) …
        assert.equal(await tlsAttempt(port, TOKEN), "connected", `${what} port ${port} with the token`)
        // … a wrong one, or a certificate-seeking client with none, does not
        assert.notEqual(await tlsAttempt(port, WRONG), "connected", `${what} port ${port} with a wrong token`)
        assert.notEqual(await tlsAttempt(port, undefined), "connected", `${what} port ${port} without a token`)
      }
      // a well-formed data-plane request over plain TCP gets not one byte back from any port
      for (const { what, port } of (await portsOf(rt)).slice(1)) {
        assert.equal(await plainRequest(port), 0, `${what} port ${port} answered a plain data-plane request`)
      }
      await abuseEveryPort(rt, expected)
    } finally {
      await rt.dispose()
    }
  })
})

describe("a plain local cluster (loopback, no token)", { timeout: 300_000 }, () => {
  it("issue 33: garbage bytes and 1,000 half-open connections on each port leave computes unharmed and their results right", async () => {
    const rt: Rt = ManagedRuntime.make(Cluster.layerLocal({ local: 2 }))
    try {
      const expected = await compute(rt)
      assert.equal(expected, TOTAL)
      await abuseEveryPort(rt, expected)
    } finally {
      await rt.dispose()
    }
  })
})

/**
 * What TLS costs the cluster (issue 33), plain TCP against TLS 1.3 keyed by a token, in
 * one run, on two local clusters of 2 worker processes started side by side:
 *
 * - the 64 MiB peer fetch (bench/engine/transfer.ts' graph: two arrays made on different
 *   workers, one task reading both): MiB/s of the data plane, median of `--repeats`
 *   fetches a side, the sides alternating fetch by fetch;
 * - `bench cluster`'s no-op graphs (fan-out 10,000, tree 4,096): tasks/s, median of
 *   `--repeats` computes a side after a warm-up, alternating.
 *
 * - a connection's set-up to the registry port: TCP connect, and TCP connect plus the
 *   TLS 1.3 PSK handshake (ECDHE), median of 50 each (what a new link costs once).
 *
 * Goals: TLS keeps ≥ 80% of the fetch's bandwidth and ≥ 90% of the tasks/s.
 *
 * Usage: node bench/engine/clusterTls.ts [--mib 64] [--repeats 7] [--json]
 *
 * @since 0.1.0
 */
import { randomBytes } from "node:crypto"
import { cpus } from "node:os"
import { Effect, ManagedRuntime, Redacted } from "effect"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as Executor from "../../src/engine/Executor.ts"
import { connect } from "node:net"
import * as Tls from "node:tls"
import { clientTls } from "../../src/engine/internal/cluster/security.ts"
import { build } from "./BenchGraphs.ts"
import { peerFetch } from "./peerFetch.ts"
import { median } from "../stats.ts"

const argv = process.argv.slice(2)
const arg = (name: string, d: number) => argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : d
const mib = arg("--mib", 64)
const repeats = arg("--repeats", 7)
const n = (mib * 2 ** 20) / 8

type Rt = ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never>

/** One peer fetch's MiB/s (the transfer's own start and stop), or null when nothing moved. */
const fetchOnce = async (rt: Rt, r: number): Promise<number | null> => {
  const p = await peerFetch(rt, n, r)
  return p === null ? null : p.bytes / 2 ** 20 / p.seconds
}

const tasksPerSecond = async (rt: Rt, shape: "fanout" | "tree", tasks: number): Promise<number> => {
  const g = build(shape, tasks)
  const t0 = performance.now()
  await rt.runPromise(Engine.compute(g.graph, { keys: g.keys }))
  return g.graph.size / ((performance.now() - t0) / 1000)
}

/** Milliseconds to open a connection to `port` that may talk (plain: connected; TLS: handshake done). */
const setUp = (port: number, tls: boolean) =>
  new Promise<number>((resolve, reject) => {
    const t0 = performance.now()
    const s = tls ? Tls.connect({ ...clientTls(token), host: "127.0.0.1", port }) : connect({ host: "127.0.0.1", port })
    s.once(tls ? "secureConnect" : "connect", () => {
      resolve(performance.now() - t0)
      s.destroy()
    })
    s.once("error", reject)
  })

const token = Redacted.make("tessera-token-v1:" + randomBytes(32).toString("base64url"))
const sides = {
  plain: ManagedRuntime.make(Cluster.layerLocal({ local: 2, heartbeatTimeout: 120 })) as Rt,
  tls: ManagedRuntime.make(Cluster.layerLocal({ local: 2, heartbeatTimeout: 120, token })) as Rt
}
const results: Record<string, { plain: number; tls: number; ratio: number; unit: string }> = {}
try {
  await Promise.all([sides.plain.runPromise(Effect.void), sides.tls.runPromise(Effect.void)])
  // the fetch: alternating sides, each fetch its own keys
  const rates = { plain: [] as Array<number>, tls: [] as Array<number> }
  for (let r = 0; r < repeats + 1; r++) {
    for (const side of r % 2 === 0 ? (["plain", "tls"] as const) : (["tls", "plain"] as const)) {
      const x = await fetchOnce(sides[side], r)
      if (x !== null && r > 0) rates[side].push(x)
    }
  }
  const f = { plain: median(rates.plain), tls: median(rates.tls) }
  results[`peer fetch ${mib} MiB`] = { ...f, ratio: f.tls / f.plain, unit: "MiB/s" }
  for (const [shape, tasks] of [["fanout", 10_000], ["tree", 4_096]] as const) {
    const t = { plain: [] as Array<number>, tls: [] as Array<number> }
    for (let r = 0; r < repeats + 1; r++) {
      for (const side of r % 2 === 0 ? (["plain", "tls"] as const) : (["tls", "plain"] as const)) {
        const x = await tasksPerSecond(sides[side], shape, tasks)
        if (r > 0) t[side].push(x)
      }
    }
    const m = { plain: median(t.plain), tls: median(t.tls) }
    results[`bench cluster ${shape} ${tasks}`] = { ...m, ratio: m.tls / m.plain, unit: "tasks/s" }
  }
  const portOf = async (rt: Rt) => {
    const a = (await rt.runPromise(Effect.map(Cluster.Cluster, (c) => c.address)))
    return Number(a.slice(a.lastIndexOf(":") + 1))
  }
  const ms = { plain: [] as Array<number>, tls: [] as Array<number> }
  const ports = { plain: await portOf(sides.plain), tls: await portOf(sides.tls) }
  for (let i = 0; i < 50; i++) {
    ms.plain.push(await setUp(ports.plain, false))
    ms.tls.push(await setUp(ports.tls, true))
  }
  const c = { plain: median(ms.plain), tls: median(ms.tls) }
  results["connection set-up"] = { ...c, ratio: c.tls / c.plain, unit: "ms" }
} finally {
  await Promise.all([sides.plain.dispose(), sides.tls.dispose()])
}
// the cipher's own speed here, as TLS uses it: 16 KiB records, warm (the best of three
// passes; a first pass over a new 64 MiB output measures page faults, not the cipher: a
// single cold pass read 100-150 MiB/s here where warm passes run at 2-2.5 GiB/s)
const cipherSpeed = (() => {
  const c = process.getBuiltinModule("node:crypto")
  const buf = Buffer.alloc(n * 8, 1)
  let best = 0
  for (let pass = 0; pass < 3; pass++) {
    const e = c.createCipheriv("aes-128-gcm", c.randomBytes(16), c.randomBytes(12))
    const t0 = performance.now()
    for (let o = 0; o < buf.length; o += 16384) e.update(buf.subarray(o, o + 16384))
    e.final()
    best = Math.max(best, (n * 8) / 2 ** 20 / ((performance.now() - t0) / 1000))
  }
  return best
})()
if (argv.includes("--json")) console.log(JSON.stringify({ repeats, mib, cpus: cpus().length, aes128gcmMiBs: cipherSpeed, results }))
else {
  console.log(`TLS against plain TCP, 2 local worker processes a side, ${repeats} alternating runs a side (median); ${cpus().length} cores; AES-128-GCM alone here: ${cipherSpeed.toFixed(0)} MiB/s`)
  for (const [k, v] of Object.entries(results)) {
    console.log(v.unit === "ms"
      ? `  ${k}: plain ${v.plain.toFixed(2)} ms, TLS ${v.tls.toFixed(2)} ms (${v.ratio.toFixed(1)}x)`
      : `  ${k}: plain ${v.plain.toFixed(0)} ${v.unit}, TLS ${v.tls.toFixed(0)} ${v.unit}: TLS keeps ${(100 * v.ratio).toFixed(1)}%`)
  }
}

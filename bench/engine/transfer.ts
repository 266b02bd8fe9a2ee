/**
 * Moving a 64 MiB chunk between two worker processes: the cluster's peer fetch against a
 * plain TCP stream between two Node processes on loopback, in the same run (issue 17's
 * goal: the peer fetch at least 70% of the raw stream's bandwidth).
 *
 * - Peer fetch: a `LocalCluster` of 2 worker processes computes `x = filled(N)` and
 *   `y = filled(N + 1024)` (one on each worker) and `ends(x, y)`, which the scheduler
 *   places with the larger input `y`, so that worker fetches `x` from the other over the
 *   data plane (src/engine/internal/cluster/dataPlane.ts: a pooled TCP connection to the
 *   holder's data port, the array's raw bytes behind a small head, copied into one
 *   preallocated buffer on arrival). Timed by the receiver's `Transfer` record: from its request to the
 *   decoded `Float64Array` (start and stop on one clock, so no offset enters).
 * - Raw TCP: a sender process (bench/engine/transferPeers.ts) holding the same N float64s
 *   writes their bytes when asked; a receiver process asks (one byte) and times until all
 *   bytes are in one `Float64Array` (the chunks copied together, as a receiver must).
 *
 * Both reuse one connection after an untimed warm-up, as the cluster does. Prints the
 * median and best of `--repeats` (default 5) for each, MiB/s, and peer / raw.
 *
 * `--netns` (root, Linux): the same across two network namespaces (bench/netns.ts: veth
 * pairs on a bridge), so the bytes cross real interfaces: the driver here on the bridge,
 * a `tessera worker` in each namespace, and the raw stream's sender in the first and
 * receiver in the second; also prints each veth's rx/tx bytes over the run. Where
 * namespaces cannot be made it says why and exits 0.
 *
 * Usage: node bench/engine/transfer.ts [--mib 64] [--repeats 5] [--netns] [--json]
 *
 * @since 0.1.0
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect, ManagedRuntime } from "effect"
import * as Cluster from "../../src/engine/Cluster.ts"
import { type VirtualHost, virtualHosts } from "../netns.ts"
import { median } from "../stats.ts"
import { peerFetch } from "./peerFetch.ts"

const argv = process.argv.slice(2)
const mib = argv.includes("--mib") ? Number(argv[argv.indexOf("--mib") + 1]) : 64
const repeats = argv.includes("--repeats") ? Number(argv[argv.indexOf("--repeats") + 1]) : 5
const netns = argv.includes("--netns")
const n = mib * 2 ** 20 / 8
const bytes = n * 8
const peers = new URL("./transferPeers.ts", import.meta.url)

/** `[command, args]` running `argv` on a host: here, or in a virtual host's namespace. */
type Place = (argv: ReadonlyArray<string>) => readonly [string, ReadonlyArray<string>]
const here: Place = (argv) => [argv[0]!, argv.slice(1)]

/** Resolves with the first line a process prints. */
const firstLine = (p: ChildProcess) =>
  new Promise<string>((resolve, reject) => {
    let buf = ""
    const onData = (d: Buffer) => {
      buf += String(d)
      const i = buf.indexOf("\n")
      if (i < 0) return
      p.stdout!.off("data", onData)
      resolve(buf.slice(0, i).trim())
    }
    p.stdout!.on("data", onData)
    p.once("exit", (code) => reject(new Error(`${p.spawnargs.join(" ")} exited (${code}) before printing`)))
  })

/**
 * The raw baseline: a sender process (at `senderAt`, listening on `host`) and a receiver
 * process (at `receiverAt`) with one connection to it; `once` times one array.
 */
const rawPeer = async (senderAt: Place, receiverAt: Place, host: string) => {
  const [sc, sa] = senderAt([process.execPath, fileURLToPath(peers), "sender", String(n), host])
  const sender = spawn(sc, sa, { stdio: ["pipe", "pipe", "inherit"] })
  const port = Number(await firstLine(sender))
  const [rc, ra] = receiverAt([process.execPath, fileURLToPath(peers), "receiver", host, String(port), String(n)])
  const receiver = spawn(rc, ra, { stdio: ["pipe", "pipe", "inherit"] })
  const once = async () => {
    const line = firstLine(receiver)
    receiver.stdin!.write("go\n")
    return Number(await line)
  }
  return {
    once,
    close: () => {
      receiver.stdin!.end()
      sender.stdin!.end()
    }
  }
}

/**
 * The cluster, and where the raw stream's ends run: on loopback, a LocalCluster of 2
 * worker processes; with `--netns`, `tessera worker`s in two network namespaces (the
 * driver here, on the bridge) and the raw stream between the same two namespaces.
 */
const setUp = async () => {
  // a worker busy (de)serialising 64 MiB on a loaded machine can miss the default 10 s of
  // heartbeats and be taken for dead, after which nothing moves; this measures transfers
  if (!netns) {
    const rt = ManagedRuntime.make(Cluster.layerLocal({ local: 2, heartbeatTimeout: 120 }))
    await rt.runPromise(Effect.void)
    return { rt, raw: await rawPeer(here, here, "127.0.0.1"), stop: async () => {}, counters: () => [] }
  }
  const vh = virtualHosts(2)
  if ("reason" in vh) {
    console.log(`transfer --netns: cannot make network namespaces here: ${vh.reason}`)
    process.exit(0)
  }
  const procs: Array<ChildProcess> = []
  const stop = async () => {
    await Promise.all(procs.map((p) =>
      new Promise<void>((resolve) => {
        if (p.exitCode !== null || p.signalCode !== null) return resolve()
        p.once("exit", () => resolve())
        p.kill("SIGTERM")
      })
    ))
    vh.tearDown()
  }
  try {
    const port = await Cluster.freePort(vh.bridgeIp)
    const rt = ManagedRuntime.make(
      Cluster.layerLocal({ local: 0, host: vh.bridgeIp, port, minWorkers: 2, heartbeatTimeout: 120, startTimeout: 120 })
    )
    const ready = rt.runPromise(Effect.void)
    // let the registry listen before the workers look for it
    await new Promise((r) => setTimeout(r, 1000))
    const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
    for (const h of vh.hosts) {
      const [c, a] = vh.exec(h, [process.execPath, main, "worker", "--scheduler", `${vh.bridgeIp}:${port}`])
      procs.push(spawn(c, a, { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, NODE_OPTIONS: "" } }))
    }
    await ready
    const at = (h: VirtualHost): Place => (argv) => vh.exec(h, argv)
    return {
      rt,
      raw: await rawPeer(at(vh.hosts[0]!), at(vh.hosts[1]!), vh.hosts[0]!.ip),
      stop,
      counters: () => vh.hosts.map((h) => ({ veth: h.veth, ...vh.counters(h) }))
    }
  } catch (e) {
    await stop()
    throw e
  }
}

const { counters, raw, rt, stop } = await setUp()
const veths0 = counters()
const peerSeconds: Array<number> = []
const rawSeconds: Array<number> = []
const codec: Array<number> = []
const sers: Array<number> = []
const desers: Array<number> = []
let encoded = 0
let missed = 0
try {
  await peerFetch(rt, n, 0)
  await raw.once()
  for (let r = 1; r <= repeats; r++) {
    let p = null
    for (let attempt = 0; p === null && attempt < 3; attempt++) {
      p = await peerFetch(rt, n, r * 10 + attempt)
      if (p === null) missed++
    }
    if (p !== null) {
      peerSeconds.push(p.seconds)
      codec.push(p.serialize + p.deserialize)
      sers.push(p.serialize)
      desers.push(p.deserialize)
      encoded = p.bytes
    }
    rawSeconds.push(await raw.once())
  }
} finally {
  raw.close()
  await rt.dispose()
}
const veths = counters().map((c, i) => ({ veth: c.veth, rx: c.rx - veths0[i]!.rx, tx: c.tx - veths0[i]!.tx }))
await stop()

const mibps = (s: number) => bytes / 2 ** 20 / s
const rows = [
  { path: `cluster peer fetch (data plane${netns ? ", across namespaces" : ""})`, "median s": median(peerSeconds), "best s": Math.min(...peerSeconds) },
  { path: `raw TCP, Node to Node${netns ? ", across namespaces" : ""}`, "median s": median(rawSeconds), "best s": Math.min(...rawSeconds) }
].map((r) => ({
  ...r,
  "median MiB/s": Math.round(mibps(r["median s"])),
  "best MiB/s": Math.round(mibps(r["best s"]))
}))
const ratio = median(rawSeconds) / median(peerSeconds)
const result = {
  mib,
  repeats,
  path: netns ? "two network namespaces (veth pairs on a bridge)" : "loopback",
  ...(netns ? { veths } : {}),
  encodedBytes: encoded,
  missedTransfers: missed,
  rows,
  peerCodecMedianSeconds: median(codec),
  peerSerializeMedianSeconds: median(sers),
  peerDeserializeMedianSeconds: median(desers),
  peerOverRaw: Number(ratio.toFixed(3)),
  goal: 0.7
}
if (argv.includes("--json")) console.log(JSON.stringify(result, null, 2))
else {
  console.table(rows)
  if (netns) console.table(veths)
  console.log(
    `${mib} MiB, ${repeats} repeats: peer fetch at ${(ratio * 100).toFixed(0)}% of raw TCP's bandwidth (medians; goal ≥ 70%)` +
      (encoded > 0 ? `; of the fetch's median, ${median(codec).toFixed(3)} s is encoding and decoding (the frame's head; the array's bytes are read in place), ${encoded - bytes} bytes of framing overhead` : "") +
      (missed > 0 ? `; ${missed} compute(s) moved no chunk between workers (both producers on one worker) and were run again` : "")
  )
}

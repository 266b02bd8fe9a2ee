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
 *   writes their bytes when asked; this process asks (one byte) and times until all bytes
 *   are in one `Float64Array` (the chunks copied together, as a receiver must).
 *
 * Both reuse one connection after an untimed warm-up, as the cluster does. Prints the
 * median and best of `--repeats` (default 5) for each, MiB/s, and peer / raw.
 *
 * Usage: node bench/engine/transfer.ts [--mib 64] [--repeats 5] [--json]
 *
 * @since 0.1.0
 */
import { spawn } from "node:child_process"
import { connect, type Socket } from "node:net"
import { fileURLToPath } from "node:url"
import { Effect, ManagedRuntime } from "effect"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { median } from "../stats.ts"

const argv = process.argv.slice(2)
const mib = argv.includes("--mib") ? Number(argv[argv.indexOf("--mib") + 1]) : 64
const repeats = argv.includes("--repeats") ? Number(argv[argv.indexOf("--repeats") + 1]) : 5
const n = mib * 2 ** 20 / 8
const bytes = n * 8
const peers = new URL("./transferPeers.ts", import.meta.url)
const filled = Kernel.ref(peers.href, "filled")
const ends = Kernel.ref(peers.href, "ends")

/**
 * One peer fetch of a chunk (seconds, encoded bytes, the sender's and receiver's codec
 * seconds), or null when the scheduler put both producers on one worker (nothing moved).
 */
const peerFetch = async (rt: ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never>, r: number) => {
  const c = await rt.runPromise(Effect.gen(function*() {
    return yield* Cluster.Cluster
  }))
  const seen: Array<Cluster.TransferInfo> = []
  const off = c.onTransfer((t) => seen.push(t))
  const g = TaskGraph.makeUnsafe([
    { key: `x-${r}`, kernel: filled, args: [n, r] },
    { key: `y-${r}`, kernel: filled, args: [n + 1024, r] },
    { key: `f-${r}`, kernel: ends, args: [TaskGraph.ref(`x-${r}`), TaskGraph.ref(`y-${r}`)] }
  ])
  const out = await rt.runPromise(Engine.compute(g, { keys: [`f-${r}`] }))
  off()
  if (out.get(`f-${r}`) !== 3 * r + n - 1) throw new Error(`wrong result ${String(out.get(`f-${r}`))}`)
  const t = seen.find((t) => t.bytes >= bytes)
  return t === undefined ? null : { seconds: t.stop - t.start, bytes: t.bytes, serialize: t.serialize, deserialize: t.deserialize }
}

/** The raw baseline: a sender process and one connection to it. */
const rawPeer = async () => {
  const sender = spawn(process.execPath, [fileURLToPath(peers), "sender", String(n)], { stdio: ["pipe", "pipe", "inherit"] })
  const port = await new Promise<number>((resolve) => sender.stdout!.once("data", (d) => resolve(Number(String(d).trim()))))
  const socket: Socket = await new Promise((resolve) => {
    const s = connect(port, "127.0.0.1", () => resolve(s))
    s.setNoDelay(true)
  })
  const once = () =>
    new Promise<number>((resolve) => {
      const chunks: Array<Buffer> = []
      let got = 0
      const t0 = performance.now()
      const onData = (d: Buffer) => {
        chunks.push(d)
        got += d.length
        if (got < bytes) return
        socket.off("data", onData)
        const all = Buffer.concat(chunks, bytes)
        const a = new Float64Array(all.buffer, all.byteOffset, n)
        const t1 = performance.now()
        if (a[n - 1] !== n - 1) throw new Error("raw stream: wrong bytes")
        resolve((t1 - t0) / 1000)
      }
      socket.on("data", onData)
      socket.write(Buffer.from([1]))
    })
  return {
    once,
    close: () => {
      socket.destroy()
      sender.stdin!.end()
    }
  }
}

// a worker busy (de)serialising 64 MiB on a loaded machine can miss the default 10 s of
// heartbeats and be taken for dead, after which nothing moves; this measures transfers
const rt = ManagedRuntime.make(Cluster.layerLocal({ local: 2, heartbeatTimeout: 120 }))
await rt.runPromise(Effect.void)
const raw = await rawPeer()
const peerSeconds: Array<number> = []
const rawSeconds: Array<number> = []
const codec: Array<number> = []
const sers: Array<number> = []
const desers: Array<number> = []
let encoded = 0
let missed = 0
try {
  await peerFetch(rt, 0)
  await raw.once()
  for (let r = 1; r <= repeats; r++) {
    let p = null
    for (let attempt = 0; p === null && attempt < 3; attempt++) {
      p = await peerFetch(rt, r * 10 + attempt)
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

const mibps = (s: number) => bytes / 2 ** 20 / s
const rows = [
  { path: "cluster peer fetch (data plane)", "median s": median(peerSeconds), "best s": Math.min(...peerSeconds) },
  { path: "raw TCP, Node to Node", "median s": median(rawSeconds), "best s": Math.min(...rawSeconds) }
].map((r) => ({
  ...r,
  "median MiB/s": Math.round(mibps(r["median s"])),
  "best MiB/s": Math.round(mibps(r["best s"]))
}))
const ratio = median(rawSeconds) / median(peerSeconds)
const result = {
  mib,
  repeats,
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
  console.log(
    `${mib} MiB, ${repeats} repeats: peer fetch at ${(ratio * 100).toFixed(0)}% of raw TCP's bandwidth (medians; goal ≥ 70%)` +
      (encoded > 0 ? `; of the fetch's median, ${median(codec).toFixed(3)} s is encoding and decoding (the frame's head; the array's bytes are read in place), ${encoded - bytes} bytes of framing overhead` : "") +
      (missed > 0 ? `; ${missed} compute(s) moved no chunk between workers (both producers on one worker) and were run again` : "")
  )
}

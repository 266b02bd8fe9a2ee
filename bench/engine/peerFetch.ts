/**
 * One 64 MiB-style peer fetch on a cluster, shared by bench/engine/transfer.ts and
 * bench/engine/clusterTls.ts: two arrays of `n` float64s made by two tasks (so that the
 * scheduler puts them on different workers), and one task reading both, which fetches
 * one of them from its peer.
 *
 * @since 0.1.0
 */
import { Effect, type ManagedRuntime } from "effect"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import type * as Executor from "../../src/engine/Executor.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"

const peers = new URL("./transferPeers.ts", import.meta.url)
const filled = Kernel.ref(peers.href, "filled")
const ends = Kernel.ref(peers.href, "ends")

/**
 * The fetch of round `r` (its own keys): the transfer of at least `n * 8` bytes (seconds,
 * encoded bytes, the sender's and receiver's codec seconds), or null when the scheduler
 * put both producers on one worker (nothing moved). Throws on a wrong result.
 *
 * @since 0.1.0
 */
export const peerFetch = async (rt: ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never>, n: number, r: number) => {
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
  const t = seen.find((t) => t.bytes >= n * 8)
  return t === undefined ? null : { seconds: t.stop - t.start, bytes: t.bytes, serialize: t.serialize, deserialize: t.deserialize }
}

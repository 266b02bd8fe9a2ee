/**
 * The data plane's sockets (src/engine/internal/cluster/dataPlane.ts) on loopback: a fetch
 * gets the held values byte-exactly over a pooled connection, a pooled connection the
 * server closed is replaced, and a server that dies mid-reply fails the fetch with
 * `DataPlaneError` (which the worker turns into "ask the next holder / input lost").
 */
import assert from "node:assert/strict"
import { createServer } from "node:net"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import { DataClient, serve } from "../../src/engine/internal/cluster/dataPlane.ts"
import { encode } from "../../src/engine/internal/cluster/frames.ts"

describe("data plane on loopback", () => {
  it("fetches held keys over one pooled connection; counts the bytes sent", async () => {
    const big = new Float64Array(300_000).map((_, i) => i * 0.5)
    const store = new Map<string, unknown>([["a", big], ["b", { n: 1, xs: [new Int32Array([-3, 4])] }]])
    let sent = 0
    let connections = 0
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const { port } = yield* serve("127.0.0.1", (keys) => {
        const o: Record<string, unknown> = {}
        for (const k of keys) if (store.has(k)) o[k] = store.get(k)
        return o
      }, (n) => void (sent += n))
      const client = new DataClient()
      yield* Effect.addFinalizer(() => Effect.sync(() => client.close()))
      const first = yield* client.fetch("p", "127.0.0.1", port, ["a", "missing"])
      const second = yield* client.fetch("p", "127.0.0.1", port, ["b"])
      connections = (client as unknown as { idle: Map<string, Array<unknown>> }).idle.get(`127.0.0.1:${port}`)!.length
      return [first, second]
    })))
    const a = (out[0]!.value as Record<string, Float64Array>)["a"]!
    assert.deepStrictEqual(Object.keys(out[0]!.value as object), ["a"])
    assert.equal(a.length, big.length)
    assert.deepStrictEqual(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(big.buffer))
    assert.deepStrictEqual(Array.from((out[1]!.value as { b: { xs: [Int32Array] } }).b.xs[0]), [-3, 4])
    assert.equal(sent, out[0]!.bytes + out[1]!.bytes)
    assert.equal(connections, 1, "the second fetch reused the first's connection")
  })

  it("replaces a pooled connection the server closed", async () => {
    const sockets: Array<import("node:net").Socket> = []
    const server = createServer((s) => {
      sockets.push(s)
      s.on("data", () => {
        for (const p of encode({ k: new Uint8Array([1, 2, 3]) }).parts) s.write(p)
      })
    })
    const port = await new Promise<number>((r) => server.listen(0, "127.0.0.1", () => r((server.address() as { port: number }).port)))
    const client = new DataClient()
    try {
      await Effect.runPromise(client.fetch("p", "127.0.0.1", port, ["k"]))
      sockets[0]!.destroy()
      await new Promise((r) => setTimeout(r, 100))
      const again = await Effect.runPromise(client.fetch("p", "127.0.0.1", port, ["k"]))
      assert.deepStrictEqual(Array.from((again.value as { k: Uint8Array }).k), [1, 2, 3])
      assert.equal(sockets.length, 2)
    } finally {
      client.close()
      for (const s of sockets) s.destroy()
      server.close()
    }
  })

  it("fails with DataPlaneError when the holder dies mid-reply", async () => {
    const server = createServer((s) => {
      s.on("data", () => {
        const f = encode({ k: new Float64Array(100_000) })
        const all = Buffer.concat(f.parts)
        s.write(all.subarray(0, all.length >> 1), () => s.destroy())
      })
    })
    const port = await new Promise<number>((r) => server.listen(0, "127.0.0.1", () => r((server.address() as { port: number }).port)))
    const client = new DataClient()
    try {
      const exit = await Effect.runPromise(Effect.exit(client.fetch("holder", "127.0.0.1", port, ["k"])))
      assert.ok(Exit.isFailure(exit))
      const err = exit.cause.reasons.find((r) => r._tag === "Fail")
      assert.equal(err?._tag === "Fail" ? (err.error as { _tag: string })._tag : "", "DataPlaneError")
      assert.equal(err?._tag === "Fail" ? (err.error as { peer: string }).peer : "", "holder")
    } finally {
      client.close()
      server.close()
    }
  })
})

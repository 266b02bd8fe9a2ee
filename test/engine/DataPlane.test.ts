/**
 * The data plane's sockets (src/engine/internal/cluster/dataPlane.ts) on loopback: a fetch
 * gets the held values byte-exactly over a pooled connection, a pooled connection the
 * server closed is replaced, and a server that dies mid-reply fails the fetch with
 * `DataPlaneError` (which the worker turns into "ask the next holder / input lost").
 * Issue 32 item 6: lengths over the limits are refused before anything is buffered (the
 * hostile-peer test in a process of its own: DataPlaneLimits.test.ts); a 64 MiB fetch and
 * a list of keys longer than one request still work.
 */
import assert from "node:assert/strict"
import { createServer } from "node:net"
import { describe, it } from "node:test"
import { Effect, Exit } from "effect"
import { DataClient, serve } from "../../src/engine/internal/cluster/dataPlane.ts"
import { serialize } from "node:v8"
import { Decoder, encode, encodeRequest, FrameError, MAX_HEAD_BYTES, MAX_REPLY_BYTES, MAX_REQUEST_BYTES, RequestReader } from "../../src/engine/internal/cluster/frames.ts"

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

  it("issue 32 item 6: a 64 MiB fetch arrives whole", { timeout: 60_000 }, async () => {
    const big = new Float64Array(8 * 2 ** 20)
    for (let i = 0; i < big.length; i += 4099) big[i] = i
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const { port } = yield* serve("127.0.0.1", () => ({ big }), () => {})
      const client = new DataClient()
      yield* Effect.addFinalizer(() => Effect.sync(() => client.close()))
      return yield* client.fetch("p", "127.0.0.1", port, ["big"])
    })))
    const got = (out.value as { big: Float64Array }).big
    assert.equal(got.byteLength, 64 * 2 ** 20)
    assert.ok(Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(Buffer.from(big.buffer)))
  })

  it("issue 32 item 6: keys too many for one request go as several, and come back as one reply", { timeout: 60_000 }, async () => {
    const keys = Array.from({ length: 110_000 }, (_, i) => `${"k".repeat(150)}-${i}`)
    assert.ok(encodeRequest(keys).byteLength > MAX_REQUEST_BYTES)
    let requests = 0
    const out = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const { port } = yield* serve("127.0.0.1", (ks) => {
        requests++
        const o: Record<string, unknown> = {}
        for (const k of ks) if (k.endsWith("-7") || k.endsWith("-109999")) o[k] = new Int32Array([Number(k.slice(151))])
        return o
      }, () => {})
      const client = new DataClient()
      yield* Effect.addFinalizer(() => Effect.sync(() => client.close()))
      return yield* client.fetch("p", "127.0.0.1", port, keys)
    })))
    assert.ok(requests >= 2, `${requests} requests`)
    const v = out.value as Record<string, Int32Array>
    assert.deepStrictEqual(Object.keys(v).sort(), [keys[109_999]!, keys[7]!].sort())
    assert.equal(v[keys[109_999]!]![0], 109_999)
  })

  it("issue 32 item 6: lengths over the limits are FrameErrors before anything is allocated for them", () => {
    // a request claiming 4 GiB: refused on its 4-byte prefix
    const claim = Buffer.alloc(8)
    claim.writeUInt32LE(0xffffffff, 0)
    assert.throws(() => new RequestReader().push(claim), (e: unknown) => e instanceof FrameError && /request of 4294967295 bytes claimed, over the limit of 16777216/.test(e.message))
    // one exactly at the limit is read (its body split over packets)
    const reader = new RequestReader()
    const body = Buffer.from(JSON.stringify(["a".repeat(MAX_REQUEST_BYTES - 4)]))
    assert.equal(body.byteLength, MAX_REQUEST_BYTES)
    const frame = Buffer.concat([Buffer.alloc(4), body])
    frame.writeUInt32LE(body.byteLength, 0)
    let got: Array<ReadonlyArray<string>> = []
    for (let at = 0; at < frame.byteLength; at += 65536) got = got.concat(reader.push(frame.subarray(at, at + 65536)))
    assert.equal(got.length, 1)
    assert.equal(got[0]![0]!.length, MAX_REQUEST_BYTES - 4)
    // a reply whose head claims more than MAX_HEAD_BYTES
    const prefix = new Uint8Array(12)
    new DataView(prefix.buffer).setUint32(0, MAX_HEAD_BYTES + 1, true)
    assert.throws(() => new Decoder().push(prefix), (e: unknown) => e instanceof FrameError && /reply head of 1073741825 bytes claimed/.test(e.message))
    // a reply whose head claims buffers of 2^40 bytes
    const head = serialize({ skeleton: {}, meta: [["Uint8Array", 2 ** 40]] })
    const p2 = new Uint8Array(12)
    new DataView(p2.buffer).setUint32(0, head.byteLength, true)
    assert.throws(() => new Decoder().push(Buffer.concat([p2, head])), (e: unknown) => e instanceof FrameError && new RegExp(`over the data plane's limit \\(MAX_REPLY_BYTES\\)|more than ${MAX_REPLY_BYTES}`).test(e.message))
    // a head naming a kind that is not a typed array (a global function) is not one
    const evil = serialize({ skeleton: {}, meta: [["Function", 8]] })
    const p3 = new Uint8Array(12)
    new DataView(p3.buffer).setUint32(0, evil.byteLength, true)
    assert.throws(() => new Decoder().push(Buffer.concat([p3, evil])), (e: unknown) => e instanceof FrameError && /unknown buffer kind Function/.test(e.message))
  })
})

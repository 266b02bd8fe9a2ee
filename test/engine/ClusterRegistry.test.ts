/**
 * The scheduler's registry log (issue 31 item 14): every join and leave is one line
 * naming the worker (address, and pid, host and threads once announced), and the count
 * it gives is the registry's; a silent worker is dropped as lost. A cluster worker's
 * trace row names its process and address and still ends in its row number. And a
 * driver's cluster that cannot start says why (issue 31 item 5).
 */
import assert from "node:assert/strict"
import { describe, it } from "node:test"
import { Cause, Effect, Exit, ManagedRuntime } from "effect"
import * as fc from "fast-check"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Executor from "../../src/engine/Executor.ts"
import { workerRow } from "../../src/engine/internal/cluster/protocol.ts"
import { Registry } from "../../src/engine/internal/cluster/registry.ts"

const addresses = ["127.0.0.1:4001", "127.0.0.1:4002", "10.0.0.2:9001"] as const

describe("the scheduler's registry log", () => {
  it("issue 31 item 14: property: one line per join and per leave, each with the registry's count and the worker's name", () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("register" as const), a: fc.constantFrom(...addresses) }),
      fc.record({ kind: fc.constant("unregister" as const), a: fc.constantFrom(...addresses) }),
      fc.record({ kind: fc.constant("announce" as const), a: fc.constantFrom(...addresses), pid: fc.integer({ min: 1, max: 99999 }), threads: fc.integer({ min: 1, max: 64 }) })
    )
    fc.assert(fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      const lines: Array<string> = []
      const reg = new Registry((l) => lines.push(l))
      const live = new Set<string>()
      const about = new Map<string, { pid: number; threads: number }>()
      for (const o of ops) {
        const before = lines.length
        if (o.kind === "announce") {
          reg.announce(o.a, { pid: o.pid, host: "h", threads: o.threads })
          about.set(o.a, { pid: o.pid, threads: o.threads })
          assert.equal(lines.length, before)
          continue
        }
        const was = live.has(o.a)
        if (o.kind === "register") {
          reg.register(o.a, `runner ${o.a}`, true)
          live.add(o.a)
        } else {
          reg.unregister(o.a)
          live.delete(o.a)
        }
        // a line only when membership changed
        const changed = o.kind === "register" ? !was : was
        assert.equal(lines.length, before + (changed ? 1 : 0))
        const a = about.get(o.a)
        // a worker's announcement lasts until it unregisters
        if (o.kind === "unregister") about.delete(o.a)
        if (!changed) continue
        const line = lines.at(-1)!
        const who = `tessera-worker@${o.a}` + (a === undefined ? "" : ` (pid ${a.pid} on h, ${a.threads} thread${a.threads === 1 ? "" : "s"})`)
        assert.equal(line, `worker ${o.kind === "register" ? "joined" : "left"}: ${who}; ${live.size} worker${live.size === 1 ? "" : "s"} now`)
        assert.equal(reg.getRunners().length, live.size)
      }
    }))
  })

  it("issue 31 item 14: a registered worker silent past the limit is dropped as lost, a calling one kept", async () => {
    const lines: Array<string> = []
    const reg = new Registry((l) => lines.push(l))
    reg.register("127.0.0.1:1", "r1", true)
    reg.register("127.0.0.1:2", "r2", true)
    reg.acquire("127.0.0.1:1", ["s1"])
    await new Promise((r) => setTimeout(r, 120))
    reg.refresh("127.0.0.1:2", [])
    reg.sweep(0.1)
    assert.deepEqual(lines.slice(2), ["worker lost (no word for 0.1 s): tessera-worker@127.0.0.1:1; 1 worker now"])
    assert.equal(reg.getRunners().length, 1)
    // its shard lock is free again
    assert.deepEqual(reg.acquire("127.0.0.1:2", ["s1"]), ["s1"])
  })
})

describe("a cluster worker's trace row", () => {
  it("issue 31 item 14: property: names host, address and pid, and ends in -{row} (what the transfer analyses read)", () => {
    fc.assert(fc.property(
      fc.constantFrom("vm", "host-1", "a.example"),
      fc.constantFrom("127.0.0.1:44153", "10.0.0.2:9001", "[::1]:8000"),
      fc.integer({ min: 1, max: 4_000_000 }),
      fc.nat(4096),
      (host, address, pid, row) => {
        const r = workerRow(host, address, pid, row)
        assert.equal(r, `worker-${host}-${address}-pid${pid}-${row}`)
        const m = /^(.*-)(\d+)$/.exec(r)
        assert.ok(m !== null && Number(m[2]) === row)
      }
    ))
  })
})

describe("a driver's cluster that does not start (issue 31 item 5)", { timeout: 120_000 }, () => {
  /** The executor layer built and disposed; the defect it died with. */
  const start = async (options: Cluster.ClusterOptions) => {
    const rt = ManagedRuntime.make(Executor.layerCluster(options))
    try {
      const exit = await rt.runPromiseExit(Effect.void)
      assert.ok(Exit.isFailure(exit), "expected the start to fail")
      return Cause.squash(exit.cause)
    } finally {
      await rt.dispose()
    }
  }

  it("issue 31 item 5: no scheduler at the address: each attempt told, then ClusterUnreachable after startTimeout", async () => {
    const port = await Cluster.freePort("127.0.0.1")
    const tries: Array<string> = []
    const t0 = performance.now()
    const e = await start({ scheduler: `127.0.0.1:${port}`, minWorkers: 1, startTimeout: 2, onRetry: (a, why, n) => tries.push(`${a} ${why} ${n}`) })
    assert.ok(e instanceof Cluster.ClusterUnreachable, String(e))
    assert.match(e.message, new RegExp(`^cannot reach scheduler 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\): gave up after 2 s`))
    assert.ok(tries.length >= 1 && tries[0] === `127.0.0.1:${port} ECONNREFUSED 1`, tries.join("; "))
    assert.deepEqual(tries.map((t) => Number(t.split(" ").at(-1))), tries.map((_, i) => i + 1))
    assert.ok((performance.now() - t0) / 1000 < 15)
  })

  it("issue 31 item 5: a scheduler without workers: the wait told every 5 s, then ClusterStartError naming it", async () => {
    const port = await Cluster.freePort("127.0.0.1")
    const waits: Array<[number, number, number]> = []
    const e = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      // a scheduler of its own (a registry nobody joins)
      yield* Effect.forkScoped(Cluster.serveScheduler({ host: "127.0.0.1", port }))
      yield* Effect.sleep("300 millis")
      return yield* Effect.promise(() => start({ scheduler: `127.0.0.1:${port}`, minWorkers: 1, startTimeout: 6, onWaiting: (j, w, s) => waits.push([j, w, s]) }))
    })))
    assert.ok(e instanceof Cluster.ClusterStartError, String(e))
    assert.match(e.message, new RegExp(`0 of 1 workers started at scheduler 127\\.0\\.0\\.1:${port} within 6 s`))
    assert.ok(waits.length >= 1 && waits[0]![0] === 0 && waits[0]![1] === 1 && waits[0]![2] >= 5, JSON.stringify(waits))
  })
})

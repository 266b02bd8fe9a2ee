/**
 * `Cluster.layer`'s typed error channel: each expected failure of a cluster's start is a
 * failure of its own class with a message naming what and where — not a defect — a bad
 * storage URL or scheduler address, link security refused, a port taken, workers not
 * joined within `startTimeout`, local counts refused.
 */
import assert from "node:assert/strict"
import { createServer } from "node:net"
import { describe, it } from "node:test"
import { Cause, Effect, Exit, Layer } from "effect"
import * as Cluster from "../../src/engine/Cluster.ts"

const startOf = async (options: Cluster.ClusterOptions) => {
  const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(Cluster.layer(options))))
  assert.ok(Exit.isFailure(exit), "the start fails")
  const failed = exit.cause.reasons.find((r) => r._tag === "Fail")
  assert.ok(failed !== undefined, `a typed failure, not a defect: ${Cause.pretty(exit.cause)}`)
  return failed.error
}

describe("Cluster.layer: expected failures typed", () => {
  it("a storage URL that is not PostgreSQL's: ClusterAddressError naming it, password hidden", async () => {
    const e = await startOf({ storage: { postgres: "mysql://u:secret@h/db" } })
    assert.ok(e instanceof Cluster.ClusterAddressError)
    assert.match(e.message, /cluster storage: expected a PostgreSQL URL/)
    assert.doesNotMatch(e.message, /secret/)
  })

  it("a scheduler address that is not HOST:PORT: ClusterAddressError", async () => {
    const e = await startOf({ scheduler: "nohost" })
    assert.ok(e instanceof Cluster.ClusterAddressError)
    assert.match(e.message, /cluster scheduler address: expected HOST:PORT .*"nohost"/)
  })

  it("a scheduler beyond loopback without the cluster's token: ClusterStartError saying so, before any connection", async () => {
    const e = await startOf({ scheduler: "192.0.2.1:8786" })
    assert.ok(e instanceof Cluster.ClusterStartError)
    assert.match(e.message, /token/)
  })

  it("local counts refused: WorkerCountRefused", async () => {
    const e = await startOf({ local: -1 })
    assert.equal((e as { _tag: string })._tag, "WorkerCountRefused")
  })

  it("the registry's port taken: ClusterStartError naming the address", async () => {
    const server = createServer()
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    try {
      const port = (server.address() as { port: number }).port
      const e = await startOf({ port })
      assert.ok(e instanceof Cluster.ClusterStartError)
      assert.match(e.message, new RegExp(`cannot serve the scheduler's registry at 127\\.0\\.0\\.1:${port}`))
    } finally {
      server.close()
    }
  })

  it("fewer workers than minWorkers within startTimeout: ClusterStartError with the counts", { timeout: 60_000 }, async () => {
    const e = await startOf({ minWorkers: 1, startTimeout: 1 })
    assert.ok(e instanceof Cluster.ClusterStartError)
    assert.match(e.message, /^cluster: 0 of 1 workers started within 1 s$/)
  })
})

/**
 * The cluster on PostgreSQL runner storage: two `tessera worker --storage postgres://…`
 * processes register in the database, a driver finds them there (no scheduler process),
 * random DAGs give the sync executor's results, and a worker killed with SIGKILL is
 * noticed (it drops out of the runners table) while the other goes on. Also the URL's
 * parsing, which needs no server.
 *
 * The server comes from `.ci/run` (Debian's postgresql on loopback, URL in
 * TESSERA_TEST_PG_URL); without it the PostgreSQL tests skip, saying so.
 */
import assert from "node:assert/strict"
import { type ChildProcess, spawn } from "node:child_process"
import { after, before, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import { Effect, ManagedRuntime, Redacted } from "effect"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as fc from "fast-check"
import * as Cluster from "../../src/engine/Cluster.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import { dagArb, k, mixGraph } from "./graphs.ts"

const url = process.env.TESSERA_TEST_PG_URL ?? ""
const skip = url === "" ? "TESSERA_TEST_PG_URL is not set (.ci/run starts PostgreSQL on loopback and sets it)" : false
const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

describe("Cluster.parsePostgres", () => {
  it("takes the table prefix out of the URL, default tessera", () => {
    assert.deepEqual(Cluster.parsePostgres("postgres://u@h:5432/db?prefix=run_1&sslmode=disable", "x"), {
      url: "postgres://u@h:5432/db?sslmode=disable",
      prefix: "run_1"
    })
    assert.deepEqual(Cluster.parsePostgres("postgresql://h/db", "x"), { url: "postgresql://h/db", prefix: "tessera" })
  })

  it("rejects what is not a PostgreSQL URL or a bad prefix, naming where and hiding the password", () => {
    for (const [s, re] of [
      ["mysql://u:pw@h/db", /^--storage: expected a PostgreSQL URL .*got "mysql:\/\/u:\*\*\*@h\/db"$/],
      ["h:5432", /^--storage: expected a PostgreSQL URL/],
      ["postgres://h/db?prefix=Drop%20table", /^--storage: the prefix parameter must be a lower-case SQL identifier/]
    ] as const) {
      const e = Cluster.parsePostgres(s, "--storage")
      assert.ok(e instanceof Cluster.ClusterAddressError, s)
      assert.match(e.message, re)
    }
    assert.equal(Cluster.hidePassword("postgres://u:secret@h/db"), "postgres://u:***@h/db")
  })
})

const clusterOf = (rt: ManagedRuntime.ManagedRuntime<Cluster.Cluster, never>) =>
  rt.runPromise(Effect.gen(function*() {
    return yield* Cluster.Cluster
  }))

describe("Cluster on PostgreSQL runner storage (a driver + 2 tessera worker processes)", { skip }, () => {
  const prefix = `t${process.pid}_${Date.now().toString(36)}`
  const storage = `${url}${url.includes("?") ? "&" : "?"}prefix=${prefix}`
  const sql = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url) }))
  const query = <A extends object>(text: string) =>
    sql.runPromise(Effect.gen(function*() {
      return yield* (yield* PgClient.PgClient).unsafe<A>(text)
    }))
  const registered = () => query<{ address: string }>(`SELECT address FROM ${prefix}_runners WHERE last_heartbeat > NOW() - INTERVAL '5 seconds'`)
  const workers: Array<ChildProcess> = []
  let rt: ManagedRuntime.ManagedRuntime<Cluster.Cluster | Executor.Executor, never>
  const sync = ManagedRuntime.make(Executor.layerSync)

  before(async () => {
    for (let i = 0; i < 2; i++) {
      const p = spawn(process.execPath, [main, "worker", "--storage", storage], { stdio: ["ignore", "ignore", "inherit"] })
      workers.push(p)
    }
    rt = ManagedRuntime.make(Cluster.layerLocal({
      local: 0,
      minWorkers: 2,
      storage: { postgres: storage },
      startTimeout: 120,
      heartbeat: 0.3
    }))
    await rt.runPromise(Effect.void)
  })
  after(async () => {
    for (const p of workers) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL")
    await rt?.dispose()
    await sync.dispose()
    await query(`DROP TABLE IF EXISTS ${prefix}_runners, ${prefix}_locks, ${prefix}_runner_migrations`)
    await sql.dispose()
  })

  it("finds both workers in the database and computes random DAGs with the sync executor's results", async () => {
    const c = await clusterOf(rt)
    assert.match(c.address, new RegExp(`prefix=${prefix}`))
    const rows = await registered()
    assert.deepEqual(
      rows.map((r) => `tessera-worker@${r.address}`).sort(),
      c.workers().map((w) => w.name).sort(),
      "the driver's workers are the runners registered in PostgreSQL"
    )
    assert.equal(rows.length, 2)
    await fc.assert(
      fc.asyncProperty(dagArb(24), async (dag) => {
        const g = mixGraph(dag)
        const keys = dag.requested.map((r) => `t-${r}`)
        const [got, want] = await Promise.all([
          rt.runPromise(Engine.compute(g, { keys })),
          sync.runPromise(Engine.compute(g, { keys }))
        ])
        for (const key of keys) assert.equal(got.get(key), want.get(key), key)
      }),
      { numRuns: 5 }
    )
    // random DAGs may be small chains that one worker runs alone (a CI run saw 8 tasks on
    // one worker): a fan-out of independent tasks is spread over both
    const specs: Array<TaskGraph.TaskSpec> = []
    for (let i = 0; i < 32; i++) specs.push({ key: `f-${i}`, kernel: k("constant"), args: [i] })
    specs.push({ key: "fan", kernel: k("sum"), args: [TaskGraph.refs(specs.map((s) => s.key))] })
    assert.equal((await rt.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs), { keys: ["fan"] }))).get("fan"), 496)
    const st = await rt.runPromise(c.stats)
    assert.ok(st.every((w) => w.tasks > 0), `both workers ran tasks: ${JSON.stringify(st)}`)
  })

  it("notices a worker killed with SIGKILL (its heartbeats stop) and computes on the other", async () => {
    const c = await clusterOf(rt)
    const victim = c.workers().find((w) => w.pid === workers[1]!.pid)
    assert.ok(victim !== undefined, "the driver knows the worker's pid")
    process.kill(victim.pid, "SIGKILL")
    for (let t = 0; t < 600 && c.workers().find((w) => w.name === victim.name)?.alive !== false; t++) {
      await new Promise((r) => setTimeout(r, 50))
    }
    assert.equal(c.workers().find((w) => w.name === victim.name)?.alive, false, "marked dead")
    assert.deepEqual((await registered()).map((r) => `tessera-worker@${r.address}`), c.workers().filter((w) => w.alive).map((w) => w.name))
    const specs: Array<TaskGraph.TaskSpec> = []
    for (let i = 0; i < 20; i++) specs.push({ key: `c-${i}`, kernel: k("constant"), args: [i] })
    specs.push({ key: "total", kernel: k("sum"), args: [TaskGraph.refs(specs.map((s) => s.key))] })
    const out = await rt.runPromise(Engine.compute(TaskGraph.makeUnsafe(specs), { keys: ["total"] }))
    assert.equal(out.get("total"), 190)
  })
})

describe("Executor.layerCluster with PostgreSQL storage that cannot be reached", () => {
  it("fails to start with a message naming the URL, password hidden", async () => {
    const rt = ManagedRuntime.make(Executor.layerCluster({ storage: { postgres: "postgres://u:secret@127.0.0.1:1/db" }, local: 0 }))
    try {
      const exit = await rt.runPromiseExit(Effect.void)
      assert.equal(exit._tag, "Failure")
      const text = String((exit as { cause?: unknown }).cause)
      assert.match(text, /PostgreSQL runner storage at postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db/)
      assert.doesNotMatch(text, /secret/)
    } finally {
      await rt.dispose()
    }
  })
})

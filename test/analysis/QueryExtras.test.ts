/**
 * The `transfers` and `samples` SQL tables (issue 20): filled from a trace's `Transfer`
 * events and from a statistical profiler sidecar, checked against the events written
 * and against Profile.ts's own counts; empty (but present) for a run without them.
 */
import assert from "node:assert/strict"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { loadPromise } from "../../src/analysis/Load.ts"
import { frameTimes, label, loadProfilePromise, selectSamples } from "../../src/analysis/Profile.ts"
import * as Query from "../../src/analysis/Query.ts"
import type { TransferRecord } from "../../src/engine/EngineEvents.ts"
import { transferEvent } from "../../src/profiler/Trace.ts"
import { SampleEncoder } from "../../src/trace/SampleEvents.ts"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-query-extra-"))
after(() => rmSync(dir, { recursive: true, force: true }))

const t0 = 1_760_000_000
const transfers: ReadonlyArray<TransferRecord> = [
  { keys: ["a-1", "a-2"], bytes: 1000, host: "h1", threadId: "w1", peer: "w0", start: t0, stop: t0 + 0.5, serialize: 0.01, deserialize: 0.02 },
  { keys: ["b-1"], bytes: 250, host: "h1", threadId: "w1", peer: "w2", start: t0 + 1, stop: t0 + 1.25, serialize: 0.001, deserialize: 0.002 },
  { keys: ["c-1"], bytes: 4096, host: "h2", threadId: "gpu-0", start: t0 + 2, stop: t0 + 2.1, direction: "host-to-device" },
  { keys: ["c-1"], bytes: 4096, host: "h2", threadId: "gpu-0", start: t0 + 3, stop: t0 + 3.3, direction: "device-to-host" }
]

/** The SQL after the docs/queries.md paragraph starting with `title`. */
const docQuery = (title: string): string => {
  const md = readFileSync(new URL("../../docs/queries.md", import.meta.url), "utf8")
  const at = md.indexOf(`\n${title}`)
  assert.ok(at >= 0, title)
  return /```sql\n([\s\S]*?)```/.exec(md.slice(at))![1]!
}

const rows = (t: { toArray(): Array<{ toJSON(): Record<string, unknown> }> }) => t.toArray().map((r) => r.toJSON())

describe("Query: transfers and samples tables", () => {
  it("has one transfers row per Transfer event, with its fields", async () => {
    const file = join(dir, "transfers-TracePlugin.msgpack")
    writeFileSync(file, encodeRecords(transfers.map(transferEvent)))
    const tables = await loadPromise([file])
    assert.equal(tables.eventCounts.Transfer, transfers.length)
    const got = rows(await Query.sqlPromise(tables,
      "SELECT host, worker, keys, n_keys, bytes, start, stop, duration, peer, direction, serialize, deserialize FROM transfers ORDER BY start"))
    assert.deepStrictEqual(got, transfers.map((t) => ({
      host: t.host, worker: t.threadId, keys: JSON.stringify(t.keys), n_keys: t.keys.length, bytes: t.bytes,
      start: t.start, stop: t.stop, duration: t.stop - t.start, peer: t.peer ?? null, direction: t.direction ?? null,
      serialize: t.serialize ?? null, deserialize: t.deserialize ?? null
    })))
    // the documented question: bytes moved per worker pair (peer fetches)
    const pairs = rows(await Query.sqlPromise(tables, docQuery("Bytes moved per worker pair")))
    assert.deepStrictEqual(pairs.map((r) => [r.sender, r.receiver, Number(r.fetches), Number(r.keys), r.bytes]), [["w0", "w1", 1, 2, 1000], ["w2", "w1", 1, 1, 250]])
    const keys = rows(await Query.sqlPromise(tables, "SELECT count(DISTINCT k)::INTEGER AS n FROM (SELECT unnest(keys) AS k FROM transfers)"))
    assert.deepStrictEqual(keys, [{ n: 4 }])
    const typed = await Query.runPromise(tables, Query.select("transfers", ["worker", "bytes"], { where: "direction IS NOT NULL" }))
    assert.equal(typed.numRows, 2)
  })

  it("has one samples row per profiler sample, matching Profile.ts's counts", async () => {
    const enc = new SampleEncoder()
    const nodes = [
      { id: 1, parent: 0, functionName: "(root)", url: "", line: -1, column: -1 },
      { id: 2, parent: 1, functionName: "main", url: "file:///k.ts", line: 0, column: 0 },
      { id: 3, parent: 2, functionName: "hot", url: "file:///k.ts", line: 9, column: 2 },
      { id: 4, parent: 2, functionName: "", url: "file:///k.ts", line: 19, column: 4 }
    ]
    const samples = [3, 3, 4, 3, 2, 4]
    const events = enc.encode({
      host: "h1", threadId: "worker-h1-0", interval: 0.01, nodes, samples,
      times: samples.map((_, i) => t0 + i * 0.01), task: [1, 1, 1, 2, 0, 2],
      keys: ["f-1", "g-1"], names: ["f", "g"], stages: ["load", ""]
    })
    const file = join(dir, "run-StatisticalProfiler-h1.msgpack")
    writeFileSync(file, encodeRecords(events))
    const tables = await loadPromise([file])
    const d = await loadProfilePromise([file])
    const n = rows(await Query.sqlPromise(tables, "SELECT count(*)::INTEGER AS n, sum(interval) AS s FROM samples"))
    assert.equal(n[0]!.n, d.samples.time.length)
    assert.ok(Math.abs((n[0]!.s as number) - d.samples.interval.reduce((a, b) => a + b, 0)) < 1e-9)
    // self samples per leaf function, as frameTimes counts them
    const self = rows(await Query.sqlPromise(tables,
      "SELECT frame_function AS f, count(*)::INTEGER AS n FROM samples WHERE frame_function IS NOT NULL GROUP BY 1 ORDER BY 1"))
    const expected = frameTimes(d).filter((x) => x.selfSamples > 0).map((x) => ({ f: label(x.frame), n: x.selfSamples }))
      .sort((a, b) => (a.f < b.f ? -1 : 1))
    assert.deepStrictEqual(self, expected)
    // per function and stage, as selectSamples selects
    for (const fn of ["f", "g", "idle"]) {
      const got = rows(await Query.sqlPromise(tables, `SELECT count(*)::INTEGER AS n FROM samples WHERE function = '${fn}'`))
      assert.equal(got[0]!.n, selectSamples(d, { function: fn }).length, fn)
    }
    const staged = rows(await Query.sqlPromise(tables, "SELECT count(*)::INTEGER AS n FROM samples WHERE stage = 'load'"))
    assert.equal(staged[0]!.n, selectSamples(d, { stage: "load" }).length)
    // the documented "top leaf functions per stage": per stage, its leaves by self samples
    const top = rows(await Query.sqlPromise(tables, docQuery("Top leaf functions per stage")))
    assert.deepStrictEqual(top.map((r) => [r.stage, r.frame_function, Number(r.samples)]), [
      ["g", "(anonymous)", 1], ["g", "hot", 1], ["idle", "main", 1], ["load", "hot", 2], ["load", "(anonymous)", 1]
    ])
    // depth: main → hot (the encoder leaves V8's "(root)" node out)
    const leaf = rows(await Query.sqlPromise(tables, "SELECT frame_url, frame_line, depth, key FROM samples WHERE frame_function = 'hot' LIMIT 1"))
    assert.deepStrictEqual(leaf, [{ frame_url: "file:///k.ts", frame_line: 10, depth: 2, key: "f-1" }])
  })

  it("has both tables, empty, for a run without transfers or samples", async () => {
    const tables = await loadPromise(["test/fixtures/dasf-small/small-TracePlugin.msgpack"])
    for (const t of ["transfers", "samples"]) {
      const got = rows(await Query.sqlPromise(tables, `SELECT count(*)::INTEGER AS n FROM ${t}`))
      assert.deepStrictEqual(got, [{ n: 0 }], t)
    }
  })
})

/**
 * Issue 34: the live dashboard without a browser — the live state's aggregates (exact
 * counts through real computes, bins that stay bounded, shedding counted, deltas a page
 * can apply twice), the layer composing with the engine, and the server's rules
 * (loopback by default, the token off loopback, Origin and Host checks, read-only, bounded
 * requests and event streams, strings from a run as JSON data only).
 */
import assert from "node:assert/strict"
import { request } from "node:http"
import { networkInterfaces } from "node:os"
import { describe, it } from "node:test"
import { Effect, Layer } from "effect"
import fc from "fast-check"
import * as Engine from "../../src/engine/Engine.ts"
import type { TaskRecord } from "../../src/engine/EngineEvents.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as Kernel from "../../src/engine/Kernel.ts"
import * as TaskGraph from "../../src/engine/TaskGraph.ts"
import * as Dashboard from "../../src/dashboard/Dashboard.ts"
import { LiveState } from "../../src/dashboard/LiveState.ts"
import { pageHtml } from "../../src/dashboard/Page.ts"
import { parseAddress, startServer } from "../../src/dashboard/Server.ts"
import { chain, fanout } from "../../bench/engine/BenchGraphs.ts"
import { reshapeStreamVega, taskStreamVegaOf } from "../../src/report/Charts.ts"
import { templateShape } from "../../src/dashboard/SpecWorker.ts"

const task = (i: number, start: number, end: number, extra: Partial<TaskRecord> = {}): TaskRecord => ({
  key: `k-${i}`,
  name: extra.name ?? "f",
  host: "h",
  workerId: i % 2,
  threadId: `worker-h-${i % 2}`,
  phases: { gather: [start, start], compute: [start, end], transfer: [end, end] },
  cpuTime: (end - start) / 2,
  nbytes: 8,
  shape: [],
  dtype: "float64",
  type: "Chunk",
  dependencies: [],
  dependents: [],
  state: "memory",
  ...extra
})

interface Reply {
  readonly status: number
  readonly body: string
  readonly headers: Record<string, string | Array<string> | undefined>
}
const get = (port: number, path: string, headers: Record<string, string> = {}, method = "GET", body?: string, host = "127.0.0.1"): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const req = request({ host, port, path, method, headers }, (res) => {
      let b = ""
      res.setEncoding("utf8")
      // event streams: the first chunk is enough
      res.on("data", (c: string) => {
        b += c
        if ((res.headers["content-type"] ?? "").startsWith("text/event-stream") && b.includes("event: delta")) {
          resolve({ status: res.statusCode ?? 0, body: b, headers: res.headers })
          req.destroy()
        }
      })
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: b, headers: res.headers }))
    })
    req.on("error", (e) => (e.message.includes("socket hang up") ? undefined : reject(e)))
    if (body !== undefined) req.write(body)
    req.end()
  })

const specs = async () => ({})

describe("issue 34: live state", () => {
  it("issue 34: counts every task of real computes exactly, with each group's total and progress", async () => {
    const state = new LiveState()
    const f = fanout(2_000)
    const c = chain(50)
    await Effect.runPromise(
      Effect.gen(function*() {
        yield* Engine.compute(f.graph, { keys: f.keys })
        yield* Engine.compute(c.graph, { keys: c.keys })
      }).pipe(Hooks.provide(state.callbacks()), Effect.provide(Executor.layerSync))
    )
    const s = state.snapshot()
    assert.equal(s.counts.tasks, 2_050)
    assert.equal(s.counts.done, 2_050)
    assert.equal(s.counts.computes, 2)
    assert.equal(s.counts.computesDone, 2)
    const byName = new Map(s.groups.map((g) => [g.name, g]))
    assert.deepEqual([byName.get("leaf")?.done, byName.get("leaf")?.total, byName.get("leaf")?.running], [1_999, 1_999, 0])
    assert.deepEqual([byName.get("step")?.done, byName.get("step")?.total], [50, 50])
    // busy seconds per row: the sum of every task's duration
    const busy = s.bins.busy.reduce((a, row) => a + row.reduce((x, y) => x + y, 0), 0)
    const rows = s.workers.reduce((a, w) => a + w.busy, 0)
    assert.ok(Math.abs(busy - rows) < 1e-3 * Math.max(1, rows), `${busy} vs ${rows}`)
  })

  it("issue 34: a failed compute is counted, with both hook sets", async () => {
    const explode = Kernel.ref(new URL("../fixtures/kernels/outputs.ts", import.meta.url).href, "explode")
    for (const records of [false, true]) {
      const state = new LiveState()
      const graph = TaskGraph.makeUnsafe([{ key: "boom-0", kernel: explode, args: [null] }])
      const exit = await Effect.runPromiseExit(Engine.compute(graph).pipe(Hooks.provide(state.callbacks({ records })), Effect.provide(Executor.layerSync)))
      assert.equal(exit._tag, "Failure")
      const c = state.snapshot().counts
      assert.equal(c.computesFailed, 1, `records: ${records}`)
      assert.equal(c.computesDone, 1)
      // the task records name the erred task; the light hooks cannot
      assert.equal(c.erred, records ? 1 : 0)
    }
  })

  it("issue 34: the layer composes with the engine like any hook layer, and starts its server on loopback", async () => {
    const lines: Array<string> = []
    await Effect.runPromise(
      Effect.gen(function*() {
        const f = fanout(100)
        yield* Engine.compute(f.graph, { keys: f.keys })
      }).pipe(Effect.provide(Layer.provideMerge(Dashboard.layer({ port: 0, log: (l) => lines.push(l) }), Executor.layerSync)))
    )
    assert.equal(lines.length, 1)
    assert.match(lines[0]!, /^dashboard: http:\/\/127\.0\.0\.1:\d+\/$/)
  })

  it("issue 34: bins stay bounded whatever the run's length, and keep every busy second (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.double({ min: 0, max: 5_000, noNaN: true }), fc.double({ min: 0, max: 30, noNaN: true })), { minLength: 1, maxLength: 300 }),
        (spans) => {
          const state = new LiveState({ t0: 0, bins: 64, detailCapacity: 32 })
          let total = 0
          spans.forEach(([s, d], i) => {
            state.task(task(i, s, s + d))
            total += d
          })
          const snap = state.snapshot()
          for (const row of snap.bins.busy) assert.ok(row.length <= 64)
          const busy = snap.bins.busy.reduce((a, row) => a + row.reduce((x, y) => x + y, 0), 0)
          // bins are rounded to 0.1 ms each
          assert.ok(Math.abs(busy - total) < 1e-4 * 64 * 2 + 1e-9 * total, `${busy} vs ${total}`)
          assert.equal(snap.counts.tasks, spans.length)
          assert.equal(snap.counts.held, Math.min(32, spans.length))
        }
      ),
      { numRuns: 60 }
    )
  })

  it("issue 34: rectangles past the per-tick budget are shed and counted, never silently dropped", () => {
    const state = new LiveState({ t0: 0, maxRectsPerTick: 10 })
    const known = { rows: 0, functions: 0, stages: 0, activities: 0, hosts: 0, binEpoch: 0, resources: [] as Array<number> }
    for (let i = 0; i < 25; i++) state.task(task(i, i, i + 0.5))
    const d1 = state.delta(known)
    assert.equal(d1.rects.id.length, 10)
    assert.deepEqual(d1.rects.id, [15, 16, 17, 18, 19, 20, 21, 22, 23, 24])
    assert.equal(d1.counts.shed, 15)
    assert.equal(d1.counts.tasks, 25)
    for (let i = 25; i < 30; i++) state.task(task(i, i, i + 0.5))
    const d2 = state.delta(known)
    assert.deepEqual(d2.rects.id, [25, 26, 27, 28, 29])
    assert.equal(d2.counts.shed, 15)
    // the shed ones are still held for a zoom to fetch
    const w = state.detailIn(0, 5, 100)
    assert.equal(w.count, 6)
    assert.ok(w.complete)
    // dictionaries: a delta says where its new entries go
    assert.deepEqual(d1.from.functions, 0)
    assert.deepEqual(d1.functions, ["f"])
    assert.deepEqual(d2.functions, [])
    assert.equal(d2.from.functions, 1)
  })

  it("issue 34: the ring says when a window is no longer complete", () => {
    const state = new LiveState({ t0: 0, detailCapacity: 16 })
    for (let i = 0; i < 40; i++) state.task(task(i, i, i + 0.5))
    assert.equal(state.oldest, 24)
    assert.equal(state.rect(3), undefined)
    assert.equal(state.rect(30)?.key, "k-30")
    assert.equal(state.detailIn(0, 10, 100).complete, false)
    assert.equal(state.detailIn(30, 35, 100).complete, true)
  })
})

describe("issue 34: one chart definition", () => {
  it("issue 34: the task stream reshaped from the compiled template equals the report's compile of that shape (property)", () => {
    const template = taskStreamVegaOf(templateShape, 900)
    const name = fc.string({ minLength: 1, maxLength: 12 })
    fc.assert(
      fc.property(
        fc.uniqueArray(name, { minLength: 1, maxLength: 70 }),
        fc.uniqueArray(fc.constantFrom("setup", "submit", "wait", "worker start", "between computes"), { maxLength: 5 }),
        fc.uniqueArray(name, { minLength: 1, maxLength: 30 }),
        fc.boolean(),
        fc.boolean(),
        (functions, activities, rows, moved, failed) => {
          const top = functions.length > 60 ? Int32Array.from({ length: 59 }, (_, i) => i) : undefined
          const shape = { functions, activities, rows, wall: 1, moved, failed, top }
          // as the page gets them: JSON
          const json = (u: unknown) => JSON.parse(JSON.stringify(u)) as unknown
          assert.deepEqual(json(reshapeStreamVega(template, shape)), json(taskStreamVegaOf(shape, 900)))
        }
      ),
      { numRuns: 12 }
    )
  })
})

describe("issue 34: dashboard server", () => {
  it("issue 34: parses [HOST:]PORT and names what is wrong", () => {
    assert.deepEqual(parseAddress("8787"), { host: "127.0.0.1", port: 8787 })
    assert.deepEqual(parseAddress("0.0.0.0:9000"), { host: "0.0.0.0", port: 9000 })
    assert.deepEqual(parseAddress("[::1]:0"), { host: "::1", port: 0 })
    const bad = parseAddress("host:99999")
    assert.ok(bad instanceof Dashboard.DashboardError)
    assert.match(bad.message, /dashboard host:99999: port 99999/)
    const worse = parseAddress("no port")
    assert.ok(worse instanceof Dashboard.DashboardError)
    assert.match(worse.message, /expected \[HOST:\]PORT/)
  })

  it("issue 34: a taken port is a typed error naming the address", async () => {
    const a = await startServer(new LiveState(), { port: 0, sampleHost: false }, specs)
    try {
      await assert.rejects(startServer(new LiveState(), { port: a.port, sampleHost: false }, specs), (e: unknown) => e instanceof Dashboard.DashboardError && /address in use/.test(e.message) && e.message.includes(String(a.port)))
    } finally {
      await a.close()
    }
  })

  it("issue 34: loopback by default; read-only; Origin, Host, bodies, long URLs and too many streams refused", async () => {
    const state = new LiveState()
    const s = await startServer(state, { port: 0, sampleHost: false, maxClients: 2 }, specs)
    try {
      assert.equal(s.host, "127.0.0.1")
      assert.equal(s.token, undefined)
      const page = await get(s.port, "/")
      assert.equal(page.status, 200)
      assert.match(String(page.headers["content-security-policy"]), /script-src 'self'/)
      assert.doesNotMatch(String(page.headers["content-security-policy"]), /unsafe-inline'[^;]*script|script-src[^;]*unsafe-inline/)
      assert.equal(page.headers["x-content-type-options"], "nosniff")
      assert.equal(page.headers["x-frame-options"], "DENY")
      assert.doesNotMatch(page.body, /<script>/, "no inline script")
      assert.equal((await get(s.port, "/api/snapshot", {}, "POST")).status, 405)
      assert.equal((await get(s.port, "/api/snapshot", { "Content-Length": "5" }, "GET", "hello")).status, 413)
      assert.equal((await get(s.port, `/api/detail?x=${"a".repeat(3000)}`)).status, 414)
      assert.equal((await get(s.port, "/api/events", { Origin: "http://evil.example" })).status, 403)
      assert.equal((await get(s.port, "/", { Host: "evil.example:80" })).status, 403, "DNS rebinding: a foreign Host on loopback")
      assert.equal((await get(s.port, "/api/events", { Origin: `http://127.0.0.1:${s.port}` })).status, 200, "the page's own origin")
      assert.equal((await get(s.port, "/nope")).status, 404)
      // two streams open, a third refused
      const open: Array<Promise<Reply>> = []
      const sockets: Array<ReturnType<typeof request>> = []
      for (let i = 0; i < 2; i++) {
        open.push(new Promise((resolve) => {
          const req = request({ host: "127.0.0.1", port: s.port, path: "/api/events" }, (res) => resolve({ status: res.statusCode ?? 0, body: "", headers: res.headers }))
          req.on("error", () => undefined)
          sockets.push(req)
          req.end()
        }))
      }
      assert.deepEqual((await Promise.all(open)).map((r) => r.status), [200, 200])
      assert.equal(s.clients(), 2)
      assert.equal((await get(s.port, "/api/events")).status, 503)
      for (const r of sockets) r.destroy()
    } finally {
      await s.close()
    }
  })

  it("issue 34: bound off loopback, every request needs the token (generated and printed in the URL)", async (t) => {
    const external = Object.values(networkInterfaces()).flat().find((a) => a !== undefined && a.family === "IPv4" && !a.internal)
    const host = external?.address ?? "0.0.0.0"
    const s = await startServer(new LiveState(), { host: "0.0.0.0", port: 0, sampleHost: false }, specs)
    try {
      assert.ok(s.token !== undefined && s.token.length >= 20)
      assert.match(s.url, /\?token=/)
      const reach = external === undefined ? "127.0.0.1" : host
      if (external === undefined) t.diagnostic("no external interface: checked through 127.0.0.1")
      for (const path of ["/", "/app.js", "/vega.js", "/api/snapshot", "/api/events", "/api/detail?from=0&to=1", "/api/task?id=0"]) {
        assert.equal((await get(s.port, path, {}, "GET", undefined, reach)).status, 401, path)
        assert.equal((await get(s.port, `${path}${path.includes("?") ? "&" : "?"}token=wrong`, {}, "GET", undefined, reach)).status, 401, path)
      }
      const ok = await get(s.port, `/api/snapshot?token=${encodeURIComponent(s.token!)}`, {}, "GET", undefined, reach)
      assert.equal(ok.status, 200)
      // the page carries the token on its script URLs
      const page = await get(s.port, `/?token=${encodeURIComponent(s.token!)}`, {}, "GET", undefined, reach)
      assert.ok(page.body.includes(`/app.js?token=${encodeURIComponent(s.token!)}`))
    } finally {
      await s.close()
    }
    // a given token on loopback is required too
    const g = await startServer(new LiveState(), { port: 0, sampleHost: false, token: "s3cret" }, specs)
    try {
      assert.equal((await get(g.port, "/api/snapshot")).status, 401)
      assert.equal((await get(g.port, "/api/snapshot?token=s3cret")).status, 200)
    } finally {
      await g.close()
    }
  })

  it("issue 34: strings from a run reach the page as JSON data; the HTML holds none but the escaped title", async () => {
    const evil = `</script><img src=x onerror="alert(1)">\u2028<!--`
    const state = new LiveState({ t0: 0 })
    state.task(task(1, 0, 1, { name: evil, key: evil, stage: evil, threadId: evil, host: evil }))
    const s = await startServer(state, { port: 0, sampleHost: false, title: evil }, specs)
    try {
      const snap = await get(s.port, "/api/snapshot")
      assert.equal(snap.headers["content-type"], "application/json; charset=utf-8")
      const parsed = JSON.parse(snap.body) as { functions: Array<string>; rows: Array<string>; title: string }
      assert.deepEqual(parsed.functions, [evil])
      assert.equal(parsed.title, evil)
      const task1 = JSON.parse((await get(s.port, "/api/task?id=0")).body) as { key: string }
      assert.equal(task1.key, evil)
      const page = await get(s.port, "/")
      assert.ok(!page.body.includes("<img"), "no markup from the title")
      assert.ok(page.body.includes("&lt;/script&gt;&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"))
      // the event stream is JSON too
      const events = await get(s.port, "/api/events")
      assert.match(events.body, /event: delta\ndata: \{/)
    } finally {
      await s.close()
    }
    assert.ok(!pageHtml(evil).includes("<img"))
  })
})

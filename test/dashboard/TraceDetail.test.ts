/**
 * Issue 34: zooming into the past beyond the ring. A real compute under the trace
 * profiler and a dashboard whose ring holds 16 rectangles: `/api/detail` for a window
 * the ring no longer holds answers from the trace database (a worker thread), with the
 * same rectangles as the trace read here row by row (start, end, worker, function,
 * kind); bounded (at most `limit`, `cut` says how many were left out); a window the
 * ring holds still comes from memory; without trace files the answer says the window is
 * not complete, as before.
 */
import assert from "node:assert/strict"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Effect, Exit, Scope } from "effect"
import { loadPromise } from "../../src/analysis/Load.ts"
import * as Dashboard from "../../src/dashboard/Dashboard.ts"
import * as Engine from "../../src/engine/Engine.ts"
import * as Executor from "../../src/engine/Executor.ts"
import * as Hooks from "../../src/engine/Hooks.ts"
import * as DefaultProfiler from "../../src/profiler/DefaultProfiler.ts"
import { fanout } from "../../bench/engine/BenchGraphs.ts"
import { traceDetail } from "../../src/dashboard/TraceDetail.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-dashboard-trace-"))
after(() => rmSync(dir, { recursive: true, force: true }))

type Rects = { id: Array<number>; s: Array<number>; e: Array<number>; r: Array<number>; f: Array<number>; k: Array<number> }
interface Detail {
  readonly rects: Rects
  readonly count: number
  readonly complete: boolean
  readonly cut: number
  readonly source: string
}

const round = (x: number) => Math.round(x * 1e4) / 1e4

describe("issue 34: zooming into the past beyond the ring", () => {
  it("a window the ring no longer holds is read from the trace database: the trace's rectangles, bounded", async () => {
    const scope = await Effect.runPromise(Scope.make())
    try {
      const options = { name: "zoom", directory: dir, log: () => undefined }
      const traceFile = DefaultProfiler.files(options, 0).traceFile
      const d = await Effect.runPromise(
        Dashboard.make({ port: 0, log: () => undefined, records: true, sampleHost: false, live: { detailCapacity: 16 }, traceFiles: [traceFile] }).pipe(Scope.provide(scope))
      )
      const f = fanout(300)
      await Effect.runPromise(
        Engine.compute(f.graph, { keys: f.keys }).pipe(Hooks.provide(d.callbacks), Effect.provide(DefaultProfiler.layer(options)), Effect.provide(Executor.layerSync))
      )
      d.state.close()
      const state = d.state
      assert.ok(state.written > 100, `rectangles recorded: ${state.written}`)
      assert.equal(state.oldest, state.written - 16, "the ring holds the last 16")
      const ringStart = state.rect(state.oldest)!.start
      const get = async (from: number, to: number, limit: number): Promise<Detail> => {
        const r = await fetch(`http://127.0.0.1:${d.server.port}/api/detail?from=${from}&to=${to}&limit=${limit}`)
        assert.equal(r.status, 200)
        return await r.json() as Detail
      }

      // the trace, read here row by row: every task meeting [a, b] (times from the state's t0)
      const tables = await loadPromise([traceFile])
      const t = tables.tasks
      const expected = (a: number, b: number) => {
        const out: Array<string> = []
        for (let i = 0; i < t.numRows; i++) {
          const s = (t.getChild("gather_start")!.get(i) as number) - state.t0
          const e = (t.getChild("transfer_end")!.get(i) as number) - state.t0
          if (e < a || s > b) continue
          out.push(`${round(s)}|${round(e)}|${t.getChild("worker")!.get(i)}|${t.getChild("function")!.get(i)}|${t.getChild("state")!.get(i) === "erred" ? 1 : 0}`)
        }
        return out.sort()
      }
      const shown = (x: Detail) =>
        x.rects.id.map((_, i) => `${x.rects.s[i]}|${x.rects.e[i]}|${state.rows.names[x.rects.r[i]!]}|${state.functions.names[x.rects.f[i]!]}|${x.rects.k[i]}`).sort()

      // a window wholly before the ring, ending between two tasks' starts: from the file, all of it
      const starts: Array<number> = []
      for (let i = 0; i < t.numRows; i++) starts.push((t.getChild("gather_start")!.get(i) as number) - state.t0)
      const before = starts.filter((x) => x < ringStart).sort((x, y) => x - y)
      let k = Math.floor(before.length / 2)
      while (k + 2 < before.length && !(before[k + 1]! > before[k]!)) k++
      const a = -1, b = (before[k]! + before[k + 1]!) / 2
      const want = expected(a, b)
      assert.ok(want.length > 10, `tasks before the ring: ${want.length}`)
      const old = await get(a, b, 20_000)
      assert.equal(old.source, "trace")
      assert.equal(old.complete, true)
      assert.equal(old.cut, 0)
      assert.equal(old.count, want.length)
      assert.deepEqual(shown(old), want, "the trace's rectangles")
      for (const id of old.rects.id) assert.ok(id < 0, "no ring id for a trace rectangle")

      // bounded: at most `limit`, the earliest first, and how many were cut
      const few = await get(a, b, 5)
      assert.equal(few.source, "trace")
      assert.equal(few.rects.id.length, 5)
      assert.equal(few.count, want.length)
      assert.equal(few.cut, want.length - 5)
      assert.equal(few.complete, false, "a cut window is not complete")
      const earliest = [...old.rects.s].sort((x, y) => x - y).slice(0, 5)
      assert.deepEqual([...few.rects.s].sort((x, y) => x - y), earliest)

      // a window the ring holds: from memory, as before
      const recent = await get(state.rect(state.written - 4)!.start, state.latest, 20_000)
      assert.equal(recent.source, "memory")
      assert.equal(recent.complete, true)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

  it("without trace files a window before the ring is answered from memory, marked incomplete", async () => {
    const scope = await Effect.runPromise(Scope.make())
    try {
      const d = await Effect.runPromise(Dashboard.make({ port: 0, log: () => undefined, records: true, sampleHost: false, live: { detailCapacity: 16 } }).pipe(Scope.provide(scope)))
      const f = fanout(100)
      await Effect.runPromise(Engine.compute(f.graph, { keys: f.keys }).pipe(Hooks.provide(d.callbacks), Effect.provide(Executor.layerSync)))
      d.state.close()
      const r = await (await fetch(`http://127.0.0.1:${d.server.port}/api/detail?from=-1&to=${d.state.rect(d.state.oldest)!.start / 2}`)).json() as Detail
      assert.equal(r.source, "memory")
      assert.equal(r.complete, false)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

  it("a request is answered when the reader's thread is closed under it, and a window after close starts a new thread", { timeout: 60_000 }, async () => {
    // (a window asked of a closed reader once went to the quitting thread and was never answered)
    const d = traceDetail([join(dir, "missing.msgpack")])
    const pending = d.window(0, 1, 10)
    d.close()
    const [first] = await Promise.allSettled([pending])
    assert.ok(first !== undefined)
    const [again] = await Promise.allSettled([d.window(0, 1, 10)])
    assert.ok(again !== undefined)
    d.close()
  })
})

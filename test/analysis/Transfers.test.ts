/**
 * The transfer analyses (analysis/Transfers.ts): against a naive reference on random
 * traces of tasks and transfers (fast-check), and on real runs: a 2-process local
 * cluster's demo (peer fetches, clock offsets) and a GPU demo (device copies, device
 * bytes), where what the tables add up to is checked against the trace's own events.
 */
import assert from "node:assert/strict"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { fileURLToPath } from "node:url"
import type { Table } from "apache-arrow"
import * as fc from "fast-check"
import * as A from "../../src/analysis/Analysis.ts"
import { decodeRecordsUnsafe, encodeRecords } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import { skip as gpuSkip } from "../gpu/gpu.ts"

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))
const dirs: Array<string> = []
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const rowsOf = (t: Table): Array<Record<string, unknown>> => t.toArray().map((r) => r.toJSON() as Record<string, unknown>)

/** Floats compared to 1e-9 relative; NaN equals NaN (and null: tables write NaN as null). */
const near = (a: unknown, b: unknown): boolean =>
  a === b || (a === null && typeof b === "number" && Number.isNaN(b)) ? true : typeof a === "number" && typeof b === "number"
    ? (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))
    : a === b

const sameRows = (got: Array<Record<string, unknown>>, want: Array<Record<string, unknown>>, label: (r: Record<string, unknown>) => string) => {
  const by = (rs: Array<Record<string, unknown>>) => new Map(rs.map((r) => [label(r), r]))
  const g = by(got)
  const w = by(want)
  assert.deepEqual([...g.keys()].sort(), [...w.keys()].sort())
  for (const [k, r] of w) {
    for (const [col, x] of Object.entries(r)) assert.ok(near(g.get(k)![col], x), `${k} ${col}: ${String(g.get(k)![col])} vs ${String(x)}`)
  }
}

// ---------------------------------------------------------------------------
// random traces

const workers = ["worker-h-0", "worker-h-1", "worker-h-16", "worker-h-17", "worker-h-2"]

interface Spec {
  readonly tasks: ReadonlyArray<{ w: number; start: number; dur: number; size: number | null; deps: Array<number>; type: string; fn: number }>
  readonly transfers: ReadonlyArray<{ w: number; keys: Array<number>; start: number; dur: number; bytes: number; kind: number }>
}

const spec: fc.Arbitrary<Spec> = fc.record({
  tasks: fc.array(
    fc.record({
      w: fc.nat(4),
      start: fc.double({ min: 0, max: 10, noNaN: true }),
      dur: fc.double({ min: 0, max: 2, noNaN: true }),
      size: fc.option(fc.nat(1000), { nil: null }),
      deps: fc.array(fc.nat(9), { maxLength: 3 }),
      type: fc.constantFrom("Chunk", "number", "Object"),
      fn: fc.nat(2)
    }),
    { maxLength: 10 }
  ),
  transfers: fc.array(
    fc.record({
      w: fc.nat(4),
      keys: fc.array(fc.nat(11), { maxLength: 3 }), // 10, 11: keys no task made
      start: fc.double({ min: 0, max: 10, noNaN: true }),
      dur: fc.double({ min: 0, max: 1, noNaN: true }),
      bytes: fc.nat(1e6),
      kind: fc.nat(2) // 0 peer, 1 host-to-device, 2 device-to-host
    }),
    { maxLength: 12 }
  )
})

const keyOf = (i: number) => `('f-${i}', ${i})`
const fnNames = ["alpha", "beta", "gamma"]
const dirOf = (kind: number) => ["peer", "host-to-device", "device-to-host"][kind]!

const eventsOf = (s: Spec): Array<TraceEvent> => [
  ...s.tasks.map((t, i): TraceEvent => ({
    name: "Compute",
    timestamp: t.start + t.dur,
    phase: "X",
    process_id: "h",
    thread_id: workers[t.w]!,
    args: { key: keyOf(i), name: fnNames[t.fn], state: "memory", ...(t.size !== null ? { size: t.size } : {}), dependencies: t.deps.map(keyOf), type: t.type, dtype: "float64" },
    duration: t.dur
  })),
  ...s.transfers.map((t): TraceEvent => ({
    name: "Transfer",
    timestamp: t.start + t.dur,
    phase: "X",
    process_id: "h",
    thread_id: workers[t.w]!,
    args: {
      keys: t.keys.map(keyOf),
      bytes: t.bytes,
      worker: workers[t.w]!,
      start: t.start,
      stop: t.start + t.dur,
      ...(t.kind === 0 ? { peer: workers[(t.w + 1) % 5]!, serialize: t.dur / 4, deserialize: t.dur / 8 } : { direction: dirOf(t.kind) })
    },
    duration: t.dur
  }))
]

/** The naive reference: the module header's rules, as plain loops over the spec. */
const reference = (spec: Spec) => {
  const s = { ...spec, transfers: spec.transfers.map((t) => ({ ...t, dur: t.start + t.dur - t.start })) }
  const tasks = s.tasks.map((t, i) => ({ ...t, key: keyOf(i), end: t.start + t.dur, worker: workers[t.w]! }))
  const maker = (k: string) => tasks.findLast((t) => t.key === k)
  const shareOf = (keys: Array<string>, j: number) => {
    const sizes = keys.map((k) => maker(k)?.size ?? NaN)
    const total = sizes.reduce((a, b) => a + b, 0)
    return total > 0 ? sizes[j]! / total : 1 / keys.length
  }
  const index = (w: string) => Number(w.slice(w.lastIndexOf("-") + 1))
  const sameProcess = (recv: string, w: string) => index(w) >= index(recv) && index(w) < Math.floor(index(recv) / 16) * 16 + 16
  const receiver = (tr: Spec["transfers"][number], key: string) => {
    const recv = workers[tr.w]!
    if (tr.kind === 2) return maker(key)
    const stop = tr.start + tr.dur
    const candidates = tasks.filter((t) =>
      (t.deps.map(keyOf).includes(key) || (tr.kind === 1 && t === maker(key))) &&
      t.end + 1e-9 >= stop &&
      (tr.kind === 0 ? sameProcess(recv, t.worker) : t.worker === recv)
    )
    return candidates.sort((a, b) => a.end - b.end)[0]
  }
  const pair: Record<string, Record<string, unknown>> = {}
  const types: Record<string, Record<string, unknown>> = {}
  const fns: Record<string, Record<string, unknown> & { events: Set<number> }> = {}
  const typeEvents: Record<string, Set<number>> = {}
  s.transfers.forEach((tr, e) => {
    const recv = workers[tr.w]!
    const dir = dirOf(tr.kind)
    const from = tr.kind === 0 ? workers[(tr.w + 1) % 5]! : tr.kind === 2 ? recv : "host"
    const to = tr.kind === 2 ? "host" : recv
    const p = pair[`${from}|${to}|${dir}`] ??= { From: from, To: to, Direction: dir, Transfers: 0, Bytes: 0, "Time (s)": 0, "Serialize (s)": tr.kind === 0 ? 0 : NaN, "Deserialize (s)": tr.kind === 0 ? 0 : NaN }
    ;(p.Transfers as number)++
    ;(p.Bytes as number) += tr.bytes
    ;(p["Time (s)"] as number) += tr.dur
    if (tr.kind === 0) ((p["Serialize (s)"] as number) += tr.dur / 4, (p["Deserialize (s)"] as number) += tr.dur / 8)
    const keys = tr.keys.map(keyOf)
    keys.forEach((k, j) => {
      const m = maker(k)
      const type = m?.type ?? "(unknown)"
      const label = `${type}|${m !== undefined ? "float64" : ""}|${dir}`
      const q = types[label] ??= { Type: type, Dtype: m !== undefined ? "float64" : "", Direction: dir, Keys: 0, Bytes: 0, "Time (s)": 0 }
      ;(typeEvents[label] ??= new Set()).add(e)
      ;(q.Keys as number)++
      ;(q.Bytes as number) += tr.bytes * shareOf(keys, j)
      ;(q["Time (s)"] as number) += tr.dur * shareOf(keys, j)
      const r = receiver(tr, k)
      const fn = r === undefined ? "(none)" : fnNames[r.fn]!
      const f = fns[fn] ??= { Function: fn, Keys: 0, Bytes: 0, "Transfer time (s)": 0, events: new Set() }
      f.events.add(e)
      ;(f.Keys as number)++
      ;(f.Bytes as number) += tr.bytes * shareOf(keys, j)
      ;(f["Transfer time (s)"] as number) += tr.dur * shareOf(keys, j)
    })
  })
  const rate = (r: Record<string, unknown>) => ((r["Time (s)"] as number) > 0 ? (r.Bytes as number) / 1e6 / (r["Time (s)"] as number) : NaN)
  for (const r of Object.values(pair)) r["MB/s"] = rate(r)
  for (const [l, r] of Object.entries(types)) (r["MB/s"] = rate(r), r.Transfers = typeEvents[l]!.size)
  const fnRows = Object.values(fns).map(({ events, ...r }) => {
    const task = tasks.filter((t) => fnNames[t.fn] === r.Function).reduce((a, t) => a + t.dur, 0)
    const tt = r["Transfer time (s)"] as number
    return { ...r, Transfers: events.size, "Task time (s)": task, "Transfer share (%)": tt + task > 0 ? (tt / (tt + task)) * 100 : NaN }
  })
  const rowNames = [...new Set([...tasks.map((t) => t.worker), ...s.transfers.map((t) => workers[t.w]!)])]
  const shareRows = (rowNames.length === 0 ? [] : [...rowNames, A.allWorkers]).map((w) => {
    const mine = <T extends { worker: string }>(xs: Array<T>) => (w === A.allWorkers ? xs : xs.filter((x) => x.worker === w))
    const ts = mine(tasks)
    const trs = mine(s.transfers.map((t) => ({ ...t, worker: workers[t.w]! })))
    const compute = ts.reduce((a, t) => a + t.dur, 0)
    const time = trs.reduce((a, t) => a + t.dur, 0)
    return {
      Worker: w,
      Tasks: ts.length,
      "Compute (s)": compute,
      Transfers: trs.length,
      "Transfer (s)": time,
      Bytes: trs.reduce((a, t) => a + t.bytes, 0),
      "Transfer share (%)": compute + time > 0 ? (time / (compute + time)) * 100 : NaN
    }
  })
  return { pair: Object.values(pair), types: Object.values(types), fns: fnRows, share: shareRows }
}

describe("Transfers", () => {
  it("agrees with a naive reference on random traces of tasks and transfers", () => {
    fc.assert(
      fc.property(spec, (s) => {
        const t = A.loadBytesUnsafe([{ file: "t.msgpack", bytes: encodeRecords(eventsOf(s)) }])
        const ref = reference(s)
        const bw = rowsOf(A.transferBandwidth(t))
        sameRows(bw, ref.pair, (r) => `${String(r.From)}|${String(r.To)}|${String(r.Direction)}`)
        for (let i = 1; i < bw.length; i++) assert.ok((bw[i - 1]!.Bytes as number) >= (bw[i]!.Bytes as number), "most bytes first")
        sameRows(rowsOf(A.transferTypes(t)), ref.types, (r) => `${String(r.Type)}|${String(r.Dtype)}|${String(r.Direction)}`)
        sameRows(rowsOf(A.transferFunctions(t)), ref.fns, (r) => String(r.Function))
        sameRows(rowsOf(A.transferShare(t)), ref.share, (r) => String(r.Worker))
      }),
      { numRuns: 200 }
    )
  })

  it("gives empty tables (and a share of 0) for a trace without transfers", () => {
    const events: Array<TraceEvent> = [
      { name: "Compute", timestamp: 2, phase: "X", process_id: "h", thread_id: "worker-h-0", args: { key: "('a', 0)", state: "memory" }, duration: 1 }
    ]
    const t = A.loadBytesUnsafe([{ file: "t.msgpack", bytes: encodeRecords(events) }])
    assert.equal(t.transfers.numRows, 0)
    assert.equal(t.clockOffsets.numRows, 0)
    assert.equal(A.transferBandwidth(t).numRows, 0)
    assert.equal(A.transferTypes(t).numRows, 0)
    assert.equal(A.transferFunctions(t).numRows, 0)
    const share = rowsOf(A.transferShare(t))
    assert.deepEqual(share.map((r) => [r.Worker, r.Transfers, r["Transfer share (%)"]]), [["worker-h-0", 0, 0], [A.allWorkers, 0, 0]])
  })

  it("accounts every peer fetch of a 2-process local cluster's demo, with clock offsets", () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-transfers-test-"))
    dirs.push(dir)
    execFileSync(process.execPath, [main, "demo", "--cluster", "local:2", "--workers", "2", "--samples", "20000", "--profile", join(dir, "c")], { cwd: dir, stdio: "ignore" })
    const files = readdirSync(dir).filter((f) => f.startsWith("c-TracePlugin-")).map((f) => join(dir, f))
    const events = files.flatMap((f) => decodeRecordsUnsafe(readFileSync(f), f).events)
    const transfers = events.filter((e) => e.name === "Transfer")
    assert.ok(transfers.length > 0, "the demo on 2 processes fetches from peers")
    const t = A.loadBytesUnsafe(files.map((file) => ({ file, bytes: readFileSync(file) })))
    const bytes = transfers.reduce((a, e) => a + ((e.args as { bytes: number }).bytes), 0)
    const bw = rowsOf(A.transferBandwidth(t))
    assert.ok(bw.every((r) => r.Direction === "peer" && r.From !== r.To))
    assert.equal(bw.reduce((a, r) => a + (r.Bytes as number), 0), bytes)
    assert.equal(bw.reduce((a, r) => a + (r.Transfers as number), 0), transfers.length)
    const types = rowsOf(A.transferTypes(t))
    assert.ok(Math.abs(types.reduce((a, r) => a + (r.Bytes as number), 0) - bytes) < 1e-6 * bytes)
    assert.ok(types.every((r) => r.Type !== "(unknown)"), "every moved key was made by a task of the trace")
    const fns = rowsOf(A.transferFunctions(t))
    // Known (docs/cluster.md "Not done yet"): on a loaded machine a fetch is now and then
    // recorded with no task using it after it (failed a CI rehearsal; reproduced with two
    // cluster demos at once: a combine recorded 2 ms before its inputs' fetch ended, the
    // fetching batch's tasks not recorded). Such keys go to "(none)", as the analysis documents; they must stay
    // rare, and every other fetched key has its receiving task.
    const keys = fns.reduce((a, r) => a + (r.Keys as number), 0)
    const none = fns.find((r) => r.Function === "(none)")?.Keys as number | undefined ?? 0
    assert.ok(none <= Math.max(2, 0.02 * keys), `${none} of ${keys} fetched keys without a receiving task`)
    const all = rowsOf(A.transferShare(t)).at(-1)!
    assert.equal(all.Worker, A.allWorkers)
    assert.equal(all.Transfers, transfers.length)
    assert.equal(all.Tasks, t.tasks.numRows)
    // clock offsets: one row per event, a worker name and an uncertainty
    const clocks = events.filter((e) => e.name === "Clock Offset")
    assert.ok(clocks.length > 0)
    assert.equal(t.clockOffsets.numRows, clocks.length)
    for (const r of t.clockOffsets) {
      assert.match(String(r.name), /^tessera-worker@/)
      assert.ok(r.uncertainty !== null && r.uncertainty >= 0 && Math.abs(r.offset!) < 5)
    }
  })

  it("accounts a GPU demo's copies both ways and its device bytes", { skip: gpuSkip }, () => {
    const dir = mkdtempSync(join(tmpdir(), "tessera-transfers-gpu-test-"))
    dirs.push(dir)
    execFileSync(process.execPath, [main, "demo", "--gpu", "--workers", "1", "--samples", "3000", "--chunk-rows", "500", "--profile", join(dir, "g")], { cwd: dir, stdio: "ignore" })
    const files = readdirSync(dir).filter((f) => f.startsWith("g-TracePlugin-")).map((f) => join(dir, f))
    const t = A.loadBytesUnsafe(files.map((file) => ({ file, bytes: readFileSync(file) })))
    const bw = rowsOf(A.transferBandwidth(t))
    assert.deepEqual(new Set(bw.map((r) => r.Direction)), new Set(["host-to-device", "device-to-host"]))
    const total = t.transfers.toArray().reduce((a, r) => a + (r.bytes ?? 0), 0)
    assert.equal(bw.reduce((a, r) => a + (r.Bytes as number), 0), total)
    assert.ok(rowsOf(A.transferFunctions(t)).every((r) => r.Function !== "(none)"), "every copy has its task")
    // the GPU worker's Managed Memory rows carry device bytes; the CPU worker's none
    const gpuWorker = String(bw[0]!.From === "host" ? bw[0]!.To : bw[0]!.From)
    const mem = t.memory.toArray()
    assert.ok(mem.some((r) => r.worker === gpuWorker && r.device !== null && r.device > 0))
    assert.ok(mem.every((r) => r.worker === gpuWorker || r.device === null))
  })
})

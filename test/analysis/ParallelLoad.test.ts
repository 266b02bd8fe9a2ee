import assert from "node:assert/strict"
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, it } from "node:test"
import { encode } from "@msgpack/msgpack"
import type { Table } from "apache-arrow"
import * as fc from "fast-check"
import * as A from "../../src/analysis/Analysis.ts"
import { startDecoding } from "../../src/analysis/Decoding.ts"
import { decodeParallelPromise, planPieces } from "../../src/analysis/internal/parallelDecode.ts"
import { decodeRecordsUnsafe, encodeRecords, isTraceFormatError, readLength, recordStartNear } from "../../src/trace/TraceFormat.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"

const tmp = () => mkdtempSync(join(tmpdir(), "tessera-parallel-"))

/** A framed record holding any msgpack value (for odd shapes the encoder never writes). */
const rawRecord = (value: unknown): Uint8Array => {
  const body = encode(value)
  const out = new Uint8Array(8 + body.length)
  new DataView(out.buffer).setUint32(4, body.length)
  out.set(body, 8)
  return out
}

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0))
  let at = 0
  for (const p of parts) (out.set(p, at), at += p.length)
  return out
}

const host = fc.constantFrom("h0", "h1", "node-2")
const worker = fc.constantFrom("worker-h0-0", "worker-h0-1", "worker-h1-0", null)
const key = fc.oneof(
  fc.tuple(fc.constantFrom("sum", "mean_chunk", "ü-f"), fc.nat(50)).map(([f, i]) => `('${f}-0123456789abcdef', ${i}, 0)`),
  fc.constantFrom("finalize-abc", "x", "")
)
const time = fc.double({ min: 0, max: 100, noNaN: true })

const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined })
/** Tessera's Compute args (DASF's events lack them), each present or not. */
const tesseraArgs = fc.record({
  stage: opt(fc.constantFrom("load", "fit ü", "")),
  type: opt(fc.constantFrom("Chunk", "number")),
  dtype: opt(fc.constantFrom("float64", "int32")),
  shape: opt(fc.array(fc.nat(100000), { maxLength: 3 })),
  dependents: opt(fc.array(key, { maxLength: 3 })),
  startstops: opt(fc.array(
    fc.record({ action: fc.constantFrom("gather", "compute", "transfer", "other"), start: time, stop: time }),
    { maxLength: 4 }
  )),
  cpu_time: opt(fc.double({ min: 0, max: 5, noNaN: true })),
  peak_memory: opt(fc.oneof(fc.nat(), fc.double({ min: 0, max: 1e12, noNaN: true }))),
  io_bytes: opt(fc.nat())
}).map((a) => Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined)))

const computeEvent = fc.record({
  key,
  name: fc.option(fc.constantFrom("sum", "mean"), { nil: undefined }),
  deps: fc.array(key, { maxLength: 3 }),
  size: fc.option(fc.nat(1e6), { nil: undefined }),
  ts: time,
  dur: fc.double({ min: 0, max: 5, noNaN: true }),
  host,
  worker,
  more: tesseraArgs
}).map(({ deps, dur, host, key, more, name, size, ts, worker }): TraceEvent => ({
  name: "Compute",
  timestamp: ts,
  phase: "X",
  process_id: host,
  thread_id: worker,
  args: {
    key,
    ...(name !== undefined ? { name } : {}),
    state: "memory",
    ...(size !== undefined ? { size } : {}),
    dependencies: deps,
    dependents: [],
    ...more
  },
  duration: dur
}))

const driverEvent = fc.record({ ts: time, dur: fc.double({ min: 0, max: 2, noNaN: true }), activity: fc.constantFrom("setup", "wait"), c: fc.nat(5) })
  .map(({ activity, c, dur, ts }): TraceEvent => ({
    name: "Driver",
    timestamp: ts,
    phase: "X",
    process_id: "h0",
    thread_id: "driver",
    args: { key: `driver-${c}-${activity}`, activity, compute: c, dependencies: [`driver-${c}-x`], tasks: c },
    duration: dur
  }))

const memoryEvent = fc.record({ key, ts: time, host, worker, size: fc.nat(1e6), tasks: fc.nat(9), device: fc.option(fc.nat(1e6), { nil: undefined }) }).map(
  ({ device, host, key, size, tasks, ts, worker }): TraceEvent => ({
    name: "Managed Memory",
    timestamp: ts,
    phase: "I",
    scope: "g",
    process_id: host,
    thread_id: worker,
    args: device === undefined ? { key, state: "memory", size, tasks } : { key, state: "memory", size, tasks, device }
  })
)

/** A cluster peer fetch or a GPU copy (profiler/Trace.ts `transferEvent`'s layout). */
const transferEvent = fc.record({
  keys: fc.array(key, { maxLength: 3 }),
  ts: time,
  dur: fc.double({ min: 0, max: 5, noNaN: true }),
  host,
  worker,
  bytes: fc.nat(1e9),
  peer: fc.boolean()
}).map(({ bytes, dur, host, keys, peer, ts, worker }): TraceEvent => ({
  name: "Transfer",
  timestamp: ts,
  phase: "X",
  process_id: host,
  thread_id: worker,
  args: {
    keys,
    bytes,
    worker,
    ...(peer ? { peer: "worker-h1-16" } : {}),
    start: ts - dur,
    stop: ts,
    ...(peer ? { serialize: dur / 4, deserialize: dur / 8 } : { direction: "host-to-device" })
  },
  duration: dur
}))

const clockEvent = fc.record({ ts: time, host, worker, offset: fc.double({ min: -60, max: 60, noNaN: true }), u: fc.double({ min: 0, max: 1, noNaN: true }) })
  .map(({ host, offset, ts, u, worker }): TraceEvent => ({
    name: "Clock Offset",
    timestamp: ts,
    phase: "I",
    scope: "t",
    process_id: host,
    thread_id: worker,
    args: { worker: "tessera-worker@127.0.0.1:9", offset, uncertainty: u }
  }))

const resourceEvent = fc.record({ ts: time, host, cpu: fc.double({ min: 0, max: 100, noNaN: true }), gpu: fc.boolean() })
  .map(({ cpu, gpu, host, ts }): TraceEvent => ({
    name: "Resource Usage",
    timestamp: ts,
    phase: "I",
    scope: "g",
    process_id: host,
    thread_id: null,
    args: { cpu, memory: 1e9, time: ts, num_fds: 4, ...(gpu ? { gpu_utilization: 50, gpu_memory_used: 1e9 } : {}) }
  }))

/** Records the fast path hands to the generic decoder (fallback) and other events. */
const oddRecord = fc.oneof(
  // dependencies not a list, args in reverse key order, a Compute without args
  key.map((k) => rawRecord({ name: "Compute", timestamp: 3, phase: "X", process_id: "h0", thread_id: "w", args: { key: k, dependencies: "no" }, duration: 1 })),
  key.map((k) => rawRecord({ args: { tasks: 2, size: 8, state: "memory", key: k }, thread_id: 7, process_id: "h1", phase: "I", timestamp: 4, name: "Managed Memory" })),
  fc.constant(rawRecord({ name: "Compute", timestamp: 5, phase: "X", process_id: "h0", thread_id: "w" })),
  fc.constant(rawRecord({ name: "Other", timestamp: 1, phase: "M", process_id: 1, thread_id: 2, args: { dot: "digraph {}" } })),
  fc.constant(rawRecord({ name: "Compute", timestamp: 2, phase: "X", process_id: "h0", thread_id: "w", args: { key: "e", size: { x: 1 } }, duration: 1 })),
  // details of unusual shapes: a negative or fractional dimension, a shape that is no
  // list, startstops entries that are no maps or lack fields, a numeric stage
  fc.constantFrom(
    { shape: [3, -1] },
    { shape: [2.5] },
    { shape: "3x4" },
    { startstops: [1, { action: "compute" }, { action: "gather", start: 1, stop: 2, extra: [1] }] },
    { startstops: "no" },
    { stage: 7, dtype: null, dependents: [1, null, "k"] }
  ).map((a) => rawRecord({ name: "Compute", timestamp: 6, phase: "X", process_id: "h0", thread_id: "w", duration: 1, args: { key: "odd", ...a } })),
  // a Driver event the encoder does not write (args first)
  fc.constant(rawRecord({ args: { key: "driver-0-setup", activity: "setup", compute: 0, dependencies: [], tasks: 0 }, name: "Driver", timestamp: 9, phase: "X", process_id: "h0", thread_id: "driver", duration: 1 }))
)

const record = fc.oneof(
  { arbitrary: fc.oneof(computeEvent, memoryEvent, resourceEvent, driverEvent, transferEvent, clockEvent).map((e) => encodeRecords([e])), weight: 8 },
  { arbitrary: oddRecord, weight: 1 }
)

const snapshotOf = (t: { toArray(): Array<unknown> }) => JSON.stringify(t.toArray())
/** A column's values, row by row (null for a null row; lists as arrays). */
const cells = (v: { readonly length: number; get(i: number): unknown }) =>
  JSON.stringify(Array.from({ length: v.length }, (_, i) => {
    const x = v.get(i)
    return typeof x === "object" && x !== null && "toArray" in x ? Array.from((x as { toArray(): ArrayLike<unknown> }).toArray()) : x
  }))

/** Everything a load yields, as plain JSON (column values, not dictionary codes). */
const snapshot = (t: A.TraceTables): string =>
  JSON.stringify({
    tasks: t.tasks.toArray(),
    memory: t.memory.toArray(),
    resources: t.resources.toArray(),
    driver: t.driver.toArray(),
    transfers: t.transfers.toArray(),
    clockOffsets: t.clockOffsets.toArray(),
    counts: Object.entries(t.eventCounts).sort(),
    events: t.events,
    droppedBytes: t.droppedBytes,
    fallbackRecords: t.fallbackRecords
  })

/**
 * The tables' dictionary codes and dictionaries, column by column: a load's codes are a
 * function of its files (each dictionary in the order its strings first appear, in file
 * order), not of how many threads decoded them or when their strings met, so Arrow
 * files written from them, and anything ordered by code, are the same run after run.
 */
const codes = (t: A.TraceTables): string =>
  JSON.stringify(([t.tasks, t.memory] as ReadonlyArray<Table>).map((table) =>
    table.schema.fields.map((f) => {
      const d = table.getChild(f.name)!.data[0]
      const data = d?.dictionary !== undefined ? d : d?.children[0]?.dictionary !== undefined ? d.children[0] : undefined
      if (data === undefined) return null
      const raw = data.values as unknown as Int32Array
      return { dict: data.dictionary!.toArray(), codes: Array.from({ length: data.length }, (_, i) => (data.getValid(i) ? raw[i] : null)) }
    })
  ))

/** What the tables must hold, computed from the generic decoder's events (a naive reference). */
const reference = (events: ReadonlyArray<TraceEvent>): string => {
  const s = (u: unknown): string | null =>
    typeof u === "string" ? u : typeof u === "number" || typeof u === "bigint" || typeof u === "boolean" ? String(u) : null
  const n = (u: unknown): number | null => (typeof u === "number" ? u : typeof u === "bigint" ? Number(u) : null)
  const args = (e: TraceEvent) => e.args as Record<string, unknown>
  const tasks = events.filter((e) => e.name === "Compute" && e.phase === "X").map((e) => {
    const a = args(e)
    const key = s(a.key)
    const name = s(a.name)
    const list = (u: unknown) => (Array.isArray(u) ? u.map(s).filter((x) => x !== null) : [])
    const phase = (action: string, field: "start" | "stop") => {
      if (!Array.isArray(a.startstops)) return null
      let v: number | null = null
      for (const x of a.startstops) {
        if (typeof x === "object" && x !== null && !Array.isArray(x) && x.action === action) v = n(x[field])
      }
      return v
    }
    const shape = Array.isArray(a.shape) && a.shape.every((d) => Number.isSafeInteger(d) && d >= 0) ? a.shape.join("x") : null
    const duration = e.duration ?? 0
    const cpu = n(a.cpu_time)
    return {
      host: s(e.process_id),
      worker: s(e.thread_id),
      key,
      function: name !== null && name !== "" ? name : key === null ? null : A.functionName(key),
      state: s(a.state),
      start: e.timestamp - (e.duration ?? 0),
      end: e.timestamp,
      duration: e.duration ?? 0,
      size: n(a.size),
      cpu_time: cpu,
      dependencies: list(a.dependencies),
      stage: s(a.stage),
      type: s(a.type),
      dtype: s(a.dtype),
      shape,
      dependents: list(a.dependents),
      gather_start: phase("gather", "start"),
      gather_end: phase("gather", "stop"),
      compute_start: phase("compute", "start"),
      compute_end: phase("compute", "stop"),
      transfer_start: phase("transfer", "start"),
      transfer_end: phase("transfer", "stop"),
      peak_memory: n(a.peak_memory),
      io_bytes: n(a.io_bytes),
      cores: cpu !== null && duration > 0 ? cpu / duration : null
    }
  })
  const memory = events.filter((e) => e.name === "Managed Memory").map((e) => {
    const a = args(e)
    return {
      timestamp: e.timestamp,
      host: s(e.process_id),
      worker: s(e.thread_id),
      key: s(a.key),
      state: s(a.state),
      size: n(a.size),
      tasks: n(a.tasks),
      device: n(a.device)
    }
  })
  const resourceArgs = ["cpu", "memory", "gpu_utilization", "gpu_memory_used", "host_net_io.read_bps", "host_net_io.write_bps", "host_disk_io.read_bps", "host_disk_io.write_bps", "num_fds", "time"]
  const resources = events.filter((e) => e.name === "Resource Usage").map((e) => {
    const row: Record<string, unknown> = { timestamp: e.timestamp, host: s(e.process_id) }
    for (const k of resourceArgs) row[k] = n(args(e)[k])
    return row
  })
  const driver = events.filter((e) => e.name === "Driver" && e.phase === "X").map((e) => {
    const a = args(e)
    return { key: a.key, activity: a.activity, start: e.timestamp - (e.duration ?? 0), end: e.timestamp }
  }).sort((x, y) => x.start - y.start || x.end - y.end)
  const transfers = events.filter((e) => e.name === "Transfer" && e.phase === "X").map((e) => {
    const a = args(e)
    const keys = (a.keys as Array<unknown>).map(String)
    return {
      host: s(e.process_id),
      worker: s(a.worker),
      peer: s(a.peer),
      direction: s(a.direction),
      keys,
      n_keys: keys.length,
      bytes: n(a.bytes),
      start: n(a.start),
      stop: n(a.stop),
      duration: (a.stop as number) - (a.start as number),
      serialize: n(a.serialize),
      deserialize: n(a.deserialize)
    }
  })
  const clockOffsets = events.filter((e) => e.name === "Clock Offset").map((e) => {
    const a = args(e)
    return { host: s(e.process_id), worker: s(e.thread_id), name: s(a.worker), time: e.timestamp, offset: n(a.offset), uncertainty: n(a.uncertainty) }
  })
  const counts: Record<string, number> = {}
  for (const e of events) counts[e.name] = (counts[e.name] ?? 0) + 1
  return JSON.stringify({ tasks, memory, resources, driver, transfers, clockOffsets, counts: Object.entries(counts).sort() })
}

describe("ParallelLoad", () => {
  it("loads the tables the generic decoder's events describe, on one thread and on workers", async () => {
    const dir = tmp()
    try {
      let n = 0
      await fc.assert(
        fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 60 }), fc.boolean(), async (records, parallel) => {
          const bytes = concat(records)
          const f = join(dir, `g${n++}.msgpack`)
          writeFileSync(f, bytes)
          const t = parallel
            ? await A.loadPromise([f], { threads: 2, chunkBytes: 1024 })
            : A.loadBytesUnsafe([{ file: f, bytes }])
          const got = JSON.stringify({
            tasks: t.tasks.toArray(),
            memory: t.memory.toArray(),
            resources: t.resources.toArray(),
            driver: t.driver.toArray().map((r) => ({ key: r.key, activity: r.activity, start: r.start, end: r.end })),
            transfers: t.transfers.toArray(),
            clockOffsets: t.clockOffsets.toArray(),
            counts: Object.entries(t.eventCounts).sort()
          })
          assert.equal(got, reference(decodeRecordsUnsafe(bytes, f).events))
        }),
        { numRuns: 40 }
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("yields the same tables on worker threads as on one thread, for random traces with odd records and cut tails", async () => {
    const dir = tmp()
    try {
      let n = 0
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(record, { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 3 }),
          fc.nat(30),
          fc.constantFrom(2, 3),
          fc.constantFrom(undefined, 1, 2, 5, 40),
          async (filesRecords, cut, threads, pieces) => {
            const files = filesRecords.map((records, i) => {
              const bytes = concat(records)
              // cut the last file inside its last record (a truncated tail)
              const keep = i === filesRecords.length - 1 ? bytes.subarray(0, Math.max(0, bytes.length - Math.min(cut, records[records.length - 1].length - 9))) : bytes
              const f = join(dir, `t${n++}.msgpack`)
              writeFileSync(f, keep)
              return { f, keep }
            })
            const paths = files.map((x) => x.f)
            const one = await A.loadPromise(paths, { threads: 1, chunkBytes: 1024 })
            const many = await A.loadPromise(paths, { threads, chunkBytes: 1024, ...(pieces !== undefined ? { pieces } : {}) })
            assert.equal(snapshot(many), snapshot(one))
            assert.equal(codes(many), codes(one), "the same dictionary codes")
            // and the same number of events as the generic decoder finds
            const generic = files.reduce((s, x) => s + decodeRecordsUnsafe(x.keep, x.f).events.length, 0)
            assert.equal(many.events, generic)
          }
        ),
        { numRuns: 16 } // each parallel load starts its worker threads
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a projected load gives the full load's values in the columns it keeps, nulls in the others (property)", async () => {
    const dir = tmp()
    try {
      let n = 0
      const taskColumns = Object.keys(A.loadBytesUnsafe([]).tasks.schema.fields.map((f) => f.name).reduce((o, k) => ({ ...o, [k]: 1 }), {})) as Array<keyof A.TasksSchema>
      const memoryColumns = ["timestamp", "host", "worker", "key", "state", "size", "tasks"] as const
      await fc.assert(
        fc.asyncProperty(
          fc.array(record, { minLength: 1, maxLength: 60 }),
          fc.subarray(taskColumns),
          fc.subarray([...memoryColumns]),
          fc.constantFrom(1, 2),
          async (records, tasks, memory, threads) => {
            const bytes = concat(records)
            const f = join(dir, `p${n++}.msgpack`)
            writeFileSync(f, bytes)
            const columns = { tasks, memory }
            const full = A.loadBytesUnsafe([{ file: f, bytes }])
            const projected = threads === 1
              ? A.loadBytesUnsafe([{ file: f, bytes }], columns)
              : await A.loadPromise([f], { threads, chunkBytes: 1024, columns })
            const always = ["host", "worker", "key", "function", "start", "end", "duration"]
            for (const [name, keep] of [["tasks", [...tasks, ...always]], ["memory", memory]] as const) {
              const a: Table = full[name]
              const b: Table = projected[name]
              assert.equal(b.numRows, a.numRows)
              assert.deepEqual(b.schema.fields.map((x) => `${x.name}: ${x.type}`), a.schema.fields.map((x) => `${x.name}: ${x.type}`))
              for (const field of a.schema.fields) {
                const got = cells(b.getChild(field.name)!)
                const want = (keep as ReadonlyArray<string>).includes(field.name)
                  ? cells(a.getChild(field.name)!)
                  : JSON.stringify(Array.from({ length: a.numRows }, () => null))
                assert.equal(got, want, `${name}.${field.name}`)
              }
            }
            assert.equal(snapshotOf(projected.resources), snapshotOf(full.resources))
            assert.deepEqual(projected.eventCounts, full.eventCounts)
          }
        ),
        { numRuns: 20 }
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("each analysis that declares its columns gives the same table on a load of only those columns (property)", () => {
    const declared = A.analyses.filter((a) => a.columns !== undefined)
    assert.ok(declared.length >= 3)
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 60 }), (records) => {
        const bytes = concat(records)
        const full = A.loadBytesUnsafe([{ file: "f", bytes }])
        const projected = A.loadBytesUnsafe([{ file: "f", bytes }], A.columnsOf(declared))
        for (const a of declared) assert.equal(A.toCsv(a.run(projected)), A.toCsv(a.run(full)), a.name)
      }),
      { numRuns: 60 }
    )
  })

  it("cuts files into pieces where records begin, in file order, each file covered without gaps", async () => {
    const dir = tmp()
    try {
      const files = [0, 1, 2].map((i) => {
        const f = join(dir, `c${i}.msgpack`)
        writeFileSync(f, encodeRecords(fc.sample(computeEvent, { numRuns: 200 + 150 * i, seed: i })))
        return f
      })
      const sizes = files.map((f) => statSync(f).size)
      for (const count of [1, 2, 3, 5, 16]) {
        const pieces = await planPieces(files, sizes, count)
        assert.ok(pieces.length >= files.length && pieces.length <= count + files.length - 1)
        // in file order, each file covered from 0 to its end without gaps
        for (let f = 0; f < files.length; f++) {
          const own = pieces.filter((s) => s.fileIndex === f)
          assert.equal(own[0]!.start, 0)
          own.forEach((s, i) => assert.equal(s.end, own[i + 1]?.start))
          for (const s of own.slice(1)) assert.equal(await recordStartNear(files[f]!, s.start), s.start, "a cut is where a record begins")
          assert.ok(own.every((s) => s.start < sizes[f]!))
        }
        assert.deepEqual(pieces.map((s) => s.fileIndex), [...pieces.map((s) => s.fileIndex)].sort((a, b) => a - b))
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("decodes on one thread, with the same tables, when a cut lands on bytes inside a record that look like records", async () => {
    const dir = tmp()
    try {
      // a record whose binary arg holds 40 well-formed fake records after a run of 0xff
      // bytes: a cut in the middle of the file lands in the 0xff run, and the next
      // "record start" found from there is the first fake one, inside the big record
      const fake = concat(Array.from({ length: 40 }, () => rawRecord({ a: "bc" })))
      const blob = concat([new Uint8Array(60_000).fill(0xff), fake, new Uint8Array(2_000).fill(0xff)])
      const small = (seed: number) => encodeRecords(fc.sample(computeEvent, { numRuns: 40, seed }))
      const bytes = concat([small(1), rawRecord({ name: "Compute", timestamp: 1, duration: 0.5, phase: "X", process_id: "h0", thread_id: "w", args: { key: "big", blob } }), small(2)])
      const f = join(dir, "fake.msgpack")
      writeFileSync(f, bytes)
      const pieces = await planPieces([f], [bytes.length], 2)
      assert.equal(pieces.length, 2)
      const cut = pieces[1]!.start
      const starts: Array<number> = []
      for (let at = 0; at + 8 <= bytes.length; at += 8 + readLength(bytes, at)) starts.push(at)
      assert.ok(!starts.includes(cut), `the cut ${cut} is inside a record`)
      const one = await A.loadPromise([f], { threads: 1 })
      const two = await A.loadPromise([f], { threads: 2, pieces: 2 }) // the cut above
      assert.equal(snapshot(two), snapshot(one))
      assert.equal(two.events, starts.length)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("decodes on the calling thread on one core, else on it and up to 3 workers", () => {
    assert.deepEqual([1, 2, 3, 4, 8, 64].map(A.decodeThreads), [1, 2, 3, 4, 4, 4])
  })

  it("loads large traces on workers with 4 MiB batches whose buffers go back and forth (same tables as one thread)", async () => {
    const dir = tmp()
    try {
      const events: Array<TraceEvent> = []
      const sample = fc.sample(fc.oneof(computeEvent, memoryEvent, resourceEvent), { numRuns: 2000, seed: 7 })
      for (const e of sample) events.push(e)
      const one = encodeRecords(events)
      // repeat to pass the default threshold (16 MiB) without generating millions of events
      const copies = Math.ceil(A.parallelMinBytes / one.length) + 1
      const f = join(dir, "big.msgpack")
      writeFileSync(f, concat(Array.from({ length: copies }, () => one)))
      const seq = await A.loadPromise([f], { threads: 1 })
      const par = await A.loadPromise([f], { threads: 2 })
      const auto = await A.loadPromise([f]) // decodeThreads of this machine's cores
      assert.equal(par.events, sample.length * copies)
      assert.equal(snapshot(par), snapshot(seq))
      assert.equal(snapshot(auto), snapshot(seq))
      assert.equal(codes(par), codes(seq), "the same dictionary codes")
      assert.equal(codes(auto), codes(seq), "the same dictionary codes")

    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("gives the one-thread load's dictionary codes whatever order the decoders meet the strings in", async () => {
    const dir = tmp()
    try {
      // a new key in every task (and its dependency the one before): each piece of the
      // file meets strings no other piece has, and workers that decode before this thread
      // joins send theirs in whatever order their messages come
      const events = Array.from({ length: 40_000 }, (_, i): TraceEvent => ({
        name: "Compute", timestamp: 10 + i, phase: "X", process_id: `h${i % 3}`, thread_id: `w-${i % 7}`, duration: 0.5,
        args: { key: `('task-${i}', ${i})`, name: `f${i % 11}`, state: "memory", size: i, dependencies: i > 0 ? [`('task-${i - 1}', ${i - 1})`] : [], dependents: [] }
      }))
      const f = join(dir, "unique.msgpack")
      writeFileSync(f, encodeRecords(events))
      const seq = codes(await A.loadPromise([f], { threads: 1 }))
      for (let run = 0; run < 4; run++) {
        const held = startDecoding([f], { threads: 3, pieces: 24, chunkBytes: 1 << 16 })
        await new Promise((resolve) => setTimeout(resolve, 20 * run))
        held.join()
        assert.equal(codes(await A.loadPromise([f], { decoding: held })), seq, `run ${run}: held, then joined`)
        assert.equal(codes(await A.loadPromise([f], { threads: 3, pieces: 24, chunkBytes: 1 << 16 })), seq, `run ${run}: at once`)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a parallel decode stopped part-way leaves no file open (Linux: /proc/self/fd)", { skip: !existsSync("/proc/self/fd") && "no /proc" }, async () => {
    const dir = tmp()
    try {
      const f = join(dir, "abort.msgpack")
      writeFileSync(f, encodeRecords(fc.sample(computeEvent, { numRuns: 3000, seed: 9 })))
      const open = () => readdirSync("/proc/self/fd").length
      const settle = async () => {
        // earlier tests' threads may still be closing their files: wait for a steady count
        let n = open()
        for (let t = 0; t < 50; t++) {
          await new Promise((r) => setTimeout(r, 20))
          const m = open()
          if (m === n) break
          n = m
        }
        return n
      }
      const before = await settle()
      for (let round = 0; round < 5; round++) {
        const controller = new AbortController()
        let batches = 0
        const stopped = decodeParallelPromise([f], 2, {
          sizes: [statSync(f).size],
          chunkBytes: 1024,
          signal: controller.signal,
          onDecoded: () => void (++batches === 3 && controller.abort())
        })
        await assert.rejects(stopped, (e) => (e as Error).name === "AbortError")
      }
      // the worker threads' handles go with them; give their exits a moment (a leak leaves
      // one file per aborted decode at least; files of earlier tests may close meanwhile)
      for (let t = 0; t < 50 && open() > before; t++) await new Promise((r) => setTimeout(r, 20))
      assert.ok(open() <= before, `${open() - before} file(s) left open after aborted decodes`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  /** Run `script` (an ES module importing parallelDecode.ts) in a fresh Node: its exit status, stdout, stderr. */
  const runScript = (dir: string, script: string, asEval: boolean) => {
    const file = join(dir, "script.mjs")
    writeFileSync(file, script)
    const args = asEval ? ["--input-type=module", "-e", script] : [file]
    return spawnSync(process.execPath, args, { encoding: "utf8", timeout: 60_000 })
  }
  /** `busyMs`: this thread kept busy that long once the decode has started its workers (before the files are cut). */
  const decodeScript = (f: string, sizes: string, busyMs = 0) => `
    import { decodeParallelPromise } from ${JSON.stringify(new URL("../../src/analysis/internal/parallelDecode.ts", import.meta.url).href)}
    const decoding = decodeParallelPromise([${JSON.stringify(f)}], 3, { sizes: [${sizes}] })
    for (const until = Date.now() + ${busyMs}; Date.now() < until;);
    const out = await decoding.then(() => "resolved", (e) => "rejected " + e.name + ": " + e.message)
    console.log("settled", out)
  `

  it("a decode sized for an absurd file size settles, and leaves no thread behind (the process exits)", async () => {
    const dir = tmp()
    try {
      const f = join(dir, "small.msgpack")
      writeFileSync(f, encodeRecords(fc.sample(computeEvent, { numRuns: 50, seed: 4 })))
      // stated sizes drive the up-front reservations (capped) and the pieces; a script
      // file, not -e: workers inherit --input-type and refuse to start with it (next test)
      const r = runScript(dir, decodeScript(f, "2 ** 50"), false)
      assert.equal(r.signal, null, `killed (${r.signal}): a thread kept the process alive\n${r.stderr}`)
      assert.match(r.stdout, /settled/, `exit ${r.status}, stderr: ${r.stderr}`)
      assert.doesNotMatch(r.stdout, /input-type/, "the workers started")
      assert.equal(r.status, 0, r.stderr)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("rejects with a typed error, whenever they fail, when the decode workers cannot start (the process does not crash)", async () => {
    const dir = tmp()
    try {
      const f = join(dir, "small.msgpack")
      writeFileSync(f, encodeRecords(fc.sample(computeEvent, { numRuns: 50, seed: 4 })))
      // started by \`node --input-type=module -e\`, worker threads inherit the flag and
      // fail at once (ERR_INPUT_TYPE_NOT_ALLOWED); kept busy meanwhile, the calling thread
      // hears of it before the files are cut, when an error event had no listener yet
      // and crashed the process (a CI run saw it happen by chance)
      for (const busyMs of [0, 400]) {
        const r = runScript(dir, decodeScript(f, String(statSync(f).size), busyMs), true)
        assert.equal(r.status, 0, `exit ${r.status}, stderr: ${r.stderr}`)
        assert.match(r.stdout, /settled rejected TraceFormatError: .*input-type/s, r.stdout + r.stderr)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("reports the first bad record in file order with its file and absolute byte offset", async () => {
    const dir = tmp()
    try {
      const good = encodeRecords(fc.sample(computeEvent, { numRuns: 60, seed: 3 }))
      const notMsgpack = new Uint8Array([0, 0, 0, 0, 0, 0, 0, 2, 0xc1, 0xc1])
      const notEvent = rawRecord({ hello: 1 })
      const implausible = new Uint8Array([0xff, 0, 0, 0, 0, 0, 0, 1, 0x80])
      const a = join(dir, "a.msgpack")
      const b = join(dir, "b.msgpack")
      writeFileSync(a, good)
      // b: good records, then a record that is not msgpack (several batches in), then
      // one that is not an event, then an implausible header
      writeFileSync(b, concat([good, good, notMsgpack, good, notEvent, implausible]))
      for (const threads of [1, 2, 3]) {
        await assert.rejects(A.loadPromise([a, b], { threads, chunkBytes: 1024 }), (e: unknown) => {
          assert.ok(isTraceFormatError(e))
          assert.equal(e.file, b)
          assert.equal(e.offset, 2 * good.length)
          assert.equal(e.reason._tag, "NotMsgpack")
          return true
        })
      }
      // the framing error comes first when it precedes the bad records
      const c = join(dir, "c.msgpack")
      writeFileSync(c, concat([good, implausible, good, notEvent]))
      for (const threads of [1, 2]) {
        await assert.rejects(A.loadPromise([c], { threads, chunkBytes: 1024 }), (e: unknown) => {
          assert.ok(isTraceFormatError(e))
          assert.equal(e.file, c)
          assert.equal(e.offset, good.length)
          assert.equal(e.reason._tag, "ImplausibleLength")
          return true
        })
      }
      // a missing file among several
      await assert.rejects(A.loadPromise([a, join(dir, "missing.msgpack")], { threads: 2 }), (e: unknown) =>
        isTraceFormatError(e) && e.reason._tag === "FileNotFound" && e.file.endsWith("missing.msgpack"))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("Decoding", () => {
  it("a load takes over decoding started for the same files and columns (in any order), and decodes itself otherwise", async () => {
    const dir = tmp()
    try {
      const write = (name: string, seed: number) => {
        const f = join(dir, name)
        writeFileSync(f, encodeRecords(fc.sample(computeEvent, { numRuns: 30, seed })))
        return f
      }
      const a = write("a.msgpack", 1)
      const b = write("b.msgpack", 2)
      const columns = A.columnsOf(A.analyses.filter((x) => x.name === "task_balance" || x.name === "task_bottleneck"))!
      const reversed = { tasks: [...columns.tasks!].reverse(), memory: [...columns.memory!].reverse() }
      // decoding of b presented as if of a: a load that takes it over shows b's tasks
      const started = { ...startDecoding([b], { columns }), files: [a] }
      const ofB = snapshotOf((await A.loadPromise([b], { columns })).tasks)
      const ofA = snapshotOf((await A.loadPromise([a], { columns })).tasks)
      assert.notEqual(ofA, ofB)
      assert.equal(snapshotOf((await A.loadPromise([a], { columns: reversed, decoding: started })).tasks), ofB, "taken over")
      assert.equal(snapshotOf((await A.loadPromise([a], { decoding: started })).tasks.select(["key"])), snapshotOf((await A.loadPromise([a])).tasks.select(["key"])), "other columns: decoded again")
      assert.equal(snapshotOf((await A.loadPromise([a, b], { columns, decoding: started })).tasks), snapshotOf((await A.loadPromise([a, b], { columns })).tasks), "other files: decoded again")
      // a decoding stopped (nobody will take it over) rejects with the abort, on one thread or several
      const big = join(dir, "big.msgpack")
      writeFileSync(big, encodeRecords(fc.sample(computeEvent, { numRuns: 3000, seed: 5 })))
      for (const threads of [1, 2]) {
        const stopped = startDecoding([big], { threads, chunkBytes: 1024 })
        stopped.abort()
        await assert.rejects(stopped.decoded, (e) => (e as Error).name === "AbortError", `threads ${threads}`)
        stopped.abort() // twice: no effect
      }
      // the calling thread decodes only once joined: workers decode at once, one thread waits
      for (const threads of [1, 2]) {
        const seen: Array<number> = []
        const held = startDecoding([big], { threads, chunkBytes: 1024, pieces: 4, onProgress: (p) => seen.push(p.bytesRead) })
        let settled = false
        void held.decoded.then(() => (settled = true), () => (settled = true))
        const whole = statSync(big).size
        // one thread: nothing happens for a while; workers: they decode it all (however loaded the machine)
        for (let waited = 0; threads === 1 ? waited < 30 : seen.at(-1) !== whole && waited < 6000; waited++) await new Promise((r) => setTimeout(r, 10))
        assert.equal(settled, false, `threads ${threads}: not done before it is joined`)
        assert.equal(seen.at(-1), threads === 1 ? undefined : whole, `threads ${threads}: progress before joining`)
        held.join()
        const got = await held.decoded
        assert.equal(snapshotOf((await A.loadPromise([big], { decoding: { ...held, decoded: Promise.resolve(got) } })).tasks), snapshotOf((await A.loadPromise([big], { threads: 1 })).tasks))
      }
      // a failed decoding rejects the load that takes it over, with the trace's typed error
      const missing = join(dir, "missing.msgpack")
      const failed = startDecoding([missing], { columns })
      await assert.rejects(A.loadPromise([missing], { columns, decoding: failed }), (e) => isTraceFormatError(e) && e.message.includes(missing))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

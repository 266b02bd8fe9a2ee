import assert from "node:assert/strict"
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { after, describe, it } from "node:test"
import { Worker } from "node:worker_threads"
import fc from "fast-check"
import { collectPromise, DatabaseError } from "../../src/profiler/EventDatabase.ts"
import * as FileDatabase from "../../src/profiler/FileDatabase.ts"
import { RecordEncoder } from "../../src/trace/TraceWriter.ts"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import * as TraceFormat from "../../src/trace/TraceFormat.ts"

const dir = mkdtempSync(join(tmpdir(), "tessera-filedb-"))
after(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const fresh = () => join(dir, `db-${n++}.msgpack`)

const key = fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k !== "__proto__")
const leaf = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null)
)
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, leaf, fc.array(tie("value"), { maxLength: 4 }), fc.dictionary(key, tie("value"), { maxKeys: 4 }))
})).value
const id = fc.oneof(fc.string({ maxLength: 20 }), fc.integer({ min: 0, max: 1000 }), fc.constant(null))
const eventArb: fc.Arbitrary<TraceEvent> = fc.oneof(
  fc.record({
    name: fc.string({ maxLength: 20 }),
    // the one rule on times: finite timestamps, finite durations >= 0 (else not an event)
    timestamp: fc.double({ noNaN: true, noDefaultInfinity: true }),
    duration: fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }),
    phase: fc.constant("X" as const),
    process_id: id,
    thread_id: id,
    args: fc.dictionary(key, json, { maxKeys: 8 })
  }),
  fc.record({
    name: fc.string({ maxLength: 20 }),
    timestamp: fc.double({ noNaN: true, noDefaultInfinity: true }),
    phase: fc.constantFrom("I" as const, "B" as const, "E" as const, "C" as const, "M" as const),
    scope: fc.constantFrom("g" as const, "p" as const, "t" as const),
    process_id: id,
    thread_id: id,
    args: fc.dictionary(key, json, { maxKeys: 8 })
  }, { requiredKeys: ["name", "timestamp", "phase", "process_id", "thread_id", "args"] })
)

/** dictionary() builds objects with a null prototype; compare as plain JSON-ish values */
const plain = (u: unknown): unknown =>
  Array.isArray(u) ? u.map(plain) : typeof u === "object" && u !== null
    ? Object.fromEntries(Object.entries(u).map(([k, v]) => [k, plain(v)]))
    : u

describe("FileDatabase", () => {
  it("round-trips any event through a file, with the same bytes as TraceFormat.encodeRecords", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { maxLength: 30 }), fc.integer({ min: 1, max: 10 }), async (events, threshold) => {
        const file = fresh()
        const db = new FileDatabase.FileDatabase(file, { commitThreshold: threshold })
        for (const e of events) db.record(e)
        db.close()
        if (events.length === 0) {
          assert.equal(existsSync(file), false)
          return
        }
        const bytes = readFileSync(file)
        assert.deepEqual(new Uint8Array(bytes), TraceFormat.encodeRecords(events))
        const back = await FileDatabase.readPromise(file)
        assert.equal(back.droppedBytes, 0)
        assert.deepStrictEqual(back.events.map(plain), events.map(plain))
        // the fast decoder agrees with the generic one
        assert.deepStrictEqual(back.events.map(plain), TraceFormat.decodeRecordsUnsafe(bytes).events.map(plain))
      }),
      { numRuns: 60 }
    )
  })

  it("decodes exactly as the generic decoder, key order included, past its string and shape caches", () => {
    // ~40,000 distinct long strings (more than the string arena holds) and ~1,000
    // distinct key sets (more than the shape cache makes), plus duplicate and numeric keys
    const events: Array<TraceEvent> = []
    for (let i = 0; i < 20_000; i++) {
      const args: Record<string, unknown> = {
        [`k${i % 1000}`]: `('some-task-${"x".repeat(i % 20)}-${i}', ${i}, 0)`,
        "10": i,
        "2": [`dep-${i}-${"y".repeat(30)}`, { [`inner${i % 700}`]: i, a: null }],
        state: i % 2 === 0 ? "memory" : "released"
      }
      events.push({ name: "Compute", timestamp: i, duration: 1, phase: "X", process_id: "h", thread_id: `w${i % 7}`, args })
    }
    const bytes = TraceFormat.encodeRecords(events)
    // a record whose args map repeats a key: the last value wins, at the first position
    const dup = new Uint8Array([0x83, 0xa1, 0x61, 0x01, 0xa1, 0x62, 0x02, 0xa1, 0x61, 0x03])
    const withDup = TraceFormat.encodeRecords([{ name: "d", timestamp: 0, phase: "I", process_id: null, thread_id: null, args: { z: 0 } }])
    const at = withDup.lastIndexOf(0x81) // the args map header: { z: 0 }
    const dupRecord = new Uint8Array([...withDup.subarray(0, at), ...dup])
    new DataView(dupRecord.buffer).setUint32(4, dupRecord.length - 8)
    const all = new Uint8Array([...bytes, ...dupRecord])
    const fast = FileDatabase.decodeUnsafe(all)
    const generic = TraceFormat.decodeRecordsUnsafe(all)
    assert.equal(fast.events.length, events.length + 1)
    assert.equal(JSON.stringify(fast.events), JSON.stringify(generic.events))
    assert.deepStrictEqual(fast.events.at(-1)!.args, { a: 3, b: 2 })
  })

  it("reads a file cut at any byte as exactly the whole records before the cut", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 12 }), fc.double({ min: 0, max: 1, noNaN: true }), async (events, at) => {
        const bytes = new RecordEncoder().encode(events).slice()
        const ends: Array<number> = []
        let off = 0
        while (off < bytes.length) {
          off += 8 + Number(new DataView(bytes.buffer).getBigUint64(off))
          ends.push(off)
        }
        const cut = Math.floor(at * bytes.length)
        const whole = ends.filter((e) => e <= cut).length
        const file = fresh()
        writeFileSync(file, bytes.subarray(0, cut))
        const back = await FileDatabase.readPromise(file, { chunkBytes: 1024 })
        assert.deepStrictEqual(back.events.map(plain), events.slice(0, whole).map(plain))
        assert.equal(back.droppedBytes, cut - (whole === 0 ? 0 : ends[whole - 1]!))
      }),
      { numRuns: 100 }
    )
  })

  it("loses nothing when several worker threads append to one file", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }),
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 64 }),
        async (writers, count, threshold) => {
          const file = fresh()
          const url = new URL("./fixtures/writer.ts", import.meta.url)
          await Promise.all(Array.from({ length: writers }, (_, writer) =>
            new Promise<void>((resolve, reject) => {
              const w = new Worker(url, { workerData: { file, writer, count, threshold } })
              w.once("error", reject)
              w.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`writer exited ${code}`))))
            })))
          const back = await FileDatabase.readPromise(file)
          assert.equal(back.droppedBytes, 0)
          assert.equal(back.events.length, writers * count)
          for (let w = 0; w < writers; w++) {
            const seqs = back.events.filter((e) => e.args.writer === w).map((e) => e.args.seq as number)
            // each writer's events are intact, all present, and in its own order
            assert.deepEqual(seqs, Array.from({ length: count }, (_, i) => i))
          }
          for (const e of back.events) assert.equal((e.args.pad as string).length, ((e.args.seq as number) * 37) % 300)
        }
      ),
      { numRuns: 4 }
    )
  })

  it("writes nothing until a batch reaches the commit threshold, then the whole batch", () => {
    const file = fresh()
    const db = new FileDatabase.FileDatabase(file, { commitThreshold: 3 })
    const e: TraceEvent = { name: "n", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: null, args: {} }
    db.record(e)
    db.record(e)
    assert.equal(existsSync(file), false)
    assert.equal(db.pendingCount, 2)
    db.record(e)
    assert.equal(db.pendingCount, 0)
    assert.equal(TraceFormat.decodeRecordsUnsafe(readFileSync(file)).events.length, 3)
    db.record(e)
    db.close()
    assert.equal(TraceFormat.decodeRecordsUnsafe(readFileSync(file)).events.length, 4)
  })

  it("appends to an existing file, or replaces it with removeOldOutputFile", () => {
    const file = fresh()
    const e: TraceEvent = { name: "n", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: null, args: {} }
    for (const _ of [1, 2]) {
      const db = new FileDatabase.FileDatabase(file)
      db.record(e)
      db.close()
    }
    assert.equal(TraceFormat.decodeRecordsUnsafe(readFileSync(file)).events.length, 2)
    const db = new FileDatabase.FileDatabase(file, { removeOldOutputFile: true })
    db.record(e)
    db.close()
    assert.equal(TraceFormat.decodeRecordsUnsafe(readFileSync(file)).events.length, 1)
  })

  it("never creates or changes a file when reading", async () => {
    const missing = join(dir, "missing.msgpack")
    await assert.rejects(FileDatabase.readPromise(missing), (e: unknown) =>
      TraceFormat.isTraceFormatError(e) && e.reason._tag === "FileNotFound" && e.file === missing)
    assert.equal(existsSync(missing), false)
    const db = new FileDatabase.FileDatabase(missing)
    assert.deepEqual(await collectPromise(db).catch(() => "failed"), "failed")
    db.close()
    assert.equal(existsSync(missing), false)
    const real = new URL("../fixtures/dasf-small/small-ResourceMonitor.msgpack", import.meta.url).pathname
    const before = statSync(real)
    await FileDatabase.readPromise(real)
    assert.equal(statSync(real).mtimeMs, before.mtimeMs)
    assert.equal(statSync(real).size, before.size)
  })

  it("fails with the file and byte offset on a file that is not a trace database", async () => {
    const file = fresh()
    const good = new RecordEncoder().encode([{ name: "a", timestamp: 1, phase: "I", process_id: null, thread_id: null, args: {} }]).slice()
    const bad = new Uint8Array(good.length + 12)
    bad.set(good)
    bad.set([0, 0, 0, 0, 0, 0, 0, 4, 0x93, 1, 2, 3], good.length) // a msgpack array, not a map
    writeFileSync(file, bad)
    await assert.rejects(FileDatabase.readPromise(file), (e: unknown) =>
      TraceFormat.isTraceFormatError(e) && e.file === file && e.offset === good.length && e.reason._tag === "NotAMap" &&
      e.message.includes(file))
    const text = fresh()
    writeFileSync(text, "this is a plain text file, not a trace database\n")
    await assert.rejects(FileDatabase.readPromise(text), (e: unknown) =>
      TraceFormat.isTraceFormatError(e) && e.offset === 0 && e.reason._tag === "ImplausibleLength")
  })

  it("rejects a bad commit threshold, a record after close, an unencodable event and an unwritable path with DatabaseError", () => {
    assert.throws(() => new FileDatabase.FileDatabase(fresh(), { commitThreshold: 0 }), (e: unknown) =>
      e instanceof DatabaseError && e.reason._tag === "InvalidOption")
    const e: TraceEvent = { name: "late", timestamp: 1, phase: "I", process_id: null, thread_id: null, args: {} }
    const db = new FileDatabase.FileDatabase(fresh())
    db.close()
    assert.throws(() => db.record(e), (x: unknown) => x instanceof DatabaseError && x.reason._tag === "Closed" && x.message.includes("late"))
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const db3 = new FileDatabase.FileDatabase(fresh(), { commitThreshold: 2 })
    db3.record(e)
    assert.throws(() => db3.record({ ...e, name: "cyclic", args: cyclic }), (x: unknown) =>
      x instanceof DatabaseError && x.reason._tag === "InvalidEvent" && x.message.includes("cyclic"))
    // the failed event left nothing behind: the next record completes a clean batch
    db3.record(e)
    assert.equal(db3.pendingCount, 0)
    db3.close()
    const nowhere = join(dir, "no-such-dir", "db.msgpack")
    const db2 = new FileDatabase.FileDatabase(nowhere, { commitThreshold: 1 })
    assert.throws(() => db2.record(e), (x: unknown) =>
      x instanceof DatabaseError && x.reason._tag === "OpenFailed" && x.database === nowhere)
  })
})

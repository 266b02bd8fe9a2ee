import assert from "node:assert/strict"
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, it } from "node:test"
import { encode } from "@msgpack/msgpack"
import * as fc from "fast-check"
import { Effect } from "effect"
import type { TraceEvent } from "../../src/trace/TraceEvent.ts"
import * as TraceFormat from "../../src/trace/TraceFormat.ts"

const dasf = fileURLToPath(new URL("../fixtures/dasf-small/", import.meta.url))

const finite = fc.double({ noNaN: true, noDefaultInfinity: true })
// the one rule on times: a duration is finite and >= 0 (else the record is not an event)
const duration = fc.double({ min: 0, noNaN: true, noDefaultInfinity: true })
const argValue = fc.oneof(
  fc.string(),
  finite,
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 4 }),
  fc.array(fc.string(), { maxLength: 4 })
)
const args = fc.dictionary(fc.string({ maxLength: 12 }), argValue, { maxKeys: 6 })
  .map((d) => Object.fromEntries(Object.entries(d).filter(([k]) => k !== "__proto__")))
const id = fc.oneof(fc.string({ maxLength: 16 }), fc.integer(), fc.constant(null))

const arbEvent: fc.Arbitrary<TraceEvent> = fc.oneof(
  fc.record({
    name: fc.string({ maxLength: 20 }),
    timestamp: finite,
    phase: fc.constant("X" as const),
    process_id: id,
    thread_id: id,
    args,
    duration
  }),
  fc.record({
    name: fc.string({ maxLength: 20 }),
    timestamp: finite,
    phase: fc.constantFrom("I" as const, "B" as const, "E" as const, "C" as const, "M" as const),
    scope: fc.constantFrom("g" as const, "p" as const, "t" as const),
    process_id: id,
    thread_id: id,
    args
  })
)

/** Runs `f` with a fresh temporary folder, removed afterwards. */
const withDir = async (f: (dir: string) => Promise<void>): Promise<void> => {
  const dir = mkdtempSync(join(tmpdir(), "tessera-trace-"))
  try {
    await f(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Writes `events` less their last `drop` bytes to `dir/t.msgpack`; returns it and its whole-buffer decoding. */
const writeCut = (dir: string, events: ReadonlyArray<TraceEvent>, drop: number) => {
  const bytes = TraceFormat.encodeRecords(events)
  const kept = bytes.subarray(0, Math.max(0, bytes.length - drop))
  const path = join(dir, "t.msgpack")
  writeFileSync(path, kept)
  return { path, whole: TraceFormat.decodeRecordsUnsafe(kept) }
}

describe("TraceFormat", () => {
  it("round-trips any event through encodeRecords and decodeRecordsUnsafe", () => {
    fc.assert(
      fc.property(fc.array(arbEvent, { maxLength: 20 }), (events) => {
        const decoded = TraceFormat.decodeRecordsUnsafe(TraceFormat.encodeRecords(events))
        assert.deepStrictEqual(decoded.events.map((e) => ({ ...e })), events.map((e) => ({ ...e })))
        assert.equal(decoded.droppedBytes, 0)
      }),
      { numRuns: 100 }
    )
  })

  it("recovers exactly the whole records before a cut at any byte", () => {
    fc.assert(
      fc.property(fc.array(arbEvent, { minLength: 1, maxLength: 8 }), fc.nat(), (events, seed) => {
        const bytes = TraceFormat.encodeRecords(events)
        const cut = seed % (bytes.length + 1)
        // record boundaries
        const ends: Array<number> = []
        let off = 0
        for (const e of events) {
          off += TraceFormat.encodeRecords([e]).length
          ends.push(off)
        }
        const whole = ends.filter((end) => end <= cut).length
        const decoded = TraceFormat.decodeRecordsUnsafe(bytes.subarray(0, cut))
        assert.equal(decoded.events.length, whole)
        assert.deepStrictEqual(decoded.events.map((e) => ({ ...e })), events.slice(0, whole).map((e) => ({ ...e })))
        assert.equal(decoded.droppedBytes, cut - (whole === 0 ? 0 : ends[whole - 1]))
      }),
      { numRuns: 100 }
    )
  })

  it("streams a file in small chunks to the same events as whole-buffer decoding", async () => {
    await withDir(async (dir) => {
      await fc.assert(
        fc.asyncProperty(fc.array(arbEvent, { maxLength: 30 }), fc.nat(300), async (events, extra) => {
          const { path, whole } = writeCut(dir, events, extra % 40)
          const streamed = await TraceFormat.readFilePromise(path)
          const small: Array<TraceEvent> = []
          const it = TraceFormat.streamEvents(path, { chunkBytes: 1024 })
          let r = await it.next()
          while (r.done !== true) {
            small.push(...r.value)
            r = await it.next()
          }
          assert.equal(streamed.events.length, whole.events.length)
          assert.equal(small.length, whole.events.length)
          assert.equal(streamed.droppedBytes, whole.droppedBytes)
          assert.equal(r.value.droppedBytes, whole.droppedBytes)
          assert.deepStrictEqual(small.map((e) => ({ ...e })), whole.events.map((e) => ({ ...e })))
        }),
        { numRuns: 30 }
      )
    })
  })

  it("streams shared batches read ahead: each batch intact until the next is asked for, at any chunk size; stopping early closes the file", async () => {
    await withDir(async (dir) => {
      await fc.assert(
        fc.asyncProperty(fc.array(arbEvent, { maxLength: 40 }), fc.nat(30), fc.integer({ min: 1024, max: 4096 }), fc.nat(5), async (events, cut, chunkBytes, stopAfter) => {
          const { path, whole } = writeCut(dir, events, cut)
          const decoded: Array<TraceEvent> = []
          const it = TraceFormat.streamFrames(path, { chunkBytes })
          let r = await it.next()
          // decoded before asking for the next batch, as the loader does: the read
          // ahead must not touch the batch being decoded
          while (r.done !== true) {
            decoded.push(...TraceFormat.decodeRecordsUnsafe(r.value.bytes.subarray(0, r.value.end)).events)
            r = await it.next()
          }
          assert.deepStrictEqual(decoded.map((e) => ({ ...e })), whole.events.map((e) => ({ ...e })))
          assert.equal(r.value.droppedBytes, whole.droppedBytes)
          // a consumer that stops after a few batches (a read may be in flight)
          const early = TraceFormat.streamFrames(path, { chunkBytes })
          for (let i = 0; i < stopAfter && (await early.next()).done !== true; i++);
          await early.return(undefined as never)
        }),
        { numRuns: 30 }
      )
    })
  })

  it("streams byte ranges: two ranges cut where a record begins give the whole file's records; a range ending inside a record says how many bytes it left", async () => {
    await withDir(async (dir) => {
      await fc.assert(
        fc.asyncProperty(fc.array(arbEvent, { minLength: 1, maxLength: 40 }), fc.nat(30), fc.nat(), fc.integer({ min: 1024, max: 4096 }), async (events, drop, pick, chunkBytes) => {
          const { path, whole } = writeCut(dir, events, drop)
          // the records' starts, by walking the lengths
          const bytes = readFileSync(path)
          const starts: Array<number> = []
          for (let at = 0; at + 8 <= bytes.length; at += 8 + TraceFormat.readLength(bytes, at)) starts.push(at)
          const cut = starts[pick % starts.length]!
          const range = async (start: number, end?: number) => {
            const it = TraceFormat.streamFrames(path, { chunkBytes, start, ...(end !== undefined ? { end } : {}) })
            const got: Array<TraceEvent> = []
            let r = await it.next()
            while (r.done !== true) {
              got.push(...TraceFormat.decodeRecordsUnsafe(r.value.bytes.subarray(0, r.value.end)).events)
              r = await it.next()
            }
            return { got, summary: r.value }
          }
          const a = await range(0, cut)
          const b = await range(cut)
          assert.equal(a.summary.droppedBytes, 0)
          assert.equal(b.summary.droppedBytes, whole.droppedBytes)
          assert.deepStrictEqual([...a.got, ...b.got].map((e) => ({ ...e })), whole.events.map((e) => ({ ...e })))
          // one byte past a record start: that record is left over, not judged
          if (cut + 1 < bytes.length) {
            const c = await range(0, cut + 1)
            assert.equal(c.summary.droppedBytes, 1)
            assert.equal(c.got.length, starts.indexOf(cut))
          }
        }),
        { numRuns: 30 }
      )
    })
  })

  it("finds where the next record begins from any byte of DASF's database", async () => {
    const path = join(dasf, "small-TracePlugin.msgpack")
    const bytes = readFileSync(path)
    const starts: Array<number> = []
    for (let at = 0; at + 8 <= bytes.length; at += 8 + TraceFormat.readLength(bytes, at)) starts.push(at)
    const next = (o: number) => starts.find((s) => s >= o)
    // every offset of the first records, then a sample of the rest
    const offsets = [...Array.from({ length: 4096 }, (_, i) => i), ...fc.sample(fc.nat(bytes.length - 1), { numRuns: 300, seed: 11 })]
    for (const o of offsets) assert.equal(await TraceFormat.recordStartNear(path, o, 64 * 1024), next(o), `from byte ${o}`)
    assert.equal(await TraceFormat.recordStartNear(path, bytes.length), undefined)
    assert.equal(await TraceFormat.recordStartNear(join(dasf, "no-such.msgpack"), 0), undefined)
    // not a trace: no chain of records anywhere
    assert.equal(TraceFormat.recordStartUnsafe(new TextEncoder().encode("name,timestamp\n".repeat(100)), 16, true), -1)
  })

  it("streams owned batches: each its own buffer, kept intact while later batches are read", async () => {
    await withDir(async (dir) => {
      await fc.assert(
        fc.asyncProperty(fc.array(arbEvent, { maxLength: 40 }), fc.nat(30), async (events, cut) => {
          const { path, whole } = writeCut(dir, events, cut)
          const batches: Array<TraceFormat.FrameBatch> = []
          const it = TraceFormat.streamFrames(path, { chunkBytes: 1024, owned: true })
          let r = await it.next()
          while (r.done !== true) {
            batches.push(r.value)
            r = await it.next()
          }
          // every batch kept (none overwritten by a later read), buffers never shared
          assert.equal(new Set(batches.map((b) => b.bytes.buffer)).size, batches.length)
          const kept = batches.flatMap((b) => TraceFormat.decodeRecordsUnsafe(b.bytes.subarray(0, b.end)).events)
          assert.deepStrictEqual(kept.map((e) => ({ ...e })), whole.events.map((e) => ({ ...e })))
          assert.equal(r.value.droppedBytes, whole.droppedBytes)
        }),
        { numRuns: 30 }
      )
    })
  })

  it("streams range after range on a few buffers when the consumer gives them back (reuse, giveBack)", async () => {
    await withDir(async (dir) => {
      await fc.assert(
        fc.asyncProperty(fc.array(arbEvent, { minLength: 1, maxLength: 60 }), fc.array(fc.nat(), { minLength: 1, maxLength: 8 }), fc.nat(20), async (events, picks, drop) => {
          const { path, whole } = writeCut(dir, events, drop)
          const bytes = readFileSync(path)
          const starts: Array<number> = []
          for (let at = 0; at + 8 <= bytes.length; at += 8 + TraceFormat.readLength(bytes, at)) starts.push(at)
          // ranges cut where records begin, streamed one after another as a parallel
          // loader's decoder does, with one pool of spare buffers
          const cuts = [...new Set([0, ...picks.map((p) => starts[p % starts.length]!)])].sort((a, b) => a - b)
          const spares: Array<Uint8Array<ArrayBuffer>> = []
          let fresh = 0 // buffers the stream had to make: none to reuse
          // a buffer given back is the consumer's at once: scribbled on, as a reuse would
          const back = (b: Uint8Array<ArrayBuffer>) => (b.fill(0xff), spares.push(b))
          const got: Array<TraceEvent> = []
          let dropped = 0
          for (let i = 0; i < cuts.length; i++) {
            const end = cuts[i + 1]
            const it = TraceFormat.streamFrames(path, {
              chunkBytes: 1024,
              owned: true,
              start: cuts[i]!,
              ...(end !== undefined ? { end } : {}),
              reuse: () => spares.pop() ?? void fresh++,
              giveBack: back
            })
            let r = await it.next()
            for (; r.done !== true; r = await it.next()) {
              got.push(...TraceFormat.decodeRecordsUnsafe(r.value.bytes.subarray(0, r.value.end)).events)
              back(new Uint8Array(r.value.bytes.buffer as ArrayBuffer))
            }
            if (end === undefined) dropped = r.value.droppedBytes
          }
          assert.deepStrictEqual(got.map((e) => ({ ...e })), whole.events.map((e) => ({ ...e })))
          assert.equal(dropped, whole.droppedBytes)
          // records that fit a buffer: two in turn, whatever the number of ranges (a
          // range's last, empty read kept one buffer each before giveBack)
          if (Math.max(...starts.map((s, k) => (starts[k + 1] ?? bytes.length) - s)) <= 512) {
            assert.ok(fresh <= 2, `${fresh} fresh buffers for ${cuts.length} range(s)`)
          }
        }),
        { numRuns: 40 }
      )
    })
  })

  it("reads DASF's TracePlugin database exactly", async () => {
    const t = await TraceFormat.readFilePromise(join(dasf, "small-TracePlugin.msgpack"))
    assert.equal(t.events.length, 967)
    assert.equal(t.droppedBytes, 0)
    const counts = new Map<string, number>()
    for (const e of t.events) counts.set(e.name, (counts.get(e.name) ?? 0) + 1)
    assert.deepStrictEqual(Object.fromEntries(counts), { "Compute": 409, "Managed Memory": 558 })
    const first = t.events[0]
    assert.equal(first.name, "Compute")
    assert.equal(first.phase, "X")
    assert.equal(first.timestamp, 1279.022098964)
    assert.equal(first.duration, 0.00003337860107421875)
    assert.equal(first.process_id, "vm")
    assert.equal(first.thread_id, "worker-vm-0")
    assert.equal(first.args.key, "('array-0117baf52de50432ed73e4bf713a01f5', 0, 0)")
    assert.equal(first.args.name, "array")
    assert.deepStrictEqual(first.args.shape, [5000, 2])
    assert.equal(first.args.size, 80000)
    const mm = t.events.find((e) => e.name === "Managed Memory")!
    assert.equal(mm.phase, "I")
    assert.equal(mm.scope, "g")
    assert.deepStrictEqual(Object.keys(mm.args), ["key", "state", "size", "tasks"])
  })

  it("reads DASF's ResourceMonitor databases with and without gpu fields", async () => {
    const plain = await TraceFormat.readFilePromise(join(dasf, "small-ResourceMonitor.msgpack"))
    const gpu = await TraceFormat.readFilePromise(join(dasf, "small-ResourceMonitor-gpusurrogate.msgpack"))
    assert.equal(plain.events.length, 25)
    assert.equal(gpu.events.length, 25)
    assert.ok(plain.events.every((e) => e.name === "Resource Usage" && e.thread_id === null))
    assert.equal(plain.events[0].timestamp, 1278.999258748)
    assert.equal(plain.events[0].args.cpu, 95.2)
    assert.equal(plain.events[0].args.gpu_utilization, undefined)
    assert.equal(gpu.events[0].args.gpu_utilization, 95.2)
    assert.equal(gpu.events[0].args.gpu_memory_used, 119107584)
  })

  it("re-encodes DASF's records to the identical bytes", () => {
    for (const f of ["small-TracePlugin.msgpack"]) {
      const bytes = new Uint8Array(readFileSync(join(dasf, f)))
      const decoded = TraceFormat.decodeRecordsUnsafe(bytes, f)
      assert.deepStrictEqual(Buffer.from(TraceFormat.encodeRecords(decoded.events)), Buffer.from(bytes))
    }
  })

  it("never creates a missing file when opening it for reading", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "missing.msgpack")
      await assert.rejects(TraceFormat.readFilePromise(path), (e: unknown) => {
        assert.ok(TraceFormat.isTraceFormatError(e))
        assert.equal(e.reason._tag, "FileNotFound")
        assert.match(e.message, /missing\.msgpack/)
        return true
      })
      assert.equal(existsSync(path), false)
      const exit = await Effect.runPromiseExit(TraceFormat.readFile(path))
      assert.equal(exit._tag, "Failure")
      assert.equal(existsSync(path), false)
    })
  })

  it("does not modify a file it reads", async () => {
    await withDir(async (dir) => {
      const path = join(dir, "t.msgpack")
      const bytes = TraceFormat.encodeRecords([
        { name: "a", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: null, args: {} }
      ])
      writeFileSync(path, bytes.subarray(0, bytes.length - 3))
      const before = statSync(path)
      await TraceFormat.readFilePromise(path)
      const after = statSync(path)
      assert.equal(after.size, before.size)
      assert.equal(after.mtimeMs, before.mtimeMs)
    })
  })
})

describe("TraceFormat errors", () => {
  const frame = (body: Uint8Array): Uint8Array => {
    const out = new Uint8Array(8 + body.length)
    new DataView(out.buffer).setBigUint64(0, BigInt(body.length))
    out.set(body, 8)
    return out
  }
  const good = TraceFormat.encodeRecords([
    { name: "a", timestamp: 1, phase: "I", scope: "g", process_id: "h", thread_id: null, args: {} }
  ])
  const cat = (...parts: Array<Uint8Array>) => new Uint8Array(Buffer.concat(parts))
  const fails = (bytes: Uint8Array, reason: TraceFormat.TraceFormatReasonTag, offset: number) =>
    assert.throws(() => TraceFormat.decodeRecordsUnsafe(bytes, "x.msgpack"), (e: unknown) => {
      assert.ok(TraceFormat.isTraceFormatError(e))
      assert.equal(e.reason._tag, reason)
      assert.equal(e.offset, offset)
      assert.equal(e.file, "x.msgpack")
      assert.match(e.message, /x\.msgpack/)
      return true
    })

  it("rejects a text file as an implausible length at offset 0", () => {
    fails(new TextEncoder().encode("{\"name\": \"not a trace\"}\n"), "ImplausibleLength", 0)
  })

  it("rejects a short tail that cannot start a header", () => {
    fails(cat(good, new Uint8Array([0x41, 0x42])), "ImplausibleLength", good.length)
  })

  it("accepts a short tail of zero bytes as a truncated header", () => {
    const r = TraceFormat.decodeRecordsUnsafe(cat(good, new Uint8Array([0, 0, 0])))
    assert.equal(r.events.length, 1)
    assert.equal(r.droppedBytes, 3)
  })

  it("rejects a length larger than the record limit even when the file is cut", () => {
    const h = new Uint8Array(8)
    new DataView(h.buffer).setBigUint64(0, BigInt(TraceFormat.maxRecordBytes + 1))
    fails(cat(good, h, new Uint8Array([0x81])), "ImplausibleLength", good.length)
  })

  it("rejects a zero-length record", () => {
    fails(cat(good, new Uint8Array(8), good), "EmptyRecord", good.length)
  })

  it("rejects a truncated record whose body does not start a map", () => {
    const h = new Uint8Array(8)
    new DataView(h.buffer).setBigUint64(0, 100n)
    fails(cat(good, h, new Uint8Array([0x93, 1, 2])), "NotAMap", good.length)
  })

  it("rejects a whole record that is not msgpack", () => {
    fails(cat(good, frame(new Uint8Array([0xc1]))), "NotMsgpack", good.length)
  })

  it("rejects a whole record with trailing bytes after its map", () => {
    fails(cat(frame(cat(encode({ name: "a", timestamp: 1, phase: "I" }), new Uint8Array([1])))), "NotMsgpack", 0)
  })

  it("rejects a record that is an array, not a map", () => {
    fails(cat(good, good, frame(encode([1, 2, 3]))), "NotAMap", 2 * good.length)
  })

  it("rejects a map that is not an event", () => {
    fails(frame(encode({ timestamp: 1, phase: "X" })), "NotAnEvent", 0)
    fails(frame(encode({ name: "a", timestamp: "1", phase: "X" })), "NotAnEvent", 0)
    fails(frame(encode({ name: "a", timestamp: 1, phase: "Q" })), "NotAnEvent", 0)
  })

  it("reports a directory as not readable", async () => {
    await withDir(async (dir) => {
      await assert.rejects(TraceFormat.readFilePromise(dir), (e: unknown) => {
        assert.ok(TraceFormat.isTraceFormatError(e))
        assert.equal(e.reason._tag, "NotReadable")
        return true
      })
    })
  })

  it("reports the file offset of a bad record found while streaming", async () => {
    await withDir(async (dir) => {
      const many = TraceFormat.encodeRecords(
        Array.from({ length: 200 }, (_, i) => ({
          name: "n",
          timestamp: i,
          phase: "I" as const,
          scope: "g" as const,
          process_id: "h",
          thread_id: null,
          args: { i }
        }))
      )
      const path = join(dir, "bad.msgpack")
      writeFileSync(path, cat(many, frame(encode("str"))))
      await assert.rejects(TraceFormat.readFilePromise(path), (e: unknown) => {
        assert.ok(TraceFormat.isTraceFormatError(e))
        assert.equal(e.reason._tag, "NotAMap")
        assert.equal(e.offset, many.length)
        assert.match(e.message, /bad\.msgpack/)
        return true
      })
    })
  })
})

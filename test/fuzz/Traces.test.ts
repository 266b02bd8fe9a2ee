/**
 * Hostile trace databases: one file, one verdict. Every reader of trace databases (the
 * analysis loader on one thread and on worker threads, the report's loader, `export`'s
 * event loader, the profiler's `FileDatabase.read`) reads each case in one child process
 * with a 256 MB heap (harness.ts) and must end in a result or a typed
 * `TraceFormatError` within the time bound, and all must agree: accepted with the same
 * counts (events, dropped bytes, rows, recomputations, task keys and hosts), or
 * rejected with the same reason and byte offset.
 *
 * Two sources of cases: byte mutations of the DASF fixtures and of a small Tessera
 * trace; and generated records with anomalies (wrong-typed fields, `__proto__` keys,
 * non-finite or negative times, duplicate map keys, recomputed task keys, invalid
 * UTF-8, deep nesting).
 *
 * `TESSERA_FUZZ_RUNS=N` runs N cases per property (default 30); `TESSERA_FUZZ_SEED=S`
 * replays a seed.
 */
import assert from "node:assert/strict"
import * as NodeFs from "node:fs"
import { after, before, describe, it } from "node:test"
import * as fc from "fast-check"
import { encodeRecords } from "../../src/trace/TraceFormat.ts"
import { complete, instant } from "../../src/trace/TraceEvent.ts"
import { apply, CASE_TIMEOUT_MS, HEAP_MB, mutation, Reader, removeScratch, RUNS, SEED, write } from "./harness.ts"

const reader = new Reader()
before(() => reader.read(write("warm.msgpack", encodeRecords([])), "trace").then(() => undefined))
after(() => {
  reader.close()
  removeScratch()
})

/** The verdicts of every reader on `bytes`; fails unless all are typed or results, and all agree. */
const sameVerdict = async (bytes: Uint8Array, label: string): Promise<string> => {
  const file = write("t.msgpack", bytes)
  const r = await reader.read(file, "trace")
  assert.equal(r.outcome, "ok", `${label}: a reader threw an untyped error\n${r.detail}`)
  const verdicts = JSON.parse(r.detail) as Record<string, string>
  const distinct = new Set(Object.values(verdicts))
  assert.equal(distinct.size, 1, `${label}: readers disagree\n${JSON.stringify(verdicts, null, 1)}`)
  return [...distinct][0]!
}

// --- a hand-made msgpack encoder: whatever the writer would never write -------

/** A msgpack value: numbers as float64 (`{ int }` for an integer), `{ raw }` for string bytes as they are. */
type Raw =
  | number
  | string
  | boolean
  | null
  | { readonly int: number }
  | { readonly raw: ReadonlyArray<number> }
  | { readonly map: ReadonlyArray<readonly [Raw, Raw]> }
  | ReadonlyArray<Raw>

const utf8 = (s: string) => [...new TextEncoder().encode(s)]
const be = (n: number, bytes: number) => Array.from({ length: bytes }, (_, i) => Math.floor(n / 2 ** (8 * (bytes - 1 - i))) & 0xff)

const enc = (v: Raw, out: Array<number>): void => {
  if (v === null) out.push(0xc0)
  else if (v === true || v === false) out.push(v ? 0xc3 : 0xc2)
  else if (typeof v === "number") {
    const b = new Uint8Array(8)
    new DataView(b.buffer).setFloat64(0, v)
    out.push(0xcb, ...b)
  } else if (typeof v === "string") enc({ raw: utf8(v) }, out)
  else if (Array.isArray(v)) {
    const xs = v as ReadonlyArray<Raw>
    out.push(0xdc, ...be(xs.length, 2))
    for (const x of xs) enc(x, out)
  } else {
    const o = v as { readonly int?: number; readonly raw?: ReadonlyArray<number>; readonly map?: ReadonlyArray<readonly [Raw, Raw]> }
    if (o.int !== undefined) out.push(0xd2, ...be(o.int >>> 0, 4))
    else if (o.raw !== undefined) out.push(0xd9, o.raw.length, ...o.raw)
    else if (o.map !== undefined) {
      out.push(0xde, ...be(o.map.length, 2))
      for (const [k, x] of o.map) (enc(k, out), enc(x, out))
    }
  }
}

const records = (maps: ReadonlyArray<Raw>): Uint8Array => {
  const out: Array<number> = []
  for (const m of maps) {
    const body: Array<number> = []
    enc(m, body)
    out.push(...be(body.length, 8), ...body)
  }
  return Uint8Array.from(out)
}

const nested = (depth: number): Raw => (depth <= 0 ? 1 : { map: [["x", nested(depth - 1)]] })

// --- generated anomalies ----------------------------------------------------------

const str: fc.Arbitrary<Raw> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom("a", "w-1", "é", "load-7") },
  // invalid UTF-8: lone continuation, truncated sequences, surrogates, overlong
  { weight: 2, arbitrary: fc.constantFrom([0xff], [0x61, 0x80], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf0, 0x9f, 0x98]).map((raw) => ({ raw })) },
  { weight: 1, arbitrary: fc.integer({ min: -5, max: 300 }).map((int) => ({ int })) }
)
const time: fc.Arbitrary<Raw> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(1279.25, 1.8e9, 0.5, 0) },
  { weight: 3, arbitrary: fc.constantFrom(NaN, Infinity, -Infinity, -1, -1e300) },
  { weight: 1, arbitrary: fc.constantFrom<Raw>(true, null, "1", { int: 3 }) }
)
const argsOf: fc.Arbitrary<Raw> = fc.record({
  key: fc.oneof(fc.constantFrom("k-1", "k-2", "k-3"), str),
  extra: fc.array(fc.tuple(fc.constantFrom<Raw>("name", "size", "dependencies", "state", "key", "__proto__", "cpu", "time", null, { int: 4 }), fc.oneof(str, time, fc.constant<Raw>(["k-1", "k-2"]))), { maxLength: 3 }),
  depth: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 60, max: 66 }) })
}).map(({ depth, extra, key }) => ({ map: [["key", key], ...extra, ...(depth > 0 ? [["deep", nested(depth)] as const] : [])] }))

const event: fc.Arbitrary<Raw> = fc.record({
  name: fc.oneof({ weight: 8, arbitrary: fc.constantFrom<Raw>("Compute", "Managed Memory", "Resource Usage", "Other") }, { weight: 1, arbitrary: str }, { weight: 1, arbitrary: fc.constantFrom<Raw>(true, null) }),
  timestamp: time,
  duration: fc.option(time, { nil: undefined }),
  phase: fc.oneof({ weight: 8, arbitrary: fc.constantFrom<Raw>("X", "I", "M") }, { weight: 1, arbitrary: fc.constantFrom<Raw>("Q", { int: 1 }) }),
  host: str,
  args: fc.oneof({ weight: 8, arbitrary: argsOf }, { weight: 1, arbitrary: fc.constantFrom<Raw>(null, 5, ["a"]) }),
  // a repeated top-level field (the last one counts), or a __proto__ key
  extra: fc.option(fc.tuple(fc.constantFrom<Raw>("name", "timestamp", "__proto__", "phase"), fc.oneof(str, time)), { nil: undefined }),
  argsFirst: fc.boolean()
}).map((e): Raw => {
  const fields: Array<readonly [Raw, Raw]> = [
    ["name", e.name],
    ["timestamp", e.timestamp],
    ...(e.duration !== undefined ? [["duration", e.duration] as const] : []),
    ["phase", e.phase],
    ["process_id", e.host],
    ["thread_id", "w-1"],
    ...(e.extra !== undefined ? [e.extra] : [])
  ]
  return { map: e.argsFirst ? [["args", e.args], ...fields] : [...fields, ["args", e.args]] }
})

const good = (i: number): Raw => ({
  map: [["name", "Compute"], ["timestamp", 1000 + i], ["duration", 0.5], ["phase", "X"], ["process_id", "h"], ["thread_id", "w"], ["args", { map: [["key", `g-${i % 5}`]] }]]
})

// --- the fixtures of the mutation fuzz ------------------------------------------

const fixture = (name: string) => new Uint8Array(NodeFs.readFileSync(new URL(`../fixtures/dasf-small/${name}`, import.meta.url)))
const tessera = encodeRecords([
  ...Array.from({ length: 40 }, (_, i) =>
    complete({
      name: "Compute",
      timestamp: 1.8e9 + i,
      duration: 0.25,
      process_id: "host-a",
      thread_id: `w-${i % 3}`,
      args: { key: `load-${i % 30}`, name: "load", size: 1024 * i, dependencies: i > 0 ? [`load-${i - 1}`] : [] }
    })
  ),
  instant({ name: "Managed Memory", timestamp: 1.8e9 + 41, process_id: "host-a", thread_id: "w-0", args: { key: "load-1", state: "memory", size: 10, tasks: 1 } })
])
const fixtures: Record<string, Uint8Array> = {
  "DASF TracePlugin": fixture("small-TracePlugin.msgpack"),
  "DASF ResourceMonitor": fixture("small-ResourceMonitor.msgpack"),
  "Tessera trace": tessera
}

const options = { numRuns: RUNS, endOnFailure: true, ...(SEED === undefined ? {} : { seed: SEED }) }

describe("Trace readers", () => {
  it(`give one verdict on ${RUNS} mutated trace databases (flip, set, insert, delete, truncate), in a ${HEAP_MB} MB child, ${CASE_TIMEOUT_MS / 1000} s each`, () =>
    fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(fixtures)), fc.array(mutation, { minLength: 1, maxLength: 4 }), async (name, mutations) => {
        await sameVerdict(apply(fixtures[name]!, mutations), `${name} ${JSON.stringify(mutations)}`)
      }),
      options
    ))

  it(`give one verdict on ${RUNS} generated databases with anomalous records`, () =>
    fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 6 }), fc.nat(4), async (events, goodBefore) => {
        const maps = [...Array.from({ length: goodBefore }, (_, i) => good(i)), ...events]
        await sameVerdict(records(maps), JSON.stringify(maps))
      }),
      options
    ))

  it("reject args nested deeper than 64 levels as NotAnEvent at the record, and accept 64", async () => {
    const at = records([good(0)]).length
    assert.equal(await sameVerdict(records([good(0), { map: [["name", "Other"], ["timestamp", 1], ["phase", "I"], ["args", nested(64)]] }]), "64"), `NotAnEvent at ${at}`)
    assert.match(await sameVerdict(records([good(0), { map: [["name", "Other"], ["timestamp", 1], ["phase", "I"], ["args", nested(63)]] }]), "63"), /^ok events=2 /)
  })

  it("reject non-finite timestamps and negative durations as NotAnEvent on every reader", async () => {
    const at = records([good(0)]).length
    const bad = (ts: Raw, dur: Raw): Raw => ({ map: [["name", "Compute"], ["timestamp", ts], ["duration", dur], ["phase", "X"], ["args", { map: [["key", "x"]] }]] })
    for (const [ts, dur] of [[NaN, 1], [Infinity, 1], [-Infinity, 1], [5, -1e300], [5, NaN], [5, Infinity]] as const) {
      assert.equal(await sameVerdict(records([good(0), bad(ts, dur)]), `${ts} ${dur}`), `NotAnEvent at ${at}`)
    }
  })

  it("count recomputed task keys and decode invalid UTF-8 to the same strings on every reader", async () => {
    const v = await sameVerdict(
      records([good(0), good(5), { map: [["name", "Compute"], ["timestamp", 2], ["phase", "X"], ["process_id", { raw: [0x68, 0xff] }], ["args", { map: [["key", { raw: [0xed, 0xa0, 0x80] }]] }]] }]),
      "recomputed"
    )
    assert.match(v, /recomputed=1 /)
    assert.match(v, /"\ufffd\ufffd\ufffd"/)
    assert.match(v, /"h\ufffd"/)
  })
})

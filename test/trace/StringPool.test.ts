import assert from "node:assert/strict"
import { describe, it } from "node:test"
import * as fc from "fast-check"
import { StringPool } from "../../src/trace/TraceReader.ts"

/** Strings with repeats: a few short names, dask-like keys, and any unicode. */
const strings = fc.array(
  fc.oneof(
    fc.constantFrom("Compute", "node0", "worker-node0-1", ""),
    fc.nat(300).map((i) => `('sum-partial-7fea1a81987ab1ec3d9a045b27e06dfe', ${i}, 0)`),
    fc.string({ unit: "grapheme", maxLength: 40 })
  ),
  { maxLength: 400 }
)

const idsOf = (pool: StringPool, xs: ReadonlyArray<string>) => xs.map((s) => pool.intern(s))

describe("StringPool", () => {
  it("gives the same ids, strings and lengths with room reserved up front, midway, or after moving to another pool (property)", () => {
    fc.assert(
      fc.property(strings, fc.nat(5000), fc.nat(400), (xs, room, at) => {
        const plain = new StringPool()
        const want = idsOf(plain, xs)
        const early = new StringPool()
        early.reserve(room, room * 40)
        assert.deepEqual(idsOf(early, xs), want)
        const midway = new StringPool()
        const head = idsOf(midway, xs.slice(0, at))
        midway.reserve(room)
        assert.deepEqual([...head, ...idsOf(midway, xs.slice(at))], want)
        // adopted storage with room for more: the first part's ids stay, the rest follow
        const first = new StringPool()
        idsOf(first, xs.slice(0, at))
        const moved = StringPool.fromParts(first.parts(), room, room * 60)
        assert.deepEqual(idsOf(moved, xs), want)
        for (const p of [early, midway, moved]) {
          assert.equal(p.size, plain.size)
          for (let id = 0; id < plain.size; id++) {
            assert.equal(p.get(id), plain.get(id))
            assert.equal(p.byteLength(id), plain.byteLength(id))
          }
        }
      }),
      { numRuns: 200 }
    )
  })

  it("gives the strings from an id on as parts of their own, which another pool interns by their hashes to the same strings (property)", () => {
    fc.assert(
      fc.property(strings, strings, fc.nat(400), (xs, ys, at) => {
        const source = new StringPool()
        idsOf(source, xs)
        const from = Math.min(at, source.size)
        const part = source.partsFrom(from)
        assert.equal(part.size, source.size - from)
        const other = new StringPool()
        idsOf(other, ys)
        for (let i = 0; i < part.size; i++) {
          const id = other.internHashed(part.arena, part.starts[i]!, part.starts[i + 1]!, part.hashes[i]!)
          assert.equal(other.get(id), source.get(from + i))
          assert.equal(other.intern(source.get(from + i)), id, "found again by its text")
        }
      }),
      { numRuns: 200 }
    )
  })

  it("gives a selection's strings as Utf8 buffers, the same bytes in shared memory or not (property)", () => {
    fc.assert(
      fc.property(strings, fc.array(fc.nat(), { maxLength: 300 }), fc.nat(3000), (xs, picks, sharedFrom) => {
        const pool = new StringPool()
        const ids = idsOf(pool, xs)
        const chosen = ids.length === 0 ? [] : picks.map((p) => ids[p % ids.length]!)
        const plain = pool.utf8Buffers(chosen)
        const maybe = pool.utf8Buffers(chosen, sharedFrom)
        const decoder = new TextDecoder()
        chosen.forEach((id, i) => assert.equal(decoder.decode(plain.data.subarray(plain.offsets[i], plain.offsets[i + 1])), pool.get(id)))
        assert.deepStrictEqual([...maybe.offsets], [...plain.offsets])
        assert.deepStrictEqual([...maybe.data], [...plain.data])
        const shared = plain.data.length >= sharedFrom
        assert.equal(maybe.data.buffer instanceof SharedArrayBuffer, shared)
        assert.equal(maybe.offsets.buffer instanceof SharedArrayBuffer, shared)
        assert.ok(!(plain.data.buffer instanceof SharedArrayBuffer))
      }),
      { numRuns: 200 }
    )
  })

  it("gives every string so far in shared memory by id, from a shared arena without a copy, and keeps them as it grows (property)", () => {
    fc.assert(
      fc.property(strings, strings, fc.boolean(), fc.nat(4000), (xs, later, sharedArena, room) => {
        const pool = new StringPool()
        if (sharedArena) pool.reserve(room, room * 10, true)
        idsOf(pool, xs)
        const got = pool.sharedUtf8()
        const size = pool.size
        assert.ok(got.bytes.buffer instanceof SharedArrayBuffer)
        assert.ok(got.offsets.buffer instanceof SharedArrayBuffer)
        assert.equal(got.offsets.length, size + 1)
        // a shared arena is handed out as it is, another one copied
        assert.equal((got.bytes.buffer as ArrayBufferLike) === pool.parts().arena.buffer, sharedArena)
        // interning more (the arena may move) leaves what was handed out as it was
        idsOf(pool, later)
        const decoder = new TextDecoder("utf-8", { ignoreBOM: true })
        for (let id = 0; id < size; id++) assert.equal(decoder.decode(got.bytes.subarray(got.offsets[id], got.offsets[id + 1])), pool.get(id))
      }),
      { numRuns: 200 }
    )
  })
})

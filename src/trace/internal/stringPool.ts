/**
 * A string pool for the column decoder: every string read from a trace gets a small
 * integer id. Strings are kept as UTF-8 bytes in one arena and found again through an
 * open-addressing hash table over those bytes, so decoding a trace creates no JS
 * string at all (repeated event names, hosts, workers, functions, task keys are
 * recognised by their bytes); JS strings are made lazily, only for the ids someone
 * asks for. The arena also becomes Arrow Utf8 dictionaries without re-encoding.
 *
 * Hot path; plain imperative code on purpose.
 *
 * @since 0.1.0
 */

// as every reader: invalid UTF-8 -> U+FFFD, a BOM is kept (Framing.ts)
const textDecoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true })
const textEncoder = new TextEncoder()
const FRONT_MASK = (1 << 13) - 1
const SAMPLED_MASK = (1 << 14) - 1

/**
 * A pool's storage (see `StringPool.parts`).
 *
 * @since 0.1.0
 * @category models
 */
export interface StringPoolParts {
  /** shared memory where the pool's arena is (`reserve(..., true)`): shared when posted, not transferred */
  readonly arena: Uint8Array
  readonly starts: Int32Array<ArrayBuffer>
  readonly hashes: Int32Array<ArrayBuffer>
  readonly size: number
}

/**
 * Interns UTF-8 byte strings to dense ids.
 *
 * @since 0.1.0
 * @category models
 */
export class StringPool {
  /** on shared memory once `reserve(..., true)` put it there (it then grows there): `sharedUtf8` copies nothing */
  private arena: Uint8Array<ArrayBufferLike> = new Uint8Array(1 << 20)
  private arenaView = new DataView(this.arena.buffer)
  private inBytes: Uint8Array = this.arena
  private inView: DataView = this.arenaView
  private arenaLength = 0
  private starts = new Int32Array(1024) // starts[id], starts[id + 1] = end
  private hashes = new Int32Array(1024)
  private table = new Int32Array(1 << 12) // id + 1, 0 = empty
  private mask = (1 << 12) - 1
  private cache: Array<string | undefined> = []
  private scratch = new Uint8Array(256)
  private readonly front = new Int32Array(FRONT_MASK + 1)
  private readonly sampled = new Int32Array(SAMPLED_MASK + 1)
  size = 0

  /**
   * Id of the UTF-8 string in `bytes[start..end)`, looked up first in a direct-mapped
   * cache keyed by a cheap hash (short strings: all bytes; longer: the length, the last
   * 12 bytes, the first 4 and two interior bytes):
   * repeated strings (names, hosts, workers, dependency keys seen moments ago) cost
   * that hash and one compare; only a cache miss hashes every byte (`internBytes`).
   */
  internSampled(bytes: Uint8Array, start: number, end: number): number {
    const len = end - start
    let h: number
    if (len < 16) h = this.hash(bytes, start, end)
    else {
      // the last 12 bytes in full (dask keys differ in their trailing indices:
      // "('sum-<token>', 123, 0)"), the first 4, and two interior bytes (the token)
      const v = this.view(bytes)
      h = Math.imul(0x811c9dc5 ^ len, 0x01000193)
      for (let i = end - 12; i < end; i += 4) {
        h = Math.imul(h ^ v.getInt32(i, true), 0x01000193)
        h ^= h >>> 13
      }
      h = Math.imul(h ^ v.getInt32(start, true), 0x01000193)
      h = Math.imul(h ^ bytes[start + (len >> 1)], 0x01000193)
      h = Math.imul(h ^ bytes[start + (len >> 2)], 0x01000193)
    }
    const slot = (h ^ (h >>> 15)) & SAMPLED_MASK
    const cached = this.sampled[slot] - 1
    if (cached >= 0 && this.matches(cached, bytes, start, len)) return cached
    const id = this.internBytes(bytes, start, end)
    this.sampled[slot] = id + 1
    return id
  }

  /** Id of the UTF-8 string in `bytes[start..end)`. */
  internBytes(bytes: Uint8Array, start: number, end: number): number {
    return this.internHashed(bytes, start, end, this.hash(bytes, start, end))
  }

  /**
   * The pool's hash of `bytes[start..end)` (FNV-style, one little-endian word per step,
   * read through a DataView), the one `hashes` holds and `internHashed` takes.
   */
  private hash(bytes: Uint8Array, start: number, end: number): number {
    const v = this.view(bytes)
    let h = 0x811c9dc5 ^ (end - start)
    let i = start
    for (; i + 4 <= end; i += 4) {
      h = Math.imul(h ^ v.getInt32(i, true), 0x01000193)
      h ^= h >>> 13
    }
    for (; i < end; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
    return h ^ (h >>> 15)
  }

  /** A DataView over `bytes` (the one made for the last caller's buffer, if the same). */
  private view(bytes: Uint8Array): DataView {
    if (bytes !== this.inBytes) {
      this.inBytes = bytes
      this.inView = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    }
    return this.inView
  }

  /** Id of the UTF-8 string in `bytes[start..end)` whose `hash` is `h`. */
  internHashed(bytes: Uint8Array, start: number, end: number, h: number): number {
    const len = end - start
    // front cache of recently seen ids: hits touch only recent (cache-warm) arena bytes
    const fslot = (h ^ (h >>> 12)) & FRONT_MASK
    const fid = this.front[fslot] - 1
    if (fid >= 0 && this.hashes[fid] === h && this.matches(fid, bytes, start, len)) return fid
    const id = this.lookup(bytes, start, end, h)
    this.front[fslot] = id + 1
    return id
  }

  private lookup(bytes: Uint8Array, start: number, end: number, h: number): number {
    const len = end - start
    const table = this.table
    const mask = this.mask
    let slot = h & mask
    for (;;) {
      const e = table[slot]
      if (e === 0) break
      const id = e - 1
      if (this.hashes[id] === h && this.matches(id, bytes, start, len)) return id
      slot = (slot + 1) & mask
    }
    // new string
    const id = this.size++
    if (this.arenaLength + len > this.arena.length) {
      let n = this.arena.length * 2
      while (n < this.arenaLength + len) n *= 2
      this.resizeArena(n)
    }
    // byte loop, not set(subarray): a subarray is an allocation per new string
    const arena2 = this.arena
    let w = this.arenaLength
    for (let i = start; i < end; i++) arena2[w++] = bytes[i]
    this.arenaLength = w
    if (id + 2 > this.starts.length) this.resizeIds(this.starts.length * 2)
    this.starts[id + 1] = this.arenaLength
    this.hashes[id] = h
    table[slot] = id + 1
    if (this.size * 2 > mask) this.grow()
    return id
  }

  private grow(): void {
    const size = this.table.length * 2
    this.rehash(size)
  }

  /**
   * Make room for `n` strings in all (the table at most half full) and `bytes` bytes of
   * them in all, so that interning up to that many rehashes and copies nothing: for a
   * caller that can estimate how many strings it will meet (a load of many megabytes).
   * Never shrinks.
   */
  reserve(n: number, bytes = 0, shared = false): void {
    if (shared && !this.shared) this.resizeArena(Math.max(bytes, this.arena.length), true)
    else if (bytes > this.arena.length) this.resizeArena(bytes)
    if (n + 2 > this.starts.length) this.resizeIds(n + 2)
    let size = this.table.length
    while (n * 2 > size - 1) size *= 2
    if (size > this.table.length) this.rehash(size)
  }

  /** Whether the arena is on shared memory. */
  private get shared(): boolean {
    return this.arena.buffer instanceof SharedArrayBuffer
  }

  /** The arena moved to one of `n` bytes (at least its bytes in use), on shared memory if it is already or `shared`. */
  private resizeArena(n: number, shared = this.shared): void {
    const next = new Uint8Array(shared ? new SharedArrayBuffer(n) : new ArrayBuffer(n))
    next.set(this.arena.subarray(0, this.arenaLength))
    this.arena = next
    this.arenaView = new DataView(next.buffer)
  }

  /** `starts` and `hashes` moved to arrays of `n` entries (room for `n - 1` strings at least). */
  private resizeIds(n: number): void {
    const s = new Int32Array(n)
    s.set(this.starts.subarray(0, this.size + 1))
    this.starts = s
    const hs = new Int32Array(n)
    hs.set(this.hashes.subarray(0, this.size))
    this.hashes = hs
  }

  private rehash(size: number): void {
    const table = new Int32Array(size)
    const mask = size - 1
    for (let id = 0; id < this.size; id++) {
      let slot = this.hashes[id] & mask
      while (table[slot] !== 0) slot = (slot + 1) & mask
      table[slot] = id + 1
    }
    this.table = table
    this.mask = mask
  }

  /**
   * The pool's storage, for moving it to another thread: string `id` is
   * `arena[starts[id]..starts[id + 1])` with hash `hashes[id]`, for `id < size`.
   */
  parts(): StringPoolParts {
    return { arena: this.arena, starts: this.starts, hashes: this.hashes, size: this.size }
  }

  /**
   * Every string so far as UTF-8 in shared memory (Arrow Utf8 buffers, by id): string
   * `id` is `bytes[offsets[id]..offsets[id + 1])`, for another thread to read where it
   * is. The arena itself where it grows in shared memory (`reserve(..., true)`), else a
   * copy of it; the offsets are a copy. Strings interned later are not in it (the pool
   * only appends: the ones in it stay as they are).
   */
  sharedUtf8(): { readonly bytes: Uint8Array; readonly offsets: Int32Array } {
    const n = this.size
    const offsets = new Int32Array(new SharedArrayBuffer((n + 1) * 4))
    offsets.set(this.starts.subarray(0, n + 1))
    if (this.shared) return { bytes: this.arena.subarray(0, this.arenaLength), offsets }
    const bytes = new Uint8Array(new SharedArrayBuffer(this.arenaLength))
    bytes.set(this.arena.subarray(0, this.arenaLength))
    return { bytes, offsets }
  }

  /**
   * Strings `from` to the last, as parts of their own (copies: the pool goes on growing):
   * string `from + i` is `arena[starts[i]..starts[i + 1])` with hash `hashes[i]`.
   */
  partsFrom(from: number): StringPoolParts & { readonly arena: Uint8Array<ArrayBuffer> } {
    const n = Math.max(0, this.size - from)
    const base = n === 0 ? 0 : this.starts[from]
    const starts = new Int32Array(n + 1)
    for (let i = 0; i <= n; i++) starts[i] = this.starts[from + i] - base
    return {
      arena: this.arena.slice(base, base + starts[n]),
      starts,
      hashes: this.hashes.slice(from, from + n),
      size: n
    }
  }

  /**
   * A pool over storage taken from `parts()` of another (the arrays are adopted, not
   * copied), with room for `reserve` strings and `reserveBytes` bytes in all (default:
   * the ones it has).
   */
  static fromParts(parts: StringPoolParts, reserve = 0, reserveBytes = 0): StringPool {
    const p = new StringPool()
    p.arena = parts.arena
    p.arenaView = new DataView(parts.arena.buffer, parts.arena.byteOffset, parts.arena.byteLength)
    p.starts = parts.starts
    p.hashes = parts.hashes
    p.size = parts.size
    p.arenaLength = parts.size === 0 ? 0 : parts.starts[parts.size]
    let size = p.table.length
    while (Math.max(p.size, reserve) * 2 > size - 1) size *= 2
    p.rehash(size)
    if (reserve > p.size || reserveBytes > p.arena.length) p.reserve(reserve, reserveBytes)
    return p
  }

  /** Does id's string have exactly the bytes `bytes[start..start+len)`. */
  matches(id: number, bytes: Uint8Array, start: number, len: number): boolean {
    const s = this.starts[id]
    if (this.starts[id + 1] - s !== len) return false
    // 4 bytes per step through DataViews (task keys are ~50 bytes; one unaligned load
    // per word instead of four byte loads)
    const av = this.arenaView
    const bv = this.view(bytes)
    let i = 0
    for (; i + 4 <= len; i += 4) if (av.getInt32(s + i) !== bv.getInt32(start + i)) return false
    const arena = this.arena
    for (; i < len; i++) if (arena[s + i] !== bytes[start + i]) return false
    return true
  }

  /** Id of a JS string. */
  intern(s: string): number {
    if (this.scratch.length < s.length * 3) this.scratch = new Uint8Array(s.length * 3)
    const { written } = textEncoder.encodeInto(s, this.scratch)
    return this.internBytes(this.scratch, 0, written)
  }

  /** The string of an id (decoded on first use). */
  get(id: number): string {
    let s = this.cache[id]
    if (s === undefined) {
      s = this.decode(this.starts[id], this.starts[id + 1])
      this.cache[id] = s
    }
    return s
  }

  /**
   * UTF-8 `arena[start..end)` as a string: short ASCII strings (most of a trace's: names,
   * hosts, task keys) without TextDecoder, whose call costs more than the copy.
   */
  private decode(start: number, end: number): string {
    const a = this.arena
    if (end - start <= 64) {
      let ascii = true
      for (let i = start; i < end; i++) {
        if (a[i] > 0x7f) {
          ascii = false
          break
        }
      }
      if (ascii) return String.fromCharCode.apply(null, a.subarray(start, end) as unknown as Array<number>)
    }
    return textDecoder.decode(a.subarray(start, end))
  }

  /** Bytes of all its strings (of the arena, those in use). */
  get byteSize(): number {
    return this.arenaLength
  }

  /** Byte length of an id's string. */
  byteLength(id: number): number {
    return this.starts[id + 1] - this.starts[id]
  }

  /**
   * The strings of the given ids, in order, as Arrow Utf8 buffers (value offsets and
   * bytes, copied from the arena), on `SharedArrayBuffer`s when the bytes are at least
   * `sharedFrom`. No Arrow import here: worker threads load this module and should
   * start fast.
   */
  utf8Buffers(ids: Int32Array | ReadonlyArray<number>, sharedFrom = Infinity): { readonly offsets: Int32Array; readonly data: Uint8Array } {
    let offsets: Int32Array = new Int32Array(ids.length + 1)
    let total = 0
    for (let i = 0; i < ids.length; i++) {
      total += this.starts[ids[i] + 1] - this.starts[ids[i]]
      offsets[i + 1] = total
    }
    // large ones in shared memory: a worker thread given them (the CSV writer's) reads
    // them where they are, where an ArrayBuffer would be copied twice on the way
    const shared = total >= sharedFrom
    if (shared) {
      const plain = offsets
      offsets = new Int32Array(new SharedArrayBuffer(plain.byteLength))
      offsets.set(plain)
    }
    const data = shared ? new Uint8Array(new SharedArrayBuffer(total)) : new Uint8Array(total)
    const arena = this.arena
    const starts = this.starts
    // Buffer views for `copy`, which takes offsets (Node makes a view per call, so only
    // for long runs: a single key is faster a word at a time, through DataViews)
    const src = Buffer.from(arena.buffer, arena.byteOffset, arena.byteLength)
    const dst = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    const from4 = this.arenaView
    const to4 = new DataView(data.buffer, data.byteOffset, data.byteLength)
    // ids in increasing runs (strings interned in first-use order) are contiguous in the
    // arena: one copy per run, not one per string
    let w = 0
    let i = 0
    while (i < ids.length) {
      let j = i + 1
      while (j < ids.length && ids[j] === ids[j - 1] + 1) j++
      const from = starts[ids[i]]
      const to = starts[ids[j - 1] + 1]
      if (to - from > 64) src.copy(dst, w, from, to)
      else {
        let k = from
        let o = w
        for (; k + 4 <= to; k += 4, o += 4) to4.setInt32(o, from4.getInt32(k))
        for (; k < to; k++, o++) data[o] = arena[k]
      }
      w += to - from
      i = j
    }
    return { offsets, data }
  }
}

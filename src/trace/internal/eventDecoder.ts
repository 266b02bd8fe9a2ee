/**
 * The event-object sink of the trace reader: a hand-written msgpack decoder that turns
 * records into `TraceEvent` objects (the profiler's read API, `FileDatabase.read`).
 * Repeated short strings (field names, event names, hosts, thread ids, arg keys, task
 * keys seen twice) are interned in a hash table keyed by their bytes, so most strings
 * cost a hash and a compare instead of a UTF-8 decode and an allocation; maps are
 * built from cached shapes (one object literal per map).
 *
 * It decodes what the generic decoder decodes, to the same values (a property test
 * checks). On anything unusual (extension types, malformed bytes, a record that is not
 * an event) `decodeFrames` hands the record to `decodeEventUnsafe` (Framing.ts), which
 * decodes it or throws the typed `TraceFormatError` with file and byte offset: one
 * error path.
 *
 * Hot path: plain imperative code on purpose.
 *
 * @since 0.1.0
 * @internal
 */
import type { TraceEvent } from "../TraceEvent.ts"
import { isPhase, isScope } from "../TraceEvent.ts"
import { decodeEventUnsafe, headerBytes, isDuration, isTime, maxNesting, scanFramesUnsafe } from "./framing.ts"
import { StringPool } from "./stringPool.ts"

// as the generic decoder and StringPool: invalid UTF-8 -> U+FFFD, a BOM is kept
const textDecoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true })
const maxInterned = 64
/** strings a decoder's pool holds before it starts a new one */
const maxPoolStrings = 1 << 16
/** maps of up to this many keys are built from a cached shape */
const maxShapeKeys = 24
/** shapes made at most (a trace of ever-new key sets falls back to plain objects) */
const maxShapes = 512

class Unusual extends Error {}
const unusual = new Unusual("unusual record")

/**
 * A map's keys in order, and a function that builds an object of exactly those
 * properties from the values in order: one object literal, every property in-object
 * (an object grown key by key past four properties needs a second allocation for them).
 */
interface Shape {
  readonly keys: ReadonlyArray<string>
  readonly make: (values: ReadonlyArray<unknown>) => Record<string, unknown>
  /**
   * The keys as msgpack fixstr bytes, key i at `encoded[at[i]..at[i + 1])`, to recognise
   * a record's keys by comparing bytes where this shape is expected; undefined when a
   * key is too long for a fixstr.
   */
  readonly encoded: DataView | undefined
  readonly at: Int32Array
}

const textEncoder = new TextEncoder()

/**
 * Are `x[xAt..xAt+len)` and `y[yAt..yAt+len)` the same bytes: a word at a time, the last
 * word overlapping the one before.
 */
const sameBytes = (x: DataView, xAt: number, y: DataView, yAt: number, len: number): boolean => {
  if (len < 4) {
    for (let i = 0; i < len; i++) if (x.getUint8(xAt + i) !== y.getUint8(yAt + i)) return false
    return true
  }
  for (let i = 0; ; i += 4) {
    if (i > len - 4) i = len - 4
    if (x.getInt32(xAt + i) !== y.getInt32(yAt + i)) return false
    if (i === len - 4) return true
  }
}

/** Moves `shapes[j]` to the front (most recently used first). */
const toFront = (shapes: Array<Shape>, j: number): Shape => {
  const shape = shapes[j]!
  if (j > 0) (shapes[j] = shapes[0]!, shapes[0] = shape)
  return shape
}

const makeShape = (keys: ReadonlyArray<string>): Shape => {
  const parts = keys.map((k) => textEncoder.encode(k))
  const at = new Int32Array(keys.length + 1)
  parts.forEach((p, i) => (at[i + 1] = at[i]! + 1 + p.length))
  const bytes = new Uint8Array(at[keys.length]!)
  parts.forEach((p, i) => (bytes[at[i]!] = 0xa0 | p.length, bytes.set(p, at[i]! + 1)))
  return {
    keys: [...keys],
    // generated code over the keys' JSON spellings only ("__proto__" never gets here)
    make: new Function("v", `return {${keys.map((k, i) => `${JSON.stringify(k)}: v[${i}]`).join(", ")}}`) as Shape["make"],
    encoded: parts.every((p) => p.length < 32) ? new DataView(bytes.buffer) : undefined,
    at
  }
}

/**
 * A reusable decoder of records into event objects (one per reader).
 *
 * @since 0.1.0
 * @internal
 */
export class EventDecoder {
  private b: Uint8Array = new Uint8Array(0)
  private v: DataView = new DataView(new ArrayBuffer(0))
  private p = 0
  private limit = 0
  // interned strings (up to `maxInterned` bytes); replaced by a fresh pool when full
  private pool = new StringPool()
  // map shapes by key count, most recently used first; scratch keys and values per depth
  private readonly shapes: Array<Array<Shape>> = Array.from({ length: maxShapeKeys + 1 }, () => [])
  private shapeCount = 0
  private depth = 0
  private readonly keyScratch: Array<Array<string>> = []
  private readonly valueScratch: Array<Array<unknown>> = []

  private str(n: number): string {
    const start = this.p
    const end = start + n
    if (end > this.limit) throw unusual
    this.p = end
    if (n === 0) return ""
    if (n <= maxInterned) {
      // the reader's one interner: a repeated string costs a hash and a compare of its
      // bytes, and its JS string is made once
      let pool = this.pool
      if (pool.size >= maxPoolStrings) pool = this.pool = new StringPool() // bounded memory
      return pool.get(pool.internSampled(this.b, start, end))
    }
    return this.decodeString(start, end)
  }

  private decodeString(start: number, end: number): string {
    const b = this.b
    if (end - start <= 128) {
      let ascii = true
      for (let i = start; i < end; i++) {
        if (b[i]! > 0x7f) {
          ascii = false
          break
        }
      }
      if (ascii) return String.fromCharCode.apply(null, b.subarray(start, end) as unknown as Array<number>)
    }
    return textDecoder.decode(b.subarray(start, end))
  }

  private map(n: number): Record<string, unknown> {
    // this.depth: maps and arrays open around the cursor (the record's map is level 1)
    if (this.depth >= maxNesting) throw unusual
    if (n > maxShapeKeys) return this.mapByKeys(n)
    // keys and values first, then the object in one go from its cached shape
    const d = this.depth++
    const keys = (this.keyScratch[d] ??= [])
    const values = (this.valueScratch[d] ??= [])
    keys.length = n
    values.length = n
    const shapes = this.shapes[n]!
    // expect the most recent shape of n keys; on a key it does not have, another known
    // shape with the same keys so far and that key; else read keys as strings
    let expected: Shape | undefined = shapes[0]
    try {
      for (let i = 0; i < n; i++) {
        if (expected !== undefined && !this.keyIs(expected, i)) expected = this.otherShape(shapes, expected, keys, i)
        keys[i] = expected !== undefined ? expected.keys[i]! : this.key()
        values[i] = this.value()
      }
    } finally {
      this.depth = d
    }
    if (expected !== undefined) return toFront(shapes, shapes.indexOf(expected)).make(values)
    for (let j = 0; j < shapes.length; j++) {
      const ks = shapes[j]!.keys
      let same = true
      for (let i = 0; i < n; i++) {
        if (ks[i] !== keys[i]) {
          same = false
          break
        }
      }
      if (same) return toFront(shapes, j).make(values)
    }
    if (this.shapeCount < maxShapes && new Set(keys).size === n) {
      const shape = makeShape(keys)
      this.shapeCount++
      shapes.unshift(shape)
      if (shapes.length > 8) shapes.pop()
      return shape.make(values)
    }
    const o: Record<string, unknown> = {}
    for (let i = 0; i < n; i++) o[keys[i]!] = values[i]
    return o
  }

  /** Are the bytes at the cursor `shape`'s key `i` (then step over them). */
  private keyIs(shape: Shape, i: number): boolean {
    const e = shape.encoded
    if (e === undefined) return false
    const from = shape.at[i]!
    const len = shape.at[i + 1]! - from
    const p = this.p
    if (p + len > this.limit || !sameBytes(this.v, p, e, from, len)) return false
    this.p = p + len
    return true
  }

  /** A shape other than `not` with `keys[0..i)` and key `i` at the cursor, if any. */
  private otherShape(shapes: ReadonlyArray<Shape>, not: Shape, keys: ReadonlyArray<string>, i: number): Shape | undefined {
    for (const s of shapes) {
      if (s === not) continue
      let same = true
      for (let j = 0; j < i; j++) {
        if (s.keys[j] !== keys[j]) {
          same = false
          break
        }
      }
      if (same && this.keyIs(s, i)) return s
    }
    return undefined
  }

  /** A map built key by key (large maps). */
  private mapByKeys(n: number): Record<string, unknown> {
    const o: Record<string, unknown> = {}
    const d = this.depth++
    for (let i = 0; i < n; i++) {
      const k = this.key()
      o[k] = this.value()
    }
    this.depth = d // (a throw leaves it: decodeUnsafe starts each record at 0)
    return o
  }

  /** A map key: a string, and never "__proto__". */
  private key(): string {
    // fixstr inline (the common case), else the general path
    if (this.p >= this.limit) throw unusual
    const t = this.b[this.p]!
    let k: unknown
    if (t >= 0xa0 && t < 0xc0) {
      this.p++
      k = this.str(t & 0x1f)
    } else k = this.value()
    if (typeof k !== "string" || k === "__proto__") throw unusual
    return k
  }

  private array(n: number): Array<unknown> {
    if (this.depth >= maxNesting) throw unusual
    const a = new Array(n)
    const d = this.depth++
    for (let i = 0; i < n; i++) a[i] = this.value()
    this.depth = d
    return a
  }

  private value(): unknown {
    const b = this.b
    const v = this.v
    if (this.p >= this.limit) throw unusual
    const t = b[this.p++]!
    if (t < 0x80) return t
    if (t < 0x90) return this.map(t & 0x0f)
    if (t < 0xa0) return this.array(t & 0x0f)
    if (t < 0xc0) return this.str(t & 0x1f)
    if (t >= 0xe0) return t - 0x100
    const p = this.p
    switch (t) {
      case 0xc0:
        return null
      case 0xc2:
        return false
      case 0xc3:
        return true
      case 0xcb:
        this.p = p + 8
        return v.getFloat64(p)
      case 0xca:
        this.p = p + 4
        return v.getFloat32(p)
      case 0xcc:
        this.p = p + 1
        return b[p]!
      case 0xcd:
        this.p = p + 2
        return v.getUint16(p)
      case 0xce:
        this.p = p + 4
        return v.getUint32(p)
      case 0xcf: {
        this.p = p + 8
        const x = v.getUint32(p) * 0x100000000 + v.getUint32(p + 4)
        // the generic decoder turns unsafe 64-bit integers into bigint or throws: defer to it
        if (!Number.isSafeInteger(x)) throw unusual
        return x
      }
      case 0xd0:
        this.p = p + 1
        return v.getInt8(p)
      case 0xd1:
        this.p = p + 2
        return v.getInt16(p)
      case 0xd2:
        this.p = p + 4
        return v.getInt32(p)
      case 0xd3: {
        this.p = p + 8
        const x = v.getInt32(p) * 0x100000000 + v.getUint32(p + 4)
        if (!Number.isSafeInteger(x)) throw unusual
        return x
      }
      case 0xd9:
        this.p = p + 1
        return this.str(b[p]!)
      case 0xda:
        this.p = p + 2
        return this.str(v.getUint16(p))
      case 0xdb:
        this.p = p + 4
        return this.str(v.getUint32(p))
      case 0xdc:
        this.p = p + 2
        return this.array(v.getUint16(p))
      case 0xdd:
        this.p = p + 4
        return this.array(v.getUint32(p))
      case 0xde:
        this.p = p + 2
        return this.map(v.getUint16(p))
      case 0xdf:
        this.p = p + 4
        return this.map(v.getUint32(p))
      default:
        // bin, ext, timestamps: rare in traces; the generic decoder handles them
        throw unusual
    }
  }

  /**
   * Decodes the whole records of `bytes[0..end)` into `out`, in order; records the fast
   * path does not take go through the generic decoder. `fileOffset` is the file position
   * of `bytes[0]`, for errors. Throws `TraceFormatError`.
   */
  decodeFrames(bytes: Uint8Array, end: number, file: string, fileOffset: number, out: Array<TraceEvent>): void {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    scanFramesUnsafe(bytes.subarray(0, end), file, fileOffset, (s, e) => {
      let ev: TraceEvent
      try {
        ev = this.decodeUnsafe(bytes, view, s, e)
      } catch {
        // anything unusual (or malformed): the generic decoder decides, and owns the errors
        ev = decodeEventUnsafe(bytes, s, e, file, fileOffset + s - headerBytes)
      }
      out.push(ev)
    })
  }

  /**
   * Decodes the record body `bytes[start..end)`; throws (an internal marker) for anything
   * the generic decoder should judge instead.
   */
  decodeUnsafe(bytes: Uint8Array, view: DataView, start: number, end: number): TraceEvent {
    this.b = bytes
    this.limit = end
    this.v = view
    this.p = start
    this.depth = 0
    const r = this.value()
    if (this.p !== end || typeof r !== "object" || r === null || Array.isArray(r)) throw unusual
    const e = r as Record<string, unknown>
    if (typeof e.name !== "string" || typeof e.timestamp !== "number" || !isPhase(e.phase)) throw unusual
    // the one rule on times (Framing.isTime / isDuration): the generic decoder rejects
    if (!isTime(e.timestamp)) throw unusual
    if (e.duration !== undefined && (typeof e.duration !== "number" || !isDuration(e.duration))) throw unusual
    if (e.args === undefined || e.args === null) e.args = {}
    else if (typeof e.args !== "object" || Array.isArray(e.args)) throw unusual
    if (e.process_id === undefined) e.process_id = null
    if (e.thread_id === undefined) e.thread_id = null
    if (e.scope !== undefined && !isScope(e.scope)) delete e.scope
    return e as unknown as TraceEvent
  }
}

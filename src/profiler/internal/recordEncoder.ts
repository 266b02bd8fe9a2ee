/**
 * Specialised trace-record encoder for the profiler's write path. It writes exactly the
 * bytes `TraceFormat.encodeRecords` writes (the property tests check byte equality), but
 * several times faster for the event shapes the profiler records:
 *
 * - the fixed field names, and the short strings of the repeated positions (event names,
 *   hosts, thread ids, arg keys), are encoded once and cached as msgpack bytes; string
 *   values inside args (mostly unique task keys) are written directly;
 * - ASCII strings are written with a plain char-code loop (no TextEncoder call);
 * - objects are walked with `for...in` (no `Object.entries` arrays);
 * - everything goes into one growing buffer, reused between batches.
 *
 * Hot path: plain imperative code on purpose (see STYLE: hot loops may be imperative).
 *
 * Leaves out: decoding (see `recordDecoder.ts`), framing rules (src/trace/TraceFormat).
 *
 * @since 0.1.0
 * @internal
 */
import type { MemoryRecord, TaskRecord } from "../../engine/EngineEvents.ts"
import { keyName } from "../../engine/TaskGraph.ts"
import type { TraceEvent } from "../../trace/TraceEvent.ts"

const textEncoder = new TextEncoder()
const fixstr = (s: string): Uint8Array => Uint8Array.of(0xa0 | s.length, ...textEncoder.encode(s))
const K = {
  name: fixstr("name"),
  timestamp: fixstr("timestamp"),
  duration: fixstr("duration"),
  phase: fixstr("phase"),
  scope: fixstr("scope"),
  process_id: fixstr("process_id"),
  thread_id: fixstr("thread_id"),
  args: fixstr("args")
}
const cat = (...parts: ReadonlyArray<Uint8Array | ReadonlyArray<number>>): Uint8Array =>
  Uint8Array.from(parts.flatMap((p) => [...p]))
// precomputed runs of bytes for the Trace layer's two event shapes (see `compute`, `memory`)
const P = {
  computeHead: cat([0x87], K.name, fixstr("Compute"), K.timestamp),
  computePhase: cat(K.phase, fixstr("X"), K.process_id),
  memoryHead: cat([0x87], K.name, fixstr("Managed Memory"), K.timestamp),
  memoryPhase: cat(K.phase, fixstr("I"), K.scope, fixstr("g"), K.process_id),
  key: fixstr("key"),
  name: fixstr("name"),
  state: fixstr("state"),
  size: fixstr("size"),
  shape: fixstr("shape"),
  dtype: fixstr("dtype"),
  type: fixstr("type"),
  dependencies: fixstr("dependencies"),
  dependents: fixstr("dependents"),
  startstops: fixstr("startstops"),
  cpuTime: fixstr("cpu_time"),
  stage: fixstr("stage"),
  tasks: fixstr("tasks"),
  gather: cat([0x83], fixstr("action"), fixstr("gather"), fixstr("start")),
  compute: cat([0x83], fixstr("action"), fixstr("compute"), fixstr("start")),
  transfer: cat([0x83], fixstr("action"), fixstr("transfer"), fixstr("start")),
  stop: fixstr("stop")
}
const maxCached = 8192
const maxCachedLength = 24

/**
 * A reusable encoder: records are appended to `buf[0..pos)` until the owner takes the
 * bytes and resets `pos` (each FileDatabase has its own).
 *
 * @since 0.1.0
 * @internal
 */
export class RecordEncoder {
  buf = new Uint8Array(1 << 16)
  view = new DataView(this.buf.buffer)
  pos = 0
  private readonly cache = new Map<string, Uint8Array>()

  private grow(n: number): void {
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  private float64(x: number): void {
    if (this.pos + 9 > this.buf.length) this.grow(9)
    this.buf[this.pos] = 0xcb
    this.view.setFloat64(this.pos + 1, x)
    this.pos += 9
  }

  private number(x: number): void {
    if (!Number.isSafeInteger(x) || Object.is(x, -0)) return this.float64(x)
    if (this.pos + 9 > this.buf.length) this.grow(9)
    const b = this.buf
    const v = this.view
    let p = this.pos
    if (x >= 0) {
      if (x < 128) b[p++] = x
      else if (x < 0x100) (b[p++] = 0xcc, b[p++] = x)
      else if (x < 0x10000) (b[p] = 0xcd, v.setUint16(p + 1, x), p += 3)
      else if (x < 0x100000000) (b[p] = 0xce, v.setUint32(p + 1, x), p += 5)
      else (b[p] = 0xcf, v.setBigUint64(p + 1, BigInt(x)), p += 9)
    } else {
      if (x >= -32) b[p++] = x & 0xff
      else if (x >= -128) (b[p] = 0xd0, v.setInt8(p + 1, x), p += 2)
      else if (x >= -32768) (b[p] = 0xd1, v.setInt16(p + 1, x), p += 3)
      else if (x >= -2147483648) (b[p] = 0xd2, v.setInt32(p + 1, x), p += 5)
      else (b[p] = 0xd3, v.setBigInt64(p + 1, BigInt(x)), p += 9)
    }
    this.pos = p
  }

  /** Writes `s` as a msgpack str. */
  private rawString(s: string): void {
    const n = s.length
    if (this.pos + 5 + n * 3 > this.buf.length) this.grow(5 + n * 3)
    const b = this.buf
    // optimistic ASCII path in one loop (byte length == char length); undone on the
    // first non-ASCII char
    const start = this.pos
    let p = start
    if (n < 32) b[p++] = 0xa0 | n
    else if (n < 0x100) (b[p++] = 0xd9, b[p++] = n)
    else if (n < 0x10000) (b[p] = 0xda, this.view.setUint16(p + 1, n), p += 3)
    else (b[p] = 0xdb, this.view.setUint32(p + 1, n), p += 5)
    let i = 0
    for (; i < n; i++) {
      const c = s.charCodeAt(i)
      if (c > 0x7f) break
      b[p + i] = c
    }
    if (i === n) {
      this.pos = p + n
      return
    }
    const bytes = textEncoder.encode(s)
    const w = bytes.length
    p = start
    if (w < 32) b[p++] = 0xa0 | w
    else if (w < 0x100) (b[p++] = 0xd9, b[p++] = w)
    else if (w < 0x10000) (b[p] = 0xda, this.view.setUint16(p + 1, w), p += 3)
    else (b[p] = 0xdb, this.view.setUint32(p + 1, w), p += 5)
    b.set(bytes, p)
    this.pos = p + w
  }

  /** Copies precomputed msgpack bytes (short: a plain loop beats `set` here). */
  private put(bytes: Uint8Array): void {
    const n = bytes.length
    if (this.pos + n > this.buf.length) this.grow(n)
    const b = this.buf
    const p = this.pos
    for (let i = 0; i < n; i++) b[p + i] = bytes[i]!
    this.pos = p + n
  }

  private string(s: string): void {
    if (s.length <= maxCachedLength) {
      const hit = this.cache.get(s)
      if (hit !== undefined) return this.put(hit)
      const at = this.pos
      this.rawString(s)
      if (this.cache.size >= maxCached) this.cache.clear()
      this.cache.set(s, this.buf.slice(at, this.pos))
      return
    }
    this.rawString(s)
  }

  private header(n: number, fix: number, b16: number): void {
    if (this.pos + 5 > this.buf.length) this.grow(5)
    if (n < 16) this.buf[this.pos++] = fix | n
    else if (n < 0x10000) (this.buf[this.pos] = b16, this.view.setUint16(this.pos + 1, n), this.pos += 3)
    else (this.buf[this.pos] = b16 + 1, this.view.setUint32(this.pos + 1, n), this.pos += 5)
  }

  private byte(x: number): void {
    if (this.pos + 1 > this.buf.length) this.grow(1)
    this.buf[this.pos++] = x
  }

  private value(u: unknown): void {
    switch (typeof u) {
      case "string":
        // values (task keys above all) are mostly unique: caching them costs more than
        // the one-pass ASCII copy
        return this.rawString(u)
      case "number":
        return this.number(u)
      case "boolean":
        return this.byte(u ? 0xc3 : 0xc2)
      case "bigint":
        if (this.pos + 9 > this.buf.length) this.grow(9)
        this.buf[this.pos] = u < 0n ? 0xd3 : 0xcf
        if (u < 0n) this.view.setBigInt64(this.pos + 1, u)
        else this.view.setBigUint64(this.pos + 1, u)
        this.pos += 9
        return
      case "object": {
        if (u === null) return this.byte(0xc0)
        if (Array.isArray(u)) {
          this.header(u.length, 0x90, 0xdc)
          for (let i = 0; i < u.length; i++) this.value(u[i])
          return
        }
        if (ArrayBuffer.isView(u)) {
          const bytes = new Uint8Array(u.buffer, u.byteOffset, u.byteLength)
          const n = bytes.length
          if (this.pos + 5 + n > this.buf.length) this.grow(5 + n)
          if (n < 0x100) (this.buf[this.pos] = 0xc4, this.buf[this.pos + 1] = n, this.pos += 2)
          else if (n < 0x10000) (this.buf[this.pos] = 0xc5, this.view.setUint16(this.pos + 1, n), this.pos += 3)
          else (this.buf[this.pos] = 0xc6, this.view.setUint32(this.pos + 1, n), this.pos += 5)
          this.buf.set(bytes, this.pos)
          this.pos += n
          return
        }
        const o = u as Record<string, unknown>
        const keys = Object.keys(o)
        let count = 0
        for (let i = 0; i < keys.length; i++) if (o[keys[i]!] !== undefined) count++
        this.header(count, 0x80, 0xde)
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i]!
          const v = o[k]
          if (v === undefined) continue
          this.string(k)
          this.value(v)
        }
        return
      }
      default:
        return this.byte(0xc0)
    }
  }

  /** Appends one framed record (8-byte big-endian length + map) for `e`. */
  event(e: TraceEvent): void {
    if (this.pos + 8 > this.buf.length) this.grow(8)
    const at = this.pos
    this.pos += 8
    // DASF's dataclass field order (see TraceFormat.encodeRecords)
    const isX = e.phase === "X"
    const hasDuration = e.duration !== undefined || isX
    const hasScope = !isX && e.scope !== undefined
    this.header(6 + (hasDuration ? 1 : 0) + (hasScope ? 1 : 0), 0x80, 0xde)
    this.put(K.name)
    this.string(e.name)
    this.put(K.timestamp)
    this.float64(e.timestamp)
    if (isX) {
      this.put(K.duration)
      this.float64(e.duration ?? 0)
    }
    this.put(K.phase)
    this.string(e.phase)
    if (hasScope) {
      this.put(K.scope)
      this.string(e.scope!)
    }
    this.put(K.process_id)
    this.value(e.process_id)
    this.put(K.thread_id)
    this.value(e.thread_id)
    this.put(K.args)
    this.value(e.args)
    if (!isX && e.duration !== undefined) {
      this.put(K.duration)
      this.float64(e.duration)
    }
    const len = this.pos - at - 8
    this.view.setUint32(at, Math.floor(len / 0x100000000))
    this.view.setUint32(at + 4, len >>> 0)
  }

  private strings(xs: ReadonlyArray<string>): void {
    this.header(xs.length, 0x90, 0xdc)
    for (let i = 0; i < xs.length; i++) this.value(xs[i])
  }

  private frameStart(): number {
    if (this.pos + 8 > this.buf.length) this.grow(8)
    const at = this.pos
    this.pos += 8
    return at
  }

  private frameEnd(at: number): void {
    const len = this.pos - at - 8
    this.view.setUint32(at, Math.floor(len / 0x100000000))
    this.view.setUint32(at + 4, len >>> 0)
  }

  /**
   * Appends the Trace layer's `Compute` record for a task straight from its TaskRecord:
   * exactly the bytes `event(Trace.computeEvent(r))` writes (a property test checks),
   * without building the event object.
   */
  compute(r: TaskRecord): void {
    const at = this.frameStart()
    const { gather, compute, transfer } = r.phases
    this.put(P.computeHead)
    this.float64(transfer[1])
    this.put(K.duration)
    this.float64(Math.max(0, transfer[1] - gather[0]))
    this.put(P.computePhase)
    this.value(r.host)
    this.put(K.thread_id)
    this.value(r.threadId)
    this.put(K.args)
    this.byte(r.stage !== undefined ? 0x8c : 0x8b)
    this.put(P.key)
    this.value(r.key)
    this.put(P.name)
    this.value(r.name !== "" ? r.name : keyName(r.key))
    this.put(P.state)
    this.value(r.state)
    this.put(P.size)
    this.value(r.nbytes)
    this.put(P.shape)
    this.value(r.shape)
    this.put(P.dtype)
    this.value(r.dtype)
    this.put(P.type)
    this.value(r.type)
    this.put(P.dependencies)
    this.strings(r.dependencies)
    this.put(P.dependents)
    this.strings(r.dependents)
    this.put(P.startstops)
    this.byte(0x93)
    this.put(P.gather)
    this.number(gather[0])
    this.put(P.stop)
    this.number(gather[1])
    this.put(P.compute)
    this.number(compute[0])
    this.put(P.stop)
    this.number(compute[1])
    this.put(P.transfer)
    this.number(transfer[0])
    this.put(P.stop)
    this.number(transfer[1])
    this.put(P.cpuTime)
    this.value(r.cpuTime)
    if (r.stage !== undefined) {
      this.put(P.stage)
      this.value(r.stage)
    }
    this.frameEnd(at)
  }

  /** Appends the Trace layer's `Managed Memory` record (same bytes as `event(Trace.memoryEvent(m))`). */
  memory(m: MemoryRecord): void {
    const at = this.frameStart()
    this.put(P.memoryHead)
    this.float64(m.timestamp)
    this.put(P.memoryPhase)
    this.value(m.host)
    this.put(K.thread_id)
    this.value(m.threadId)
    this.put(K.args)
    this.byte(0x84)
    this.put(P.key)
    this.value(m.key)
    this.put(P.state)
    this.value(m.state)
    this.put(P.size)
    this.value(m.bytes)
    this.put(P.tasks)
    this.value(m.chunks)
    this.frameEnd(at)
  }

  /** Encodes `events[from..to)` and returns a view of the bytes (valid until the next call). */
  encode(events: ReadonlyArray<TraceEvent>, from = 0, to = events.length): Uint8Array {
    this.pos = 0
    for (let i = from; i < to; i++) this.event(events[i]!)
    return this.buf.subarray(0, this.pos)
  }

  /** Drops a very large scratch buffer after a big batch. */
  shrink(): void {
    if (this.buf.length > 1 << 26) {
      this.buf = new Uint8Array(1 << 16)
      this.view = new DataView(this.buf.buffer)
    }
  }
}

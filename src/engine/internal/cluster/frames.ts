/**
 * The data plane's framing, as a pure codec (no sockets): how a worker sends a set of
 * results to a peer over its data socket (dataPlane.ts).
 *
 * A reply is one frame:
 *
 * ```
 * [u32 headLength][f64 serializeSeconds][head: node:v8 bytes][buffer 0][buffer 1]…
 * ```
 *
 * The head is the value with every typed array, `DataView` and `ArrayBuffer` found in
 * plain objects and arrays replaced by a placeholder, plus each buffer's kind and byte
 * length (an object that has the placeholder's own key goes v8-serialised as a buffer). The buffers follow as their raw bytes: {@link encode} returns views of the
 * values' own memory (no copy into a serialisation buffer; only views of shared memory
 * are copied, as the v8 path did), and {@link Decoder} copies what arrives into one
 * preallocated `ArrayBuffer` (each buffer 8-byte aligned), whose views become the values.
 *
 * A request is `[u32 length][utf8 JSON string array: the keys]`.
 *
 * Every length a peer sends is checked before anything is buffered: a request's against
 * {@link MAX_REQUEST_BYTES}, a reply's head against {@link MAX_HEAD_BYTES} and its
 * buffers' total against {@link MAX_REPLY_BYTES} (and the memory free); a frame over a
 * limit is a {@link FrameError} naming the length and the limit, and the data plane
 * closes that connection. What is accepted is read into one buffer allocated once for its
 * length (not re-copied as packets arrive).
 *
 * Leaves out: identity (an array reached twice arrives as two arrays), class instances
 * other than typed arrays (v8-serialised as before: own fields only), byte order (both
 * ends are the same build on little-endian hosts).
 *
 * @since 0.1.0
 * @internal
 */
import { deserialize, serialize } from "node:v8"

const PLACEHOLDER = "~tessera/buf"

/**
 * The longest request (its JSON list of keys) a data plane reads: 16 MiB, about 100,000
 * keys of 160 characters. A peer that claims more is closed before a byte of it is
 * buffered; `DataClient.fetch` splits a longer list into several requests.
 *
 * @since 0.1.0
 * @internal
 */
export const MAX_REQUEST_BYTES = 16 * 2 ** 20

/**
 * The longest head (the reply's values with their typed arrays taken out, v8-serialised)
 * of a reply: 1 GiB. Chunks travel as raw buffers, not in the head: only plain arrays of
 * numbers and other JS values are counted here.
 *
 * @since 0.1.0
 * @internal
 */
export const MAX_HEAD_BYTES = 2 ** 30

/**
 * The most bytes of raw buffers (typed arrays, chunks) in one reply: 64 GiB, above any
 * chunk the engine makes (one chunk is one typed array, and a worker holds several). A
 * reply that claims more, or more than the memory free where it arrives, fails the fetch
 * before its buffer is allocated; the sender refuses to encode one too.
 *
 * @since 0.1.0
 * @internal
 */
export const MAX_REPLY_BYTES = 2 ** 36

const kinds = {
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
  DataView
} as const
type Kind = keyof typeof kinds | "ArrayBuffer" | "v8"
const kindNames = Object.keys(kinds) as Array<keyof typeof kinds>
const hasFloat16 = typeof (globalThis as Record<string, unknown>)["Float16Array"] === "function"

const kindOf = (v: ArrayBufferView): Kind | undefined => {
  if (hasFloat16 && v instanceof (globalThis as unknown as { Float16Array: typeof Float32Array }).Float16Array) {
    return "Float16Array" as Kind
  }
  for (const n of kindNames) if (v instanceof kinds[n]) return n
  return undefined
}

const ctorOf = (k: Kind): new(b: ArrayBuffer, o: number, n: number) => ArrayBufferView => {
  if (k === "ArrayBuffer" || k === "v8") throw new Error("unreachable")
  // only the typed-array kinds: a peer's head names the kind, never any other global
  const c = Object.hasOwn(kinds, k) ? kinds[k as keyof typeof kinds] : hasFloat16 && k === ("Float16Array" as Kind) ? (globalThis as Record<string, unknown>)[k] : undefined
  return c as new(b: ArrayBuffer, o: number, n: number) => ArrayBufferView
}

const bytesPer = (k: Kind): number =>
  k === "ArrayBuffer" || k === "DataView" || k === "v8" ? 1 : (ctorOf(k) as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT

/**
 * `out[k] = x` as an own property for every key, "__proto__" included (assigning that
 * one would set `out`'s prototype and drop the key).
 *
 * @since 0.1.0
 * @internal
 */
export const setKey = (out: Record<string, unknown>, k: string, x: unknown): void => {
  if (k === "__proto__") Object.defineProperty(out, k, { value: x, enumerable: true, writable: true, configurable: true })
  else out[k] = x
}

/**
 * Is `v` an object literal (its prototype `Object.prototype`, or none)?
 *
 * @since 0.1.0
 * @internal
 */
export const isPlain = (v: object): boolean => {
  const p = Object.getPrototypeOf(v)
  return p === Object.prototype || p === null
}

/**
 * `mapDeep`'s "not replaced, look inside".
 *
 * @since 0.1.0
 * @internal
 */
export const KEEP: unique symbol = Symbol("keep")

/**
 * `v` with each object `replace` answers for (other than {@link KEEP}) replaced, inside
 * arrays and plain objects down to `depth` levels; what is unchanged is not copied (copy
 * on write; a copied object keeps every own key, "__proto__" included).
 *
 * @since 0.1.0
 * @internal
 */
export const mapDeep = (v: unknown, depth: number, replace: (o: object) => unknown): unknown => {
  if (typeof v !== "object" || v === null || depth < 0) return v
  const r = replace(v)
  if (r !== KEEP) return r
  if (depth === 0) return v
  if (Array.isArray(v)) {
    let copy: Array<unknown> | undefined
    for (let i = 0; i < v.length; i++) {
      const x = mapDeep(v[i], depth - 1, replace)
      if (x !== v[i]) (copy ??= v.slice())[i] = x
    }
    return copy ?? v
  }
  if (!isPlain(v)) return v
  let copy: Record<string, unknown> | undefined
  for (const k of Object.keys(v)) {
    const x0 = (v as Record<string, unknown>)[k]
    const x = mapDeep(x0, depth - 1, replace)
    // the spread copies every own key, "__proto__" too, and setKey keeps it an own key
    if (x !== x0) setKey(copy ??= { ...(v as Record<string, unknown>) }, k, x)
  }
  return copy ?? v
}

/**
 * An encoded reply: `parts` written in order make the frame (`parts[0]` is the prefix and
 * head); `bytes` is its length.
 *
 * @since 0.1.0
 * @internal
 */
export interface Encoded {
  readonly parts: ReadonlyArray<Uint8Array>
  readonly bytes: number
}

/**
 * Encodes `value` as one reply frame; `serializeSeconds(head)` is called once the head
 * is written and gives the seconds to report (the encoder's own time, measured by the
 * caller).
 *
 * @since 0.1.0
 * @internal
 */
export const encode = (value: unknown, serializeSeconds: () => number = () => 0): Encoded => {
  const bufs: Array<Uint8Array> = []
  const meta: Array<[Kind, number]> = []
  const take = (v: ArrayBufferView | ArrayBuffer | object, opaque = false): unknown => {
    let bytes: Uint8Array<ArrayBufferLike>
    let kind: Kind | undefined
    if (opaque) {
      kind = "v8"
      bytes = serialize(v)
    } else if (ArrayBuffer.isView(v)) {
      kind = kindOf(v)
      if (kind === undefined) return v
      bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
    } else {
      kind = "ArrayBuffer"
      bytes = new Uint8Array(v as ArrayBuffer)
    }
    bufs.push(bytes)
    meta.push([kind, bytes.byteLength])
    return { [PLACEHOLDER]: meta.length - 1 }
  }
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v !== "object" || v === null) return v
    if (ArrayBuffer.isView(v)) return take(v)
    if (v instanceof ArrayBuffer || v instanceof SharedArrayBuffer) return take(v as ArrayBuffer)
    if (depth === 0) return v
    if (Array.isArray(v)) {
      if (Object.getPrototypeOf(v) !== Array.prototype) return v
      const out = new Array<unknown>(v.length)
      for (let i = 0; i < v.length; i++) if (i in v) out[i] = walk(v[i], depth - 1)
      return out
    }
    if (!isPlain(v)) return v
    if (Object.hasOwn(v, PLACEHOLDER)) return take(v, true)
    const out: Record<string, unknown> = Object.getPrototypeOf(v) === null ? Object.create(null) : {}
    for (const k of Object.keys(v)) {
      const x = walk((v as Record<string, unknown>)[k], depth - 1)
      setKey(out, k, x)
    }
    return out
  }
  const skeleton = walk(value, 32)
  const head = serialize({ skeleton, meta })
  if (head.byteLength > MAX_HEAD_BYTES) {
    throw new FrameError(`a reply's head of ${head.byteLength} bytes is over the data plane's limit of ${MAX_HEAD_BYTES} (MAX_HEAD_BYTES)`)
  }
  let payload = 0
  for (const b of bufs) payload += b.byteLength
  if (payload > MAX_REPLY_BYTES) {
    throw new FrameError(`a reply of ${payload} bytes of buffers is over the data plane's limit of ${MAX_REPLY_BYTES} (MAX_REPLY_BYTES)`)
  }
  const prefix = new Uint8Array(12)
  const dv = new DataView(prefix.buffer)
  dv.setUint32(0, head.byteLength, true)
  dv.setFloat64(4, serializeSeconds(), true)
  return { parts: [prefix, head, ...bufs], bytes: 12 + head.byteLength + payload }
}

/**
 * A decoded reply.
 *
 * @since 0.1.0
 * @internal
 */
export interface Decoded {
  readonly value: unknown
  /** the frame's length */
  readonly bytes: number
  /** the sender's encoding time, in seconds */
  readonly serialize: number
  /** this decoder's time (copying and v8), in seconds */
  readonly deserialize: number
}

// arithmetic, not `(n + 7) & ~7`: bitwise operators wrap at 2^31, and replies may be larger
const align = (n: number): number => Math.ceil(n / 8) * 8

/**
 * Copies what `target` still lacks past its first `got` bytes from `chunk` at `at`, as much
 * as `chunk` has; the number of bytes copied.
 */
const copyInto = (target: Uint8Array, got: number, chunk: Uint8Array, at: number): number => {
  const n = Math.min(target.byteLength - got, chunk.byteLength - at)
  target.set(chunk.subarray(at, at + n), got)
  return n
}

/**
 * Bytes free for a reply's buffers where it arrives: `process.availableMemory()` (within a
 * cgroup's limit), or `os.freemem()`.
 */
const freeMemory = (): number => {
  const fromProcess = typeof process.availableMemory === "function" ? process.availableMemory() : 0
  const free = process.getBuiltinModule("node:os").freemem()
  return fromProcess > 0 ? Math.min(fromProcess, free) : free
}

/**
 * Decodes reply frames from chunks as they arrive, one frame at a time: `push` returns
 * the frame when its last byte came (the chunk's surplus is kept for the next frame).
 * Throws on a frame that is not one, or one over a limit ({@link FrameError}).
 *
 * Each part is copied once, where it will stay: the 12-byte prefix into a small buffer,
 * the head into a buffer of the head's length (checked against {@link MAX_HEAD_BYTES}
 * first), the raw bytes into the payload, allocated once the head says how long it is
 * (checked against {@link MAX_REPLY_BYTES} and the memory free first).
 *
 * @since 0.1.0
 * @internal
 */
export class Decoder {
  private readonly prefix = new Uint8Array(12)
  private prefixGot = 0
  /** the head being read (after the prefix) */
  private headBuf: Uint8Array | undefined
  private headGot = 0
  private ser = 0
  /** bytes that came after a complete frame: the start of the next one */
  private rest: Uint8Array | undefined
  private head: { skeleton: unknown; meta: Array<[Kind, number]>; serialize: number; headBytes: number } | undefined
  private payload: ArrayBuffer | undefined
  private offsets: Array<number> = []
  private buf = 0
  private filled = 0
  private time = 0

  push(chunk: Uint8Array): Decoded | undefined {
    const t0 = performance.now()
    try {
      if (this.rest !== undefined) {
        chunk = chunk.byteLength === 0 ? this.rest : Buffer.concat([this.rest, chunk])
        this.rest = undefined
      }
      return this.step(chunk)
    } finally {
      this.time += performance.now() - t0
    }
  }

  /** Reads the prefix and the head from `chunk`; the offset after what it took. */
  private readHead(chunk: Uint8Array): number {
    let at = 0
    if (this.headBuf === undefined) {
      at = copyInto(this.prefix, this.prefixGot, chunk, 0)
      this.prefixGot += at
      if (this.prefixGot < 12) return at
      const dv = new DataView(this.prefix.buffer)
      const headLength = dv.getUint32(0, true)
      this.ser = dv.getFloat64(4, true)
      if (headLength > MAX_HEAD_BYTES) {
        throw new FrameError(`reply head of ${headLength} bytes claimed, over the data plane's limit of ${MAX_HEAD_BYTES} (MAX_HEAD_BYTES)`)
      }
      // not zeroed: every byte is written below before it is read
      this.headBuf = Buffer.allocUnsafeSlow(headLength)
      this.headGot = 0
    }
    const m = copyInto(this.headBuf, this.headGot, chunk, at)
    this.headGot += m
    at += m
    if (this.headGot < this.headBuf.byteLength) return at
    const h = deserialize(this.headBuf) as { skeleton: unknown; meta: Array<[Kind, number]> }
    const headBytes = 12 + this.headBuf.byteLength
    this.headBuf = undefined
    this.prefixGot = 0
    if (typeof h !== "object" || h === null || !Array.isArray(h.meta)) throw new FrameError("frame head is not a Tessera head")
    let size = 0
    const offsets: Array<number> = []
    for (const entry of h.meta) {
      const [k, n] = Array.isArray(entry) ? entry : [undefined, undefined]
      if (typeof k !== "string" || (k !== "ArrayBuffer" && k !== "v8" && typeof ctorOf(k) !== "function")) {
        throw new FrameError(`unknown buffer kind ${String(k)}`)
      }
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0 || n % bytesPer(k) !== 0) {
        throw new FrameError(`a ${k} buffer of ${String(n)} bytes`)
      }
      offsets.push(size)
      size = align(size + n)
      if (size > MAX_REPLY_BYTES) {
        throw new FrameError(`reply of more than ${MAX_REPLY_BYTES} bytes of buffers claimed, over the data plane's limit (MAX_REPLY_BYTES)`)
      }
    }
    const free = freeMemory()
    if (size > free) throw new FrameError(`reply of ${size} bytes of buffers claimed, but only ${free} bytes of memory are free here`)
    this.head = { ...h, serialize: this.ser, headBytes }
    this.offsets = offsets
    // every byte is written below before any view is handed out: no need to zero it first
    this.payload = Buffer.allocUnsafeSlow(size).buffer as ArrayBuffer
    this.buf = 0
    this.filled = 0
    return at
  }

  private step(chunk: Uint8Array): Decoded | undefined {
    let at = 0
    if (this.head === undefined) {
      at = this.readHead(chunk)
      if (this.head === undefined) return undefined
    }
    const meta = this.head.meta
    const target = new Uint8Array(this.payload!)
    while (at < chunk.byteLength && this.buf < meta.length) {
      const want = meta[this.buf]![1] - this.filled
      const n = Math.min(want, chunk.byteLength - at)
      target.set(chunk.subarray(at, at + n), this.offsets[this.buf]! + this.filled)
      at += n
      this.filled += n
      if (this.filled === meta[this.buf]![1]) {
        this.buf++
        this.filled = 0
      }
    }
    while (this.buf < meta.length && meta[this.buf]![1] === 0) this.buf++
    if (this.buf < meta.length) return undefined
    const done = this.complete()
    // the next frame's first bytes: a copy, `chunk` may be a read buffer used again
    if (at < chunk.byteLength) this.rest = chunk.slice(at)
    return done
  }

  private complete(): Decoded {
    const head = this.head!
    const meta = head.meta
    const payload = this.payload!
    const views = meta.map(([k, n], i): unknown =>
      k === "ArrayBuffer"
        ? payload.slice(this.offsets[i]!, this.offsets[i]! + n)
        : k === "v8"
        ? deserialize(new Uint8Array(payload, this.offsets[i]!, n))
        : new (ctorOf(k))(payload, this.offsets[i]!, n / bytesPer(k))
    )
    const value = fill(head.skeleton, views, 33)
    let bytes = head.headBytes
    for (const [, n] of meta) bytes += n
    this.head = undefined
    this.payload = undefined
    const seconds = this.time / 1000
    this.time = 0
    return { value, bytes, serialize: head.serialize, deserialize: seconds }
  }

  private scratch: Uint8Array | undefined

  /**
   * Where the next read from a stream should land (for `net`'s `onread` buffer): while a
   * frame's raw bytes are due, the rest of the current buffer inside the receive buffer,
   * so they need no copy; else a scratch buffer. Give what was read to {@link wrote}.
   */
  target(): Uint8Array {
    const head = this.head
    if (head !== undefined && this.rest === undefined && this.buf < head.meta.length) {
      return new Uint8Array(this.payload!, this.offsets[this.buf]! + this.filled, head.meta[this.buf]![1] - this.filled)
    }
    return this.scratch ??= new Uint8Array(65536)
  }

  /** `n` bytes were read into `into` (the last {@link target}). */
  wrote(into: Uint8Array, n: number): Decoded | undefined {
    // read into the scratch buffer: `push` copies what it keeps
    if (into === this.scratch || this.head === undefined || into.buffer !== this.payload) return this.push(into.subarray(0, n))
    const t0 = performance.now()
    const meta = this.head.meta
    this.filled += n
    if (this.filled === meta[this.buf]![1]) {
      this.buf++
      this.filled = 0
    }
    while (this.buf < meta.length && meta[this.buf]![1] === 0) this.buf++
    this.time += performance.now() - t0
    return this.buf < meta.length ? undefined : this.complete()
  }

  /** Whether a frame (or part of one) is waiting for more bytes. */
  get busy(): boolean {
    return this.head !== undefined || this.prefixGot > 0 || this.headBuf !== undefined || this.rest !== undefined
  }
}

const fill = (v: unknown, views: ReadonlyArray<unknown>, depth: number): unknown => {
  if (typeof v !== "object" || v === null || depth === 0 || ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return v
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (i in v) v[i] = fill(v[i], views, depth - 1)
    return v
  }
  if (!isPlain(v)) return v
  const o = v as Record<string, unknown>
  const keys = Object.keys(o)
  if (keys.length === 1 && keys[0] === PLACEHOLDER && typeof o[PLACEHOLDER] === "number") return views[o[PLACEHOLDER]]
  for (const k of keys) o[k] = fill(o[k], views, depth - 1)
  return o
}

/**
 * A data-plane frame that is not one.
 *
 * @since 0.1.0
 * @internal
 */
export class FrameError extends Error {
  override readonly name = "FrameError"
}

/**
 * Encodes a request for `keys`.
 *
 * @since 0.1.0
 * @internal
 */
export const encodeRequest = (keys: ReadonlyArray<string>): Uint8Array => {
  const body = Buffer.from(JSON.stringify(keys), "utf8")
  const out = Buffer.allocUnsafe(4 + body.byteLength)
  out.writeUInt32LE(body.byteLength, 0)
  body.copy(out, 4)
  return out
}

/**
 * Splits request frames from a stream: feed chunks, get every complete request's keys.
 * A request's length is checked against {@link MAX_REQUEST_BYTES} as soon as its 4-byte
 * prefix is in (a longer one throws {@link FrameError} before a byte of it is kept); its
 * body is read into one buffer of that length, each packet copied once.
 *
 * @since 0.1.0
 * @internal
 */
export class RequestReader {
  private readonly prefix = Buffer.alloc(4)
  private prefixGot = 0
  /** the body being read, once its length is known */
  private body: Buffer | undefined
  private got = 0

  push(chunk: Uint8Array): Array<ReadonlyArray<string>> {
    const out: Array<ReadonlyArray<string>> = []
    let at = 0
    while (at < chunk.byteLength) {
      if (this.body === undefined) {
        const n = copyInto(this.prefix, this.prefixGot, chunk, at)
        this.prefixGot += n
        at += n
        if (this.prefixGot < 4) break
        const length = this.prefix.readUInt32LE(0)
        if (length > MAX_REQUEST_BYTES) {
          throw new FrameError(`data-plane request of ${length} bytes claimed, over the limit of ${MAX_REQUEST_BYTES} (MAX_REQUEST_BYTES)`)
        }
        this.body = Buffer.allocUnsafe(length)
        this.got = 0
      }
      const m = copyInto(this.body, this.got, chunk, at)
      this.got += m
      at += m
      if (this.got < this.body.byteLength) break
      let keys: unknown
      try {
        keys = JSON.parse(this.body.toString("utf8"))
      } catch {
        keys = undefined
      }
      if (!Array.isArray(keys) || !keys.every((k) => typeof k === "string")) {
        throw new FrameError("data-plane request is not a list of keys")
      }
      out.push(keys)
      this.body = undefined
      this.prefixGot = 0
    }
    return out
  }
}

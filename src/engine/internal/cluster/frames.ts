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
 * Leaves out: identity (an array reached twice arrives as two arrays), class instances
 * other than typed arrays (v8-serialised as before: own fields only), byte order (both
 * ends are the same build on little-endian hosts).
 *
 * @since 0.1.0
 * @internal
 */
import { deserialize, serialize } from "node:v8"

const PLACEHOLDER = "~tessera/buf"

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
  const c = (kinds as Record<string, unknown>)[k] ?? (globalThis as Record<string, unknown>)[k]
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
  const prefix = new Uint8Array(12)
  const dv = new DataView(prefix.buffer)
  dv.setUint32(0, head.byteLength, true)
  dv.setFloat64(4, serializeSeconds(), true)
  let bytes = 12 + head.byteLength
  for (const b of bufs) bytes += b.byteLength
  return { parts: [prefix, head, ...bufs], bytes }
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

const align = (n: number): number => (n + 7) & ~7

/**
 * Decodes reply frames from chunks as they arrive, one frame at a time: `push` returns
 * the frame when its last byte came (the chunk's surplus is kept for the next frame).
 * Throws on a frame that is not one ({@link FrameError}).
 *
 * @since 0.1.0
 * @internal
 */
export class Decoder {
  private pending: Array<Uint8Array> = []
  private pendingBytes = 0
  private head: { skeleton: unknown; meta: Array<[Kind, number]>; serialize: number; headBytes: number } | undefined
  private payload: ArrayBuffer | undefined
  private offsets: Array<number> = []
  private buf = 0
  private filled = 0
  private time = 0

  push(chunk: Uint8Array): Decoded | undefined {
    const t0 = performance.now()
    try {
      return this.step(chunk)
    } finally {
      this.time += performance.now() - t0
    }
  }

  private gather(n: number): Uint8Array | undefined {
    if (this.pendingBytes < n) return undefined
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending)
    this.pending = all.byteLength > n ? [all.subarray(n)] : []
    this.pendingBytes = all.byteLength - n
    return all.subarray(0, n)
  }

  private step(chunk: Uint8Array): Decoded | undefined {
    if (this.head === undefined) {
      if (chunk.byteLength > 0) {
        this.pending.push(chunk)
        this.pendingBytes += chunk.byteLength
      }
      if (this.pendingBytes < 12) return undefined
      const pre = this.gather(12)!
      const dv = new DataView(pre.buffer, pre.byteOffset, 12)
      const headLength = dv.getUint32(0, true)
      const ser = dv.getFloat64(4, true)
      if (this.pendingBytes < headLength) {
        this.pending.unshift(pre)
        this.pendingBytes += 12
        return undefined
      }
      const h = deserialize(this.gather(headLength)!) as { skeleton: unknown; meta: Array<[Kind, number]> }
      if (typeof h !== "object" || h === null || !Array.isArray(h.meta)) throw new FrameError("frame head is not a Tessera head")
      this.head = { ...h, serialize: ser, headBytes: 12 + headLength }
      let size = 0
      this.offsets = []
      for (const [k, n] of h.meta) {
        if (k !== "ArrayBuffer" && k !== "v8" && ctorOf(k) === undefined) throw new FrameError(`unknown buffer kind ${String(k)}`)
        this.offsets.push(size)
        size = align(size + n)
      }
      // every byte is written below before any view is handed out: no need to zero it first
      this.payload = Buffer.allocUnsafeSlow(size).buffer as ArrayBuffer
      this.buf = 0
      this.filled = 0
      const rest = this.pending
      this.pending = []
      this.pendingBytes = 0
      chunk = rest.length === 0 ? new Uint8Array(0) : rest.length === 1 ? rest[0]! : Buffer.concat(rest)
    }
    const meta = this.head.meta
    const target = new Uint8Array(this.payload!)
    let at = 0
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
    if (at < chunk.byteLength) {
      this.pending = [chunk.subarray(at)]
      this.pendingBytes = chunk.byteLength - at
    }
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
    if (head !== undefined && this.pendingBytes === 0 && this.buf < head.meta.length) {
      return new Uint8Array(this.payload!, this.offsets[this.buf]! + this.filled, head.meta[this.buf]![1] - this.filled)
    }
    return this.scratch ??= new Uint8Array(65536)
  }

  /** `n` bytes were read into `into` (the last {@link target}). */
  wrote(into: Uint8Array, n: number): Decoded | undefined {
    if (into === this.scratch || this.head === undefined || into.buffer !== this.payload) return this.push(into.slice(0, n))
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
    return this.head !== undefined || this.pendingBytes > 0
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
 *
 * @since 0.1.0
 * @internal
 */
export class RequestReader {
  private pending: Buffer = Buffer.alloc(0)
  push(chunk: Uint8Array): Array<ReadonlyArray<string>> {
    this.pending = this.pending.byteLength === 0 ? Buffer.from(chunk) : Buffer.concat([this.pending, chunk])
    const out: Array<ReadonlyArray<string>> = []
    while (this.pending.byteLength >= 4) {
      const n = this.pending.readUInt32LE(0)
      if (this.pending.byteLength < 4 + n) break
      const keys = JSON.parse(this.pending.subarray(4, 4 + n).toString("utf8")) as unknown
      if (!Array.isArray(keys) || !keys.every((k) => typeof k === "string")) {
        throw new FrameError("data-plane request is not a list of keys")
      }
      out.push(keys)
      this.pending = this.pending.subarray(4 + n)
    }
    return out
  }
}

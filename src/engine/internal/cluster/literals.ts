/**
 * Large literal arguments (typed arrays and `ArrayBuffer`s of at least
 * {@link LITERAL_MIN_BYTES} bytes, in a task's arguments at any depth of plain objects
 * and arrays, chunks' `data` included) sent to each worker once, as dask's `scatter`
 * does, instead of inside every batch of every compute that uses them.
 *
 * The scheduler replaces each such value by a placeholder `{ "~tessera/lit": key }`
 * (a user's object of that shape travels wrapped as `{ "~tessera/esc": object }`)
 * and ships the value itself only to workers that do not hold it yet (`RunRequest.literals`);
 * a worker keeps the values it got and puts them back in place before it runs a batch.
 * A worker missing one (a batch overtaken by a later one, a worker that restarted) answers
 * `LiteralsMissing`, and the scheduler sends that batch again with the values.
 *
 * A literal's key is its identity in the driver (the view's buffer, offset, length and
 * type) plus a 64-bit hash of its bytes, so an array changed in place between computes
 * gets a new key and is sent again: the workers never compute with stale data. The hash
 * is taken once per compute and literal. Workers drop a literal when the driver's array
 * is garbage-collected (`FinalizationRegistry`, the next batch says so), when the
 * driver's cluster closes, or when the driver stops pinging (it died; workerProcess.ts).
 *
 * Leaves out: sharing literals between drivers (each driver's keys are its own), literals
 * in class instances (sent inside each batch, as before).
 *
 * @since 0.1.0
 * @internal
 */
import * as Chunk from "../../Chunk.ts"
import { isPlain, KEEP, mapDeep } from "./frames.ts"

/**
 * Typed arrays and `ArrayBuffer`s smaller than this travel inside every batch.
 *
 * @since 0.1.0
 * @internal
 */
export const LITERAL_MIN_BYTES = 16 * 1024

/** The placeholder's field. */
const LIT = "~tessera/lit"
/** wraps a user's object that would read as a placeholder (or as such a wrapper) */
const ESC = "~tessera/esc"

const MAX_DEPTH = 32

type Big = ArrayBufferView | ArrayBuffer | SharedArrayBuffer

const bigOf = (v: object): Big | undefined => {
  if (ArrayBuffer.isView(v)) return v.byteLength >= LITERAL_MIN_BYTES ? v : undefined
  if (v instanceof ArrayBuffer || (typeof SharedArrayBuffer !== "undefined" && v instanceof SharedArrayBuffer)) {
    return v.byteLength >= LITERAL_MIN_BYTES ? v : undefined
  }
  return undefined
}

/** Whether `v` is a plain object whose one key is `key`. */
const soleKey = (v: object, key: string): boolean => isPlain(v) && Object.hasOwn(v, key) && Object.keys(v).length === 1

/**
 * A 64-bit hash (two 32-bit multiplicative hashes) of a value's bytes, as 16 hex digits.
 *
 * @since 0.1.0
 * @internal
 */
export const hashBytes = (v: Big): string => {
  const bytes = ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(v)
  const words = bytes.byteOffset % 4 === 0 ? new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2) : null
  let h1 = 0x811c9dc5 | 0
  let h2 = 0x9e3779b9 | 0
  let tail = 0
  if (words !== null) {
    for (let i = 0; i < words.length; i++) {
      const w = words[i]!
      h1 = Math.imul(h1 ^ w, 0x01000193)
      h2 = Math.imul((h2 << 5 | h2 >>> 27) ^ w, 0x27d4eb2d)
    }
    tail = words.length * 4
  }
  for (let i = tail; i < bytes.length; i++) {
    h1 = Math.imul(h1 ^ bytes[i]!, 0x01000193)
    h2 = Math.imul((h2 << 5 | h2 >>> 27) ^ bytes[i]!, 0x27d4eb2d)
  }
  return (h1 >>> 0).toString(16).padStart(8, "0") + (h2 >>> 0).toString(16).padStart(8, "0")
}

/**
 * The driver's side: keys for literals, which worker holds which, and what to drop.
 *
 * @since 0.1.0
 * @internal
 */
export class LiteralBook {
  private next = 0
  /** per buffer: "offset:length:type" → key (a new key when the bytes changed), and its live keys */
  private readonly ids = new WeakMap<object, { views: Map<string, { key: string; hash: string }>; keys: Array<string> }>()
  /** per worker: the literal keys it holds (as far as this driver knows) */
  private readonly held = new Map<string, Set<string>>()
  private readonly dropped: Array<string> = []
  private readonly registry = new FinalizationRegistry<ReadonlyArray<string>>((keys) => void this.dropped.push(...keys))
  /** per compute: each literal hashed once (weak: the book keeps no array alive) */
  private seen = new WeakMap<object, string>()

  private readonly prefix: string

  constructor(prefix: string) {
    this.prefix = prefix
  }

  /** Starts a compute: literals are hashed again (an array may have changed since). */
  beginCompute(): void {
    this.seen = new WeakMap()
  }

  private keyOf(v: Big): string {
    const known = this.seen.get(v)
    if (known !== undefined) return known
    const buffer = ArrayBuffer.isView(v) ? v.buffer : v
    const view = ArrayBuffer.isView(v) ? `${v.byteOffset}:${v.byteLength}:${v.constructor.name}` : `0:${v.byteLength}:${v.constructor.name}`
    let b = this.ids.get(buffer)
    if (b === undefined) {
      this.ids.set(buffer, b = { views: new Map(), keys: [] })
      // the buffer's keys, dropped when it is collected
      this.registry.register(buffer, b.keys)
    }
    const hash = hashBytes(v)
    let e = b.views.get(view)
    if (e === undefined || e.hash !== hash) {
      if (e !== undefined) {
        this.dropped.push(e.key)
        b.keys.splice(b.keys.indexOf(e.key), 1)
      }
      e = { key: `${this.prefix}-${this.next++}`, hash }
      b.views.set(view, e)
      b.keys.push(e.key)
    }
    this.seen.set(v, e.key)
    return e.key
  }

  /**
   * `args` with each large literal replaced by its placeholder; the values `worker`
   * lacks are added to `out` (and counted as held by it from now on).
   */
  prepare(args: ReadonlyArray<unknown>, worker: string, out: Map<string, unknown>): ReadonlyArray<unknown> {
    let held = this.held.get(worker)
    if (held === undefined) this.held.set(worker, held = new Set())
    const h = held
    return mapDeep(args, MAX_DEPTH, (v) => {
      // the user's own `{ "~tessera/lit": … }` is data, not a placeholder
      if (soleKey(v, LIT) || soleKey(v, ESC)) return { [ESC]: v }
      const big = bigOf(v)
      if (big === undefined) return KEEP
      const key = this.keyOf(big)
      if (!h.has(key)) {
        h.add(key)
        out.set(key, big)
      }
      return { [LIT]: key }
    }) as ReadonlyArray<unknown>
  }

  /** `worker` lacks these (it said so): they are sent again with its next batch. */
  forget(worker: string, keys: ReadonlyArray<string>): void {
    const held = this.held.get(worker)
    if (held !== undefined) for (const k of keys) held.delete(k)
  }

  /** `worker` is gone: it holds nothing. */
  forgetWorker(worker: string): void {
    this.held.delete(worker)
  }

  /** The keys `worker` should drop now (their arrays were collected or changed). */
  takeDropped(worker: string): ReadonlyArray<string> {
    const held = this.held.get(worker)
    if (held === undefined || this.dropped.length === 0) return []
    const out: Array<string> = []
    for (const k of this.dropped) {
      if (held.delete(k)) out.push(k)
    }
    // a key no worker holds any more is done with
    for (let i = this.dropped.length - 1; i >= 0; i--) {
      const k = this.dropped[i]!
      let anywhere = false
      for (const s of this.held.values()) if (s.has(k)) anywhere = true
      if (!anywhere) this.dropped.splice(i, 1)
    }
    return out
  }

  /** Every worker's keys (the driver's cluster closing). */
  allHeld(): ReadonlyArray<readonly [worker: string, keys: ReadonlyArray<string>]> {
    return [...this.held].filter(([, ks]) => ks.size > 0).map(([w, ks]) => [w, [...ks]] as const)
  }
}

/**
 * The worker's side: `args` with each placeholder replaced by the literal it names;
 * `missing` gets the keys this worker does not hold.
 *
 * @since 0.1.0
 * @internal
 */
export const restoreLiterals = (
  args: ReadonlyArray<unknown>,
  literals: ReadonlyMap<string, unknown>,
  missing: Set<string>
): ReadonlyArray<unknown> =>
  mapDeep(args, MAX_DEPTH + 1, (v) => {
    if (Array.isArray(v) || !isPlain(v)) return KEEP
    if (soleKey(v, ESC)) return (v as Record<string, unknown>)[ESC]
    const lit = (v as Record<string, unknown>)[LIT]
    if (typeof lit !== "string" || Object.keys(v).length !== 1) return KEEP
    if (!literals.has(lit)) missing.add(lit)
    return literals.get(lit)
  }) as ReadonlyArray<unknown>

/**
 * The worker's side: a literal as the worker keeps it. A typed array arrives in memory of
 * its own (the wire cannot carry shared memory) and is copied once into shared memory,
 * so that every batch that takes it hands it to the pool's threads without a copy:
 * `postMessage` copies an array that is not shared each time it is sent (the demo's
 * input chunks, 80 KB each, were copied into the pool with every batch). Other values
 * (ArrayBuffers, DataViews, arrays already shared) are kept as they came.
 *
 * Kernels read their inputs without changing them (shared results already rely on it).
 *
 * @since 0.1.0
 * @internal
 */
export const keepLiteral = (v: unknown): unknown =>
  ArrayBuffer.isView(v) && !(v instanceof DataView) ? Chunk.shareArray(v as Chunk.TypedArray) : v

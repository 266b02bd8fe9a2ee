/**
 * The column sink of the trace reader (the analysis loader's): parses each record's map
 * directly into column builders (no per-record objects), recognising keys and repeated
 * strings through the `StringPool`. `Compute`, `Managed Memory` and `Resource Usage`
 * events become rows of the three tables; metadata events (the `Pipeline Graph` event,
 * any `M` event) are kept whole, as `TraceEvent`s in `metadata`, and `Driver` X events
 * (Tessera's driver segments, a few per compute) whole in `driver`, both decoded by the
 * generic decoder in the same pass, so nobody needs to decode a file a second time to
 * find them; `Transfer` and `Clock Offset` events (cluster peer fetches, GPU copies,
 * clock offsets: few next to `Compute`) likewise whole in `extra`; every other event is
 * only counted.
 *
 * A `Compute` event's Tessera args (stage, type, dtype, shape, dependents, startstops,
 * peak_memory, io_bytes) fill the task columns' details; DASF's events lack most of them
 * (null). `shape` is kept as a string ("1000x3", `columns.ts` `shapeText`): the fast
 * path interns the array's raw msgpack bytes in a side pool and formats each distinct
 * shape once.
 *
 * Records of an unexpected shape (a field of an unusual type, an extension, anything
 * the fast path does not handle) fall back to the generic decoder (`Framing.ts`), which
 * also produces the typed errors. The fast path never accepts a record the generic
 * decoder rejects: it falls back on a non-string `name`, a non-number or non-finite
 * `timestamp`, a negative or non-finite `duration`, non-map `args`, a `__proto__` or
 * non-string, non-number key, booleans where it wants numbers, and nesting deeper than
 * `maxNesting`, wherever in the record.
 *
 * Hot path: plain imperative code with a cursor, on purpose.
 *
 * @since 0.1.0
 * @internal
 */
import { EventNames, type TraceEvent } from "../TraceEvent.ts"
import { DecodedTaskColumns, MemoryColumns, phaseNames, resourceArgs, ResourceColumns, shapeText } from "./columns.ts"
import { decodeEventUnsafe, headerBytes, isDuration, isTime, maxNesting } from "./framing.ts"
import { StringPool } from "./stringPool.ts"

/**
 * Args the decoder may leave undecoded (a column projection): a skipped arg's value is
 * stepped over (checked as the generic decoder checks any value, never interned or
 * parsed) and its column holds null (-1 / NaN) for rows the fast path decodes, or, for
 * the task details (stage, type, dtype, shape, peak_memory, io_bytes, startstops),
 * nothing at all (an empty column). Records that fall back to the generic decoder still
 * fill the other columns: callers that skip an arg must not read its column (the
 * analysis loader replaces it by an all-null one).
 *
 * @since 0.1.0
 * @internal
 */
export interface ArgSkip {
  /** `Compute` args */
  readonly compute?: ReadonlyArray<"state" | "size" | "cpu_time" | "dependencies" | "stage" | "type" | "dtype" | "shape" | "dependents" | "startstops" | "peak_memory" | "io_bytes">
  /** `Managed Memory` args */
  readonly memory?: ReadonlyArray<"key" | "state" | "size" | "tasks">
}

/** Thrown inside the fast path to ask for the generic decoder. */
class Fallback {}
const fallback = new Fallback()
/** Thrown inside the fast path for a metadata event: decoded whole and kept. */
class Keep {}
const keep = new Keep()
/** Events kept whole in `extra` (profiler/Trace.ts `transferEventName`, `clockEventName`). */
const extraNames = ["Transfer", "Clock Offset"] as const

/**
 * Decodes records into the three raw tables and the metadata events.
 *
 * @since 0.1.0
 * @internal
 */
export class ColumnDecoder {
  readonly pool: StringPool
  readonly tasks = new DecodedTaskColumns()
  readonly memory = new MemoryColumns()
  readonly resources = new ResourceColumns()
  /** metadata events (`Pipeline Graph`, any `M` event), in file order */
  readonly metadata: Array<TraceEvent> = []
  /** `Driver` X events, in file order */
  readonly driver: Array<TraceEvent> = []
  /** `Transfer` X and `Clock Offset` events, in file order */
  readonly extra: Array<TraceEvent> = []
  /** records that took the generic path (metadata events are not counted) */
  fallbacks = 0

  private b: Uint8Array = new Uint8Array(0)
  private pos = 0
  private dv: DataView = new DataView(new ArrayBuffer(8))
  private readonly depScratch: Array<number> = []
  private readonly dependentScratch: Array<number> = []
  private readonly resScratch = new Float64Array(resourceArgs.length)
  private readonly phaseScratch = new Float64Array(2 * phaseNames.length)
  // shapes: raw msgpack bytes of the array -> id in `shapeRaw` -> string id in `pool`
  private readonly shapeRaw = new StringPool()
  private shapeIds = new Int32Array(64).fill(-1)
  private readonly shapeDims: Array<number> = []

  // interned ids of the keys and names the fast path knows
  private readonly K: Record<string, number>
  private readonly protoId: number
  private readonly resIds: Int32Array
  private readonly last = new Int32Array(16).fill(-1)
  private readonly prev = new Int32Array(16).fill(-1)
  // known keys by a 4-byte signature, open addressing over typed arrays (a Map.get per
  // key cost ~15% of a load): slot -> index + 1 into knownWordAt / knownIds
  private readonly knownSlots = new Int32Array(256)
  private readonly knownSigs = new Int32Array(256)
  // key k's bytes as big-endian words at offsets 0, 4, ... and a last one ending at
  // its end (overlapping): knownWords[knownWordAt[k] .. knownWordAt[k + 1])
  private readonly knownWords: Int32Array
  private readonly knownWordAt: Int32Array
  private readonly knownIds: Array<number> = []
  /** events per name id (dense; ids of event names are small) */
  private countsById = new Float64Array(64)

  // args the fast path skips (see `ArgSkip`): flags by key id (their ids are small), so
  // that each arg costs one load, not a scan of the list
  private readonly computeSkip: Uint8Array
  private readonly memorySkip: Uint8Array

  /** `pool`: start from an existing pool (its ids stay as they are); `skip`: args left undecoded. */
  constructor(pool?: StringPool, skip?: ArgSkip) {
    this.pool = pool ?? new StringPool()
    const p = this.pool
    const ids = [
      "name",
      "timestamp",
      "duration",
      "phase",
      "process_id",
      "thread_id",
      "args",
      "key",
      "state",
      "size",
      "dependencies",
      "cpu_time",
      "tasks",
      "Compute",
      "Managed Memory",
      "Resource Usage",
      "X",
      EventNames.pipelineGraph,
      "M"
    ]
    // Tessera's Compute args and startstops fields, and the Driver event's name
    const details = ["stage", "shape", "dtype", "type", "dependents", "startstops", "peak_memory", "io_bytes", "action", "start", "stop"]
    this.K = Object.fromEntries([...ids, ...details, ...phaseNames, "Driver", "device", ...extraNames].map((s) => [s, p.intern(s)]))
    this.resIds = Int32Array.from(resourceArgs, (s) => p.intern(s))
    this.protoId = p.intern("__proto__")
    const enc = new TextEncoder()
    const words: Array<number> = []
    const wordAt: Array<number> = [0]
    for (const s of [...ids.slice(0, 13), "scope", ...details, ...resourceArgs]) {
      const bytes = enc.encode(s)
      if (bytes.length < 2 || bytes.length > 31) continue
      const sig = bytes.length | (bytes[0] << 8) | (bytes[1] << 16) | (bytes[bytes.length - 1] << 24)
      let slot = Math.imul(sig, 0x9e3779b1) >>> 24
      let taken = false
      while (this.knownSlots[slot] !== 0) {
        if (this.knownSigs[slot] === sig) taken = true
        slot = (slot + 1) & 255
      }
      if (taken) continue // same signature as an earlier key: that one keeps the fast path
      if (bytes.length >= 4) {
        const dv = new DataView(bytes.buffer)
        for (let o = 0; o < bytes.length; o = o + 4 >= bytes.length ? bytes.length : Math.min(o + 4, bytes.length - 4)) {
          words.push(dv.getInt32(o))
        }
      } // shorter keys: the signature holds every byte
      wordAt.push(words.length)
      this.knownIds.push(p.intern(s))
      this.knownSigs[slot] = sig
      this.knownSlots[slot] = this.knownIds.length
    }
    this.knownWords = Int32Array.from(words)
    this.knownWordAt = Int32Array.from(wordAt)
    const flags = (names: ReadonlyArray<string>) => {
      const ids = names.map((s) => p.intern(s))
      const out = new Uint8Array(ids.length === 0 ? 0 : Math.max(...ids) + 1)
      for (const id of ids) out[id] = 1
      return out
    }
    this.computeSkip = flags(skip?.compute ?? [])
    this.memorySkip = flags(skip?.memory ?? [])
    // the detail columns of skipped args stay empty (written for no row, not padded)
    const skipped = new Set(skip?.compute ?? [])
    this.tasks.leaveOut(([
      ["stage", "stage"],
      ["type", "type"],
      ["dtype", "dtype"],
      ["shape", "shape"],
      ["peak_memory", "peakMemory"],
      ["io_bytes", "ioBytes"],
      ["startstops", "phases"]
    ] as const).filter(([arg]) => skipped.has(arg)).map(([, column]) => column))
  }

  /** Decode the records of `bytes[0..end)` (whole records only); `fileOffset` for errors. */
  decodeFrames(bytes: Uint8Array, end: number, file: string, fileOffset: number): number {
    this.b = bytes
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    let off = 0
    let n = 0
    while (off < end) {
      const len = this.dv.getUint32(off + 4) + this.dv.getUint32(off) * 0x100000000
      const s = off + headerBytes
      const e = s + len
      try {
        this.record(s, e)
      } catch (err) {
        if (err === keep) this.addEvent(decodeEventUnsafe(bytes, s, e, file, fileOffset + off))
        else {
          if (err !== fallback && !(err instanceof RangeError)) throw err
          this.fallbacks++
          this.addEvent(decodeEventUnsafe(bytes, s, e, file, fileOffset + off))
        }
      }
      off = e
      n++
    }
    return n
  }

  // --- cursor primitives -----------------------------------------------------

  private arrayHeader(): number {
    const t = this.b[this.pos++]
    if (t >= 0x90 && t <= 0x9f) return t & 0x0f
    if (t === 0xdc) return (this.pos += 2, this.dv.getUint16(this.pos - 2))
    if (t === 0xdd) return (this.pos += 4, this.dv.getUint32(this.pos - 4))
    throw fallback
  }

  private mapHeader(): number {
    const t = this.b[this.pos++]
    if (t >= 0x80 && t <= 0x8f) return t & 0x0f
    if (t === 0xde) return (this.pos += 2, this.dv.getUint16(this.pos - 2))
    if (t === 0xdf) return (this.pos += 4, this.dv.getUint32(this.pos - 4))
    throw fallback
  }

  /**
   * A map key as a pool id. Known keys (DASF's fixed field and arg names) are
   * recognised by comparing their few bytes, without hashing; others go to the pool.
   */
  private key(): number {
    const b = this.b
    const t = b[this.pos]
    if (t >= 0xa1 && t <= 0xbf) {
      const len = t & 0x1f
      const at = this.pos + 1
      const sig = len | (b[at] << 8) | (b[at + 1] << 16) | (b[at + len - 1] << 24)
      let slot = Math.imul(sig, 0x9e3779b1) >>> 24
      for (let k = this.knownSlots[slot]; k !== 0; k = this.knownSlots[slot = (slot + 1) & 255]) {
        if (this.knownSigs[slot] !== sig) continue
        let same = true
        const words = this.knownWords
        const dv = this.dv
        for (let j = this.knownWordAt[k - 1], o = 0, last = this.knownWordAt[k]; j < last; j++) {
          if (dv.getInt32(at + o) !== words[j]) {
            same = false
            break
          }
          o = o + 4 > len - 4 ? len - 4 : o + 4
        }
        if (same) {
          this.pos = at + len
          return this.knownIds[k - 1]
        }
        break
      }
    }
    const id = this.str()
    // the generic decoder refuses these keys (nil: not a string or number)
    if (id === this.protoId || id === -1) throw fallback
    return id
  }

  /** A string value (no coercion) as a pool id: `name` must be a string. */
  private text(slot: number): number {
    const t = this.b[this.pos]
    if ((t >= 0xa0 && t <= 0xbf) || t === 0xd9 || t === 0xda || t === 0xdb) return this.str(slot)
    throw fallback
  }

  /** A number value (no nil, no boolean): a time. */
  private time(): number {
    const t = this.b[this.pos]
    if (t === 0xc0) throw fallback
    return this.num()
  }

  /**
   * String (or nil -> -1; integer -> its decimal string) as a pool id. `slot` names the
   * field: a value equal to that field's previous value (same worker, same key as the
   * record before, ...) is recognised by one byte comparison, without hashing.
   */
  private str(slot = 0): number {
    const b = this.b
    const t = b[this.pos]
    let len: number
    let at: number
    if (t >= 0xa0 && t <= 0xbf) (len = t & 0x1f, at = this.pos + 1)
    else if (t === 0xd9) (len = b[this.pos + 1], at = this.pos + 2)
    else if (t === 0xda) (len = this.dv.getUint16(this.pos + 1), at = this.pos + 3)
    else if (t === 0xdb) (len = this.dv.getUint32(this.pos + 1), at = this.pos + 5)
    else if (t === 0xc0) return (this.pos++, -1)
    else if (t <= 0x7f || (t >= 0xcc && t <= 0xd3) || t >= 0xe0) return this.pool.intern(String(this.num()))
    else throw fallback
    if (at + len > b.length) throw fallback
    this.pos = at + len
    const last = this.last[slot]
    if (last >= 0 && this.pool.matches(last, b, at, len)) return last
    // the value before (fields that alternate: Compute / Managed Memory, X / I,
    // memory / released): becomes the last again
    const prev = this.prev[slot]
    if (prev >= 0 && this.pool.matches(prev, b, at, len)) {
      this.prev[slot] = last
      this.last[slot] = prev
      return prev
    }
    const id = this.pool.internSampled(b, at, at + len)
    this.prev[slot] = last
    this.last[slot] = id
    return id
  }

  /** Number of any msgpack numeric type; nil -> NaN. */
  private num(): number {
    const b = this.b
    const t = b[this.pos++]
    if (t === 0xcb) return (this.pos += 8, this.dv.getFloat64(this.pos - 8))
    if (t <= 0x7f) return t
    if (t >= 0xe0) return t - 256
    switch (t) {
      case 0xca:
        return (this.pos += 4, this.dv.getFloat32(this.pos - 4))
      case 0xcc:
        return b[this.pos++]
      case 0xcd:
        return (this.pos += 2, this.dv.getUint16(this.pos - 2))
      case 0xce:
        return (this.pos += 4, this.dv.getUint32(this.pos - 4))
      case 0xcf:
        return (this.pos += 8, Number(this.dv.getBigUint64(this.pos - 8)))
      case 0xd0:
        return (this.pos += 1, this.dv.getInt8(this.pos - 1))
      case 0xd1:
        return (this.pos += 2, this.dv.getInt16(this.pos - 2))
      case 0xd2:
        return (this.pos += 4, this.dv.getInt32(this.pos - 4))
      case 0xd3:
        return (this.pos += 8, Number(this.dv.getBigInt64(this.pos - 8)))
      case 0xc0:
        return NaN
    }
    throw fallback // booleans (the generic path reads them as no number), extensions
  }

  /**
   * A map key the generic decoder accepts (a string other than `__proto__`, or a
   * number) at the cursor? Else fall back.
   */
  private checkKey(): void {
    const b = this.b
    const t = b[this.pos]
    if (t === 0xa9) {
      const p = this.pos + 1 // "__proto__"
      if (
        b[p] === 0x5f && b[p + 1] === 0x5f && b[p + 2] === 0x70 && b[p + 3] === 0x72 && b[p + 4] === 0x6f &&
        b[p + 5] === 0x74 && b[p + 6] === 0x6f && b[p + 7] === 0x5f && b[p + 8] === 0x5f
      ) throw fallback
      return
    }
    if ((t >= 0xa0 && t <= 0xbf) || t <= 0x7f || t >= 0xe0 || (t >= 0xca && t <= 0xd3)) return
    throw fallback // long strings (rare as keys: the generic path checks them), nil, maps, ...
  }

  /**
   * Skip one value of any type; `level` is the nesting level a map or array here would
   * have (the record's map is level 1).
   */
  private skip(level = 2): void {
    const b = this.b
    const dv = this.dv
    const t = b[this.pos++]
    if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) return
    if (t >= 0xa0 && t <= 0xbf) return void (this.pos += t & 0x1f)
    if (t >= 0x90 && t <= 0x9f) {
      if (level > maxNesting) throw fallback
      for (let i = t & 0x0f; i > 0; i--) this.skip(level + 1)
      return
    }
    if (t >= 0x80 && t <= 0x8f) {
      if (level > maxNesting) throw fallback
      for (let i = t & 0x0f; i > 0; i--) (this.checkKey(), this.skip(level + 1), this.skip(level + 1))
      return
    }
    switch (t) {
      case 0xcc:
      case 0xd0:
        return void (this.pos += 1)
      case 0xcd:
      case 0xd1:
        return void (this.pos += 2)
      case 0xca:
      case 0xce:
      case 0xd2:
        return void (this.pos += 4)
      case 0xcb:
      case 0xcf:
      case 0xd3:
        return void (this.pos += 8)
      case 0xd9:
      case 0xc4:
        return void (this.pos += 1 + b[this.pos])
      case 0xda:
      case 0xc5:
        return void (this.pos += 2 + dv.getUint16(this.pos))
      case 0xdb:
      case 0xc6:
        return void (this.pos += 4 + dv.getUint32(this.pos))
      case 0xdc:
      case 0xdd: {
        if (level > maxNesting) throw fallback
        const n = t === 0xdc ? dv.getUint16(this.pos) : dv.getUint32(this.pos)
        this.pos += t === 0xdc ? 2 : 4
        for (let i = 0; i < n; i++) this.skip(level + 1)
        return
      }
      case 0xde:
      case 0xdf: {
        if (level > maxNesting) throw fallback
        const n = t === 0xde ? dv.getUint16(this.pos) : dv.getUint32(this.pos)
        this.pos += t === 0xde ? 2 : 4
        for (let i = 0; i < n; i++) (this.checkKey(), this.skip(level + 1), this.skip(level + 1))
        return
      }
    }
    throw fallback // extensions and the reserved byte: let the generic decoder judge
  }

  // --- records -----------------------------------------------------------------

  private record(start: number, end: number): void {
    const K = this.K
    this.pos = start
    const n = this.mapHeader()
    let name = -1
    let ts = NaN
    let dur = NaN
    let phase = -1
    let host = -1
    let worker = -1
    let argsAt = -1
    for (let i = 0; i < n; i++) {
      const k = this.key()
      if (k === K.name) name = this.text(1)
      else if (k === K.timestamp) ts = this.time()
      else if (k === K.duration) {
        dur = this.time()
        if (!isDuration(dur)) throw fallback // NaN here is a value, not "absent"
      }
      else if (k === K.phase) phase = this.text(2)
      else if (k === K.process_id) host = this.str(3)
      else if (k === K.thread_id) worker = this.str(4)
      else if (k === K.args) {
        const t = this.b[this.pos]
        // a map, or nil (the generic path reads nil as no args)
        if (!((t >= 0x80 && t <= 0x8f) || t === 0xde || t === 0xdf || t === 0xc0)) throw fallback
        if (i === n - 1 && name >= 0 && phase >= 0 && isTime(ts) && (dur !== dur || isDuration(dur))) {
          // DASF's layout: args come last, after every other field; parse them in place
          if (this.isMetadata(name, phase)) throw keep
          this.checkPhase(phase)
          if (this.args(name, phase, host, worker, ts, dur, end)) return this.count(name)
          this.skip() // an event no table keeps: its args are only checked
          continue
        }
        argsAt = this.pos
        this.skip()
      } else this.skip()
    }
    // the one rule on times (Framing.isTime / isDuration): the generic path rejects
    if (this.pos !== end || name < 0 || !isTime(ts) || !(dur !== dur || isDuration(dur)) || phase < 0) throw fallback
    if (this.isMetadata(name, phase)) throw keep
    this.checkPhase(phase)
    if (argsAt >= 0) {
      const argsEnd = this.pos
      this.pos = argsAt
      this.args(name, phase, host, worker, ts, dur, argsEnd)
    } else if (name === K.Compute || name === K["Managed Memory"] || name === K["Resource Usage"]) {
      throw fallback // no args: let the generic path fill defaults
    }
    this.count(name)
  }

  /**
   * Is this event kept whole: the `Pipeline Graph` event (any phase), an `M` event that no
   * table takes (as the generic path decides in `addEvent`), or a `Driver` event.
   */
  private isMetadata(name: number, phase: number): boolean {
    const K = this.K
    return name === K[EventNames.pipelineGraph] || name === K.Driver || name === K.Transfer || name === K["Clock Offset"] ||
      (phase === K.M && name !== K["Managed Memory"] && name !== K["Resource Usage"])
  }

  private checkPhase(phase: number): void {
    const p = this.pool.get(phase)
    if (p !== "X" && p !== "I" && p !== "B" && p !== "E" && p !== "C" && p !== "M") throw fallback
  }

  /**
   * Parse the args map at the cursor into the table its event belongs to; they must
   * end at `end`, else nothing is added (fallback). False: an event no table keeps
   * (args not read).
   */
  private args(name: number, phase: number, host: number, worker: number, ts: number, dur: number, end: number): boolean {
    const K = this.K
    if (name === K.Compute && phase === K.X) this.taskArgs(host, worker, ts, Number.isNaN(dur) ? 0 : dur, end)
    else if (name === K["Managed Memory"]) this.memoryArgs(host, worker, ts, end)
    else if (name === K["Resource Usage"]) this.resourceArgs(host, ts, end)
    else return false
    return true
  }

  /** Add `by` events named by pool id `name`. */
  count(name: number, by = 1): void {
    if (name >= this.countsById.length) {
      const next = new Float64Array(Math.max(name + 1, this.countsById.length * 2))
      next.set(this.countsById)
      this.countsById = next
    }
    this.countsById[name] += by
  }

  /** Events per name id. */
  get counts(): Map<number, number> {
    const out = new Map<number, number>()
    for (let id = 0; id < this.countsById.length; id++) if (this.countsById[id] > 0) out.set(id, this.countsById[id])
    return out
  }

  private taskArgs(host: number, worker: number, ts: number, dur: number, end: number): void {
    const K = this.K
    const n = this.mapHeader()
    let key = -1
    let name = -1
    let state = -1
    let size = NaN
    let cpu = NaN
    let stage = -1
    let type = -1
    let dtype = -1
    let shape = -1
    let peak = NaN
    let io = NaN
    const deps = this.depScratch
    deps.length = 0
    const dependents = this.dependentScratch
    dependents.length = 0
    let phases: Float64Array | null = null
    const skipped = this.computeSkip
    for (let i = 0; i < n; i++) {
      const k = this.key()
      if (k < skipped.length && skipped[k] === 1) this.skip(3)
      else if (k === K.key) key = this.str(5)
      else if (k === K.name) name = this.str(6)
      else if (k === K.state) state = this.str(7)
      else if (k === K.size) size = this.num()
      else if (k === K.cpu_time) cpu = this.num()
      else if (k === K.dependencies) this.keyList(deps) // a repeated key: the last one counts, as in the generic path
      else if (k === K.dependents) this.keyList(dependents)
      else if (k === K.type) type = this.str(9)
      else if (k === K.dtype) dtype = this.str(10)
      else if (k === K.shape) shape = this.shape()
      else if (k === K.stage) stage = this.str(8)
      else if (k === K.startstops) this.startstops(phases = this.phaseScratch.fill(NaN))
      else if (k === K.peak_memory) peak = this.num()
      else if (k === K.io_bytes) io = this.num()
      else this.skip(3)
    }
    if (this.pos !== end) throw fallback
    const c = this.tasks
    c.push(host, worker, key, name, state, ts, dur, size, cpu)
    c.detail(stage, type, dtype, shape, peak, io, phases)
    for (let j = 0; j < deps.length; j++) if (deps[j] >= 0) c.deps.push(deps[j])
    for (let j = 0; j < dependents.length; j++) if (dependents[j] >= 0) c.dependents.push(dependents[j])
    c.endRow()
  }

  /** An array of keys (strings or numbers; nil -> -1) into `out`, replacing its contents. */
  private keyList(out: Array<number>): void {
    const m = this.arrayHeader()
    out.length = 0
    for (let j = 0; j < m; j++) out.push(this.str())
  }

  /**
   * `shape`: an array of non-negative safe integers as the id of its `shapeText` string;
   * anything else falls back (the generic path decides). Each distinct array (by its
   * msgpack bytes) is formatted once.
   */
  private shape(): number {
    const at = this.pos
    const m = this.arrayHeader()
    const dims = this.shapeDims
    dims.length = 0
    for (let j = 0; j < m; j++) {
      const d = this.num()
      if (!(Number.isSafeInteger(d) && d >= 0)) throw fallback
      dims.push(d)
    }
    const raw = this.shapeRaw.internSampled(this.b, at, this.pos)
    if (raw >= this.shapeIds.length) {
      const next = new Int32Array(2 * raw + 2).fill(-1)
      next.set(this.shapeIds)
      this.shapeIds = next
    }
    let id = this.shapeIds[raw]
    if (id < 0) id = this.shapeIds[raw] = this.pool.intern(dims.join("x"))
    return id
  }

  /**
   * `startstops`: an array of `{ action, start, stop }` maps into `phases` (start, stop
   * per `phaseNames` entry; other actions and keys are skipped; a repeated action: the
   * last one counts).
   */
  private startstops(phases: Float64Array): void {
    const K = this.K
    const m = this.arrayHeader()
    for (let j = 0; j < m; j++) {
      const fields = this.mapHeader()
      let action = -1
      let start = NaN
      let stop = NaN
      for (let f = 0; f < fields; f++) {
        const k = this.key()
        if (k === K.action) action = this.str(11)
        else if (k === K.start) start = this.num()
        else if (k === K.stop) stop = this.num()
        else this.skip(5)
      }
      const p = action === K.gather ? 0 : action === K.compute ? 1 : action === K.transfer ? 2 : -1
      if (p >= 0) (phases[2 * p] = start, phases[2 * p + 1] = stop)
    }
  }

  private memoryArgs(host: number, worker: number, ts: number, end: number): void {
    const K = this.K
    const n = this.mapHeader()
    let key = -1
    let state = -1
    let size = NaN
    let tasks = NaN
    const skipped = this.memorySkip
    let device = NaN
    for (let i = 0; i < n; i++) {
      const k = this.key()
      if (k < skipped.length && skipped[k] === 1) this.skip(3)
      else if (k === K.key) key = this.str(5)
      else if (k === K.state) state = this.str(7)
      else if (k === K.size) size = this.num()
      else if (k === K.tasks) tasks = this.num()
      else if (k === K.device) device = this.num()
      else this.skip(3)
    }
    if (this.pos !== end) throw fallback
    this.memory.push(ts, host, worker, key, state, size, tasks, device)
  }

  private resourceArgs(host: number, ts: number, end: number): void {
    const n = this.mapHeader()
    const v = this.resScratch
    v.fill(NaN)
    const ids = this.resIds
    for (let i = 0; i < n; i++) {
      const k = this.key()
      const j = ids.indexOf(k)
      if (j >= 0) v[j] = this.num()
      else this.skip(3)
    }
    if (this.pos !== end) throw fallback
    const c = this.resources
    c.timestamp.push(ts)
    c.host.push(host)
    for (let j = 0; j < v.length; j++) c.values[j].push(v[j])
  }

  // --- generic path --------------------------------------------------------------

  private id(u: unknown): number {
    if (typeof u === "string") return this.pool.intern(u)
    if (typeof u === "number" || typeof u === "bigint" || typeof u === "boolean") return this.pool.intern(String(u))
    return -1
  }

  /** Route one generically decoded event into the tables (or `metadata`). */
  addEvent(e: TraceEvent): void {
    const name = this.pool.intern(e.name)
    this.count(name)
    if (e.name === "Driver") {
      if (e.phase === "X") this.driver.push(e)
      return
    }
    if (e.name === "Clock Offset" || e.name === "Transfer") {
      if (e.name !== "Transfer" || e.phase === "X") this.extra.push(e)
      return
    }
    if (
      e.name === EventNames.pipelineGraph ||
      (e.phase === "M" && e.name !== EventNames.managedMemory && e.name !== EventNames.resourceUsage)
    ) {
      this.metadata.push(e)
      return
    }
    const a = e.args as Record<string, unknown>
    const num = (u: unknown) => (typeof u === "number" ? u : typeof u === "bigint" ? Number(u) : NaN)
    const host = this.id(e.process_id)
    const worker = this.id(e.thread_id)
    if (e.name === EventNames.compute && e.phase === "X") {
      const c = this.tasks
      const key = this.id(a.key)
      const name = this.id(a.name)
      const state = this.id(a.state)
      c.push(host, worker, key, name, state, e.timestamp, e.duration ?? 0, num(a.size), num(a.cpu_time))
      let phases: Float64Array | null = null
      if (Array.isArray(a.startstops)) {
        phases = this.phaseScratch.fill(NaN)
        for (const x of a.startstops) {
          if (typeof x !== "object" || x === null || Array.isArray(x)) continue
          const p = phaseNames.indexOf((x as { action?: unknown }).action as never)
          if (p >= 0) (phases[2 * p] = num((x as { start?: unknown }).start), phases[2 * p + 1] = num((x as { stop?: unknown }).stop))
        }
      }
      const shape = shapeText(a.shape)
      c.detail(this.id(a.stage), this.id(a.type), this.id(a.dtype), shape === undefined ? -1 : this.pool.intern(shape), num(a.peak_memory), num(a.io_bytes), phases)
      for (const [list, out] of [[a.dependencies, c.deps], [a.dependents, c.dependents]] as const) {
        if (!Array.isArray(list)) continue
        for (const d of list) {
          const id = this.id(d)
          if (id >= 0) out.push(id)
        }
      }
      c.endRow()
    } else if (e.name === EventNames.managedMemory) {
      this.memory.push(e.timestamp, host, worker, this.id(a.key), this.id(a.state), num(a.size), num(a.tasks), num(a.device))
    } else if (e.name === "Resource Usage") {
      const c = this.resources
      c.timestamp.push(e.timestamp)
      c.host.push(host)
      resourceArgs.forEach((k, j) => c.values[j].push(num(a[k])))
    }
  }
}

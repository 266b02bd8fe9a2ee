/**
 * Specialised trace-record encoder for the profiler's write path. It writes exactly the
 * bytes `TraceFormat.encodeRecords` writes (the property tests check byte equality), but
 * several times faster for the event shapes the profiler records:
 *
 * - the fixed field names, and the short strings of the repeated positions (event names,
 *   hosts, thread ids, arg keys), are encoded once and cached as msgpack bytes; string
 *   values inside args (mostly unique task keys) are written directly;
 * - the Trace layer's `Compute`, `Managed Memory` and `Driver` records are written
 *   straight from the engine's records, without building event objects;
 * - everything goes into one growing buffer, reused between batches.
 *
 * Hot path: plain imperative code on purpose (see STYLE: hot loops may be imperative).
 *
 * The msgpack primitives, framing and generic event layout come from `MsgpackWriter`
 * (shared with `TraceFormat.encodeRecords`); this class adds the Trace layer's two
 * record shapes (and the driver's segments). Public as `TraceWriter.RecordEncoder`.
 *
 * Leaves out: decoding (`eventDecoder.ts`, `columnDecoder.ts`), framing rules
 * (`TraceFormat.ts`).
 *
 * @since 0.1.0
 * @internal
 */
import { keySplit } from "../KeySplit.ts"
import type { TraceEvent } from "../TraceEvent.ts"
import { fieldBytes as K, fixstr, MsgpackWriter } from "./msgpackWriter.ts"

/**
 * What a `Compute` record is written from: the fields of the engine's `TaskRecord`
 * (src/engine/EngineEvents.ts) that the format needs, declared here so the trace layer
 * depends on no other layer (a `TaskRecord` is one, structurally; the profiler passes
 * `TaskRecord`s here, so the compiler keeps the two in step). `name` "" means no name:
 * the writer derives it from the key with `keySplit` (the engine already does).
 *
 * @since 0.1.0
 * @category models
 */
export interface ComputeRecord {
  readonly key: string
  readonly name: string
  readonly stage?: string
  readonly host: string
  readonly threadId: string
  readonly phases: {
    readonly gather: readonly [number, number]
    readonly compute: readonly [number, number]
    readonly transfer: readonly [number, number]
  }
  readonly cpuTime: number
  /** bytes (the `peak_memory` arg), when measured */
  readonly peakMemory?: number
  /** bytes read from files (the `io_bytes` arg), when measured */
  readonly ioBytes?: number
  /** GPU kernel seconds (the `gpu_time` arg), GPU tasks only */
  readonly gpuTime?: number
  readonly nbytes: number
  readonly shape: ReadonlyArray<number>
  readonly dtype: string
  readonly type: string
  readonly dependencies: ReadonlyArray<string>
  readonly dependents: ReadonlyArray<string>
  readonly state: string
}

/**
 * What a `Managed Memory` record is written from (the engine's `MemoryRecord`,
 * structurally).
 *
 * @since 0.1.0
 * @category models
 */
export interface ManagedMemoryRecord {
  readonly timestamp: number
  readonly host: string
  readonly threadId: string
  readonly key: string
  readonly state: string
  readonly bytes: number
  readonly chunks: number
  /** a GPU worker's device bytes held (written as `device` when present) */
  readonly device?: number
}

/**
 * What a `Driver` record is written from (the engine's `DriverRecord`, structurally):
 * one segment of the driver's time, epoch seconds.
 *
 * @since 0.1.0
 * @category models
 */
export interface DriverSegmentRecord {
  readonly key: string
  readonly activity: string
  readonly start: number
  readonly end: number
  readonly host: string
  readonly threadId: string
  readonly compute: number
  readonly dependencies: ReadonlyArray<string>
  readonly tasks: number
}

const cat = (...parts: ReadonlyArray<Uint8Array | ReadonlyArray<number>>): Uint8Array =>
  Uint8Array.from(parts.flatMap((p) => [...p]))
// precomputed runs of bytes for the Trace layer's two event shapes (see `compute`, `memory`)
const P = {
  computeHead: cat([0x87], K.name, fixstr("Compute"), K.timestamp),
  computePhase: cat(K.phase, fixstr("X"), K.process_id),
  memoryHead: cat([0x87], K.name, fixstr("Managed Memory"), K.timestamp),
  driverHead: cat([0x87], K.name, fixstr("Driver"), K.timestamp),
  activity: fixstr("activity"),
  computeNo: fixstr("compute"),
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
  peakMemory: fixstr("peak_memory"),
  ioBytes: fixstr("io_bytes"),
  gpuTime: fixstr("gpu_time"),
  stage: fixstr("stage"),
  tasks: fixstr("tasks"),
  device: fixstr("device"),
  gather: cat([0x83], fixstr("action"), fixstr("gather"), fixstr("start")),
  compute: cat([0x83], fixstr("action"), fixstr("compute"), fixstr("start")),
  transfer: cat([0x83], fixstr("action"), fixstr("transfer"), fixstr("start")),
  stop: fixstr("stop")
}
/** One row's repeated bytes (see `RecordEncoder.row`). */
interface RowBytes {
  readonly phase: Uint8Array
  readonly host: string
  readonly threadId: string
  readonly header: number
  readonly bytes: Uint8Array
}

/** rows cached at most (more, and the cache starts again: a scan of a few is the point) */
const maxRows = 16

/**
 * A reusable encoder: records are appended to `buf[0..pos)` until the owner takes the
 * bytes and resets `pos` (each FileDatabase has its own). It wraps one `MsgpackWriter`
 * (`w`) instead of extending the class: the writer's hot methods then see a single
 * hidden class in a process that also uses `TraceFormat.encodeRecords` (measured:
 * ~15% slower writes when both classes share the methods).
 *
 * @since 0.1.0
 * @internal
 */
export class RecordEncoder {
  readonly w = new MsgpackWriter()

  get buf(): Uint8Array {
    return this.w.buf
  }
  get pos(): number {
    return this.w.pos
  }
  set pos(p: number) {
    this.w.pos = p
  }

  /** Appends one framed record (8-byte big-endian length + map) for `e`. */
  event(e: TraceEvent): void {
    this.w.event(e)
  }

  /**
   * The bytes every record of one row and shape repeats between its timestamps and its
   * args' first value: `phase` (the phase, scope and process_id field names), the host,
   * the thread id, `args` and its map header, and the `key` field name; made once per
   * row (a trace has a few: one per worker and the driver) and copied with one `put`
   * instead of seven writes. Found by a scan of a few entries: hosts and thread ids are
   * the same few strings (the engine caches them), so the comparisons are mostly pointer
   * comparisons.
   */
  private readonly rows: Array<RowBytes> = []

  private row(phase: Uint8Array, host: string, threadId: string, header: number): void {
    const rows = this.rows
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!
      if (r.threadId === threadId && r.host === host && r.header === header && r.phase === phase) return this.w.put(r.bytes)
    }
    const at = this.w.pos
    this.w.put(phase)
    this.w.string(host)
    this.w.put(K.thread_id)
    this.w.string(threadId)
    this.w.put(K.args)
    this.w.byte(header)
    this.w.put(P.key)
    if (rows.length >= maxRows) rows.length = 0
    rows.push({ phase, host, threadId, header, bytes: this.w.buf.slice(at, this.w.pos) })
  }

  // the fields' types are known here: direct calls, not `value`'s switch on typeof
  private strings(xs: ReadonlyArray<string>): void {
    this.w.header(xs.length, 0x90, 0xdc)
    for (let i = 0; i < xs.length; i++) this.w.string(xs[i]!)
  }

  private numbers(xs: ReadonlyArray<number>): void {
    this.w.header(xs.length, 0x90, 0xdc)
    for (let i = 0; i < xs.length; i++) this.w.number(xs[i]!)
  }

  /**
   * Appends the Trace layer's `Compute` record for a task straight from its TaskRecord:
   * exactly the bytes `event(Trace.computeEvent(r))` writes (a property test checks),
   * without building the event object.
   */
  compute(r: ComputeRecord): void {
    const at = this.w.frameStart()
    const { gather, compute, transfer } = r.phases
    this.w.put(P.computeHead)
    this.w.float64(transfer[1])
    this.w.put(K.duration)
    this.w.float64(Math.max(0, transfer[1] - gather[0]))
    // fixmap: the 11 fields every record has, and the optional ones it carries
    this.row(P.computePhase, r.host, r.threadId, 0x8b + (r.peakMemory !== undefined ? 1 : 0) + (r.ioBytes !== undefined ? 1 : 0) + (r.gpuTime !== undefined ? 1 : 0) + (r.stage !== undefined ? 1 : 0))
    this.w.string(r.key)
    this.w.put(P.name)
    this.w.string(r.name !== "" ? r.name : keySplit(r.key))
    this.w.put(P.state)
    this.w.string(r.state)
    this.w.put(P.size)
    this.w.number(r.nbytes)
    this.w.put(P.shape)
    this.numbers(r.shape)
    this.w.put(P.dtype)
    this.w.string(r.dtype)
    this.w.put(P.type)
    this.w.string(r.type)
    this.w.put(P.dependencies)
    this.strings(r.dependencies)
    this.w.put(P.dependents)
    this.strings(r.dependents)
    this.w.put(P.startstops)
    this.w.byte(0x93)
    this.w.put(P.gather)
    this.w.number(gather[0])
    this.w.put(P.stop)
    this.w.number(gather[1])
    this.w.put(P.compute)
    this.w.number(compute[0])
    this.w.put(P.stop)
    this.w.number(compute[1])
    this.w.put(P.transfer)
    this.w.number(transfer[0])
    this.w.put(P.stop)
    this.w.number(transfer[1])
    this.w.put(P.cpuTime)
    this.w.number(r.cpuTime)
    if (r.peakMemory !== undefined) {
      this.w.put(P.peakMemory)
      this.w.number(r.peakMemory)
    }
    if (r.ioBytes !== undefined) {
      this.w.put(P.ioBytes)
      this.w.number(r.ioBytes)
    }
    if (r.gpuTime !== undefined) {
      this.w.put(P.gpuTime)
      this.w.number(r.gpuTime)
    }
    if (r.stage !== undefined) {
      this.w.put(P.stage)
      this.w.string(r.stage)
    }
    this.w.frameEnd(at)
  }

  /** Appends the Trace layer's `Managed Memory` record (same bytes as `event(Trace.memoryEvent(m))`). */
  memory(m: ManagedMemoryRecord): void {
    const at = this.w.frameStart()
    this.w.put(P.memoryHead)
    this.w.float64(m.timestamp)
    this.row(P.memoryPhase, m.host, m.threadId, m.device === undefined ? 0x84 : 0x85)
    this.w.string(m.key)
    this.w.put(P.state)
    this.w.string(m.state)
    this.w.put(P.size)
    this.w.number(m.bytes)
    this.w.put(P.tasks)
    this.w.number(m.chunks)
    if (m.device !== undefined) {
      this.w.put(P.device)
      this.w.number(m.device)
    }
    this.w.frameEnd(at)
  }

  /**
   * Appends the Trace layer's `Driver` record for one driver segment: exactly the bytes
   * `event(Trace.driverEvent(d))` writes (a property test checks), without building the
   * event and its args.
   */
  driver(d: DriverSegmentRecord): void {
    const at = this.w.frameStart()
    this.w.put(P.driverHead)
    this.w.float64(d.end)
    this.w.put(K.duration)
    this.w.float64(Math.max(0, d.end - d.start))
    this.row(P.computePhase, d.host, d.threadId, 0x85)
    this.w.string(d.key)
    this.w.put(P.activity)
    this.w.string(d.activity)
    this.w.put(P.computeNo)
    this.w.number(d.compute)
    this.w.put(P.dependencies)
    this.strings(d.dependencies)
    this.w.put(P.tasks)
    this.w.number(d.tasks)
    this.w.frameEnd(at)
  }

  /** Drops a very large scratch buffer after a big batch. */
  shrink(): void {
    this.w.shrink()
  }

  /** Gives the buffer back for reuse (see `MsgpackWriter.release`). */
  release(): void {
    this.w.release()
  }

  /** Encodes `events[from..to)` and returns a view of the bytes (valid until the next call). */
  encode(events: ReadonlyArray<TraceEvent>, from = 0, to = events.length): Uint8Array {
    this.pos = 0
    for (let i = from; i < to; i++) this.event(events[i]!)
    return this.buf.subarray(0, this.pos)
  }
}

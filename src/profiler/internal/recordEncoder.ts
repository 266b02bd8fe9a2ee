/**
 * Specialised trace-record encoder for the profiler's write path. It writes exactly the
 * bytes `TraceFormat.encodeRecords` writes (the property tests check byte equality), but
 * several times faster for the event shapes the profiler records:
 *
 * - the fixed field names, and the short strings of the repeated positions (event names,
 *   hosts, thread ids, arg keys), are encoded once and cached as msgpack bytes; string
 *   values inside args (mostly unique task keys) are written directly;
 * - the Trace layer's `Compute` and `Managed Memory` records are written straight from
 *   the engine's records, without building event objects;
 * - everything goes into one growing buffer, reused between batches.
 *
 * Hot path: plain imperative code on purpose (see STYLE: hot loops may be imperative).
 *
 * The msgpack primitives, framing and generic event layout come from
 * src/trace/internal/MsgpackWriter (shared with `TraceFormat.encodeRecords`); this
 * class adds the string cache and the Trace layer's two record shapes.
 *
 * Leaves out: decoding (see `recordDecoder.ts`), framing rules (src/trace/TraceFormat).
 *
 * @since 0.1.0
 * @internal
 */
import type { MemoryRecord, TaskRecord } from "../../engine/EngineEvents.ts"
import { keyName } from "../../engine/TaskGraph.ts"
import { fieldBytes as K, fixstr, MsgpackWriter } from "../../trace/internal/MsgpackWriter.ts"
import type { TraceEvent } from "../../trace/TraceEvent.ts"

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
export class RecordEncoder extends MsgpackWriter {
  private readonly cache = new Map<string, Uint8Array>()

  /** Short repeated strings (names, hosts, thread ids, arg keys) from a cache of their bytes. */
  override shortString(s: string): void {
    if (s.length <= maxCachedLength) {
      const hit = this.cache.get(s)
      if (hit !== undefined) return this.put(hit)
      const at = this.pos
      this.string(s)
      if (this.cache.size >= maxCached) this.cache.clear()
      this.cache.set(s, this.buf.slice(at, this.pos))
      return
    }
    this.string(s)
  }

  private strings(xs: ReadonlyArray<string>): void {
    this.header(xs.length, 0x90, 0xdc)
    for (let i = 0; i < xs.length; i++) this.value(xs[i])
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
}

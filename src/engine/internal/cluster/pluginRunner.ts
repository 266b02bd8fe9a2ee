/**
 * Worker plugins inside a worker process (see `WorkerPlugin`): starts them when the
 * scheduler asks (`Plugins`), and gives them this worker's records as the scheduler
 * would have made them — timestamps on the scheduler's clock (`+ clockShift − offset`),
 * rows `worker-{host}-{HOST:PORT}-pid{pid}-{index × 16 + thread}` (protocol.ts `workerRow`), the run's execution keys, dependencies
 * and dependents (sent with each batch, `RunTrace`) — so a plugin's callbacks are the
 * driver's hook's, unchanged.
 *
 * Managed memory is this process's store: a result counts on the row of the thread that
 * made it, a copy fetched from a peer on the worker's first row (where its `Transfer`
 * is drawn), each until the scheduler releases it here.
 *
 * Statistical sampling: a plugin whose callbacks ask for samples gets this worker's
 * pool sampling for it (the pool's own mechanism, `Sampling`), its samples moved onto
 * the worker's rows and the scheduler's clock; closing the plugin stops the sampling
 * first, so its last samples are written.
 *
 * @since 0.1.0
 * @internal
 */
import { hostname } from "node:os"
import * as EngineClock from "../../EngineClock.ts"
import type { MemoryRecord, TransferRecord } from "../../EngineEvents.ts"
import type { Callbacks } from "../../Hooks.ts"
import * as Sampling from "../../Sampling.ts"
import type { WorkerPluginFactory, WorkerPluginInstance } from "../../WorkerPlugin.ts"
import { buildTaskRecord, RecordSource } from "../taskRecord.ts"
import { TIMING_FLOATS } from "../taskTiming.ts"
import { importChecked, type ResultInfo } from "../kernels.ts"
import { type PluginsRequest, ROW_STRIDE, type RunTrace, type WireTransfer, workerRow } from "./protocol.ts"
import type { BatchTimings } from "./batchTimings.ts"

interface Running {
  readonly instance: WorkerPluginInstance
  /** what the pool samples for (a stable owner per plugin), when the plugin asks */
  readonly sampler: Callbacks | undefined
}

/**
 * The plugins of one worker process, and its held-memory book.
 *
 * @since 0.1.0
 * @internal
 */
export class PluginRunner {
  readonly host: string
  private readonly running = new Map<string, Running>()
  private peers: ReadonlyArray<number> = []
  private index = 0
  private offset = 0
  private readonly held = new Map<string, { readonly row: number; readonly bytes: number; readonly chunks: number; readonly key: string }>()
  private readonly rows = new Map<number, { bytes: number; chunks: number }>()
  private readonly worker: string
  private readonly shift: number
  /** the running plugins' callbacks, in start order (what the per-task loops walk) */
  private list: ReadonlyArray<{ readonly id: string; readonly callbacks: Callbacks }> = []
  /** what each task's record is built from (refilled) */
  private readonly source = new RecordSource()
  /** `worker-{host}-{HOST:PORT}-pid{pid}-{row}` by row (protocol.ts `workerRow`) */
  private readonly threadIds: Array<string> = []
  /** batches whose task records the plugins get next (`batch`) */
  private readonly queued: Array<{ readonly trace: RunTrace; readonly cols: BatchTimings; readonly infos: ReadonlyArray<ResultInfo | undefined> }> = []
  private scheduled = false
  private flushing = false

  /** this process's pid, for its rows' names */
  private readonly pid: number
  /**
   * `host`: the host name this worker reports (default os.hostname()); `pid`: the process
   * its rows name (default this one's)
   */
  constructor(worker: string, shift: number, host: string = hostname(), pid: number = process.pid) {
    this.worker = worker
    this.shift = shift
    this.host = host
    this.pid = pid
  }

  /** Whether any plugin runs here. */
  get active(): boolean {
    return this.running.size > 0
  }

  /** Starts and closes plugins as asked. Rejects when a factory cannot be loaded or fails. */
  async apply(req: PluginsRequest): Promise<void> {
    this.flush()
    this.offset = req.offset
    await this.close(req.close)
    for (const s of req.start) {
      if (this.running.has(s.plugin.id)) continue
      // the one module-URL check (kernels.ts): file: URLs under the folders this worker allows
      const mod = await importChecked(s.plugin.module, "worker plugin")
      const factory = mod[s.plugin.name]
      if (typeof factory !== "function") {
        throw new Error(`worker plugin ${s.plugin.id}: ${s.plugin.module} has no function export ${JSON.stringify(s.plugin.name)}`)
      }
      const instance = await (factory as WorkerPluginFactory)(s.plugin.options, {
        host: this.host,
        worker: this.worker,
        monitor: s.monitor,
        truncate: s.truncate,
        peers: () => this.peers,
        now: () => this.at(EngineClock.nowSeconds())
      })
      const cb = instance.callbacks
      const sampler: Callbacks | undefined = cb.sampling !== undefined && cb.samples !== undefined
        ? { sampling: cb.sampling, samples: (r) => cb.samples!(this.samples(r)) }
        : undefined
      this.running.set(s.plugin.id, { instance, sampler })
    }
    this.changed()
  }

  /** After plugins started or closed: the list the per-task loops walk. */
  private changed(): void {
    this.list = [...this.running].map(([id, r]) => ({ id, callbacks: r.instance.callbacks }))
  }

  /** Closes plugins (their sampling first, so the last samples are written). */
  async close(ids: ReadonlyArray<string>): Promise<void> {
    this.flush()
    for (const id of ids) {
      const r = this.running.get(id)
      if (r === undefined) continue
      this.running.delete(id)
      this.changed()
      if (r.sampler !== undefined) await Sampling.stop(r.sampler)
      await r.instance.close()
    }
  }

  /** Closes every plugin (the worker is stopping). */
  closeAll(): Promise<void> {
    return this.close([...this.running.keys()])
  }

  /** Takes a batch's rows, offset and peers; returns the callbacks its pool job needs (a sampler). */
  begin(trace: RunTrace): ReadonlyArray<Callbacks> {
    this.flush()
    this.index = trace.index
    this.offset = trace.offset
    this.peers = trace.peers
    for (const id of trace.plugins) {
      const s = this.running.get(id)?.sampler
      if (s !== undefined) return [s]
    }
    return []
  }

  /** A time of this process's engine clock on the scheduler's clock. */
  private at(t: number): number {
    return t + this.shift - this.offset
  }

  private row(thread: number): number {
    return this.index * ROW_STRIDE + thread
  }

  private threadIdOf(row: number): string {
    // the worker's name is tessera-worker@HOST:PORT, the address it is reached at
    return this.threadIds[row] ??= workerRow(this.host, this.worker.slice(this.worker.indexOf("@") + 1), this.pid, row)
  }

  /** Whether plugin `id` records a compute whose plugins are `ids` (null: every plugin). */
  private static records(ids: ReadonlyArray<string> | null, id: string): boolean {
    return ids === null || ids.includes(id)
  }

  /**
   * A batch's task records for the plugins — each task's in `cols` (the pool's), its
   * result described by `infos[k]` (undefined: the task did not complete) — given to
   * them soon (`setImmediate`), after the worker has answered the batch, so that writing
   * the trace no longer stands between a batch's end and the scheduler hearing of it
   * (the pool, too, delivers a batch's records after it has sent the next ones). Every
   * other call to the runner first gives the queued batches' records, so the plugins get
   * every record in the order they would have got them at once.
   */
  batch(trace: RunTrace, cols: BatchTimings, infos: ReadonlyArray<ResultInfo | undefined>): void {
    this.queued.push({ trace, cols, infos })
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(this.flushSoon)
  }

  /** Gives the queued batches' task records to the plugins now (`batch`). */
  flush(): void {
    // a plugin's callback that calls back into the runner does not reorder the queue
    if (this.flushing) return
    this.flushing = true
    try {
      for (let b = this.queued.shift(); b !== undefined; b = this.queued.shift()) {
        for (let k = 0; k < b.infos.length; k++) {
          const info = b.infos[k]
          if (info !== undefined) this.task(b.trace, k, b.cols, info)
        }
      }
    } finally {
      this.flushing = false
    }
  }

  private readonly flushSoon = (): void => {
    this.scheduled = false
    try {
      this.flush()
    } catch (e) {
      // no request to fail any more: said on stderr (the driver's LocalCluster keeps its tail)
      process.stderr.write(`tessera worker ${this.worker}: a worker plugin failed on a batch's records: ${e instanceof Error ? e.message : String(e)}\n`)
    }
  }

  /**
   * Task `k` of the batch — its record in `cols` (the pool's), its result described by
   * `info` — as the scheduler would have recorded it, for the plugins; its result held.
   */
  private task(trace: RunTrace, k: number, cols: BatchTimings, info: ResultInfo): void {
    const [key, dependencies, dependents, stage] = trace.tasks[k]!
    const w = this.row(cols.thread[k]!)
    const state = cols.state[k] === 2 ? "erred" : "memory"
    const s = this.source
    s.key = key
    s.name = cols.graph.names[k]!
    s.host = this.host
    s.workerId = w
    s.threadId = this.threadIdOf(w)
    s.rows = cols.rows
    s.o = k * TIMING_FLOATS
    s.shift = this.at(0)
    s.info = info
    s.dependencies = dependencies
    s.dependents = dependents
    s.state = state
    s.stage = stage !== "" ? stage : undefined
    s.failure = cols.failures.get(k)
    // a new record each task: a plugin may keep it (Callbacks.transientRecords is ignored, as the engine's own records)
    const rec = buildTaskRecord(s)
    s.clear()
    for (const p of this.list) if (PluginRunner.records(trace.plugins, p.id)) p.callbacks.task?.(rec)
    if (state === "memory") this.hold(trace, cols.graph.keys[k]!, key, w, info.nbytes, 1)
  }

  /** A peer fetch (its times already on this worker's shifted clock): its record, and the copies held. */
  transfer(trace: RunTrace, t: WireTransfer, sizes: ReadonlyMap<string, number>): void {
    this.flush()
    const row = this.row(0)
    const peer = trace.rows.find(([name]) => name === t.peer)?.[1] ?? t.peer
    const exec = execKeys(trace)
    const rec: TransferRecord = {
      keys: t.keys.map((k) => exec.get(k) ?? k),
      bytes: t.bytes,
      host: this.host,
      threadId: this.threadIdOf(row),
      peer,
      start: t.start - this.offset,
      stop: t.stop - this.offset,
      serialize: t.serialize,
      deserialize: t.deserialize
    }
    for (const p of this.list) if (PluginRunner.records(trace.plugins, p.id)) p.callbacks.transfer?.(rec)
    for (const k of t.keys) this.hold(trace, k, exec.get(k) ?? k, row, sizes.get(k) ?? 0, 1)
  }

  private hold(trace: RunTrace, key: string, exec: string, row: number, bytes: number, chunks: number): void {
    this.drop(key)
    this.held.set(key, { row, bytes, chunks, key: exec })
    const t = this.rows.get(row) ?? { bytes: 0, chunks: 0 }
    this.rows.set(row, t)
    t.bytes += bytes
    t.chunks += chunks
    this.emit(trace.plugins, row, exec, "memory")
  }

  private drop(key: string): { readonly row: number; readonly key: string } | undefined {
    const h = this.held.get(key)
    if (h === undefined) return undefined
    this.held.delete(key)
    const t = this.rows.get(h.row)!
    t.bytes -= h.bytes
    t.chunks -= h.chunks
    return h
  }

  /** Results the scheduler released here. */
  release(keys: ReadonlyArray<string>): void {
    this.flush()
    for (const k of keys) {
      const h = this.drop(k)
      if (h !== undefined) this.emit(null, h.row, h.key, "released")
    }
  }

  private emit(ids: ReadonlyArray<string> | null, row: number, key: string, state: MemoryRecord["state"]): void {
    const t = this.rows.get(row)!
    const timestamp = this.at(EngineClock.nowSeconds())
    const rec: MemoryRecord = { timestamp, host: this.host, workerId: row, threadId: this.threadIdOf(row), key, state, bytes: t.bytes, chunks: t.chunks }
    for (const p of this.list) if (PluginRunner.records(ids, p.id)) p.callbacks.memory?.(rec)
  }

  private samples(r: Sampling.SampleRecord): Sampling.SampleRecord {
    const w = r.workerId < 0 ? r.workerId : this.row(r.workerId)
    const times = new Float64Array(r.times.length)
    for (let q = 0; q < times.length; q++) times[q] = this.at(r.times[q]!)
    return { ...r, host: this.host, workerId: w, threadId: w < 0 ? r.threadId : this.threadIdOf(w), times }
  }
}

const execMaps = new WeakMap<RunTrace, ReadonlyMap<string, string>>()

/** A batch's input key → execution key map (built once per batch, whatever its fetches). */
const execKeys = (trace: RunTrace): ReadonlyMap<string, string> => {
  let m = execMaps.get(trace)
  if (m === undefined) execMaps.set(trace, m = new Map(trace.inputs))
  return m
}

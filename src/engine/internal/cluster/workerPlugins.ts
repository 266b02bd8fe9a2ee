/**
 * Worker plugins inside a worker process (see `WorkerPlugin`): starts them when the
 * scheduler asks (`Plugins`), and gives them this worker's records as the scheduler
 * would have made them — timestamps on the scheduler's clock (`+ clockShift − offset`),
 * rows `worker-{host}-{index × 16 + thread}`, the run's execution keys, dependencies
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
import { type MemoryRecord, type TaskRecord, threadId, type TransferRecord } from "../../EngineEvents.ts"
import type { Callbacks } from "../../Hooks.ts"
import * as Sampling from "../../Sampling.ts"
import type { WorkerPluginFactory, WorkerPluginInstance } from "../../WorkerPlugin.ts"
import { type PluginsRequest, ROW_STRIDE, type RunTrace, type WireTransfer } from "./protocol.ts"

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

  /** `host`: the host name this worker reports (default os.hostname()) */
  constructor(worker: string, shift: number, host: string = hostname()) {
    this.worker = worker
    this.shift = shift
    this.host = host
  }

  /** Whether any plugin runs here. */
  get active(): boolean {
    return this.running.size > 0
  }

  /** Starts and closes plugins as asked. Rejects when a factory cannot be loaded or fails. */
  async apply(req: PluginsRequest): Promise<void> {
    this.offset = req.offset
    await this.close(req.close)
    for (const s of req.start) {
      if (this.running.has(s.plugin.id)) continue
      const mod = (await import(s.plugin.module)) as Record<string, unknown>
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
  }

  /** Closes plugins (their sampling first, so the last samples are written). */
  async close(ids: ReadonlyArray<string>): Promise<void> {
    for (const id of ids) {
      const r = this.running.get(id)
      if (r === undefined) continue
      this.running.delete(id)
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

  private each(ids: ReadonlyArray<string> | null, f: (cb: Callbacks) => void): void {
    for (const [id, r] of this.running) if (ids === null || ids.includes(id)) f(r.instance.callbacks)
  }

  /** Task `k` of the batch (the pool's record `r`): its record for the plugins, and its result held. */
  task(trace: RunTrace, k: number, r: TaskRecord): void {
    const [key, dependencies, dependents, stage] = trace.tasks[k]!
    const w = this.row(r.workerId)
    const ph = r.phases
    const rec: TaskRecord = {
      ...r,
      key,
      host: this.host,
      workerId: w,
      threadId: threadId(this.host, w),
      phases: {
        gather: [this.at(ph.gather[0]), this.at(ph.gather[1])],
        compute: [this.at(ph.compute[0]), this.at(ph.compute[1])],
        transfer: [this.at(ph.transfer[0]), this.at(ph.transfer[1])]
      },
      dependencies,
      dependents,
      ...(stage !== "" ? { stage } : {})
    }
    this.each(trace.plugins, (cb) => cb.task?.(rec))
    if (r.state === "memory") this.hold(trace, r.key, key, w, r.nbytes, 1)
  }

  /** A peer fetch (its times already on this worker's shifted clock): its record, and the copies held. */
  transfer(trace: RunTrace, t: WireTransfer, sizes: ReadonlyMap<string, number>): void {
    const row = this.row(0)
    const peer = trace.rows.find(([name]) => name === t.peer)?.[1] ?? t.peer
    const exec = execKeys(trace)
    const rec: TransferRecord = {
      keys: t.keys.map((k) => exec.get(k) ?? k),
      bytes: t.bytes,
      host: this.host,
      threadId: threadId(this.host, row),
      peer,
      start: t.start - this.offset,
      stop: t.stop - this.offset,
      serialize: t.serialize,
      deserialize: t.deserialize
    }
    this.each(trace.plugins, (cb) => cb.transfer?.(rec))
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
    for (const k of keys) {
      const h = this.drop(k)
      if (h !== undefined) this.emit(null, h.row, h.key, "released")
    }
  }

  private emit(ids: ReadonlyArray<string> | null, row: number, key: string, state: MemoryRecord["state"]): void {
    const t = this.rows.get(row)!
    const rec: MemoryRecord = {
      timestamp: this.at(EngineClock.nowSeconds()),
      host: this.host,
      workerId: row,
      threadId: threadId(this.host, row),
      key,
      state,
      bytes: t.bytes,
      chunks: t.chunks
    }
    this.each(ids, (cb) => cb.memory?.(rec))
  }

  private samples(r: Sampling.SampleRecord): Sampling.SampleRecord {
    const w = r.workerId < 0 ? r.workerId : this.row(r.workerId)
    const times = new Float64Array(r.times.length)
    for (let q = 0; q < times.length; q++) times[q] = this.at(r.times[q]!)
    return { ...r, host: this.host, workerId: w, threadId: w < 0 ? r.threadId : threadId(this.host, w), times }
  }
}

const execMaps = new WeakMap<RunTrace, ReadonlyMap<string, string>>()

/** A batch's input key → execution key map (built once per batch, whatever its fetches). */
const execKeys = (trace: RunTrace): ReadonlyMap<string, string> => {
  let m = execMaps.get(trace)
  if (m === undefined) execMaps.set(trace, m = new Map(trace.inputs))
  return m
}

/**
 * What the pool knows of one compute's results on GPU workers' devices: which results
 * must come to the host (`toHost`: a CPU task or the driver takes them), which results
 * each GPU worker left on its device (tag, bytes), and the frees it owes the workers
 * when the scheduler releases those results.
 *
 * - A result is read back when the driver asked for it, when a CPU task takes it, or,
 *   with more than one GPU worker, when any task takes it (a GPU task may run on another
 *   GPU worker, and copies go between devices through the host). Otherwise it stays on
 *   the device only (`Gpu.DeviceChunk`).
 * - When the scheduler releases a result with a device copy, the copy is freed (a
 *   `FreeDevice` to its worker after the batch being handled) and its bytes leave the
 *   worker's device bytes at once, so the `released` Managed Memory record shows them
 *   gone. Copies a worker evicted itself are not freed twice.
 * - When the compute ends (done, failed or cancelled), every copy of it not asked for by
 *   the driver is freed: a result the driver asked for keeps its device copy for later
 *   computes (bounded by the worker's memory limit).
 *
 * Leaves out: copies the workers keep across computes (the driver's results) are only
 * evicted by the workers' memory limits, not freed when the driver drops them.
 *
 * @since 0.1.0
 * @internal
 */
import type { SchedulerState } from "../State.ts"
import { KEPT_STRIDE } from "./protocol.ts"
import type { FreeDevice } from "./protocol.ts"

/**
 * One compute's device copies (see the module header).
 *
 * @since 0.1.0
 * @internal
 */
export class DeviceBook {
  /** 1: the result of task i is read back to the host */
  readonly toHost: Uint8Array
  private readonly tag: Float64Array
  private readonly bytes: Float64Array
  private readonly salt: Float64Array
  private readonly slot: Int32Array
  /** task of each worker's tag (`slot:tag`), for evictions */
  private readonly byTag = new Map<string, number>()
  /** frees owed, by worker and salt */
  private readonly owed = new Map<string, { slot: number; salt: number; tags: Array<number> }>()
  private readonly state: SchedulerState
  private readonly adjust: (slot: number, bytes: number) => void
  private readonly post: (slot: number, m: FreeDevice) => void
  /**
   * @param adjust called with a worker and the device bytes it no longer holds
   * @param post sends a `FreeDevice` to a worker (ignored when it is gone)
   */
  constructor(
    state: SchedulerState,
    gpuKernelOf: Int32Array,
    gpuWorkers: number,
    adjust: (slot: number, bytes: number) => void,
    post: (slot: number, m: FreeDevice) => void
  ) {
    this.state = state
    this.adjust = adjust
    this.post = post
    const n = state.graph.size
    this.toHost = new Uint8Array(n)
    this.tag = new Float64Array(n)
    this.bytes = new Float64Array(n)
    this.salt = new Float64Array(n)
    this.slot = new Int32Array(n).fill(-1)
    const { needed, dependents } = state
    for (const r of state.requested) this.toHost[r] = 1
    for (let i = 0; i < n; i++) {
      if (!needed[i] || gpuKernelOf[i]! < 0 || this.toHost[i]) continue
      for (let j = dependents.start[i]!, e = dependents.start[i + 1]!; j < e; j++) {
        const d = dependents.list[j]!
        if (needed[d] && (gpuKernelOf[d]! < 0 || gpuWorkers > 1)) {
          this.toHost[i] = 1
          break
        }
      }
    }
    const prev = state.onRelease
    state.onRelease = (i) => {
      this.release(i)
      prev?.(i)
    }
  }

  /** A GPU batch's results left on the device (`kept`, KEPT_STRIDE floats each) and the copies it evicted. */
  done(slot: number, salt: number, ids: Int32Array, kept: Float64Array, evicted: Float64Array): void {
    for (const t of evicted) {
      const i = this.byTag.get(`${slot}:${t}`)
      if (i === undefined) continue
      this.byTag.delete(`${slot}:${t}`)
      this.tag[i] = 0
    }
    for (let o = 0; o < kept.length; o += KEPT_STRIDE) {
      const i = ids[kept[o]!]!
      this.tag[i] = kept[o + 1]!
      this.bytes[i] = kept[o + 2]!
      this.salt[i] = salt
      this.slot[i] = slot
      this.byTag.set(`${slot}:${kept[o + 1]}`, i)
    }
  }

  /** The scheduler released task i: its device copy is owed a free. */
  private release(i: number): void {
    if (this.tag[i] === 0) return
    this.owe(i)
  }

  private owe(i: number): void {
    const slot = this.slot[i]!
    const key = `${slot}:${this.salt[i]}`
    let o = this.owed.get(key)
    if (o === undefined) this.owed.set(key, o = { slot, salt: this.salt[i]!, tags: [] })
    o.tags.push(this.tag[i]!)
    this.byTag.delete(`${slot}:${this.tag[i]}`)
    this.tag[i] = 0
    this.adjust(slot, this.bytes[i]!)
  }

  /** Sends the frees owed. */
  flush(): void {
    for (const o of this.owed.values()) this.post(o.slot, { t: "free", salt: o.salt, tags: Float64Array.from(o.tags) })
    this.owed.clear()
  }

  /** The compute ended: frees every copy the driver did not ask for. */
  end(): void {
    const requested = new Set(this.state.requested)
    for (let i = 0; i < this.tag.length; i++) if (this.tag[i] !== 0 && !requested.has(i)) this.owe(i)
    this.flush()
  }
}

/**
 * The worker pool's GPU slots, the slot kind with device memory: GPU workers come after
 * the CPU ones (ids `first ..`), each with its adapter filter; this keeps which adapter
 * each one found, the device bytes each holds and the seconds they were busy (what
 * `Gpu.usage` reports), and, per compute, the `DeviceBook` of results left on devices.
 *
 * @since 0.1.0
 * @internal
 */
import * as Gpu from "../Gpu.ts"
import type { SchedulerState } from "../State.ts"
import { DeviceBook } from "./deviceBook.ts"
import type { MemoryBook } from "./memoryBook.ts"
import type { BatchDone, FreeDevice } from "./protocol.ts"

/**
 * The GPU workers of a pool.
 *
 * @since 0.1.0
 * @internal
 */
export class GpuSlots {
  /** each GPU worker's adapter (or why it has none), by worker id, once it is ready */
  readonly info = new Map<number, Gpu.GpuInfo | { readonly why: string }>()
  /** the id of the first GPU worker (the CPU workers come before) */
  readonly first: number
  readonly count: number
  private readonly options: Gpu.GpuOptions
  private readonly adapters: ReadonlyArray<string>
  private waiters: Array<() => void> = []
  /** per GPU worker: device bytes held after its last batch */
  private readonly held = new Map<number, number>()
  /** busy seconds of all their batches */
  private busySeconds = 0
  private readonly unregister: () => void

  constructor(first: number, count: number, options: Gpu.GpuOptions, adapters: ReadonlyArray<string>) {
    this.first = first
    this.count = count
    this.options = options
    this.adapters = adapters
    // Mesa's EGL reads the process environment, which a worker thread's process.env does not set
    process.env["EGL_PLATFORM"] ??= "surfaceless"
    this.unregister = Gpu.registerUsage(() => ({
      devices: this.count,
      heldBytes: [...this.held.values()].reduce((a, b) => a + b, 0),
      busySeconds: this.busySeconds
    }))
  }

  /** The device options of GPU worker `id` (its adapter filter overrides the options' one). */
  optionsOf(id: number): Gpu.GpuOptions {
    const adapter = this.adapters[id - this.first]
    return adapter === undefined ? this.options : { ...this.options, adapter }
  }

  /** GPU worker `id` said which adapter it has (or why none). */
  onReady(id: number, gpu: Gpu.GpuInfo | { readonly why: string }): void {
    this.info.set(id, gpu)
    for (const w of this.waiters.splice(0)) w()
  }

  /** Resolves when every GPU worker has said which adapter it has (or why none). */
  ready(): Promise<ReadonlyArray<Gpu.GpuInfo | { readonly why: string }>> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.info.size >= this.count) resolve([...this.info.values()])
        else this.waiters.push(check)
      }
      check()
    })
  }

  /** A batch of tasks `ids` came back from GPU worker `slot` with its device report. */
  onBatch(slot: number, device: NonNullable<BatchDone["device"]>, ids: Int32Array, book: MemoryBook | null, devices: DeviceBook | null): void {
    this.held.set(slot, device.held)
    this.busySeconds += device.busy
    if (book !== null) book.device[slot] = device.held
    devices?.done(slot, device.salt, ids, device.kept, device.evicted)
  }

  /**
   * The book of one compute's results left on devices (`gpuKernelOf`: each task's GPU
   * kernel id, -1 for a CPU task); `post` sends a worker the copies to free.
   */
  deviceBook(state: SchedulerState, gpuKernelOf: Int32Array, book: MemoryBook | null, post: (slot: number, m: FreeDevice) => void): DeviceBook {
    return new DeviceBook(state, gpuKernelOf, this.count, (slot, bytes) => {
      this.held.set(slot, Math.max(0, (this.held.get(slot) ?? 0) - bytes))
      if (book !== null) book.device[slot] = Math.max(0, book.device[slot]! - bytes)
    }, post)
  }

  /** Stops reporting usage (the pool closed). */
  close(): void {
    this.unregister()
  }
}

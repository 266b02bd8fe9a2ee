/**
 * The worker pool's statistical sampling (see Sampling): which hook the pool samples
 * for, the interval a batch asks its worker to sample at, and the samples workers send
 * back, delivered to that hook. A pool samples for one owner at a time (a new one stops
 * the old); a worker starts sampling when it gets a batch asking for it.
 *
 * @since 0.1.0
 * @internal
 */
import { threadId } from "../EngineEvents.ts"
import type { Callbacks } from "../Hooks.ts"
import * as Sampling from "../Sampling.ts"
import type { Samples } from "./protocol.ts"
import type { Slot } from "./poolWorkers.ts"

/** how long stopping sampling waits for a worker's last samples */
const LAST_SAMPLES_MS = 5000

/**
 * The hook a pool samples for, and the sampling state it keeps on its slots
 * (`sampling`, `sampleOwner`, `lastSamples`).
 *
 * @since 0.1.0
 * @internal
 */
export class PoolSampling {
  /** the hook sampled for, and how to detach from it */
  private current: { readonly owner: Callbacks; detach: () => void; timer: ReturnType<typeof setInterval> | undefined } | null = null
  private readonly slots: () => ReadonlyArray<Slot>
  private readonly host: string

  constructor(host: string, slots: () => ReadonlyArray<Slot>) {
    this.host = host
    this.slots = slots
  }

  /** Samples for `owner` from now on (stopping the previous owner), unless it already does. */
  use(owner: Callbacks): void {
    if (owner === this.current?.owner) return
    if (this.current !== null) void this.stop()
    const sampler: NonNullable<typeof this.current> = { owner, detach: () => {}, timer: undefined }
    sampler.detach = Sampling.attach(owner, { stop: () => (this.current === sampler ? this.stop() : Promise.resolve()) })
    this.current = sampler
    // a flush shorter than the workers' own (which follows a batch once `flushSeconds` passed):
    // asked for from here; a busy worker answers after its batch
    const flush = Sampling.flushOf(owner.sampling)
    if (flush < Sampling.flushSeconds) {
      sampler.timer = setInterval(() => {
        for (const slot of this.slots()) {
          if (slot.alive && slot.sampling && slot.sampleOwner === owner && slot.lastSamples === null) slot.worker.postMessage({ t: "take", stop: false })
        }
      }, flush * 1000)
      sampler.timer.unref()
    }
  }

  /**
   * The interval (ms) a batch of a compute whose sampling hook is `owner` asks its worker
   * to sample at, marking the slot as sampling for it; 0: none.
   */
  intervalFor(slot: Slot, owner: Callbacks | undefined): number {
    const c = this.current
    if (c === null || owner !== c.owner) return 0
    const interval = c.owner.sampling!.interval
    if (interval > 0) {
      slot.sampling = true
      slot.sampleOwner = c.owner
    }
    return interval
  }

  /** Asks every sampling worker for its last samples; resolves when they are delivered. */
  stop(): Promise<void> {
    const sampler = this.current
    if (sampler === null) return Promise.resolve()
    this.current = null
    if (sampler.timer !== undefined) clearInterval(sampler.timer)
    sampler.detach()
    const waits: Array<Promise<void>> = []
    for (const slot of this.slots()) {
      if (!slot.alive || !slot.sampling) continue
      slot.sampling = false
      waits.push(new Promise<void>((resolve) => {
        // a worker stuck in a kernel answers after it: its samples are not worth waiting long for
        const timer = setTimeout(() => {
          slot.lastSamples = null
          slot.sampleOwner = null // what arrives later is dropped
          resolve()
        }, LAST_SAMPLES_MS)
        slot.lastSamples = () => {
          clearTimeout(timer)
          resolve()
        }
        slot.worker.postMessage({ t: "take", stop: true })
      }))
    }
    return Promise.all(waits).then(() => undefined)
  }

  /** Delivers a worker's samples to the hook that asked for them. */
  onSamples(slot: Slot, m: Samples): void {
    const owner = slot.sampleOwner
    if (m.last) {
      slot.sampleOwner = null
      const done = slot.lastSamples
      slot.lastSamples = null
      done?.()
    }
    if (owner === null || m.chunk.samples.length === 0) return
    owner.samples!({
      ...m.chunk,
      host: this.host,
      workerId: slot.id,
      threadId: threadId(this.host, slot.id),
      interval: m.interval / 1000
    })
  }
}

/**
 * What a cluster worker holds, counted: a `Map` of results (or the drivers' literals)
 * that keeps the sum of its values' bytes (`describeResult`'s `nbytes`) as entries come
 * and go, so a worker can say what it holds (`Stats.heldBytes`, the scheduler's log) and
 * refuse a result past its `--max-held-bytes`.
 *
 * @since 0.1.0
 * @internal
 */
import { describeResult } from "../kernels.ts"

/**
 * A Map whose `bytes` is the sum of its values' sizes.
 *
 * @since 0.1.0
 * @internal
 */
export class HeldStore extends Map<string, unknown> {
  /** bytes of every value held now */
  bytes = 0
  private readonly sizes = new Map<string, number>()

  /** Keeps `v` under `k`; `nbytes` when known already (else measured). */
  override set(k: string, v: unknown, nbytes?: number): this {
    const n = nbytes ?? describeResult(v).nbytes
    this.bytes += n - (this.sizes.get(k) ?? 0)
    this.sizes.set(k, n)
    return super.set(k, v)
  }

  override delete(k: string): boolean {
    const n = this.sizes.get(k)
    if (n !== undefined) {
      this.bytes -= n
      this.sizes.delete(k)
    }
    return super.delete(k)
  }

  override clear(): void {
    this.bytes = 0
    this.sizes.clear()
    super.clear()
  }
}

/**
 * Bytes in words, for the logs and messages: `0 B`, `512 B`, `1.5 KB`, `25.2 MB`,
 * `3.70 GB` (decimal units).
 *
 * @since 0.1.0
 * @internal
 */
export const formatBytes = (n: number): string => {
  if (n < 1000) return `${Math.round(n)} B`
  const units = ["KB", "MB", "GB", "TB"]
  let v = n
  let u = -1
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000
    u++
  }
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[u]}`
}

/**
 * The one clock every engine timestamp uses, on every thread: seconds since the epoch
 * as a float with microsecond resolution (`performance.timeOrigin + performance.now()`).
 * In a worker thread `performance.timeOrigin` is the worker's start, so the sum is
 * still on the epoch clock.
 *
 * @since 0.1.0
 */

/**
 * Current time in epoch seconds (µs resolution).
 *
 * @since 0.1.0
 * @category getters
 */
export const nowSeconds = (): number => (performance.timeOrigin + performance.now()) / 1000

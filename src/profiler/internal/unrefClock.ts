/**
 * An Effect `Clock` whose `sleep` never keeps the process alive (its timers are
 * unref'd); time comes from the default clock. `registerDefaultProfiler` runs the
 * profiler layers on it, so an unclosed profiler's sampling fibers do not hold the
 * process open (it is flushed at exit instead).
 *
 * @since 0.1.0
 * @internal
 */
import { Clock, Duration, Effect } from "effect"

const base = Clock.Clock.defaultValue()

/**
 * The default clock with unref'd sleeps.
 *
 * @since 0.1.0
 * @internal
 */
export const unrefClock: Clock.Clock = Object.assign(Object.create(base) as Clock.Clock, {
  sleep: (duration: Duration.Duration): Effect.Effect<void> => {
    const millis = Duration.toMillis(duration)
    if (millis <= 0) return Effect.yieldNow
    if (!Number.isFinite(millis)) return Effect.never
    return Effect.callback<void>((resume) => {
      const handle = setTimeout(() => resume(Effect.void), Math.min(millis, 2 ** 31 - 1))
      handle.unref()
      return Effect.sync(() => clearTimeout(handle))
    })
  }
})

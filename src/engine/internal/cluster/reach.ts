/**
 * Whether a cluster's scheduler (its runner registry, or a PostgreSQL server) can be
 * reached, found by plain TCP connections before Effect Cluster is given the address:
 * Effect's RPC client retries an unreachable registry for ever, silently, and a process
 * stuck there could not even be stopped (its finalizers wait on the same registry).
 *
 * - {@link reach}: connects until one connection succeeds, telling `onRetry` each failure
 *   (the reason, `ECONNREFUSED`, and the attempt number) so the user sees it within a
 *   second or two; gives up with `ClusterUnreachable` after `timeout` seconds.
 * - {@link watch}: once joined, checks the address every few seconds; a scheduler gone
 *   for `timeout` seconds fails it the same way (the process then exits, as dask's
 *   worker does after its `--death-timeout`).
 * - {@link stopWithin}: interrupts a fiber and waits at most so long for it (a worker's
 *   own finalizers talk to the registry, which may be gone).
 *
 * @since 0.1.0
 * @internal
 */
import { Effect } from "effect"
import type * as Fiber from "effect/Fiber"
import { connect } from "node:net"
import { ClusterUnreachable } from "../../Cluster.ts"

/**
 * What a retry is told: the address, why the last attempt failed, the attempt number.
 *
 * @since 0.1.0
 * @internal
 */
export type OnRetry = (address: string, reason: string, attempt: number) => void

/** One TCP connection to `host:port`: undefined when it opened, else why not. */
const attempt = (host: string, port: number, seconds: number) =>
  Effect.callback<string | undefined>((resume) => {
    const s = connect({ host: host.replace(/^\[(.*)\]$/, "$1"), port })
    const done = (why: string | undefined) => {
      clearTimeout(t)
      s.removeAllListeners()
      s.on("error", () => {})
      s.destroy()
      resume(Effect.succeed(why))
    }
    const t = setTimeout(() => done(`no answer in ${seconds} s`), seconds * 1000)
    s.once("connect", () => done(undefined))
    s.once("error", (e: NodeJS.ErrnoException) => done(e.code ?? e.message))
    return Effect.sync(() => {
      clearTimeout(t)
      s.removeAllListeners()
      s.on("error", () => {})
      s.destroy()
    })
  })

/**
 * Connects to `host:port` until a connection opens (then closes it), once a second;
 * after each failure `onRetry` is told. Fails with `ClusterUnreachable` naming `what`,
 * the address, the last reason and the attempts after `timeout` seconds. Interruptible
 * at any point.
 *
 * @since 0.1.0
 * @internal
 */
export const reach = (
  host: string,
  port: number,
  options: { readonly what: string; readonly timeout: number; readonly onRetry?: OnRetry | undefined }
): Effect.Effect<void, ClusterUnreachable> =>
  Effect.gen(function*() {
    const address = `${host}:${port}`
    const deadline = performance.now() + options.timeout * 1000
    for (let n = 1;; n++) {
      const left = (deadline - performance.now()) / 1000
      const why = yield* attempt(host, port, Math.max(0.2, Math.min(3, left)))
      if (why === undefined) return
      if (performance.now() >= deadline) {
        return yield* new ClusterUnreachable({
          address,
          message: `cannot reach ${options.what} ${address} (${why}): gave up after ${options.timeout} s and ${n} attempt${n === 1 ? "" : "s"}`
        })
      }
      options.onRetry?.(address, why, n)
      yield* Effect.sleep(Math.min(1000, Math.max(0, deadline - performance.now())))
    }
  })

/**
 * Checks `host:port` every `every` seconds for as long as it runs; when a check fails,
 * {@link reach} takes over (its retries told, its timeout), and fails when it does.
 *
 * @since 0.1.0
 * @internal
 */
export const watch = (
  host: string,
  port: number,
  options: { readonly what: string; readonly timeout: number; readonly every?: number; readonly onRetry?: OnRetry | undefined }
): Effect.Effect<never, ClusterUnreachable> =>
  Effect.forever(Effect.gen(function*() {
    yield* Effect.sleep((options.every ?? 2) * 1000)
    if ((yield* attempt(host, port, 3)) !== undefined) yield* reach(host, port, options)
  }))

/**
 * Interrupts `fiber` and waits until it ends or `seconds` pass, whichever is first.
 *
 * @since 0.1.0
 * @internal
 */
export const stopWithin = (fiber: Fiber.Fiber<unknown, unknown>, seconds: number): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    const t = setTimeout(() => resume(Effect.void), seconds * 1000)
    const off = fiber.addObserver(() => {
      clearTimeout(t)
      resume(Effect.void)
    })
    fiber.interruptUnsafe()
    return Effect.sync(() => {
      clearTimeout(t)
      off()
    })
  })

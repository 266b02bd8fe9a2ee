/**
 * `tessera scheduler --dashboard [HOST:]PORT`: the scheduler's live dashboard
 * (`src/dashboard/SchedulerFeed.ts`). Drivers of this scheduler's cluster (`tessera
 * demo|run --cluster HOST:PORT`) ask at their start whether it serves one and, when it
 * does, forward their cluster tasks' records to it each tick over the registry's
 * connection (token and TLS as every link); the page shows the current run. Without
 * the flag drivers forward nothing. See docs/cluster.md.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { Flag } from "effect/cli"
import type { FeedBatch } from "../../engine/Cluster.ts"
import type { DashboardError } from "../../dashboard/Server.ts"

/**
 * `--dashboard [HOST:]PORT` of `tessera scheduler`.
 *
 * @since 0.1.0
 * @category cli
 */
export const schedulerDashboardFlag = Flag.String("dashboard").pipe(
  Flag.withMetavar("[HOST:]PORT"),
  Flag.withDescription(
    "serve the live dashboard of the drivers' runs on this cluster (e.g. 8787: http://127.0.0.1:8787/; bound off loopback a token is required and printed); drivers forward their records only when it is on (default: none)"
  ),
  Flag.optional
)

/**
 * The scheduler's dashboard on `address` for the current scope, as the `dashboard`
 * option of `serveScheduler`; undefined without an address. Its URL goes to stderr.
 *
 * @since 0.1.0
 * @category constructors
 */
export const schedulerDashboard = (
  address: Option.Option<string>
): Effect.Effect<((batch: FeedBatch) => void) | undefined, DashboardError, Scope.Scope> =>
  Effect.gen(function*() {
    if (Option.isNone(address)) return undefined
    const [Server, Feed] = yield* Effect.promise(() => Promise.all([import("../../dashboard/Server.ts"), import("../../dashboard/SchedulerFeed.ts")]))
    const parsed = Server.parseAddress(address.value)
    if (parsed instanceof Server.DashboardError) return yield* parsed
    const d = yield* Feed.make({ ...parsed, title: "tessera scheduler", log: (line) => void process.stderr.write(`tessera scheduler: ${line}\n`) })
    return d.feed
  })

/**
 * `tessera dashboard -d DB [DB...] [--address [HOST:]PORT] [--token T] [--title NAME]`:
 * the live dashboard's pages over recorded trace databases (src/dashboard/Replay.ts),
 * served until Ctrl-C. The URL goes to stderr (with the token when bound off loopback).
 * A 1M-event run is browsable this way without a 38 MB static report: the page gets
 * aggregates and fetches single tasks for the window it zooms into. The Findings tab
 * shows `tessera diagnose`'s findings of the same databases (src/dashboard/Diagnosis.ts),
 * the Profile tab their stack samples' flame graph of a window (src/dashboard/Flame.ts).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import { databasesFlag, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"

/**
 * The `dashboard` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const dashboard = Command.make(
  "dashboard",
  {
    db: databasesFlag(),
    address: Flag.String("address").pipe(Flag.withMetavar("[HOST:]PORT"), withDefaultShown("where to serve the pages; off loopback a token is required", "127.0.0.1:8787")),
    token: Flag.String("token").pipe(Flag.withDescription("the token pages must give (default: none on loopback, generated elsewhere)"), Flag.optional),
    title: Flag.String("title").pipe(Flag.withDescription("run name shown in the header (default: from the database file names)"), Flag.optional)
  },
  (c) =>
    Effect.scoped(Effect.gen(function*() {
      const [Dashboard, { loadReportDataPromise }, { fromReportData }, { diagnoseInto }, { profileInto }] = yield* Effect.promise(() =>
        Promise.all([import("../../dashboard/Dashboard.ts"), import("../../report/Report.ts"), import("../../dashboard/Replay.ts"), import("../../dashboard/Diagnosis.ts"), import("../../dashboard/Flame.ts")])
      )
      const address = Dashboard.parseAddress(c.address)
      if (address instanceof Dashboard.DashboardError) return yield* address
      const data = yield* Output.tracked("dashboard", c.db, "loading", () => loadReportDataPromise(c.db, c.title._tag === "Some" ? c.title.value : undefined))
      const state = fromReportData(data)
      // the Findings tab: tessera diagnose of the same databases (the tab says "diagnosing" until then)
      state.findings = { status: "pending", source: `tessera diagnose -d ${c.db.join(" ")}` }
      state.flame = { status: "pending", source: c.db.join(" ") }
      const server = yield* Dashboard.serve(state, { ...address, title: data.title, sampleHost: false, ...(data.dot !== undefined ? { dot: data.dot } : {}), ...(c.token._tag === "Some" ? { token: c.token.value } : {}) })
      process.stderr.write(`dashboard: ${server.url} (${data.tasks.start.length.toLocaleString("en-US")} tasks of ${c.db.length} database${c.db.length === 1 ? "" : "s"}); serving until Ctrl-C\n`)
      // the Profile tab's samples first (one read), then the Findings tab's diagnosis
      void profileInto(state, c.db, data.t0).then(() => diagnoseInto(state, c.db, data.t0))
      return yield* Effect.never
    }))
).pipe(Command.withDescription("Serve the live dashboard's pages over recorded trace databases, until Ctrl-C."))

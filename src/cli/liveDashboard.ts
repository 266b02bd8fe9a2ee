/**
 * `--dashboard [HOST:]PORT` for the commands that run a pipeline (`tessera demo`,
 * `tessera run`): starts the live dashboard (src/dashboard/Dashboard.ts) before the
 * program, gives its hooks to the program's computes, and after the program (whatever
 * its outcome: its results and errors are printed first) keeps the page up with the
 * final state until Ctrl-C, saying so on stderr. With `--profile` (its statistical
 * profiler sampling the worker threads anyway) the dashboard shares its sampler
 * (`Sampling.share`): the Profile tab draws the live samples' flame graph during the run.
 * With trace databases that outlive the
 * run (`--profile`), the Profile tab then shows their samples' flame graph and the
 * Findings tab `tessera diagnose`'s findings of them.
 *
 * @since 0.1.0
 */
import { Effect, Option } from "effect"
import type * as Scope from "effect/Scope"

/**
 * Runs `body` (given a function that adds the dashboard's hooks to an effect) with the
 * dashboard `address` asks for, then holds the page up until Ctrl-C. Without an address,
 * just `body`. `records`: feed on the engine's task records (when a profiler is on, which
 * makes the engine build them anyway: `--profile`, `--report`; and on a cluster, whose
 * rows and transfers are named by worker process), else the light hooks.
 *
 * @since 0.1.0
 * @category combinators
 */
export const withDashboard = <A, E, R>(
  address: Option.Option<string>,
  options: {
    readonly title: string
    readonly records: boolean
    /** `--profile NAME`: the trace databases it writes answer zooms older than the ring */
    readonly profile?: Option.Option<string>
    /**
     * sample the worker threads for the Profile tab during the run (`demo` and `run`
     * pass `--profile` without `--no-sample`: the profiler samples then anyway, and
     * sharing its sampler costs a flush a second instead of one in ten); default: with
     * `--profile`
     */
    readonly sample?: boolean
  },
  body: (
    provide: <X, Y, Z>(self: Effect.Effect<X, Y, Z>) => Effect.Effect<X, Y, Z>,
    /** the pipeline whose stage DAG the Stages tab draws (its `visualize()`, read when a page asks) */
    stages: (pipeline: { visualize(): string }) => void,
    /** the trace databases the run wrote and keeps (`--profile`): read after the run for the Profile and Findings tabs */
    traces: (files: ReadonlyArray<string>) => void
  ) => Effect.Effect<A, E, R>
) =>
  Option.isNone(address)
    ? body((self) => self, () => undefined, () => undefined)
    : Effect.scoped(
      Effect.gen(function*() {
        const [Dashboard, Hooks] = yield* Effect.promise(() => Promise.all([import("../dashboard/Dashboard.ts"), import("../engine/Hooks.ts")]))
        const parsed = Dashboard.parseAddress(address.value)
        if (parsed instanceof Dashboard.DashboardError) return yield* parsed
        let pipeline: { visualize(): string } | undefined
        let files: ReadonlyArray<string> = []
        const traceFiles = options.profile !== undefined && Option.isSome(options.profile) ? yield* traceFilesOf(options.profile.value) : undefined
        const sample = options.sample ?? (options.profile !== undefined && Option.isSome(options.profile))
        const d = yield* Dashboard.make({ ...parsed, title: options.title, records: options.records, sample, dot: () => pipeline?.visualize(), ...(traceFiles !== undefined ? { traceFiles } : {}) })
        const exit = yield* Effect.exit(body((self) => self.pipe(Hooks.provide(d.callbacks)), (p) => void (pipeline = p), (f) => void (files = f)))
        // the run is over and its databases flushed: their samples read for the Profile tab,
        // then diagnosed for the Findings tab (each tab says so meanwhile)
        if (files.length > 0) {
          const [{ diagnoseInto }, { profileInto }] = yield* Effect.promise(() => Promise.all([import("../dashboard/Diagnosis.ts"), import("../dashboard/Flame.ts")]))
          d.state.findings = { status: "pending", source: `tessera diagnose -d ${files.join(" ")}` }
          void profileInto(d.state, files, d.state.t0).then(() => diagnoseInto(d.state, files, d.state.t0))
        }
        yield* hold(d.state, d.url)
        return yield* exit
      })
    ) as Effect.Effect<A, E | import("../dashboard/Server.ts").DashboardError, Exclude<R, Scope.Scope>>

/** The trace databases `--profile NAME` writes (this host's, and other hosts' beside it once they appear). */
const traceFilesOf = (name: string) =>
  Effect.promise(() => Promise.all([import("../profiler/DefaultProfiler.ts"), import("./profiling.ts")])).pipe(
    Effect.map(([DefaultProfiler, { otherHosts }]) => {
      const own = DefaultProfiler.files({ name }, 0).traceFile
      return () => [own, ...otherHosts([own])]
    })
  )

const hold = (state: { close(): void }, url: string) =>
  Effect.gen(function*() {
    state.close()
    process.stderr.write(`dashboard: the run is over; the page stays up with its final state at ${url} until Ctrl-C\n`)
    return yield* Effect.never
  })


/**
 * `tessera diff -d NEW… --baseline OLD… [--json] [--fail-on regression] [--min-effect F]
 * [--alpha A] [--measure time|cpu]`: what got slower from the baseline (OLD) to NEW, per pipeline, stage and
 * function, with the statistics to trust it (src/analysis/Diff.ts; docs/bench.md).
 * Each side is trace databases (each `--profile NAME`'s files one run) or saved
 * `tessera bench --save` results. stdout: the comparison (text: the groups' table, the
 * wall time's parts, the critical path stage by stage, memory and transfers; or one JSON
 * object under `--json`, its fields in docs/bench.md); progress on stderr. `--fail-on regression`: exit 1 when anything
 * significant got slower (after printing the comparison), 0 otherwise. Sides that cannot
 * be compared (different pipelines, nothing in common) fail with a sentence (exit 1).
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import { databasesFlag, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"

/**
 * `--fail-on regression` and something significant got slower: names what.
 *
 * @since 0.1.0
 * @category errors
 */
export class Regression extends Data.TaggedError("Regression")<{ readonly message: string }> {}

/**
 * The `diff` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const diff = Command.make(
  "diff",
  {
    db: databasesFlag(),
    baseline: Flag.String("baseline").pipe(
      Flag.withMetavar("OLD..."),
      Flag.withDescription("the baseline's trace databases or saved bench results (.json): several may follow one --baseline, and it may repeat"),
      Flag.atLeast(1)
    ),
    json: Flag.Boolean("json").pipe(withDefaultShown("print one JSON object", false)),
    failOn: Flag.Literals("fail-on", ["regression", "never"] as const).pipe(
      withDefaultShown<"regression" | "never">("regression: exit 1 when anything significant got slower (for CI)", "never")
    ),
    minEffect: Flag.Finite("min-effect").pipe(
      Flag.filter((x) => x >= 0 && x < 1, () => "a fraction from 0 to 1 (0.05: 5%)"),
      withDefaultShown("ratios of medians within 1 ± this are never called a change", 0.05)
    ),
    measure: Flag.Literals("measure", ["time", "cpu"] as const).pipe(
      withDefaultShown<"time" | "cpu">("stages and functions compared on their tasks' durations (time) or thread CPU time (cpu: not inflated by other processes; CPU-bound kernels)", "time")
    ),
    alpha: Flag.Finite("alpha").pipe(
      Flag.filter((x) => x > 0 && x < 1, () => "a fraction between 0 and 1"),
      withDefaultShown("false-discovery rate (Benjamini–Hochberg) across the groups compared", 0.05)
    )
  },
  (c) =>
    Effect.gen(function*() {
      const Diff = yield* Effect.promise(() => import("../../analysis/Diff.ts"))
      const load = (files: ReadonlyArray<string>, side: string) =>
        Output.tracked("diff", files, `loading ${side}`, () => Diff.loadSidePromise(files))
      const old = yield* load(c.baseline, "the baseline")
      const neu = yield* load(c.db, "NEW")
      const d = yield* Effect.try({
        try: () => Diff.compare(old, neu, { alpha: c.alpha, minEffect: c.minEffect, measure: c.measure }),
        catch: (e) => (e instanceof Diff.DiffRefused ? e : Output.toTyped(e))
      })
      // where the stack samples moved (both sides profiled with samples): the frames whose self share changed most
      const samples = (rs: ReadonlyArray<{ readonly sampleFiles?: ReadonlyArray<string> }>) => rs.flatMap((r) => r.sampleFiles ?? [])
      const moved = samples(old).length > 0 && samples(neu).length > 0
        ? yield* Effect.promise(async () => {
          const { loadProfilePromise } = await import("../../analysis/Profile.ts")
          const F = await import("../../analysis/FlameDiff.ts")
          return F.topSelfChanges(F.flameDiff(await loadProfilePromise(samples(old)), await loadProfilePromise(samples(neu))), 10)
        })
        : []
      if (c.json) yield* Console.log(JSON.stringify({ ...(Diff.diffJson(d) as object), samplesMoved: moved }))
      else {
        const pct = (x: number) => `${(x * 100).toFixed(2)}%`
        const table = moved.length === 0 ? [] : [
          "",
          "Where the stack samples moved (self share of sampled time, OLD → NEW; the report's --baseline section draws the differential flame graph):",
          ...Diff.alignColumns([["Frame", "OLD", "NEW", "Change"], ...moved.map((m) => [`${m.name}${m.location === "" ? "" : ` ${m.location}`}`, pct(m.oldSelf), pct(m.newSelf), `${m.newSelf >= m.oldSelf ? "+" : ""}${pct(m.newSelf - m.oldSelf)}`])])
        ]
        yield* Console.log([Diff.formatDiff(d), ...table].join("\n"))
      }
      if (c.failOn === "regression" && Diff.hasRegression(d)) {
        const slower = d.groups.filter((g) => g.verdict === "slower")
        return yield* new Regression({ message: `--fail-on regression: ${slower.length} significantly slower: ${slower.map(Diff.groupName).join("; ")}` })
      }
    })
).pipe(Command.withDescription("Compare runs: what got slower from --baseline OLD to -d NEW, with the statistics to trust it."))

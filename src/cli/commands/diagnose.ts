/**
 * `tessera diagnose -d DB [DB...] [--json] [--workers N] [--threshold NAME=VALUE...]`: what is wrong
 * with a run, in plain words (src/analysis/Diagnose.ts): findings by estimated saving,
 * each with its rule id, severity, a sentence with the numbers, the evidence, a fix,
 * the saving a what-if on the critical path estimates and its assumptions. stdout: the
 * findings as text, or with `--json` one JSON object (docs/diagnosis.md, "JSON").
 * A bad `--threshold` is a usage error (exit 2); a database that cannot be read, or
 * databases of several runs, a failure (exit 1).
 *
 * @since 0.1.0
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import { databasesFlag, withDefaultShown } from "../flags.ts"
import * as Output from "../output.ts"

/**
 * The `diagnose` subcommand.
 *
 * @since 0.1.0
 * @category cli
 */
export const diagnose = Command.make(
  "diagnose",
  {
    db: databasesFlag(),
    json: Flag.Boolean("json").pipe(withDefaultShown("print one JSON object (docs/diagnosis.md) instead of text", false)),
    workers: Flag.Int("workers").pipe(
      Flag.withDescription("worker threads the run had, when its trace cannot say (a pool started before the profiler); default: from the trace"),
      Flag.filter((n) => n >= 1, () => "an integer of at least 1"),
      Flag.optional
    ),
    threshold: Flag.String("threshold").pipe(
      Flag.withMetavar("NAME=VALUE"),
      Flag.withDescription("change a rule's threshold, e.g. stragglerFactor=4 or severity.high=0.3 (docs/diagnosis.md lists them); may repeat"),
      Flag.atLeast(0)
    )
  },
  (c) =>
    Effect.gen(function*() {
      const { diagnoseFilesPromise, parseThresholds, toJson, toText } = yield* Effect.promise(() => import("../../analysis/Diagnose.ts"))
      const thresholds = yield* Effect.try({ try: () => parseThresholds(c.threshold), catch: (e) => e as { readonly _tag: string } })
      const d = yield* Output.tracked("diagnose", c.db, undefined, () => diagnoseFilesPromise(c.db, { thresholds, ...(c.workers._tag === "Some" ? { workers: c.workers.value } : {}) }))
      for (const w of d.warnings) Output.warn(`diagnose: warning: ${w}`)
      yield* Console.log(c.json ? JSON.stringify(toJson(d), null, 2) : toText(d))
    })
).pipe(Command.withDescription("What is wrong with a run: findings with evidence, a fix and the time it would save."))
